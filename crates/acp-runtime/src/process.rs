//! Spawning an agent for a client, and making sure nothing of it outlives the connection.
//!
//! # Lifecycle
//!
//! 1. [`AgentCommand::spawn`] starts the agent as the leader of a new process group, with
//!    stdin and stdout piped for the protocol and stderr piped to a background task.
//! 2. The connection layer takes the two protocol pipes with
//!    [`AgentProcess::take_stdin`] and [`AgentProcess::take_stdout`]. Meanwhile a
//!    supervisor thread of its own (one per agent, named `acp-agent-supervisor`) reads
//!    stderr continuously, so the agent
//!    never stalls on a full stderr pipe: each line goes to the optional
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
//!    at once.
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

use crate::child_exit::RawExit;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::future::Future;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use async_process::{ChildStderr, ChildStdin, ChildStdout, Stdio};
use futures_lite::io::BufReader;
use futures_lite::{AsyncWrite, future};

use crate::host::signal_name;

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

/// Bytes requested from the stderr pipe per read.
const STDERR_READ_CHUNK: usize = 64 * 1024;

type StderrLineCallback = Arc<dyn Fn(&str) + Send + Sync>;

/// The agent's stdout, buffered by [`STDOUT_BUFFER_BYTES`]; read it as newline-delimited
/// JSON-RPC with [`futures_lite::AsyncBufReadExt`].
pub type AgentStdout = BufReader<ChildStdout>;

/// What to run as the agent, and how to supervise it.
///
/// The program is looked up in `PATH` when it contains no slash (in the `PATH` given with
/// [`env`](Self::env), if any) and executed directly, not through a shell. The agent
/// inherits this process's environment plus the [`env`](Self::env) additions.
///
/// ```
/// use std::time::Duration;
///
/// use acp_runtime::process::AgentCommand;
///
/// let command = AgentCommand::new("my-agent")
///     .args(["--acp", "--verbose"])
///     .env("RUST_LOG", "debug")
///     .cwd("/tmp")
///     .on_stderr_line(|line| eprintln!("[agent] {line}"))
///     .shutdown_grace(Duration::from_secs(10));
/// ```
#[derive(Clone)]
pub struct AgentCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    stderr_line: Option<StderrLineCallback>,
    stderr_tail_lines: usize,
    stderr_tail_bytes: usize,
    shutdown_grace: Duration,
    term_grace: Duration,
}

impl AgentCommand {
    /// Runs `program` with no arguments, the inherited environment and working directory,
    /// and the default limits and grace periods.
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            stderr_line: None,
            stderr_tail_lines: DEFAULT_STDERR_TAIL_LINES,
            stderr_tail_bytes: DEFAULT_STDERR_TAIL_BYTES,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            term_grace: DEFAULT_TERM_GRACE,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends several arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds or overrides one environment variable of the agent.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Runs the agent in `dir` instead of this process's working directory.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Calls `callback` with every line the agent writes to stderr, without the line break
    /// (and without a `\r` before it), invalid UTF-8 replaced by U+FFFD.
    ///
    /// The callback runs on the agent's supervisor thread, which drains stderr: while it
    /// runs, stderr is not read, so it must not block for long (hand the line to a channel
    /// or a logger). A panic in the callback is caught and the line skipped.
    pub fn on_stderr_line(mut self, callback: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.stderr_line = Some(Arc::new(callback));
        self
    }

    /// How many of the last stderr lines [`AgentProcess::stderr_tail`] keeps (default
    /// [`DEFAULT_STDERR_TAIL_LINES`]); 0 keeps none.
    pub fn stderr_tail_lines(mut self, lines: usize) -> Self {
        self.stderr_tail_lines = lines;
        self
    }

    /// How many bytes of text (line breaks not counted) the stderr tail keeps at most
    /// (default [`DEFAULT_STDERR_TAIL_BYTES`]). The oldest lines go first; a single line
    /// longer than this keeps only its end.
    pub fn stderr_tail_bytes(mut self, bytes: usize) -> Self {
        self.stderr_tail_bytes = bytes;
        self
    }

    /// How long [`AgentProcess::shutdown`] waits for the agent to exit after closing its
    /// stdin, before sending SIGTERM (default [`DEFAULT_SHUTDOWN_GRACE`]).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// How long [`AgentProcess::shutdown`] waits after SIGTERM before sending SIGKILL
    /// (default [`DEFAULT_TERM_GRACE`]).
    pub fn term_grace(mut self, grace: Duration) -> Self {
        self.term_grace = grace;
        self
    }

