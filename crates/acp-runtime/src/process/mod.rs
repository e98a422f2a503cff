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
//! 3. The same task watches for the agent's exit. Any number of callers learn about it
//!    through [`AgentProcess::exited`], which resolves to an [`AgentExit`] with the
//!    status and the stderr tail; [`AgentProcessError::Crashed`] turns that into an error
//!    for calls that were still pending. When the agent exits, every process still left
//!    in its group (background children it did not wait for) is killed with SIGKILL.
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
//! the runtime starts (agents here, commands of [`crate::host::TerminalHost`]) is registered
//! with it right after the spawn and unregistered once the runtime has killed it. When this
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
//! same id. On Linux the exit is observed without reaping through a pidfd; elsewhere (and
//! on kernels before 5.4) a thread of smol's blocking pool waits with `waitid(WNOWAIT)`.
//!
//! Processes that leave the group on purpose (`setsid`, `setpgid`, daemons) are out of
//! reach, as with any process-group based supervision.
//!
//! # Example
//!
//! `cat` makes a perfect echo "agent":
//!
//! ```
//! use acp_runtime::process::{AgentCommand, ShutdownStep};
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
mod stderr;
mod stdin;
mod watch;

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_process::ChildStdout;
use futures_lite::future;
use futures_lite::io::BufReader;

pub use command::AgentCommand;
pub use exit::{AgentExit, AgentExitStatus, AgentProcessError, ShutdownStep};
pub use stdin::AgentStdin;

use stdin::StdinPipe;
use watch::Shared;

/// How long [`AgentProcess::shutdown`] waits, by default, for the agent to exit by itself
/// after its stdin was closed: 2 seconds.
///
/// Long enough for an agent to notice end-of-file, cancel its work and flush its logs;
/// short enough that an editor closing a session does not appear to hang. Agents known to
/// need longer can be given it with [`AgentCommand::shutdown_grace`].
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How long [`AgentProcess::shutdown`] waits, by default, after SIGTERM before sending
/// SIGKILL: 1 second. Configure it with [`AgentCommand::term_grace`].
pub const DEFAULT_TERM_GRACE: Duration = Duration::from_secs(1);

/// How many stderr lines the tail keeps by default: 64.
pub const DEFAULT_STDERR_TAIL_LINES: usize = 64;

/// How many bytes of stderr text the tail keeps by default: 16 KiB.
pub const DEFAULT_STDERR_TAIL_BYTES: usize = 16 * 1024;

/// Capacity of the buffer in front of the agent's stdout: 64 KiB.
pub const STDOUT_BUFFER_BYTES: usize = 64 * 1024;

/// The longest stderr line delivered in one piece: 64 KiB. Longer lines reach the
/// callback and the tail as several consecutive lines, so that an agent writing endless
/// text without a line break cannot make the tail grow without bound.
pub const MAX_STDERR_LINE_BYTES: usize = 64 * 1024;

/// The agent's stdout, buffered by [`STDOUT_BUFFER_BYTES`]; read it as newline-delimited
/// JSON-RPC with [`futures_lite::AsyncBufReadExt`].
pub type AgentStdout = BufReader<ChildStdout>;

/// A running (or exited) agent, leader of its own process group.
///
/// # Dropping
///
/// Dropping the handle sends SIGKILL to the agent's whole process group right away, and
/// closes its stdin even if an [`AgentStdin`] is still held. The background task keeps
/// running until it has observed the exit and reaped the leader, so futures obtained from
/// [`exited`](Self::exited) before the drop still resolve (with
/// [`ShutdownStep::Killed`]). Use [`shutdown`](Self::shutdown) to give the agent a chance
/// to exit cleanly.
pub struct AgentProcess {
    pgid: libc::pid_t,
    program: String,
    stdin: Option<AgentStdin>,
    stdout: Option<AgentStdout>,
    stdin_pipe: Arc<StdinPipe>,
    shared: Arc<Shared>,
    exit_listener: async_channel::Receiver<Infallible>,
    /// Its closing tells the background task that nobody reads the stderr tail any more.
    _handle_alive: async_channel::Sender<Infallible>,
    shutdown_grace: Duration,
    term_grace: Duration,
}

/// Starts the process supervisor now, if it is not running yet, and returns its process id.
///
/// The first spawn of an agent or terminal command starts it anyway; call this early in
/// `main` to fork it while the program is still small (it starts as a copy of this process),
/// or to learn that it cannot run. See the [module docs](self#when-this-process-dies).
///
/// ```
/// let pid = acp_runtime::process::start_supervisor()?;
/// assert_eq!(acp_runtime::process::supervisor_id(), Some(pid));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn start_supervisor() -> io::Result<u32> {
    crate::os::supervisor::start()
}

/// The process id of the process supervisor while it runs; `None` before the first spawn,
/// or if it could not be started or has died.
pub fn supervisor_id() -> Option<u32> {
    crate::os::supervisor::id()
}

impl AgentProcess {
    /// The protocol pipes, reader first, as the connection layer needs them: `None` if
    /// either was taken already.
    pub fn take_stdio(&mut self) -> Option<(AgentStdout, AgentStdin)> {
        if self.stdin.is_none() || self.stdout.is_none() {
            return None;
        }
        Some((self.stdout.take()?, self.stdin.take()?))
    }

