//! The client side of the `terminal/*` methods: running commands for an agent.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_lite::{AsyncReadExt, future};
use smol::Async;

use super::output_buffer::OutputBuffer;
use super::process_group::{self, ExitWatch, GroupCommand};

/// The most output a terminal keeps when the agent asks for no limit or a larger one:
/// 4 MiB.
///
/// Terminal output travels back in a single JSON-RPC response and usually into a model's
/// context, where a few MiB is already far more than useful; the ceiling keeps a
/// connection running many chatty commands within predictable memory. Configure it with
/// [`TerminalHost::with_output_ceiling`].
pub const DEFAULT_OUTPUT_CEILING: usize = 4 * 1024 * 1024;

/// Bytes requested from the output pipe per read.
const READ_CHUNK: usize = 16 * 1024;

/// Parameters of `terminal/create`, in plain Rust types.
///
/// ```
/// use acp_runtime::host::CreateTerminal;
///
/// let request = CreateTerminal {
///     args: vec!["-c".into(), "echo hi".into()],
///     output_byte_limit: Some(1024),
///     ..CreateTerminal::new("sh")
/// };
/// assert_eq!(request.command, "sh");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateTerminal {
    /// The program to run, looked up in `PATH` when it contains no slash. It is executed
    /// directly, not through a shell.
    pub command: String,
    /// Arguments passed to the program.
    pub args: Vec<String>,
    /// Variables added to (or overriding) the environment inherited from this process.
    pub env: Vec<(String, String)>,
    /// Absolute working directory; `None` means the `default_cwd` given to
    /// [`TerminalHost::create`].
    pub cwd: Option<PathBuf>,
    /// How many bytes of output to keep; older output is dropped first. Capped by the
    /// host's output ceiling.
    pub output_byte_limit: Option<u64>,
}

impl CreateTerminal {
    /// A request to run `command` with no arguments and default settings.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            ..Self::default()
        }
    }
}

/// How a terminal's command ended (`TerminalExitStatus` / the `terminal/wait_for_exit`
/// result).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TerminalExitStatus {
    /// The exit code when the command exited normally.
    pub exit_code: Option<u32>,
    /// The name of the signal that ended the command (such as `"SIGKILL"`), if any.
    pub signal: Option<String>,
}

/// A snapshot of a terminal (the `terminal/output` result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutput {
    /// Output kept so far: stdout and stderr in the order the command wrote them.
    pub output: String,
    /// Whether older output was dropped to stay within the byte limit.
    pub truncated: bool,
    /// Present once the command has exited.
    pub exit_status: Option<TerminalExitStatus>,
}

