//! What to check and how: the options of a run (the command line that fills them is the
//! binary's, `main.rs`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The default prompt text of every prompt turn.
pub const DEFAULT_PROMPT: &str = "Say hello.";

/// The protocol version a run checks the agent against.
///
/// Chosen by the user (`--protocol`), not negotiated: an agent serving both versions through a
/// router has two sets of rules, and a run judges one of them. Checking v2 needs the crate
/// feature `unstable-protocol-v2`; without it a v2 run is refused before it starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// Protocol version 1: the checks of `docs/conformance.md`.
    #[default]
    V1,
    /// Protocol version 2 (a published draft): the `v2.*` checks, every `initialize` asking for
    /// version 2.
    V2,
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The agent command: program first, then its arguments.
    pub command: Vec<OsString>,
    /// Extra environment variables for the agent.
    pub env: Vec<(OsString, OsString)>,
    /// The agent's working directory (default: inherited).
    pub agent_cwd: Option<PathBuf>,
    /// The text of every prompt turn.
    pub prompt: String,
    /// An auth method id to `authenticate` with after every `initialize`.
    pub auth: Option<String>,
    /// How long one request may take (default 10 s).
    pub timeout: Duration,
    /// How long one prompt turn may take (default 60 s).
    pub turn_timeout: Duration,
    /// How long to keep listening for late or unexpected messages after a step (default
    /// 500 ms).
    pub grace: Duration,
    /// Run only the checks whose id starts with one of these (all when empty).
    pub only: Vec<String>,
    /// Leave out the checks whose id starts with one of these.
    pub skip: Vec<String>,
    /// Print every line exchanged with the agent, and its stderr, to our stderr.
    pub trace: bool,
    /// The longest line read from the agent (default
    /// [`DEFAULT_MAX_LINE_BYTES`](crate::limits::DEFAULT_MAX_LINE_BYTES), 8 MiB); longer ones
    /// are skipped and count as output that is not JSON-RPC.
    pub max_line_bytes: usize,
    /// How long the whole run may take (default
    /// [`DEFAULT_RUN_TIMEOUT`](crate::limits::DEFAULT_RUN_TIMEOUT), 30 minutes): every wait
    /// ends by then, and the checks not started are reported inconclusive.
    pub run_timeout: Duration,
    /// The protocol version checked (default [`Protocol::V1`]).
    pub protocol: Protocol,
}

impl Options {
    /// Defaults for running `command`.
    pub fn new(command: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        Options {
            command: command.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            agent_cwd: None,
            prompt: DEFAULT_PROMPT.to_owned(),
            auth: None,
            timeout: Duration::from_secs(10),
            turn_timeout: Duration::from_secs(60),
            grace: Duration::from_millis(500),
            only: Vec::new(),
            skip: Vec::new(),
            trace: false,
            max_line_bytes: crate::limits::DEFAULT_MAX_LINE_BYTES,
            run_timeout: crate::limits::DEFAULT_RUN_TIMEOUT,
            protocol: Protocol::V1,
        }
    }

    /// Whether check `id` is selected by `only` and `skip`.
    pub fn selects(&self, id: &str) -> bool {
        let matches = |prefix: &String| id == prefix || id.starts_with(&format!("{prefix}."));
        (self.only.is_empty() || self.only.iter().any(matches)) && !self.skip.iter().any(matches)
    }
}
