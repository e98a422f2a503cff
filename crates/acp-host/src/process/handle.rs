//! The handle of a running agent: its pipes, its exit, and its staged shutdown.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_process::ChildStdout;
use futures_lite::future;
use futures_lite::io::BufReader;

use super::exit::{AgentExit, ShutdownStep};
use super::stderr::{StderrLineCallback, StderrTail};
use super::stdin::{AgentStdin, StdinPipe, StdinState};
use super::watch::{Outcome, Shared, Supervision, supervise};
use crate::os::exit_status::ExitStatus;
use crate::os::group::SpawnedGroup;
use crate::os::lock;

/// Capacity of the buffer in front of the agent's stdout: 64 KiB.
pub const STDOUT_BUFFER_BYTES: usize = 64 * 1024;

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

/// What [`AgentProcess::start`] needs besides the spawned group: the command's settings.
pub(super) struct Settings {
    pub(super) program: String,
    pub(super) stderr_line: Option<StderrLineCallback>,
    pub(super) stderr_tail_lines: usize,
    pub(super) stderr_tail_bytes: usize,
    pub(super) shutdown_grace: Duration,
    pub(super) term_grace: Duration,
}

impl AgentProcess {
    /// Takes charge of an agent just spawned with its three pipes, and starts the thread that
    /// drains its stderr and observes its exit. If the thread cannot be started the group is
    /// killed and the error returned.
    pub(super) fn start(spawned: SpawnedGroup, settings: Settings) -> io::Result<Self> {
        let SpawnedGroup {
            leader,
            exit,
            stdin,
            stdout,
            stderr,
        } = spawned;
        let pgid = leader.pgid();
        let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
            unreachable!("async-process returns every pipe that was requested");
        };

        let shared = Arc::new(Shared {
            leader: Mutex::new(leader),
            stderr: Mutex::new(StderrTail::new(
                settings.stderr_tail_lines,
                settings.stderr_tail_bytes,
            )),
            outcome: Mutex::new(Outcome {
                step: ShutdownStep::NotRequested,
                exit: None,
                on_exit: Vec::new(),
            }),
        });
        let stdin_pipe = Arc::new(StdinPipe {
            state: Mutex::new(StdinState {
                pipe: Some(stdin),
                blocked_writer: None,
            }),
        });
        // Nothing is ever sent on either channel: closing one is a broadcast that every
        // receiver sees, however many there are and whenever they arrive.
        let (exit_notifier, exit_listener) = async_channel::bounded::<Infallible>(1);
        let (handle_alive, handle_dropped) = async_channel::bounded::<Infallible>(1);

        // Detached rather than owned by the handle: even after the handle is dropped it must
        // observe the exit, so that the leader gets reaped and earlier waiters resolve.
        //
        // On a thread of its own rather than smol's executor: executor threads compete with
        // the connection's thread for the I/O reactor, which would turn every wake-up of the
        // connection into a hand-off between threads. This thread only sleeps until stderr
        // or the exit has something; it is the only thread an agent costs (whoever waits for
        // the exit is woken from it, see `on_exit`).
        //
        // If the thread cannot be started, dropping `supervision` drops the last `shared`,
        // whose leader kills the group on drop.
        let supervision = supervise(Supervision {
            stderr,
            exit,
            shared: Arc::clone(&shared),
            stderr_line: settings.stderr_line,
            exit_notifier,
            handle_dropped,
        });
        std::thread::Builder::new()
            .name("acp-agent-supervisor".into())
            .spawn(move || future::block_on(supervision))?;

        Ok(AgentProcess {
            pgid,
            program: settings.program,
            stdin: Some(AgentStdin {
                pipe: Arc::clone(&stdin_pipe),
            }),
            stdout: Some(BufReader::with_capacity(STDOUT_BUFFER_BYTES, stdout)),
            stdin_pipe,
            shared,
            exit_listener,
            _handle_alive: handle_alive,
            shutdown_grace: settings.shutdown_grace,
            term_grace: settings.term_grace,
        })
    }

    /// Calls `callback` with the exit once it is recorded, on the supervision thread, or at
    /// once if it was recorded already. For the connection layer, which fails its pending
    /// calls then: unlike a waiter on [`exited`](Self::exited), it needs no thread or task.
    /// The callback must not block; a panic in it is caught.
    pub fn on_exit(&self, callback: impl FnOnce(&AgentExit) + Send + 'static) {
        let exit = {
            let mut outcome = lock(&self.shared.outcome);
            match &outcome.exit {
                Some(exit) => exit.clone(),
                None => {
                    outcome.on_exit.push(Box::new(callback));
                    return;
                }
            }
        };
        callback(&exit);
    }

    /// The protocol pipes, reader first, as the connection layer needs them: `None` if
    /// either was taken already.
    pub fn take_stdio(&mut self) -> Option<(AgentStdout, AgentStdin)> {
        if self.stdin.is_none() || self.stdout.is_none() {
            return None;
        }
        Some((self.stdout.take()?, self.stdin.take()?))
    }

    /// The two protocol pipes as plain descriptors (stdout to read, stdin to write), for a
    /// caller that waits on them itself (acp-runtime's `client::run_spawned` runs them with
    /// [`crate::pipe_loop`]); `None` once taken.
    ///
    /// The agent sees end of input when the returned stdin descriptor is closed: close it
    /// before [`shutdown`](Self::shutdown), whose first step can no longer do it.
    #[cfg(target_os = "linux")]
    pub fn take_pipe_fds(
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
    /// ([`AgentCommand::shutdown_grace`](super::AgentCommand::shutdown_grace)).
    pub fn shutdown_grace(&self) -> Duration {
        self.shutdown_grace
    }

    /// How long [`shutdown`](Self::shutdown) waits after SIGTERM before SIGKILL
    /// ([`AgentCommand::term_grace`](super::AgentCommand::term_grace)).
    pub fn term_grace(&self) -> Duration {
        self.term_grace
    }

    /// The program as it was given to [`AgentCommand::new`], for messages.
    ///
    /// [`AgentCommand::new`]: super::AgentCommand::new
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The last lines the agent wrote to stderr, joined by `\n`, including a final line
    /// not yet terminated; bounded by [`AgentCommand::stderr_tail_lines`] and
    /// [`AgentCommand::stderr_tail_bytes`].
    ///
    /// [`AgentCommand::stderr_tail_lines`]: super::AgentCommand::stderr_tail_lines
    /// [`AgentCommand::stderr_tail_bytes`]: super::AgentCommand::stderr_tail_bytes
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
                    status: ExitStatus::UNKNOWN,
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
        self.shared.signal(libc::SIGTERM);
        if let Some(exit) = self.exited_within(self.term_grace).await {
            return exit;
        }

        self.shared.begin(ShutdownStep::Killed);
        self.shared.signal(libc::SIGKILL);
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
        self.shared.signal(libc::SIGKILL);
        self.stdin_pipe.close();
    }
}