    /// Starts the agent in a new process group and begins draining its stderr and watching
    /// for its exit.
    ///
    /// Needs no executor of its own: the supervision runs on a thread of its own.
    pub fn spawn(&self) -> Result<AgentProcess, AgentProcessError> {
        let program = self.program.to_string_lossy().into_owned();
        if let Some(cwd) = &self.cwd
            && !cwd.is_dir()
        {
            return Err(AgentProcessError::MissingCwd(cwd.clone()));
        }

        let mut std_command = std::process::Command::new(&self.program);
        std_command
            .args(&self.args)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .process_group(0);
        if let Some(cwd) = &self.cwd {
            std_command.current_dir(cwd);
        }
        let mut command = async_process::Command::from(std_command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Killing is this module's job, and it reaches the whole group rather than just
            // the leader; reaping on drop stays as a backstop.
            .kill_on_drop(false)
            .reap_on_drop(true);
        let mut leader = command.spawn().map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                AgentProcessError::NotFound {
                    searched_path: self.searched_path(),
                    program: program.clone(),
                }
            } else {
                AgentProcessError::Spawn {
                    program: program.clone(),
                    source,
                }
            }
        })?;

        // A pid always fits in pid_t; `Child::id` merely widens it to u32.
        let pgid = leader.id() as libc::pid_t;
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            leader.stdin.take(),
            leader.stdout.take(),
            leader.stderr.take(),
        ) else {
            kill_group(pgid, libc::SIGKILL);
            unreachable!("async-process returns every pipe that was requested");
        };

        let shared = Arc::new(Shared {
            leader: Mutex::new(Some(leader)),
            stderr: Mutex::new(StderrTail::new(
                self.stderr_tail_lines,
                self.stderr_tail_bytes,
            )),
            outcome: Mutex::new(Outcome {
                step: ShutdownStep::NotRequested,
                exit: None,
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
        // or the exit has something.
        let supervision = supervise(Supervision {
            pgid,
            stderr,
            exit: ExitWatch::new(pgid),
            shared: Arc::clone(&shared),
            stderr_line: self.stderr_line.clone(),
            exit_notifier,
            handle_dropped,
        });
        std::thread::Builder::new()
            .name("acp-agent-supervisor".into())
            .spawn(move || future::block_on(supervision))
            .map_err(|source| AgentProcessError::Spawn {
                program: program.clone(),
                source,
            })?;

        Ok(AgentProcess {
            pgid,
            program,
            stdin: Some(AgentStdin {
                pipe: Arc::clone(&stdin_pipe),
            }),
            stdout: Some(BufReader::with_capacity(STDOUT_BUFFER_BYTES, stdout)),
            stdin_pipe,
            shared,
            exit_listener,
            _handle_alive: handle_alive,
            shutdown_grace: self.shutdown_grace,
            term_grace: self.term_grace,
        })
    }

    /// The `PATH` that a lookup of the program went through, or `None` when the program
    /// names a path and no lookup happened.
    fn searched_path(&self) -> Option<String> {
        if self.program.as_bytes().contains(&b'/') {
            return None;
        }
        let overridden = self
            .env
            .iter()
            .rev()
            .find(|(name, _)| name == OsStr::new("PATH"))
            .map(|(_, value)| value.clone());
        let path = overridden
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        Some(path.to_string_lossy().into_owned())
    }
}

impl fmt::Debug for AgentCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env)
            .field("cwd", &self.cwd)
            .field("on_stderr_line", &self.stderr_line.as_ref().map(|_| ".."))
            .field("stderr_tail_lines", &self.stderr_tail_lines)
            .field("stderr_tail_bytes", &self.stderr_tail_bytes)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("term_grace", &self.term_grace)
            .finish()
    }
}

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
        self.shared.signal_group(self.pgid, libc::SIGTERM);
        if let Some(exit) = self.exited_within(self.term_grace).await {
            return exit;
        }

        self.shared.begin(ShutdownStep::Killed);
        self.shared.signal_group(self.pgid, libc::SIGKILL);
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
        self.shared.signal_group(self.pgid, libc::SIGKILL);
        self.stdin_pipe.close();
    }
}

