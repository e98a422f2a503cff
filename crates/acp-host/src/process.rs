//! Spawning an agent for a client, and making sure nothing of it outlives the connection.
//!
//! # Lifecycle
//!
//! 1. [`AgentCommand::spawn`] starts the agent as the leader of a new process group, with
//!    stdin and stdout piped for the protocol and stderr piped to a background task.
//! 2. The connection layer takes the two protocol pipes with
//!    [`AgentProcess::take_stdin`] and [`AgentProcess::take_stdout`]. Meanwhile a thread
//!    of its own (one per agent, named `acp-agent-supervisor`) reads stderr continuously,
//!    so the agent never stalls on a full stderr pipe: each line goes to the optional
//!    [`AgentCommand::on_stderr_line`] callback and into a bounded tail
//!    ([`AgentProcess::stderr_tail`]) kept for error reports.
//! 3. The same thread watches for the agent's exit, without a thread of its own for that
//!    (see [Process ids](#process-ids)). Any number of callers learn about it through
//!    [`AgentProcess::exited`], which resolves to an [`AgentExit`] with the status (an
//!    [`ExitStatus`], the type terminals report too) and the stderr tail;
//!    [`AgentProcessError::Crashed`] turns that into an error for calls that were still
//!    pending. When the agent exits, every process still left in its group (background
//!    children it did not wait for) is killed with SIGKILL.
//! 4. [`AgentProcess::shutdown`] ends the agent in steps, each taken only if the previous
//!    one did not suffice ([`ShutdownStep`]): close its stdin and wait up to
//!    [`AgentCommand::shutdown_grace`] (default [`DEFAULT_SHUTDOWN_GRACE`]); send SIGTERM
//!    to the group and wait up to [`AgentCommand::term_grace`] (default
//!    [`DEFAULT_TERM_GRACE`]); send SIGKILL to the group. Shutdown works even while the
//!    connection still holds the stdin writer.
//! 5. Dropping the [`AgentProcess`] without shutting down sends SIGKILL to the whole group
//!    at once, and closes the agent's stdin. The thread keeps running until it has observed
//!    the exit and reaped the leader, then ends.
//!
//! # When this process dies
//!
//! Nothing of the above runs when this process dies without dropping its handles: `exit`
//! with the handles still alive, a panic with `panic = "abort"`, a signal (Ctrl-C, SIGTERM,
//! SIGHUP) or SIGKILL. For that case the first spawn of an agent or of a terminal command
//! starts the *process supervisor*: a child of this process, forked without `exec`, which
//! holds nothing but one end of a socket pair (see [`start_supervisor`]). Every process group
//! this crate starts (agents here, commands of [`crate::terminal::TerminalHost`]) is registered
//! with it right after the spawn and unregistered once this crate has killed it. When this
//! process dies, however it dies, the kernel closes its end of the socket; the supervisor
//! sees end-of-file, sends SIGKILL to every group still registered, and exits. An agent that
//! ignores end-of-file and SIGTERM is therefore gone a moment after its client, even after a
//! SIGKILL of the client.
//!
//! The supervisor is one process per client process, named `acp-supervisor` on Linux and
//! visible in `ps` as a child of the client. It never exits before the client (it ignores
//! every signal but SIGKILL) and exits right after it, so it is never left running. If it
//! cannot be started (`fork` fails) or was killed, a line on stderr says so, once, and
//! processes are started without that protection.
//!
//! # Process ids
//!
//! The group leader stays unreaped until its exit has been observed and its group killed:
//! the kernel does not reuse the id of an unreaped process, so a group signal sent while
//! the leader is unreaped cannot reach an unrelated process group that later received the
//! same id. On Linux the exit is observed without reaping through a pidfd that the
//! supervision thread waits on together with stderr; elsewhere (and on kernels before 5.4) a
//! thread of smol's blocking pool waits with `waitid(WNOWAIT)`. Terminal commands
//! ([`crate::terminal::TerminalHost`]) are supervised the same way.
//!
//! Processes that leave the group on purpose (`setsid`, `setpgid`, daemons) are out of
//! reach, as with any process-group based supervision.
//!
//! # Example
//!
//! `cat` makes a perfect echo "agent":
//!
//! ```
//! use acp_host::process::{AgentCommand, ShutdownStep};
//! use futures_lite::{AsyncBufReadExt, AsyncWriteExt};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! smol::block_on(async {
//!     let mut agent = AgentCommand::new("cat").spawn()?;
//!     let mut stdin = agent.take_stdin().expect("taken once");
//!     let mut stdout = agent.take_stdout().expect("taken once");
//!
//!     stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n").await?;
//!     stdin.flush().await?;
//!     let mut line = String::new();
//!     stdout.read_line(&mut line).await?;
//!     assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n");
//!
//!     // `cat` exits on end-of-file, so closing its stdin is enough, even though
//!     // `stdin` is still held here.
//!     let exit = agent.shutdown().await;
//!     assert_eq!(exit.step, ShutdownStep::StdinClosed);
//!     assert!(exit.status.success());
//!     Ok(())
//! })
//! # }
//! ```
#![cfg(unix)]

mod command;
mod exit;
mod handle;
mod stderr;
mod stdin;
mod watch;

use std::io;

use crate::os::supervisor;

pub use crate::os::exit_status::{ExitStatus, signal_name};
pub use command::{AgentCommand, DEFAULT_SHUTDOWN_GRACE, DEFAULT_TERM_GRACE};
pub use exit::{AgentExit, AgentProcessError, ShutdownStep};
pub use handle::{AgentProcess, AgentStdout, STDOUT_BUFFER_BYTES};
pub use stderr::{DEFAULT_STDERR_TAIL_BYTES, DEFAULT_STDERR_TAIL_LINES, MAX_STDERR_LINE_BYTES};
pub use stdin::AgentStdin;

/// Starts the process supervisor now, if it is not running yet, and returns its process id.
///
/// The first spawn of an agent or terminal command starts it anyway; call this early in
/// `main` to fork it while the program is still small (it starts as a copy of this process),
/// or to learn that it cannot run. See the [module docs](self#when-this-process-dies).
///
/// Public because it is a choice of the program's `main` (the `acp` and `acp-conductor`
/// binaries make it), not an internal step: everything else about the supervisor is.
///
/// ```
/// // First thing in `main`:
/// if let Err(error) = acp_host::process::start_supervisor() {
///     eprintln!("no process supervisor ({error}); agents may outlive a killed client");
/// }
/// ```
pub fn start_supervisor() -> io::Result<u32> {
    supervisor::start()
}

/// The process id of the process supervisor while it runs; `None` before the first spawn,
/// or if it could not be started or has died.
///
/// Hidden: nothing a program does depends on the id. This crate's own integration tests
/// (`tests/process.rs`, `tests/hostile_process.rs`) need it from outside the crate, to kill
/// the supervisor and to find it among the processes.
#[doc(hidden)]
pub fn supervisor_id() -> Option<u32> {
    supervisor::id()
}
