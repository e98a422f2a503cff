//! The client side of the `terminal/*` methods: running commands for an agent.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_process::Stdio;
use smol::Async;

use crate::os::exit_status::ExitStatus;
use crate::os::group::{self, GroupStdio, SpawnedGroup};
use crate::os::lock;
use collect::{TerminalState, collect};
use output_budget::OutputBudget;

mod collect;
mod output_budget;
mod output_buffer;

pub use output_budget::DEFAULT_OUTPUT_BUDGET;
pub use output_buffer::OutputBuffer;

/// The most output a terminal keeps when the agent asks for no limit or a larger one:
/// 4 MiB.
///
/// Terminal output travels back in a single JSON-RPC response and usually into a model's
/// context, where a few MiB is already far more than useful; the ceiling keeps a
/// connection running many chatty commands within predictable memory. Configure it with
/// [`TerminalHost::with_output_ceiling`].
pub const DEFAULT_OUTPUT_CEILING: usize = 4 * 1024 * 1024;

/// Parameters of `terminal/create`, in plain Rust types.
///
/// ```
/// use acp_host::terminal::CreateTerminal;
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

/// A snapshot of a terminal (the `terminal/output` result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutput {
    /// Output kept so far: stdout and stderr in the order the command wrote them.
    pub output: String,
    /// Whether older output was dropped to stay within the byte limit.
    pub truncated: bool,
    /// Present once the command has exited.
    pub exit_status: Option<ExitStatus>,
}

/// Why a terminal operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    /// The id was never issued by this host, or its terminal has been released.
    #[error(
        "unknown terminal `{}`: it was never created on this connection or has been released",
        acp_jsonrpc::excerpt(.0)
    )]
    UnknownTerminal(String),
    /// The terminal exists but was created for another session.
    #[error(
        "terminal `{}` does not belong to session `{}`",
        acp_jsonrpc::excerpt(id),
        acp_jsonrpc::excerpt(session)
    )]
    WrongSession {
        /// The terminal id that was asked for.
        id: String,
        /// The session that asked for it.
        session: String,
    },
    /// The working directory is not absolute.
    #[error("working directory `{}` must be an absolute path", acp_jsonrpc::excerpt(&.0.to_string_lossy()))]
    RelativeCwd(PathBuf),
    /// The working directory does not exist or is not a directory.
    #[error("working directory `{}` does not exist or is not a directory", acp_jsonrpc::excerpt(&.0.to_string_lossy()))]
    MissingCwd(PathBuf),
    /// The command could not be started.
    #[error("could not start `{}`: {source}", acp_jsonrpc::excerpt(command))]
    Spawn {
        /// The program that was asked for.
        command: String,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
    /// The command's process group could not be signalled.
    #[error(
        "could not kill terminal `{id}` (`{}`): {source}",
        acp_jsonrpc::excerpt(command)
    )]
    Kill {
        /// The terminal id.
        id: String,
        /// The terminal's program.
        command: String,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
    /// Creating the terminal would exceed the number of terminals a session or the whole
    /// host may hold at once (finished terminals count until they are released).
    #[error(
        "too many terminals: {scope} already holds {limit}, the most allowed; release \
         terminals that are no longer needed (terminal/release) first"
    )]
    TooManyTerminals {
        /// The limit that was reached.
        limit: usize,
        /// Whether it is the session's limit or the host's.
        scope: TerminalScope,
    },
    /// The command's exit could not be observed (an operating-system failure).
    #[error(
        "could not observe the exit of terminal `{id}` (`{}`): {reason}",
        acp_jsonrpc::excerpt(command)
    )]
    ExitUnobservable {
        /// The terminal id.
        id: String,
        /// The terminal's program.
        command: String,
        /// What went wrong.
        reason: String,
    },
}

/// Which limit [`TerminalError::TooManyTerminals`] ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TerminalScope {
    /// The session's limit ([`TerminalHost::with_max_terminals_per_session`]).
    Session,
    /// The host's limit over all sessions ([`TerminalHost::with_max_terminals`]).
    Host,
}