/// Why a terminal operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    /// The id was never issued by this host, or its terminal has been released.
    #[error("unknown terminal `{0}`: it was never created on this connection or has been released")]
    UnknownTerminal(String),
    /// The terminal exists but was created for another session.
    #[error("terminal `{id}` does not belong to session `{session}`")]
    WrongSession {
        /// The terminal id that was asked for.
        id: String,
        /// The session that asked for it.
        session: String,
    },
    /// The working directory is not absolute.
    #[error("working directory `{}` must be an absolute path", .0.display())]
    RelativeCwd(PathBuf),
    /// The working directory does not exist or is not a directory.
    #[error("working directory `{}` does not exist or is not a directory", .0.display())]
    MissingCwd(PathBuf),
    /// The command could not be started.
    #[error("could not start `{command}`: {source}")]
    Spawn {
        /// The program that was asked for.
        command: String,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
    /// The command's process group could not be signalled.
    #[error("could not kill terminal `{id}` (`{command}`): {source}")]
    Kill {
        /// The terminal id.
        id: String,
        /// The terminal's program.
        command: String,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
    /// The command's exit could not be observed (an operating-system failure).
    #[error("could not observe the exit of terminal `{id}` (`{command}`): {reason}")]
    ExitUnobservable {
        /// The terminal id.
        id: String,
        /// The terminal's program.
        command: String,
        /// What went wrong.
        reason: String,
    },
}

/// Runs and tracks the terminals of one connection, keyed by terminal id.
///
/// Every command runs as the leader of its own process group with stdin closed and
/// stdout and stderr merged into one pipe. Killing (via [`kill`](Self::kill),
/// [`release`](Self::release) or drop) sends SIGKILL to the whole group at once, so
/// background children and grandchildren end with the command; there is no SIGTERM grace
/// period, because agents use kill to enforce timeouts and a command that ignores SIGTERM
/// must not be able to stall them.
///
/// Output is collected by one background task per terminal on smol's global executor,
/// so no particular executor has to drive the host. That task stops when the output pipe
/// closes or the terminal is released.
///
/// All methods take `&self`; share the host between concurrent requests with an `Arc`.
///
/// # Drop
///
/// Dropping the host releases every terminal: each process group receives SIGKILL
/// synchronously inside `drop`, so no command outlives the connection. A released terminal
/// behaves the same way. Leaders are then reaped in the background by async-process.
///
/// Background processes that leave the group on purpose (`setsid`, `setpgid`) are out of
/// reach, as with any job control.
///
/// ```
/// use acp_runtime::host::{CreateTerminal, TerminalHost};
/// use std::path::Path;
///
/// let host = TerminalHost::new();
/// let request = CreateTerminal {
///     args: vec!["-c".into(), "echo hello".into()],
///     ..CreateTerminal::new("sh")
/// };
/// let id = host.create("session-1", request, Path::new("/")).unwrap();
/// let status = smol::block_on(host.wait_for_exit("session-1", &id)).unwrap();
/// assert_eq!(status.exit_code, Some(0));
/// assert_eq!(host.output("session-1", &id).unwrap().output, "hello\n");
/// host.release("session-1", &id).unwrap();
/// ```
pub struct TerminalHost {
    terminals: Mutex<HashMap<String, Terminal>>,
    next_id: AtomicU64,
    output_ceiling: usize,
}

impl Default for TerminalHost {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for TerminalHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalHost")
            .field("terminals", &self.len())
            .field("output_ceiling", &self.output_ceiling)
            .finish()
    }
}

impl TerminalHost {
    /// A host whose terminals keep at most [`DEFAULT_OUTPUT_CEILING`] bytes of output.
    pub fn new() -> Self {
        Self::with_output_ceiling(DEFAULT_OUTPUT_CEILING)
    }

    /// A host whose terminals keep at most `ceiling` bytes of output, whatever
    /// `outputByteLimit` the agent asks for.
    pub fn with_output_ceiling(ceiling: usize) -> Self {
        Self {
            terminals: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            output_ceiling: ceiling,
        }
    }

    /// The output ceiling of this host.
    pub fn output_ceiling(&self) -> usize {
        self.output_ceiling
    }

    /// How many terminals are currently held (created and not yet released).
    pub fn len(&self) -> usize {
        self.lock_terminals().len()
    }

    /// Whether no terminal is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts `request.command` for `session` and returns its new terminal id
    /// (`"term-1"`, `"term-2"`, … unique within this host) without waiting for it.
    ///
    /// The working directory is `request.cwd`, or `default_cwd` when absent (typically
    /// the session's cwd); either must be an absolute path to an existing directory. The
    /// effective output limit is the smaller of `request.output_byte_limit` and the host's
    /// ceiling. Spawning happens on the calling thread (a fork and exec).
    pub fn create(
        &self,
        session: &str,
        request: CreateTerminal,
        default_cwd: &Path,
    ) -> Result<String, TerminalError> {
        let cwd = request.cwd.as_deref().unwrap_or(default_cwd);
        if !cwd.is_absolute() {
            return Err(TerminalError::RelativeCwd(cwd.to_path_buf()));
        }
        if !cwd.is_dir() {
            return Err(TerminalError::MissingCwd(cwd.to_path_buf()));
        }
        let limit = request
            .output_byte_limit
            .map_or(self.output_ceiling, |requested| {
                usize::try_from(requested).map_or(self.output_ceiling, |requested| {
                    requested.min(self.output_ceiling)
                })
            });

        let spawned = process_group::spawn(&GroupCommand {
            program: &request.command,
            args: &request.args,
            env: &request.env,
            cwd,
        })
        .map_err(|source| TerminalError::Spawn {
            command: request.command.clone(),
            source,
        })?;

        let state = Arc::new(Mutex::new(TerminalState {
            output: OutputBuffer::new(limit),
            exit_status: None,
            exit_error: None,
            released: false,
        }));
        // Nothing is ever sent: closing the channel is the broadcast that wakes every
        // waiter, however many there are and whenever they arrive.
        let (exit_notifier, exit_listener) = async_channel::bounded::<Infallible>(1);
        let collector = smol::spawn(collect(
            spawned.output,
            spawned.exit,
            Arc::clone(&state),
            exit_notifier,
        ));

        let id = format!("term-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let terminal = Terminal {
            session: session.to_owned(),
            command: request.command,
            pgid: spawned.pgid,
            state,
            exit_listener,
            _leader: spawned.child,
            _collector: collector,
        };
        self.lock_terminals().insert(id.clone(), terminal);
        Ok(id)
    }