    /// The two protocol pipes as plain descriptors (stdout to read, stdin to write), for a
    /// caller that waits on them itself (see `client::run_spawned`); `None` once taken.
    ///
    /// The agent sees end of input when the returned stdin descriptor is closed: close it
    /// before [`shutdown`](Self::shutdown), whose first step can no longer do it.
    #[cfg(target_os = "linux")]
    pub(crate) fn take_pipe_fds(
        &mut self,
    ) -> Option<io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>> {
        use std::os::fd::AsFd;
        let (stdout, stdin) = self.take_stdio()?;
        let stdout = stdout.into_inner();
        let stdin = lock(&stdin.pipe.state).pipe.take()?;
        // Duplicates outlive the originals, whose drop deregisters them from the reactor.
        Some(
            stdout
                .as_fd()
                .try_clone_to_owned()
                .and_then(|out| Ok((out, stdin.as_fd().try_clone_to_owned()?))),
        )
    }

    /// The writer for the agent's stdin, the first time it is asked for; `None` afterwards.
    pub fn take_stdin(&mut self) -> Option<AgentStdin> {
        self.stdin.take()
    }

    /// The reader for the agent's stdout, the first time it is asked for; `None`
    /// afterwards.
    pub fn take_stdout(&mut self) -> Option<AgentStdout> {
        self.stdout.take()
    }

    /// The agent's process id, which is also the id of its process group.
    pub fn id(&self) -> u32 {
        // Positive by construction: it came from a `u32`.
        self.pgid as u32
    }

    /// How long [`shutdown`](Self::shutdown) waits after closing stdin before SIGTERM
    /// ([`AgentCommand::shutdown_grace`]).
    pub fn shutdown_grace(&self) -> Duration {
        self.shutdown_grace
    }

    /// How long [`shutdown`](Self::shutdown) waits after SIGTERM before SIGKILL
    /// ([`AgentCommand::term_grace`]).
    pub fn term_grace(&self) -> Duration {
        self.term_grace
    }

    /// The program as it was given to [`AgentCommand::new`], for messages.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The last lines the agent wrote to stderr, joined by `\n`, including a final line
    /// not yet terminated; bounded by [`AgentCommand::stderr_tail_lines`] and
    /// [`AgentCommand::stderr_tail_bytes`].
    pub fn stderr_tail(&self) -> String {
        lock(&self.shared.stderr).text()
    }

    /// Resolves once the agent has exited, however that came about; any number of callers
    /// may wait, before or after the exit. The future borrows nothing, so it can be
    /// spawned, and it still resolves if the handle is dropped in the meantime.
    ///
    /// Its [`stderr_tail`](AgentExit::stderr_tail) is the tail as it stood right after the
    /// exit, including everything the agent wrote before exiting.
    pub fn exited(&self) -> impl Future<Output = AgentExit> + Send + 'static {
        let listener = self.exit_listener.clone();
        let shared = Arc::clone(&self.shared);
        async move {
            // Returns once the channel is closed: the exit is recorded by then.
            let _ = listener.recv().await;
            lock(&shared.outcome)
                .exit
                .clone()
                .unwrap_or_else(|| AgentExit {
                    status: AgentExitStatus::UNKNOWN,
                    step: ShutdownStep::NotRequested,
                    stderr_tail: lock(&shared.stderr).text(),
                })
        }
    }

    /// The exit, if it has already been observed; never waits.
    pub fn try_exited(&self) -> Option<AgentExit> {
        lock(&self.shared.outcome).exit.clone()
    }

    /// Ends the agent in steps and returns how it ended; see [`ShutdownStep`] for the
    /// steps. If the agent had already exited, returns that exit without doing anything.
    ///
    /// Before the first step, the stdout reader is dropped if it was never taken, so an
    /// agent blocked writing to a full stdout pipe can proceed. Dropping the returned future
    /// before it completes drops the handle, which kills the group at once.
    pub async fn shutdown(mut self) -> AgentExit {
        if let Some(exit) = self.try_exited() {
            return exit;
        }
        drop(self.stdout.take());

        self.shared.begin(ShutdownStep::StdinClosed);
        self.stdin_pipe.close();
        if let Some(exit) = self.exited_within(self.shutdown_grace).await {
            return exit;
        }

        self.shared.begin(ShutdownStep::Terminated);
        self.shared.signal_group(libc::SIGTERM);
        if let Some(exit) = self.exited_within(self.term_grace).await {
            return exit;
        }

        self.shared.begin(ShutdownStep::Killed);
        self.shared.signal_group(libc::SIGKILL);
        self.exited().await
    }

    async fn exited_within(&self, grace: Duration) -> Option<AgentExit> {
        future::or(async { Some(self.exited().await) }, async {
            smol::Timer::after(grace).await;
            None
        })
        .await
    }
}

impl fmt::Debug for AgentProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentProcess")
            .field("pid", &self.pgid)
            .field("program", &self.program)
            .field("exit", &self.try_exited())
            .finish_non_exhaustive()
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.shared.begin(ShutdownStep::Killed);
        self.shared.signal_group(libc::SIGKILL);
        self.stdin_pipe.close();
    }
}

/// A poisoned lock only means a thread panicked mid-update; every update here leaves the
/// data consistent, so keep going rather than cascading the panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