impl std::fmt::Display for TerminalScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TerminalScope::Session => "the session",
            TerminalScope::Host => "the connection",
        })
    }
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
/// # Limits
///
/// A terminal holds its output (up to the output ceiling) and, while its command runs,
/// processes and descriptors, until the agent releases it; an agent that never does must not
/// be able to pile them up. So a session may hold at most
/// [`DEFAULT_MAX_TERMINALS_PER_SESSION`](Self::DEFAULT_MAX_TERMINALS_PER_SESSION) (64)
/// terminals at a time and the host at most
/// [`DEFAULT_MAX_TERMINALS`](Self::DEFAULT_MAX_TERMINALS) (256) over all its sessions,
/// finished terminals included; [`create`](Self::create) beyond either fails with
/// [`TerminalError::TooManyTerminals`] until one is released. Change the limits with
/// [`with_max_terminals_per_session`](Self::with_max_terminals_per_session) and
/// [`with_max_terminals`](Self::with_max_terminals).
///
/// Their output is bounded twice: each terminal keeps at most its limit (the agent's
/// `outputByteLimit`, at most the output ceiling), and all of them together at most the
/// output budget ([`with_output_budget`](Self::with_output_budget), 64 MiB) plus 64 KiB
/// each.
///
/// A finished terminal holds nothing of the operating system: once the command has exited
/// and its output pipe has closed (every process that shared it has exited or closed it),
/// whatever is left of its process group is killed, the leader reaped and the pipe closed.
/// Only its output and exit status remain, for [`output`](Self::output) and
/// [`wait_for_exit`](Self::wait_for_exit). While background processes still hold the
/// output pipe open after the command exited, the group is left running and the exited
/// leader unreaped (so that its group id cannot be reused) until they close it or the
/// terminal is released.
///
/// # Drop
///
/// Dropping the host releases every terminal: each process group receives SIGKILL
/// synchronously inside `drop`, so no command outlives the connection. A released terminal
/// behaves the same way. Leaders are then reaped in the background by async-process.
///
/// If this whole process dies instead (a signal, SIGKILL, `exit` without dropping the host),
/// the process supervisor kills every group still running: see
/// [`crate::process#when-this-process-dies`].
///
/// Background processes that leave the group on purpose (`setsid`, `setpgid`) are out of
/// reach, as with any job control.
///
/// ```
/// use acp_host::terminal::{CreateTerminal, TerminalHost};
/// use std::path::Path;
///
/// let host = TerminalHost::new();
/// let request = CreateTerminal {
///     args: vec!["-c".into(), "echo hello".into()],
///     ..CreateTerminal::new("sh")
/// };
/// let id = host.create("session-1", request, Path::new("/")).unwrap();
/// let status = smol::block_on(host.wait_for_exit("session-1", &id)).unwrap();
/// assert_eq!(status.code, Some(0));
/// assert_eq!(host.output("session-1", &id).unwrap().output, "hello\n");
/// host.release("session-1", &id).unwrap();
/// ```
pub struct TerminalHost {
    terminals: Mutex<Registry>,
    next_id: AtomicU64,
    output_ceiling: usize,
    output_budget: Arc<OutputBudget>,
    max_per_session: usize,
    max_total: usize,
    on_release: Option<ReleaseObserver>,
}

/// What [`TerminalHost::with_release_observer`] calls: session, terminal id, final output.
type ReleaseObserver = Arc<dyn Fn(&str, &str, TerminalOutput) + Send + Sync>;

/// The terminals, and how many each session holds or is creating.
#[derive(Default)]
struct Registry {
    by_id: HashMap<String, Terminal>,
    /// Terminals held plus creations under way, per session; no entry means none.
    per_session: HashMap<String, usize>,
    /// The sum of `per_session`.
    total: usize,
}

impl Registry {
    fn remove(&mut self, id: &str) -> Option<Terminal> {
        let terminal = self.by_id.remove(id)?;
        self.free_slot(&terminal.session);
        Some(terminal)
    }

    fn free_slot(&mut self, session: &str) {
        if let Some(count) = self.per_session.get_mut(session) {
            *count -= 1;
            if *count == 0 {
                self.per_session.remove(session);
            }
        }
        self.total -= 1;
    }
}