/// The steps of [`AgentProcess::shutdown`], in order; an [`AgentExit`] names the last one
/// taken before the agent exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShutdownStep {
    /// No step: the agent exited before shutdown began (it crashed, or chose to).
    NotRequested,
    /// Step 1: its stdin was closed; a well-behaved agent exits on end-of-file.
    StdinClosed,
    /// Step 2: it was still running after the shutdown grace, and its group got SIGTERM.
    Terminated,
    /// Step 3: it was still running after the SIGTERM grace, and its group got SIGKILL.
    /// Also reported when the [`AgentProcess`] was dropped while the agent ran.
    Killed,
}

impl fmt::Display for ShutdownStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShutdownStep::NotRequested => "before shutdown",
            ShutdownStep::StdinClosed => "after its stdin was closed",
            ShutdownStep::Terminated => "after SIGTERM",
            ShutdownStep::Killed => "after SIGKILL",
        })
    }
}

/// How the agent process ended.
///
/// Exactly one field is set, except when the exit could not be observed (the operating
/// system refused to report it), where both are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AgentExitStatus {
    /// The exit code, if the agent exited normally.
    pub code: Option<i32>,
    /// The name of the signal that ended the agent, such as `"SIGKILL"` (see
    /// [`crate::host::signal_name`]).
    pub signal: Option<String>,
}

impl AgentExitStatus {
    const UNKNOWN: Self = Self {
        code: None,
        signal: None,
    };

    /// Whether the agent exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl fmt::Display for AgentExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.code, &self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(signal)) => write!(f, "signal {signal}"),
            (None, None) => f.write_str("an unknown status"),
        }
    }
}

/// Everything known about the agent's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentExit {
    /// How the process ended.
    pub status: AgentExitStatus,
    /// The last shutdown step taken before the exit was observed.
    pub step: ShutdownStep,
    /// The stderr tail right after the exit (see [`AgentProcess::stderr_tail`]).
    pub stderr_tail: String,
}

/// The status, followed by the shutdown step unless the agent exited before shutdown:
/// `exit code 3`, `signal SIGKILL after SIGKILL`.
impl fmt::Display for AgentExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            ShutdownStep::NotRequested => write!(f, "{}", self.status),
            step => write!(f, "{} {step}", self.status),
        }
    }
}

impl From<AgentExit> for AgentProcessError {
    fn from(exit: AgentExit) -> Self {
        AgentProcessError::Crashed {
            status: exit.status,
            stderr_tail: exit.stderr_tail,
        }
    }
}

/// Why an agent could not be started, or why it is gone.
#[derive(Debug, thiserror::Error)]
pub enum AgentProcessError {
    /// The program does not exist: no file at the given path, or, for a bare name, no
    /// executable of that name in any directory of `PATH`.
    #[error("agent program `{program}` not found{}", describe_search(.searched_path.as_deref()))]
    NotFound {
        /// The program that was asked for.
        program: String,
        /// The `PATH` that was searched (empty if unset); `None` when the program was a
        /// path, which is used as is.
        searched_path: Option<String>,
    },
    /// The configured working directory does not exist or is not a directory.
    #[error("agent working directory `{}` does not exist or is not a directory", .0.display())]
    MissingCwd(PathBuf),
    /// The program exists but could not be started (not executable, permissions, missing
    /// interpreter, resource limits).
    #[error("could not start agent program `{program}`: {source}")]
    Spawn {
        /// The program that was asked for.
        program: String,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// The agent exited while the connection still needed it. Built from an [`AgentExit`]
    /// with `From`.
    #[error("agent exited with {status}; {}", describe_tail(.stderr_tail))]
    Crashed {
        /// How it ended.
        status: AgentExitStatus,
        /// Its last stderr lines.
        stderr_tail: String,
    },
}

fn describe_search(searched_path: Option<&str>) -> String {
    match searched_path {
        None => String::new(),
        Some("") => " (PATH is empty or unset)".to_owned(),
        Some(path) => format!(" in any directory of PATH ({path})"),
    }
}

fn describe_tail(stderr_tail: &str) -> String {
    if stderr_tail.is_empty() {
        "it wrote nothing to stderr".to_owned()
    } else {
        format!("last stderr lines:\n{stderr_tail}")
    }
}

/// The writer for the agent's stdin.
///
/// Closing it ([`AsyncWriteExt::close`](futures_lite::AsyncWriteExt::close)) or dropping it
/// closes the agent's stdin. [`AgentProcess::shutdown`] and dropping the
/// [`AgentProcess`] close the stdin too, while this writer may still be held: pending and
/// later writes then fail with [`io::ErrorKind::BrokenPipe`].
pub struct AgentStdin {
    pipe: Arc<StdinPipe>,
}

impl fmt::Debug for AgentStdin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let open = lock(&self.pipe.state).pipe.is_some();
        f.debug_struct("AgentStdin").field("open", &open).finish()
    }
}