    /// The output kept so far, whether some was dropped, and the exit status once the
    /// command has exited (`terminal/output`). Never waits.
    pub fn output(&self, session: &str, id: &str) -> Result<TerminalOutput, TerminalError> {
        let terminals = self.lock_terminals();
        let terminal = find(&terminals, session, id)?;
        let state = lock(&terminal.state);
        Ok(TerminalOutput {
            output: state.output.text().to_owned(),
            truncated: state.output.truncated(),
            exit_status: state.exit_status.clone(),
        })
    }

    /// Resolves with the exit status once the command has exited
    /// (`terminal/wait_for_exit`); any number of callers may wait at the same time.
    ///
    /// The id is checked now; the returned future borrows nothing, so it can be spawned.
    /// If the terminal is released while the command still runs, the future resolves to
    /// [`TerminalError::UnknownTerminal`].
    pub fn wait_for_exit(
        &self,
        session: &str,
        id: &str,
    ) -> impl Future<Output = Result<TerminalExitStatus, TerminalError>> + Send + 'static {
        let found = {
            let terminals = self.lock_terminals();
            find(&terminals, session, id).map(|terminal| {
                (
                    Arc::clone(&terminal.state),
                    terminal.exit_listener.clone(),
                    terminal.command.clone(),
                )
            })
        };
        let id = id.to_owned();
        async move {
            let (state, exit_listener, command) = found?;
            // Returns once the channel is closed: the exit is known or the collector ended.
            let _ = exit_listener.recv().await;
            let state = lock(&state);
            if let Some(status) = &state.exit_status {
                return Ok(status.clone());
            }
            Err(match &state.exit_error {
                Some(reason) => TerminalError::ExitUnobservable {
                    id,
                    command,
                    reason: reason.clone(),
                },
                None => TerminalError::UnknownTerminal(id),
            })
        }
    }

    /// Kills the command's whole process group with SIGKILL (`terminal/kill`). The terminal
    /// stays valid: [`output`](Self::output) and [`wait_for_exit`](Self::wait_for_exit)
    /// keep working and report the final state. Killing an exited command does nothing.
    pub fn kill(&self, session: &str, id: &str) -> Result<(), TerminalError> {
        let terminals = self.lock_terminals();
        let terminal = find(&terminals, session, id)?;
        process_group::kill_group(terminal.pgid).map_err(|source| TerminalError::Kill {
            id: id.to_owned(),
            command: terminal.command.clone(),
            source,
        })
    }

    /// Kills the command if it still runs and frees everything the terminal holds
    /// (`terminal/release`). Afterwards every method reports
    /// [`TerminalError::UnknownTerminal`] for this id.
    pub fn release(&self, session: &str, id: &str) -> Result<(), TerminalError> {
        let released = {
            let mut terminals = self.lock_terminals();
            find(&terminals, session, id)?;
            terminals.remove(id)
        };
        // Dropping kills the group; done outside the lock as it also tears down the task.
        drop(released);
        Ok(())
    }

    /// Releases every terminal of `session` (for example when the session ends) and
    /// returns how many there were.
    pub fn release_session(&self, session: &str) -> usize {
        let released: Vec<Terminal> = {
            let mut terminals = self.lock_terminals();
            let ids: Vec<String> = terminals
                .iter()
                .filter(|(_, terminal)| terminal.session == session)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| terminals.remove(id)).collect()
        };
        released.len()
    }

    fn lock_terminals(&self) -> MutexGuard<'_, HashMap<String, Terminal>> {
        lock(&self.terminals)
    }
}