/// A place taken in the counts of [`Registry`] while a terminal is being created; given
/// back on drop unless the terminal was inserted.
struct Slot<'a> {
    host: &'a TerminalHost,
    session: &'a str,
    taken: bool,
}

impl Slot<'_> {
    fn insert(mut self, id: String, terminal: Terminal) {
        self.taken = false;
        self.host.lock_terminals().by_id.insert(id, terminal);
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if self.taken {
            self.host.lock_terminals().free_slot(self.session);
        }
    }
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
            .field("output_budget", &self.output_budget.budget())
            .field("max_terminals_per_session", &self.max_per_session)
            .field("max_terminals", &self.max_total)
            .finish()
    }
}

impl TerminalHost {
    /// How many terminals one session may hold at a time by default: 64.
    ///
    /// Far more than an agent runs at once in practice, low enough that a session leaking
    /// terminals (never releasing them) is stopped long before the machine notices.
    pub const DEFAULT_MAX_TERMINALS_PER_SESSION: usize = 64;

    /// How many terminals the host may hold at a time over all its sessions by default: 256.
    pub const DEFAULT_MAX_TERMINALS: usize = 256;

    /// A host whose terminals keep at most [`DEFAULT_OUTPUT_CEILING`] bytes of output, with
    /// the default limits on terminals ([`DEFAULT_MAX_TERMINALS_PER_SESSION`] and
    /// [`DEFAULT_MAX_TERMINALS`]).
    ///
    /// [`DEFAULT_MAX_TERMINALS_PER_SESSION`]: Self::DEFAULT_MAX_TERMINALS_PER_SESSION
    /// [`DEFAULT_MAX_TERMINALS`]: Self::DEFAULT_MAX_TERMINALS
    pub fn new() -> Self {
        Self::with_output_ceiling(DEFAULT_OUTPUT_CEILING)
    }

    /// A host whose terminals keep at most `ceiling` bytes of output, whatever
    /// `outputByteLimit` the agent asks for.
    pub fn with_output_ceiling(ceiling: usize) -> Self {
        Self {
            terminals: Mutex::new(Registry::default()),
            next_id: AtomicU64::new(1),
            output_ceiling: ceiling,
            output_budget: Arc::new(OutputBudget::new(DEFAULT_OUTPUT_BUDGET)),
            on_release: None,
            max_per_session: Self::DEFAULT_MAX_TERMINALS_PER_SESSION,
            max_total: Self::DEFAULT_MAX_TERMINALS,
        }
    }

    /// Lets each session hold at most `limit` terminals at a time, finished ones included
    /// until released (default [`DEFAULT_MAX_TERMINALS_PER_SESSION`]).
    ///
    /// ```
    /// use acp_host::terminal::TerminalHost;
    ///
    /// let host = TerminalHost::new()
    ///     .with_max_terminals_per_session(8)
    ///     .with_max_terminals(32);
    /// assert_eq!(host.max_terminals_per_session(), 8);
    /// assert_eq!(host.max_terminals(), 32);
    /// ```
    ///
    /// [`DEFAULT_MAX_TERMINALS_PER_SESSION`]: Self::DEFAULT_MAX_TERMINALS_PER_SESSION
    pub fn with_max_terminals_per_session(mut self, limit: usize) -> Self {
        self.max_per_session = limit;
        self
    }

    /// Lets the host hold at most `limit` terminals at a time over all sessions, finished
    /// ones included until released (default [`DEFAULT_MAX_TERMINALS`]).
    ///
    /// [`DEFAULT_MAX_TERMINALS`]: Self::DEFAULT_MAX_TERMINALS
    pub fn with_max_terminals(mut self, limit: usize) -> Self {
        self.max_total = limit;
        self
    }

    /// Lets the host's terminals keep at most `bytes` of output together (default
    /// [`DEFAULT_OUTPUT_BUDGET`], 64 MiB). Past it, the terminal whose command is writing gives
    /// up its oldest output (as if its limit were lower, and for good), but never below
    /// 64 KiB or its own limit: so the host keeps at most `bytes` plus 64 KiB per terminal,
    /// however many commands an agent leaves running. Set it before creating terminals.
    ///
    /// ```
    /// use acp_host::terminal::TerminalHost;
    ///
    /// let host = TerminalHost::new().with_output_budget(8 << 20);
    /// assert_eq!(host.output_budget(), 8 << 20);
    /// ```
    pub fn with_output_budget(mut self, bytes: usize) -> Self {
        self.output_budget = Arc::new(OutputBudget::new(bytes));
        self
    }