impl AsyncWrite for AgentStdin {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.pipe
            .poll_with(cx, |pipe, cx| Pin::new(pipe).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.pipe
            .poll_with(cx, |pipe, cx| Pin::new(pipe).poll_flush(cx))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self
            .as_ref()
            .pipe
            .poll_with(cx, |pipe, cx| Pin::new(pipe).poll_flush(cx))
        {
            Poll::Pending => return Poll::Pending,
            // Already closed: closing twice is fine.
            Poll::Ready(Err(error)) if error.kind() == io::ErrorKind::BrokenPipe => {}
            Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
            Poll::Ready(Ok(())) => {}
        }
        self.pipe.close();
        Poll::Ready(Ok(()))
    }
}

impl Drop for AgentStdin {
    fn drop(&mut self) {
        self.pipe.close();
    }
}

/// The agent's stdin, shared by the writer handed out and the process handle, so that
/// either can close it.
struct StdinPipe {
    state: Mutex<StdinState>,
}

struct StdinState {
    pipe: Option<ChildStdin>,
    /// The reactor only wakes a writer waiting for room in a pipe that is still open, so a
    /// writer blocked at the moment of closing is woken here.
    blocked_writer: Option<Waker>,
}

impl StdinPipe {
    fn poll_with<T>(
        &self,
        cx: &mut Context<'_>,
        operation: impl FnOnce(&mut ChildStdin, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let mut state = lock(&self.state);
        let Some(pipe) = state.pipe.as_mut() else {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the agent's stdin was closed",
            )));
        };
        let result = operation(pipe, cx);
        if result.is_pending() {
            state.blocked_writer = Some(cx.waker().clone());
        }
        result
    }

    fn close(&self) {
        let (pipe, blocked_writer) = {
            let mut state = lock(&self.state);
            (state.pipe.take(), state.blocked_writer.take())
        };
        drop(pipe);
        if let Some(waker) = blocked_writer {
            waker.wake();
        }
    }
}

/// State shared by the handle and the background task.
struct Shared {
    /// Held unreaped until the exit is observed and the group killed (see the module docs);
    /// a group signal is sent only while this lock is held and the leader is still here.
    leader: Mutex<Option<async_process::Child>>,
    stderr: Mutex<StderrTail>,
    outcome: Mutex<Outcome>,
}

struct Outcome {
    step: ShutdownStep,
    exit: Option<AgentExit>,
}

impl Shared {
    /// Notes the step about to be taken, unless the agent has already exited.
    fn begin(&self, step: ShutdownStep) {
        let mut outcome = lock(&self.outcome);
        if outcome.exit.is_none() {
            outcome.step = step;
        }
    }

    fn signal_group(&self, pgid: libc::pid_t, signal: libc::c_int) {
        let leader = lock(&self.leader);
        if leader.is_some() {
            kill_group(pgid, signal);
        }
    }

    /// Kills whatever the leader left behind in its group, then reaps the leader.
    fn kill_leftovers_and_reap(&self, pgid: libc::pid_t) {
        let leader = {
            let mut leader = lock(&self.leader);
            if leader.is_some() {
                kill_group(pgid, libc::SIGKILL);
            }
            leader.take()
        };
        if let Some(mut leader) = leader {
            // The leader has exited, so this reaps it at once instead of leaving the zombie
            // to async-process's background thread; its status was read already.
            let _ = leader.try_status();
        }
    }
}

/// Sends `signal` to every process of the group. Failure is ignored: ESRCH means the group
/// is gone already, and the only other possible error (EPERM) leaves nothing to try.
fn kill_group(pgid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: `killpg` only sends a signal; it has no memory-safety preconditions.
    unsafe { libc::killpg(pgid, signal) };
}

