//! Every bound on what the checker keeps, so that no agent (a flooding one, a deaf one, a
//! silent one) can make it grow or stall without bound. docs/conformance.md lists them.

use std::time::Duration;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// The longest line read from the agent, by default: 8 MiB (`--max-line-mib`). A longer line
/// is skipped without being kept and counts as output that is not JSON-RPC.
pub const DEFAULT_MAX_LINE_BYTES: usize = 8 * MIB;

/// The default limit of a whole run: 30 minutes (`--run-timeout`).
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Output that is not JSON-RPC (garbage lines, over-long lines, a line without end) one
/// connection may write: 16 MiB. Beyond it the checker stops reading, ends the agent, and the
/// step in progress ends as if the agent had exited.
pub const FLOOD_BYTES: u64 = 16 * MIB as u64;

/// Received lines kept per step (one request, one listening period, one side of a prompt
/// turn): 2 MiB of lines. Later messages are still read and judged, but only counted, and the
/// step's evidence says how many were not kept.
pub const STEP_BYTES: usize = 2 * MIB;

/// Offending lines kept per connection for each aggregate check (stray output, unsolicited
/// responses, invalid messages): 20. The rest are counted, with their bytes.
pub const LOG_LINES: usize = 20;

/// Characters of one line shown in evidence; longer lines are cut and their size given.
pub const EVIDENCE_CHARS: usize = 400;

/// Bytes waiting to be written to an agent that does not read its stdin: 1 MiB. Lines that do
/// not fit are dropped and counted; the checker never blocks on a write.
pub const OUTBOX_BYTES: usize = MIB;

/// File content the fake client stores per connection (`fs/write_text_file`): 16 MiB. Writes
/// beyond it are refused with an error.
pub const FILE_BYTES: usize = 16 * MIB;

/// Distinct session ids named by the agent that are remembered per connection, to judge at
/// its end whether each one exists: 256.
pub const NAMED_SESSIONS: usize = 256;

/// Bytes read from the agent's stdout before the checker looks at its clock again: 256 KiB.
pub(crate) const READ_SLICE_BYTES: usize = 256 * KIB;

/// Lines and bytes of the agent's stderr kept for evidence.
pub(crate) const STDERR_TAIL_LINES: usize = 16;
pub(crate) const STDERR_TAIL_BYTES: usize = 8 * KIB;

/// How long an agent is given to exit once the checker has killed it, or to finish its
/// stepwise shutdown, before the checker goes on without it.
pub(crate) const EXIT_WAIT: Duration = Duration::from_secs(5);

/// `n` bytes for people: `512 B`, `3.2 KiB`, `17.0 MiB`.
pub(crate) fn bytes(n: u64) -> String {
    if n < KIB as u64 {
        format!("{n} B")
    } else if n < MIB as u64 {
        format!("{:.1} KiB", n as f64 / KIB as f64)
    } else {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    }
}