    /// Calls `observer` with a terminal's final output when the agent releases it
    /// (`terminal/release`). The spec asks clients to keep showing the output of a terminal
    /// embedded in a tool call after its release, when the host no longer has it.
    ///
    /// ```
    /// use acp_host::terminal::{CreateTerminal, TerminalHost};
    /// use std::sync::{Arc, Mutex};
    ///
    /// let kept = Arc::new(Mutex::new(Vec::new()));
    /// let sink = kept.clone();
    /// let host = TerminalHost::new().with_release_observer(move |_session, id, output| {
    ///     sink.lock().unwrap().push((id.to_owned(), output.output));
    /// });
    /// let request = CreateTerminal {
    ///     args: vec!["-c".into(), "echo hi".into()],
    ///     ..CreateTerminal::new("sh")
    /// };
    /// let id = host.create("s", request, std::path::Path::new("/")).unwrap();
    /// smol::block_on(host.wait_for_exit("s", &id)).unwrap();
    /// host.release("s", &id).unwrap();
    /// assert_eq!(*kept.lock().unwrap(), [(id, "hi\n".to_owned())]);
    /// ```
    pub fn with_release_observer(
        mut self,
        observer: impl Fn(&str, &str, TerminalOutput) + Send + Sync + 'static,
    ) -> Self {
        self.on_release = Some(Arc::new(observer));
        self
    }

    /// The output budget of this host.
    pub fn output_budget(&self) -> usize {
        self.output_budget.budget()
    }

    /// Bytes of output the host's terminals keep now, over all of them.
    pub fn output_kept(&self) -> usize {
        self.output_budget.kept()
    }

    /// The output ceiling of this host.
    pub fn output_ceiling(&self) -> usize {
        self.output_ceiling
    }

    /// How many terminals one session may hold at a time.
    pub fn max_terminals_per_session(&self) -> usize {
        self.max_per_session
    }

    /// How many terminals the host may hold at a time over all sessions.
    pub fn max_terminals(&self) -> usize {
        self.max_total
    }

    /// How many terminals are currently held (created and not yet released).
    pub fn len(&self) -> usize {
        self.lock_terminals().by_id.len()
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
    ///
    /// Fails with [`TerminalError::TooManyTerminals`] when the session or the host already
    /// holds as many terminals as allowed (see [Limits](Self#limits)); nothing is started
    /// then.
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
        let slot = self.take_slot(session)?;
        let limit = request
            .output_byte_limit
            .map_or(self.output_ceiling, |requested| {
                usize::try_from(requested).map_or(self.output_ceiling, |requested| {
                    requested.min(self.output_ceiling)
                })
            });

        let (spawned, output) = spawn(&request, cwd).map_err(|source| TerminalError::Spawn {
            command: request.command.clone(),
            source,
        })?;

        let state = Arc::new(Mutex::new(TerminalState {
            output: OutputBuffer::new(limit),
            budget: self.output_budget.clone(),
            exit_status: None,
            exit_error: None,
            released: false,
            leader: spawned.leader,
        }));
        // Nothing is ever sent: closing the channel is the broadcast that wakes every
        // waiter, however many there are and whenever they arrive.
        let (exit_notifier, exit_listener) = async_channel::bounded::<Infallible>(1);
        let collector = smol::spawn(collect(
            output,
            spawned.exit,
            Arc::clone(&state),
            exit_notifier,
        ));

        let id = format!("term-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let terminal = Terminal {
            session: session.to_owned(),
            command: request.command,
            state,
            exit_listener,
            _collector: collector,
        };
        slot.insert(id.clone(), terminal);
        Ok(id)
    }