/// A poisoned lock only means a thread panicked mid-update; every update here leaves the
/// data consistent, so keep going rather than cascading the panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The last lines of stderr, plus the line being written.
struct StderrTail {
    lines: VecDeque<String>,
    /// Total length of `lines`.
    bytes: usize,
    max_lines: usize,
    max_bytes: usize,
    /// The start of a line whose line break has not arrived yet.
    partial: Vec<u8>,
}

impl StderrTail {
    fn new(max_lines: usize, max_bytes: usize) -> Self {
        Self {
            lines: VecDeque::new(),
            bytes: 0,
            max_lines,
            max_bytes,
            partial: Vec::new(),
        }
    }

    /// Takes in a piece of stderr; each line it completes is kept and, when `completed` is
    /// given, also appended there.
    fn absorb(&mut self, mut chunk: &[u8], mut completed: Option<&mut Vec<String>>) {
        while let Some(newline) = chunk.iter().position(|&byte| byte == b'\n') {
            self.partial.extend_from_slice(&chunk[..newline]);
            if self.partial.last() == Some(&b'\r') {
                self.partial.pop();
            }
            self.complete_line(completed.as_deref_mut());
            chunk = &chunk[newline + 1..];
        }
        self.partial.extend_from_slice(chunk);
        while self.partial.len() > MAX_STDERR_LINE_BYTES {
            let piece = utf8_piece_len(&self.partial, MAX_STDERR_LINE_BYTES);
            let rest = self.partial.split_off(piece);
            self.complete_line(completed.as_deref_mut());
            self.partial = rest;
        }
    }

    /// End of stderr: an unterminated last line still counts.
    fn finish(&mut self, completed: Option<&mut Vec<String>>) {
        if !self.partial.is_empty() {
            self.complete_line(completed);
        }
    }

    fn complete_line(&mut self, completed: Option<&mut Vec<String>>) {
        let line = String::from_utf8_lossy(&self.partial).into_owned();
        self.partial.clear();
        if let Some(completed) = completed {
            completed.push(line.clone());
        }
        self.keep(line);
    }

    fn keep(&mut self, mut line: String) {
        if line.len() > self.max_bytes {
            line = keep_end(&line, self.max_bytes).to_owned();
        }
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.lines.len() > self.max_lines || self.bytes > self.max_bytes {
            let Some(oldest) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= oldest.len();
        }
    }

    fn text(&self) -> String {
        let mut text = Vec::from_iter(self.lines.iter().map(String::as_str)).join("\n");
        if !self.partial.is_empty() && self.max_lines > 0 {
            let partial = String::from_utf8_lossy(&self.partial);
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(keep_end(&partial, self.max_bytes));
        }
        text
    }
}

/// The end of `text`, at most `max_bytes` long, starting on a character boundary.
fn keep_end(text: &str, max_bytes: usize) -> &str {
    &text[text.ceil_char_boundary(text.len().saturating_sub(max_bytes))..]
}

/// How much of `bytes` to cut off as one piece of at most `limit` bytes without splitting
/// a UTF-8 sequence (unless the input is not UTF-8 to begin with).
fn utf8_piece_len(bytes: &[u8], limit: usize) -> usize {
    let is_continuation = |byte: u8| byte & 0b1100_0000 == 0b1000_0000;
    (limit.saturating_sub(3)..=limit)
        .rev()
        .find(|&cut| cut > 0 && !is_continuation(bytes[cut]))
        .unwrap_or(limit)
}

struct Supervision {
    pgid: libc::pid_t,
    stderr: ChildStderr,
    exit: ExitWatch,
    shared: Arc<Shared>,
    stderr_line: Option<StderrLineCallback>,
    exit_notifier: async_channel::Sender<Infallible>,
    handle_dropped: async_channel::Receiver<Infallible>,
}