/// A poisoned lock only means another thread panicked mid-update; the data here stays
/// consistent at every step, so keep serving rather than cascading the panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn find<'a>(
    terminals: &'a HashMap<String, Terminal>,
    session: &str,
    id: &str,
) -> Result<&'a Terminal, TerminalError> {
    let terminal = terminals
        .get(id)
        .ok_or_else(|| TerminalError::UnknownTerminal(id.to_owned()))?;
    if terminal.session != session {
        return Err(TerminalError::WrongSession {
            id: id.to_owned(),
            session: session.to_owned(),
        });
    }
    Ok(terminal)
}

/// One running or finished command.
///
/// Dropping it SIGKILLs the process group, then drops the leader handle (handing the
/// leader to async-process for reaping) and cancels the output collector.
struct Terminal {
    session: String,
    command: String,
    pgid: libc::pid_t,
    state: Arc<Mutex<TerminalState>>,
    exit_listener: async_channel::Receiver<Infallible>,
    /// Held, unreaped, so that `pgid` cannot be reused while this terminal exists.
    _leader: async_process::Child,
    /// Dropping the task cancels it.
    _collector: smol::Task<()>,
}

impl Drop for Terminal {
    fn drop(&mut self) {
        lock(&self.state).released = true;
        // Also reaches processes the leader left behind after exiting normally. Failure
        // cannot be reported from drop and leaves nothing better to try.
        let _ = process_group::kill_group(self.pgid);
    }
}

struct TerminalState {
    output: OutputBuffer,
    exit_status: Option<TerminalExitStatus>,
    exit_error: Option<String>,
    released: bool,
}

/// Moves output into the buffer and records the exit, then keeps reading whatever the
/// command's leftover background processes still write until the pipe closes.
async fn collect(
    mut output: Async<io::PipeReader>,
    exit: ExitWatch,
    state: Arc<Mutex<TerminalState>>,
    exit_notifier: async_channel::Sender<Infallible>,
) {
    let mut chunk = vec![0; READ_CHUNK];
    let mut output_open = true;
    let mut exit = pin!(exit.wait());

    let exit_result = loop {
        if !output_open {
            break exit.await;
        }
        let event = future::or(async { Event::Exited(exit.as_mut().await) }, async {
            Event::Read(output.read(&mut chunk).await)
        })
        .await;
        match event {
            Event::Exited(result) => break result,
            Event::Read(result) => output_open = absorb(&state, result, &chunk),
        }
    };

    // Everything the leader wrote is in the pipe by now (a process's descriptors close
    // before its exit is reported), so drain what is there before publishing the exit:
    // `output` called right after `wait_for_exit` then shows the complete output.
    while output_open {
        match future::poll_once(output.read(&mut chunk)).await {
            Some(result) => output_open = absorb(&state, result, &chunk),
            None => break,
        }
    }
    {
        let mut state = lock(&state);
        // An exit caused by the release itself is not reported: waiters then learn that
        // the terminal is gone, whichever thread wins the race.
        if !state.released {
            match exit_result {
                Ok(status) => state.exit_status = Some(status),
                Err(error) => state.exit_error = Some(error.to_string()),
            }
        }
    }
    drop(exit_notifier);

    while output_open {
        let result = output.read(&mut chunk).await;
        output_open = absorb(&state, result, &chunk);
    }
}

enum Event {
    Exited(io::Result<TerminalExitStatus>),
    Read(io::Result<usize>),
}

/// Adds one read's outcome to the buffer; returns whether the pipe may deliver more.
fn absorb(state: &Mutex<TerminalState>, read: io::Result<usize>, chunk: &[u8]) -> bool {
    let mut state = lock(state);
    match read {
        Ok(0) => {
            state.output.finish();
            false
        }
        Ok(length) => {
            state.output.push(&chunk[..length]);
            true
        }
        Err(error) if error.kind() == io::ErrorKind::Interrupted => true,
        Err(_) => {
            // A pipe read failing is not recoverable; keep what was read.
            state.output.finish();
            false
        }
    }
}