    /// Counts a terminal about to be created for `session`, if both limits allow one more.
    fn take_slot<'a>(&'a self, session: &'a str) -> Result<Slot<'a>, TerminalError> {
        let mut terminals = self.lock_terminals();
        let in_session = terminals.per_session.get(session).copied().unwrap_or(0);
        if in_session >= self.max_per_session {
            return Err(TerminalError::TooManyTerminals {
                limit: self.max_per_session,
                scope: TerminalScope::Session,
            });
        }
        if terminals.total >= self.max_total {
            return Err(TerminalError::TooManyTerminals {
                limit: self.max_total,
                scope: TerminalScope::Host,
            });
        }
        *terminals.per_session.entry(session.to_owned()).or_default() += 1;
        terminals.total += 1;
        Ok(Slot {
            host: self,
            session,
            taken: true,
        })
    }

    /// The most bytes of text [`output`](Self::output) can return for this terminal: its
    /// output limit, which never grows. A server reserves room for the answer with it before
    /// taking the output.
    pub fn output_limit(&self, session: &str, id: &str) -> Result<usize, TerminalError> {
        let terminals = self.lock_terminals();
        let terminal = find(&terminals, session, id)?;
        Ok(lock(&terminal.state).output.limit())
    }

    /// The output kept so far, whether some was dropped, and the exit status once the
    /// command has exited (`terminal/output`). Never waits.
    pub fn output(&self, session: &str, id: &str) -> Result<TerminalOutput, TerminalError> {
        let terminals = self.lock_terminals();
        Ok(snapshot(find(&terminals, session, id)?))
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
    ) -> impl Future<Output = Result<ExitStatus, TerminalError>> + Send + 'static {
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
        let result = lock(&terminal.state).leader.signal(libc::SIGKILL);
        result.map_err(|source| TerminalError::Kill {
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
        if let (Some(observer), Some(terminal)) = (&self.on_release, &released) {
            observer(session, id, snapshot(terminal));
        }
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
                .by_id
                .iter()
                .filter(|(_, terminal)| terminal.session == session)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| terminals.remove(id)).collect()
        };
        released.len()
    }

    fn lock_terminals(&self) -> MutexGuard<'_, Registry> {
        lock(&self.terminals)
    }
}

/// Starts `request.command` as the leader of a new process group with stdin closed and
/// stdout and stderr sharing one pipe, so the output arrives in exactly the order the process
/// wrote it; returns the group and the pipe's read end.
fn spawn(
    request: &CreateTerminal,
    cwd: &Path,
) -> io::Result<(SpawnedGroup, Async<io::PipeReader>)> {
    let (reader, writer) = io::pipe()?;
    let stderr_writer = writer.try_clone()?;
    let mut command = std::process::Command::new(&request.command);
    command
        .args(&request.args)
        .envs(request.env.iter().map(|(name, value)| (name, value)))
        .current_dir(cwd);
    let stdio = GroupStdio {
        stdin: Stdio::null(),
        stdout: writer.into(),
        stderr: stderr_writer.into(),
    };
    // Dropping the group on an early return kills it: nobody would ever own it.
    let spawned = group::spawn(command, stdio)?;
    Ok((spawned, Async::new(reader)?))
}

fn snapshot(terminal: &Terminal) -> TerminalOutput {
    let state = lock(&terminal.state);
    TerminalOutput {
        output: state.output.text().to_owned(),
        truncated: state.output.truncated(),
        exit_status: state.exit_status.clone(),
    }
}

fn find<'a>(
    terminals: &'a Registry,
    session: &str,
    id: &str,
) -> Result<&'a Terminal, TerminalError> {
    let terminal = terminals
        .by_id
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
/// Dropping it SIGKILLs the process group (unless the collector has finished it already),
/// releases the leader (async-process reaps it in the background if it still runs) and
/// cancels the output collector.
struct Terminal {
    session: String,
    command: String,
    state: Arc<Mutex<TerminalState>>,
    exit_listener: async_channel::Receiver<Infallible>,
    /// Dropping the task cancels it.
    _collector: smol::Task<()>,
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let mut state = lock(&self.state);
        state.released = true;
        // Also reaches processes the leader left behind after exiting normally.
        state.leader.kill_and_release();
    }
}