/// The background task: drains stderr until the agent exits, then kills the leftovers of
/// its group, records the exit, and keeps draining stderr for whatever escaped the group
/// for as long as the handle exists.
async fn supervise(supervision: Supervision) {
    let Supervision {
        pgid,
        stderr,
        exit,
        shared,
        stderr_line,
        exit_notifier,
        handle_dropped,
    } = supervision;
    let mut drain = StderrDrain {
        stderr,
        open: true,
        chunk: vec![0; STDERR_READ_CHUNK],
        shared: &shared,
        stderr_line,
    };
    // Built once and polled across iterations: the blocking fallback holds a thread.
    let mut exit = pin!(exit.wait());

    let status = loop {
        if !drain.open {
            break exit.await;
        }
        let event = future::or(async { Event::Exited(exit.as_mut().await) }, async {
            Event::Read(drain.read().await)
        })
        .await;
        match event {
            Event::Exited(status) => break status,
            Event::Read(read) => drain.absorb(read),
        }
    };
    // Also reached when the exit could not be watched (an error from the OS): an agent
    // that cannot be supervised is not left running either.
    shared.kill_leftovers_and_reap(pgid);
    // Everything the leader wrote is in the pipe by now (a process's descriptors are
    // closed before its exit is reported): take it in before recording the exit, so that
    // the recorded tail is complete.
    while drain.open {
        match future::poll_once(drain.read()).await {
            Some(read) => drain.absorb(read),
            None => break,
        }
    }
    {
        let mut outcome = lock(&shared.outcome);
        let step = outcome.step;
        outcome.exit = Some(AgentExit {
            status: status.unwrap_or(AgentExitStatus::UNKNOWN),
            step,
            stderr_tail: lock(&shared.stderr).text(),
        });
    }
    drop(exit_notifier);

    while drain.open {
        let read = future::or(async { Some(drain.read().await) }, async {
            let _ = handle_dropped.recv().await;
            None
        })
        .await;
        match read {
            Some(read) => drain.absorb(read),
            None => break,
        }
    }
}

enum Event {
    Exited(io::Result<AgentExitStatus>),
    Read(io::Result<usize>),
}

/// The reading end of stderr and what to do with each line.
struct StderrDrain<'a> {
    stderr: ChildStderr,
    /// False once end-of-file (or a read error) was seen.
    open: bool,
    chunk: Vec<u8>,
    shared: &'a Shared,
    stderr_line: Option<StderrLineCallback>,
}

impl StderrDrain<'_> {
    async fn read(&mut self) -> io::Result<usize> {
        futures_lite::AsyncReadExt::read(&mut self.stderr, &mut self.chunk).await
    }

    fn absorb(&mut self, read: io::Result<usize>) {
        let mut completed = self.stderr_line.as_ref().map(|_| Vec::new());
        {
            let mut tail = lock(&self.shared.stderr);
            match read {
                Ok(0) | Err(_) => {
                    // A read error on a pipe does not heal; treat it as the end.
                    self.open = false;
                    tail.finish(completed.as_mut());
                }
                Ok(length) => tail.absorb(&self.chunk[..length], completed.as_mut()),
            }
        }
        // Outside the lock, so the callback may itself look at the tail.
        if let (Some(callback), Some(lines)) = (&self.stderr_line, completed) {
            for line in &lines {
                let _ = catch_unwind(AssertUnwindSafe(|| callback(line)));
            }
        }
    }
}

/// Waits for the leader's exit without reaping it.
enum ExitWatch {
    /// Linux ≥ 5.4: the pidfd turns readable on exit, and `waitid(P_PIDFD, WNOWAIT)` then
    /// reads the status.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Pidfd(smol::Async<std::os::fd::OwnedFd>),
    /// Elsewhere: a blocking `waitid(P_PID, WNOWAIT)` on smol's blocking thread pool.
    Blocking(libc::pid_t),
}

impl ExitWatch {
    fn new(pid: libc::pid_t) -> Self {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(pidfd) = crate::child_exit::open_pidfd(pid) {
            return Self::Pidfd(pidfd);
        }
        Self::Blocking(pid)
    }

    async fn wait(self) -> io::Result<AgentExitStatus> {
        match self {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Self::Pidfd(pidfd) => loop {
                if let Some(exit) = crate::child_exit::peek_pidfd(pidfd.get_ref())? {
                    return Ok(exit.into());
                }
                pidfd.readable().await?;
            },
            Self::Blocking(pid) => {
                let id = libc::id_t::try_from(pid).map_err(io::Error::other)?;
                smol::unblock(move || {
                    loop {
                        if let Some(exit) = crate::child_exit::peek_exit(libc::P_PID, id, 0)? {
                            return Ok(exit.into());
                        }
                    }
                })
                .await
            }
        }
    }
}

impl From<RawExit> for AgentExitStatus {
    fn from(exit: RawExit) -> Self {
        match exit {
            RawExit::Code(code) => AgentExitStatus {
                code: Some(code),
                signal: None,
            },
            RawExit::Signal(signal) => AgentExitStatus {
                code: None,
                signal: Some(signal_name(signal)),
            },
        }
    }
}
