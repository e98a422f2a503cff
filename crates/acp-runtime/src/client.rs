//! The client side: connect to an agent, initialize, and drive sessions and prompt turns.
//!
//! - [`connect`] runs a connection over any stream pair; [`spawn`] starts an agent command
//!   (see [`crate::process`]) and connects to it.
//! - [`AgentHandle::initialize`] negotiates the version (an agent answering a version this
//!   runtime does not speak is a typed [`Error::UnsupportedProtocolVersion`], and the
//!   connection closes) and records the agent's capabilities, which every later call is
//!   checked against before anything is sent.
//! - [`Session::prompt`] sends a prompt and returns a [`PromptTurn`] that yields the turn's
//!   updates in order, then its stop reason. [`Session::cancel`] sends `session/cancel`,
//!   answers the session's pending permission requests with `cancelled` (a MUST of the spec),
//!   and marks its unfinished tool calls cancelled.
//! - Updates that arrive before the `session/new` response, or between turns, are kept and
//!   delivered ([`Session::next_update`]).
//! - Routing an update never waits, so a session nobody reads never holds up responses,
//!   other sessions or cancellation. Each session keeps updates up to a budget in bytes
//!   ([`ClientOptions::with_session_update_budget`], 16 MiB); what arrives while it is full
//!   is dropped and met, in its place in the stream, as [`Error::UpdatesDropped`]. Updates
//!   for ids this client has not opened share one smaller budget
//!   ([`ClientOptions::with_unopened_update_budget`], 1 MiB, at most 16 ids).
//! - Requests from the agent go to your [`Client`]; [`ClientOptions::with_file_system`] and
//!   [`ClientOptions::with_terminals`] serve `fs/*` and `terminal/*` with the complete
//!   implementations of [`crate::host`], and advertise them.
//!
//! ```no_run
//! use acp_runtime::client::{self, AutoAllow, ClientOptions};
//! use acp_runtime::process::AgentCommand;
//!
//! smol::block_on(async {
//!     let (agent, driver, _process) =
//!         client::spawn(AutoAllow, AgentCommand::new("my-agent"), ClientOptions::default())?;
//!     smol::spawn(driver).detach();
//!     agent.initialize().await?;
//!     let session = agent.new_session("/home/me/project").await?;
//!     let mut turn = session.prompt(vec!["Hello".into()]).await?;
//!     while let Some(update) = turn.next().await {
//!         println!("{update:?}");
//!     }
//!     println!("stop reason: {:?}", turn.end().await?);
//!     Ok::<_, acp_runtime::Error>(())
//! })
//! .unwrap();
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use acp_jsonrpc::{Connection, ConnectionHandle, ConnectionOptions, Observer, Problem};
use acp_types::*;
use futures_lite::{AsyncBufRead, AsyncWrite};
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::host::{FsHost, FsRoots, TerminalHost};
use crate::process::{AgentCommand, AgentProcess};
use crate::signal::Signal;

/// Protocol versions this runtime speaks.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[u16] = crate::agent::SUPPORTED_PROTOCOL_VERSIONS;

mod dispatch;
mod updates;

use dispatch::ClientDispatch;

pub use updates::{DEFAULT_SESSION_UPDATE_BUDGET, DEFAULT_UNOPENED_UPDATE_BUDGET};
use updates::{Popped, Routes, UpdateQueue};

/// What a client implements: the requests an agent makes. Only
/// [`request_permission`](Client::request_permission) is required; `fs/*` and `terminal/*`
/// come ready-made through [`ClientOptions`].
pub trait Client: Send + Sync + 'static {
    /// Asks the user for permission. If the turn is cancelled meanwhile, the runtime answers
    /// `cancelled` for you and drops this future.
    fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> impl Future<Output = Result<RequestPermissionResponse>> + Send;

    /// Serves `fs/read_text_file` when no file system host is configured.
    fn read_text_file(
        &self,
        request: ReadTextFileRequest,
    ) -> impl Future<Output = Result<ReadTextFileResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("fs/read_text_file")) }
    }

    /// Serves `fs/write_text_file` when no file system host is configured.
    fn write_text_file(
        &self,
        request: WriteTextFileRequest,
    ) -> impl Future<Output = Result<WriteTextFileResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("fs/write_text_file")) }
    }

    /// Serves `elicitation/create`.
    fn create_elicitation(
        &self,
        request: CreateElicitationRequest,
    ) -> impl Future<Output = Result<CreateElicitationResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("elicitation/create")) }
    }

    /// Serves `terminal/create` when no terminal host is configured: advertise `terminal`
    /// with [`ClientOptions::with_capabilities`] and implement the five `terminal/*` methods
    /// (for a client with its own terminals, or a fake one in tests).
    fn create_terminal(
        &self,
        request: CreateTerminalRequest,
    ) -> impl Future<Output = Result<CreateTerminalResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/create")) }
    }

    /// Serves `terminal/output` when no terminal host is configured.
    fn terminal_output(
        &self,
        request: TerminalOutputRequest,
    ) -> impl Future<Output = Result<TerminalOutputResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/output")) }
    }

    /// Serves `terminal/wait_for_exit` when no terminal host is configured.
    fn wait_for_terminal_exit(
        &self,
        request: WaitForTerminalExitRequest,
    ) -> impl Future<Output = Result<WaitForTerminalExitResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/wait_for_exit")) }
    }

    /// Serves `terminal/kill` when no terminal host is configured.
    fn kill_terminal(
        &self,
        request: KillTerminalRequest,
    ) -> impl Future<Output = Result<KillTerminalResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/kill")) }
    }

    /// Serves `terminal/release` when no terminal host is configured.
    fn release_terminal(
        &self,
        request: ReleaseTerminalRequest,
    ) -> impl Future<Output = Result<ReleaseTerminalResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/release")) }
    }

    /// Sees every `session/update`, in order, before it reaches its [`Session`]. Must not wait
    /// for the agent.
    fn session_update(
        &self,
        notification: &SessionNotification,
    ) -> impl Future<Output = ()> + Send {
        let _ = notification;
        async {}
    }

    /// Answers an extension request from the agent.
    fn ext_method(
        &self,
        call: ExtensionCall,
    ) -> impl Future<Output = Result<Box<RawValue>>> + Send {
        async move { Err(Error::method_not_found(&call.method)) }
    }

    /// Handles an extension notification from the agent.
    fn ext_notification(&self, call: ExtensionCall) -> impl Future<Output = ()> + Send {
        let _ = call;
        async {}
    }
}

/// Allows every tool call, with the least privilege that allows it: `allow_once` if offered,
/// else `allow_always`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AutoAllow;

/// Rejects every tool call: `reject_once` if offered, else `reject_always`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AutoReject;

/// Asks on the terminal: prints the tool call and its options to stderr and reads the choice
/// from stdin.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interactive;

/// The option of the wanted kind with the least lasting effect: "once" before "always", whatever
/// order the agent lists them in. Some agents list "always" first and then refuse it (gemini-cli
/// in an untrusted folder: "Cannot enable privileged approval modes"); a policy that answers for
/// the user must not grant more than the one call anyway.
fn pick(request: &RequestPermissionRequest, allow: bool) -> RequestPermissionResponse {
    let preference = |kind: &PermissionOptionKind| match kind {
        PermissionOptionKind::AllowOnce if allow => Some(0),
        PermissionOptionKind::AllowAlways if allow => Some(1),
        PermissionOptionKind::RejectOnce if !allow => Some(0),
        PermissionOptionKind::RejectAlways if !allow => Some(1),
        _ => None,
    };
    let chosen = request
        .options
        .iter()
        .filter_map(|option| Some((preference(&option.kind)?, option)))
        .min_by_key(|(rank, _)| *rank)
        .map(|(_, option)| option);
    let outcome = match chosen {
        Some(option) => RequestPermissionOutcome::selected(option.option_id.clone()),
        // No option of the wanted kind: not answering for the user is the safe choice.
        None => RequestPermissionOutcome::Cancelled,
    };
    RequestPermissionResponse::new(outcome)
}

impl Client for AutoAllow {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        Ok(pick(&request, true))
    }
}

impl Client for AutoReject {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        Ok(pick(&request, false))
    }
}

impl Client for Interactive {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        smol::unblock(move || {
            use std::io::{BufRead, Write};
            let title = request
                .tool_call
                .title
                .clone()
                .unwrap_or_else(|| request.tool_call.tool_call_id.to_string());
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "\nPermission requested: {title}");
            for (i, option) in request.options.iter().enumerate() {
                let _ = writeln!(err, "  {}) {} [{}]", i + 1, option.name, option.kind);
            }
            let _ = write!(err, "choose 1-{}: ", request.options.len());
            let _ = err.flush();
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| Error::Internal(e.to_string()))?;
            let outcome = line
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| request.options.get(n.wrapping_sub(1)))
                .map_or(RequestPermissionOutcome::Cancelled, |o| {
                    RequestPermissionOutcome::selected(o.option_id.clone())
                });
            Ok(RequestPermissionResponse::new(outcome))
        })
        .await
    }
}

/// Options of a client connection: what it advertises and which built-in hosts serve the
/// agent's calls.
#[derive(Clone)]
pub struct ClientOptions {
    capabilities: ClientCapabilities,
    info: Option<Implementation>,
    fs: Option<Arc<FsHost>>,
    fs_unrestricted: bool,
    terminals: Option<Arc<TerminalHost>>,
    connection: ConnectionOptions,
    session_update_budget: usize,
    unopened_update_budget: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            capabilities: ClientCapabilities::default(),
            info: Some(Implementation::new(
                "acp-runtime",
                env!("CARGO_PKG_VERSION"),
            )),
            fs: None,
            fs_unrestricted: false,
            terminals: None,
            connection: ConnectionOptions::default(),
            session_update_budget: DEFAULT_SESSION_UPDATE_BUDGET,
            unopened_update_budget: DEFAULT_UNOPENED_UPDATE_BUDGET,
        }
    }
}

impl ClientOptions {
    /// Serves `fs/read_text_file` and `fs/write_text_file` with `host`, limited to each
    /// session's `cwd` and additional directories, and advertises both.
    pub fn with_file_system(mut self, host: FsHost) -> Self {
        self.capabilities.fs.read_text_file = true;
        self.capabilities.fs.write_text_file = true;
        self.fs = Some(Arc::new(host));
        self
    }

    /// Lets the file system host reach any absolute path, not only the session's directories.
    pub fn with_unrestricted_file_system(mut self) -> Self {
        self.fs_unrestricted = true;
        self
    }

    /// Serves `terminal/*` with `host` and advertises `terminal`. Pass an
    /// `Arc<TerminalHost>` to keep a handle of your own, for example to show a terminal's
    /// output when a tool call embeds it.
    pub fn with_terminals(mut self, host: impl Into<Arc<TerminalHost>>) -> Self {
        self.capabilities.terminal = true;
        self.terminals = Some(host.into());
        self
    }

    /// Sets the advertised capabilities (for methods your [`Client`] serves itself).
    pub fn with_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Sets the name and version sent in `initialize`.
    pub fn with_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Some(Implementation::new(name, version));
        self
    }

    /// Options of the underlying JSON-RPC connection (observer, limits).
    pub fn with_connection_options(mut self, options: ConnectionOptions) -> Self {
        self.connection = options;
        self
    }

    /// How many bytes of updates each session keeps for the application before it drops
    /// further ones (default [`DEFAULT_SESSION_UPDATE_BUDGET`], 16 MiB). An update costs its
    /// size on the wire plus a few hundred bytes. One update larger than the budget is still
    /// kept when nothing else waits. Dropped updates are never silent: the application meets
    /// [`Error::UpdatesDropped`] where they would have been. Reading updates as they come
    /// ([`PromptTurn::next`], [`Session::next_update`]) keeps a session far below it.
    pub fn with_session_update_budget(mut self, bytes: usize) -> Self {
        self.session_update_budget = bytes;
        self
    }

    /// How many bytes of updates are kept, over all session ids this client has not opened,
    /// until it opens them (default [`DEFAULT_UNOPENED_UPDATE_BUDGET`], 1 MiB; at most 16
    /// ids). Agents send a few updates (commands, modes) for a session before answering
    /// `session/new`; the rest is dropped and reported to the observer, and a session
    /// opened later meets [`Error::UpdatesDropped`] first.
    pub fn with_unopened_update_budget(mut self, bytes: usize) -> Self {
        self.unopened_update_budget = bytes;
        self
    }

    /// The capabilities `initialize` will advertise.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }
}

/// Connects `client` to an agent over a reader and a writer. Returns the handle to the agent
/// and the connection's driver, which must be polled (on any executor) for anything to happen.
pub fn connect<C: Client, R, W>(
    client: C,
    reader: R,
    writer: W,
    options: ClientOptions,
) -> (
    AgentHandle,
    impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<C, R, W>,
)
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let state = Arc::new(ClientState {
        options: options.clone(),
        agent: Mutex::new(None),
        routes: Mutex::new(Routes::new(options.unopened_update_budget)),
        exit: Mutex::new(None),
        exit_recorded: Signal::new(),
        spawned: AtomicBool::new(false),
    });
    let dispatch = ClientDispatch {
        client: Arc::new(client),
        state: state.clone(),
    };
    let (rpc, driver) = Connection::new(reader, writer, dispatch, options.connection);
    let guard = ReleaseTerminalsWhenDone(state.clone());
    let driver = async move {
        // Dropped when the connection ends or the driver is dropped: either way, no terminal
        // process outlives the connection.
        let _guard = guard;
        driver.await
    };
    (AgentHandle { rpc, state }, driver)
}

/// Releases every terminal of every session when the connection's driver finishes or is
/// dropped, and ends the sessions' update streams.
struct ReleaseTerminalsWhenDone(Arc<ClientState>);

impl Drop for ReleaseTerminalsWhenDone {
    fn drop(&mut self) {
        let sessions: Vec<Arc<SessionShared>> = self
            .0
            .routes
            .lock()
            .unwrap()
            .known()
            .map(|(_, session)| session.clone())
            .collect();
        for session in sessions {
            session.updates.close();
            if let Some(terminals) = &self.0.options.terminals {
                terminals.release_session(session.id.as_str());
            }
        }
    }
}

/// Spawns `command` and connects `client` to it over its stdin and stdout. Returns the handle,
/// the driver (poll it), and the process (shut it down with
/// [`AgentProcess::shutdown`]; dropping it kills the agent's whole process group).
pub fn spawn<C: Client>(
    client: C,
    command: AgentCommand,
    options: ClientOptions,
) -> Result<(
    AgentHandle,
    impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<C>,
    AgentProcess,
)> {
    let mut process = command
        .spawn()
        .map_err(|e| Error::Internal(e.to_string()))?;
    let (reader, writer) = process
        .take_stdio()
        .ok_or_else(|| Error::Internal("the agent's stdio was already taken".into()))?;
    let (agent, driver) = connect(client, reader, writer, options);
    watch_exit(&agent, &process)?;
    Ok((agent, driver, process))
}

/// Spawns `command`, connects `client` to it, runs `work` with the handle on the calling
/// thread, then closes the connection and shuts the agent down. Returns what `work` returned
/// and how the agent ended.
///
/// It always returns: what is still queued for the agent when `work` is done gets the
/// command's [`shutdown_grace`](AgentCommand::shutdown_grace) to be written (an agent that
/// stopped reading its stdin cannot hold the run up), then the agent gets its staged shutdown
/// ([`AgentProcess::shutdown`]).
///
/// Unlike [`spawn`], this owns the thread for the whole run: on Linux the connection waits in
/// `epoll_wait(2)` on the agent's two pipes instead of in smol's reactor, so that a request/response
/// round trip costs a handful of system calls rather than a hand-off between threads (see
/// docs/performance.md). Elsewhere it runs on `smol::block_on`. Do not call it from inside an
/// async executor.
///
/// ```no_run
/// use acp_runtime::client::{self, AutoAllow, ClientOptions};
/// use acp_runtime::process::AgentCommand;
///
/// let (stop, exit) = client::run_spawned(AutoAllow, AgentCommand::new("my-agent"), ClientOptions::default(), |agent| async move {
///     agent.initialize().await?;
///     let session = agent.new_session("/tmp").await?;
///     session.prompt(vec!["hi".into()]).await?.end().await
/// })?;
/// println!("{:?}, agent {exit}", stop?.stop_reason);
/// # Ok::<(), acp_runtime::Error>(())
/// ```
pub fn run_spawned<C: Client, F: Future>(
    client: C,
    command: AgentCommand,
    options: ClientOptions,
    work: impl FnOnce(AgentHandle) -> F,
) -> Result<(F::Output, crate::process::AgentExit)> {
    #[cfg(target_os = "linux")]
    {
        let mut process = command
            .spawn()
            .map_err(|e| Error::Internal(e.to_string()))?;
        let (stdout, stdin) = process
            .take_pipe_fds()
            .ok_or_else(|| Error::Internal("the agent's stdio was already taken".into()))?
            .map_err(|e| Error::Internal(format!("the agent's pipes: {e}")))?;
        let (pipes, reader, writer) =
            crate::pipe_loop::pipes(stdout, stdin).map_err(|e| Error::Internal(e.to_string()))?;
        let reader = futures_lite::io::BufReader::with_capacity(crate::stdio::READ_BUFFER, reader);
        let (agent, driver) = connect(client, reader, writer, options);
        watch_exit(&agent, &process)?;
        let run = async {
            let closed = WorkDone::default();
            let work = async {
                let output = work(agent.clone()).await;
                agent.close();
                closed.mark();
                output
            };
            let driver = bounded_final_flush(driver, &closed, process.shutdown_grace());
            crate::pipe_loop::join_woken(driver, work).await.1
        };
        let output =
            crate::pipe_loop::block_on(&pipes, run).map_err(|e| Error::Internal(e.to_string()))?;
        let exit = crate::pipe_loop::block_on(&pipes, process.shutdown())
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok((output, exit))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let (agent, driver, process) = spawn(client, command, options)?;
        smol::block_on(async {
            let closed = WorkDone::default();
            let work = async {
                let output = work(agent.clone()).await;
                agent.close();
                closed.mark();
                output
            };
            let driver = bounded_final_flush(driver, &closed, process.shutdown_grace());
            let output = futures_lite::future::zip(driver, work).await.1;
            Ok((output, process.shutdown().await))
        })
    }
}

/// The connection's driver, given up `grace` after the work is done. An agent that stopped
/// reading its stdin would otherwise keep the final flush, and so the whole run of
/// [`run_spawned`], waiting for ever; once given up, the connection is dropped (the agent sees
/// its stdin close) and the agent's staged shutdown begins.
async fn bounded_final_flush<D: Future<Output = Result<(), acp_jsonrpc::ConnectionError>>>(
    driver: D,
    done: &WorkDone,
    grace: std::time::Duration,
) -> Result<(), acp_jsonrpc::ConnectionError> {
    let mut driver = std::pin::pin!(driver);
    let mut deadline: Option<smol::Timer> = None;
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(result) = driver.as_mut().poll(cx) {
            return std::task::Poll::Ready(result);
        }
        if !done.is_marked(cx) {
            return std::task::Poll::Pending;
        }
        let timer = deadline.get_or_insert_with(|| smol::Timer::after(grace));
        Pin::new(timer).poll(cx).map(|_| Ok(()))
    })
    .await
}

/// Set once [`run_spawned`]'s work is done. Checked on every poll of the driver, so it costs
/// an atomic load there, where a channel or event listener cost a few hundred instructions per
/// message.
#[derive(Default)]
struct WorkDone {
    marked: AtomicBool,
    registered: AtomicBool,
    waker: Mutex<Option<std::task::Waker>>,
}

impl WorkDone {
    fn mark(&self) {
        self.marked.store(true, Ordering::Release);
        if let Some(waker) = self.waker.lock().unwrap().take() {
            waker.wake();
        }
    }

    /// Whether the work is done; if not, `cx` is woken when it is. Its waker is kept the first
    /// time only: the loops that poll the driver keep one waker for it.
    fn is_marked(&self, cx: &std::task::Context<'_>) -> bool {
        if self.marked.load(Ordering::Acquire) {
            return true;
        }
        if !self.registered.load(Ordering::Relaxed) {
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            self.registered.store(true, Ordering::Relaxed);
        }
        // Marked between the first look and the registration: its wake-up found no waker.
        self.marked.load(Ordering::Acquire)
    }
}

/// Fails pending calls with the agent's exit status and stderr tail once it exits, from a
/// plain thread (smol's executor threads would compete for the reactor).
fn watch_exit(agent: &AgentHandle, process: &AgentProcess) -> Result<()> {
    agent.state.spawned.store(true, Ordering::Release);
    let watcher = agent.clone();
    let exited = process.exited();
    std::thread::Builder::new()
        .name("acp-agent-exit".into())
        .spawn(move || {
            let exit = futures_lite::future::block_on(exited);
            watcher.agent_exited(exit.to_string(), exit.stderr_tail.clone());
        })
        .map(drop)
        .map_err(|e| Error::Internal(format!("starting the exit watcher: {e}")))
}

struct ClientState {
    options: ClientOptions,
    agent: Mutex<Option<InitializeResponse>>,
    routes: Mutex<Routes<Arc<SessionShared>>>,
    exit: Mutex<Option<(String, String)>>,
    /// Fired once the spawned agent's exit is recorded in `exit`.
    exit_recorded: Signal,
    spawned: AtomicBool,
}

struct SessionShared {
    id: SessionId,
    roots: FsRoots,
    cwd: PathBuf,
    updates: UpdateQueue,
    turn_active: AtomicBool,
    /// Fired by `cancel`; replaced at the start of each turn.
    cancel: Mutex<Signal>,
    tool_calls: Mutex<HashMap<ToolCallId, ToolCallState>>,
    modes: Mutex<Option<SessionModeState>>,
    config_options: Mutex<Option<Vec<SessionConfigOption>>>,
}

/// Where a tool call stands, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolCallState {
    /// Reported with the given status (or none yet).
    Reported(Option<ToolCallStatus>),
    /// Still unfinished when the client cancelled the turn.
    Cancelled,
}

impl ToolCallState {
    fn is_finished(&self) -> bool {
        matches!(
            self,
            ToolCallState::Cancelled
                | ToolCallState::Reported(Some(ToolCallStatus::Completed | ToolCallStatus::Failed))
        )
    }
}

impl SessionShared {
    fn track(&self, update: &SessionUpdate) {
        match update {
            SessionUpdate::ToolCall(call) => {
                let mut calls = self.tool_calls.lock().unwrap();
                calls.insert(
                    call.tool_call_id.clone(),
                    ToolCallState::Reported(call.status.clone()),
                );
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let mut calls = self.tool_calls.lock().unwrap();
                let state = calls
                    .entry(update.tool_call_id.clone())
                    .or_insert(ToolCallState::Reported(None));
                if let Some(status) = &update.status {
                    *state = ToolCallState::Reported(Some(status.clone()));
                }
            }
            SessionUpdate::CurrentModeUpdate(mode) => {
                if let Some(modes) = self.modes.lock().unwrap().as_mut() {
                    modes.current_mode_id = mode.current_mode_id.clone();
                }
            }
            SessionUpdate::ConfigOptionUpdate(options) => {
                *self.config_options.lock().unwrap() = Some(options.config_options.clone());
            }
            _ => {}
        }
    }
}

/// The client's handle on the agent. Cheap to clone, `Send` and `Sync`.
#[derive(Clone)]
pub struct AgentHandle {
    rpc: ConnectionHandle,
    state: Arc<ClientState>,
}

impl AgentHandle {
    /// Sends `initialize` with the options' capabilities. Fails with
    /// [`Error::UnsupportedProtocolVersion`] (and closes the connection) when the agent
    /// answers a version this runtime does not speak.
    pub async fn initialize(&self) -> Result<InitializeResponse> {
        let mut request = InitializeRequest::new(ProtocolVersion::LATEST);
        request.client_capabilities = self.state.options.capabilities.clone();
        request.client_info = self.state.options.info.clone();
        self.initialize_with(request).await
    }

    /// Sends this `initialize` request (for a client that sets every field itself).
    pub async fn initialize_with(&self, request: InitializeRequest) -> Result<InitializeResponse> {
        let response: InitializeResponse = self.call(&request).await?;
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&response.protocol_version.0) {
            self.rpc.close();
            return Err(Error::UnsupportedProtocolVersion {
                offered: response.protocol_version.0,
                supported: SUPPORTED_PROTOCOL_VERSIONS,
            });
        }
        *self.state.agent.lock().unwrap() = Some(response.clone());
        Ok(response)
    }

    /// The agent's `initialize` answer, once received.
    pub fn agent_info(&self) -> Option<InitializeResponse> {
        self.state.agent.lock().unwrap().clone()
    }

    /// The agent's capabilities, once `initialize` completed.
    pub fn capabilities(&self) -> Option<AgentCapabilities> {
        self.state
            .agent
            .lock()
            .unwrap()
            .as_ref()
            .map(|r| r.agent_capabilities.clone())
    }

    /// How many bytes of updates wait for the application, over every session and the ids
    /// not opened yet: never more than the budgets of
    /// [`ClientOptions::with_session_update_budget`] (per session, plus one larger update)
    /// and [`ClientOptions::with_unopened_update_budget`].
    pub fn buffered_update_bytes(&self) -> usize {
        let routes = self.state.routes.lock().unwrap();
        routes.early_bytes()
            + routes
                .known()
                .map(|(_, session)| session.updates.bytes())
                .sum::<usize>()
    }

    /// The underlying JSON-RPC connection.
    pub fn connection(&self) -> &ConnectionHandle {
        &self.rpc
    }

    /// Closes the connection: pending calls fail, the agent sees end of input.
    pub fn close(&self) {
        self.rpc.close();
    }

    /// Authenticates with one of the agent's advertised methods.
    pub async fn authenticate(
        &self,
        method_id: impl Into<AuthMethodId>,
    ) -> Result<AuthenticateResponse> {
        let method_id = method_id.into();
        let advertised = self.initialized("authenticate")?.auth_methods;
        // A method of a type this schema does not know (codex-acp's `env_var`, say) is
        // accepted by its id: forward compatibility applies to our own checks too. A
        // `terminal` method is run as a command by the client, never passed to `authenticate`.
        let advertised = advertised.iter().find_map(|m| match m {
            AuthMethod::Agent(a) => (a.id == method_id).then_some(true),
            AuthMethod::Terminal(t) => (t.id == method_id).then_some(false),
            AuthMethod::Unknown(raw) => (raw.get("id").and_then(|id| id.as_str())
                == Some(method_id.as_str()))
            .then_some(true),
        });
        match advertised {
            Some(true) => {}
            Some(false) => {
                return Err(Error::Invalid(format!(
                    "the auth method `{method_id}` is a terminal method: run its command instead of calling `authenticate`"
                )));
            }
            None => {
                return Err(Error::Invalid(format!(
                    "the agent did not advertise the auth method `{method_id}`"
                )));
            }
        }
        self.request(&AuthenticateRequest::new(method_id)).await
    }

    /// Creates a session in `cwd` (absolute) without MCP servers.
    pub async fn new_session(&self, cwd: impl AsRef<Path>) -> Result<Session> {
        let cwd = cwd.as_ref().to_string_lossy().into_owned();
        self.new_session_with(NewSessionRequest::new(cwd, Vec::<McpServer>::new()))
            .await
    }

    /// Creates a session from a full request.
    pub async fn new_session_with(&self, request: NewSessionRequest) -> Result<Session> {
        self.check_session_setup(&request.cwd, &request.mcp_servers)?;
        let (cwd, dirs) = (request.cwd.clone(), request.additional_directories.clone());
        let response: NewSessionResponse = self.request(&request).await?;
        Ok(self.open_session(
            response.session_id.clone(),
            &cwd,
            dirs.as_deref(),
            response.modes.clone(),
            response.config_options.clone(),
        ))
    }

    /// Loads a stored session (needs `loadSession`). The replayed history is waiting in
    /// [`Session::next_update`] when this returns.
    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
    ) -> Result<(Session, LoadSessionResponse)> {
        self.check_session_setup(&request.cwd, &request.mcp_servers)?;
        let id = request.session_id.clone();
        // Registered before sending, so that the replay lands in the session.
        let session = self.open_session(
            id,
            &request.cwd,
            request.additional_directories.as_deref(),
            None,
            None,
        );
        let response: LoadSessionResponse = self.request(&request).await?;
        *session.shared.modes.lock().unwrap() = response.modes.clone();
        *session.shared.config_options.lock().unwrap() = response.config_options.clone();
        Ok((session, response))
    }

    /// Resumes a stored session (needs `sessionCapabilities.resume`).
    pub async fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<(Session, ResumeSessionResponse)> {
        self.check_session_setup(
            &request.cwd,
            request.mcp_servers.as_deref().unwrap_or_default(),
        )?;
        let id = request.session_id.clone();
        let session = self.open_session(
            id,
            &request.cwd,
            request.additional_directories.as_deref(),
            None,
            None,
        );
        let response: ResumeSessionResponse = self.request(&request).await?;
        *session.shared.modes.lock().unwrap() = response.modes.clone();
        *session.shared.config_options.lock().unwrap() = response.config_options.clone();
        Ok((session, response))
    }

    /// Lists the agent's sessions (needs `sessionCapabilities.list`).
    pub async fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse> {
        self.request(&request).await
    }

    /// Deletes a stored session (needs `sessionCapabilities.delete`).
    pub async fn delete_session(&self, session_id: impl Into<SessionId>) -> Result<()> {
        let id = session_id.into();
        self.request(&DeleteSessionRequest::new(id.clone())).await?;
        self.forget_session(&id);
        Ok(())
    }

    /// Logs out (needs `auth.logout`).
    pub async fn logout(&self) -> Result<()> {
        self.request(&LogoutRequest::new()).await?;
        Ok(())
    }

    /// Calls any agent method, typed, after checking that the agent advertised it.
    pub async fn request<R: Request + ClientToAgent>(&self, params: &R) -> Result<R::Response> {
        let caps = self.initialized(R::METHOD)?.agent_capabilities;
        check_agent_capability(R::METHOD, &caps)?;
        self.call(params).await
    }

    /// Sends any notification to the agent.
    pub async fn notify<N: Notification + ClientToAgent>(&self, params: &N) -> Result<()> {
        self.initialized(N::METHOD)?;
        match self.rpc.notify(N::METHOD, params).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.closed_error(e.into()).await),
        }
    }

    /// Calls an extension method (its name must start with `_`).
    pub async fn ext_method(&self, method: &str, params: &RawValue) -> Result<Box<RawValue>> {
        if !method.starts_with('_') {
            return Err(Error::Invalid(format!(
                "extension methods start with `_`, not `{method}`"
            )));
        }
        match self.rpc.request_raw(method, Some(params)).await {
            Ok(result) => Ok(result),
            Err(e) => Err(self.closed_error(e.into()).await),
        }
    }

    async fn call<R: Request>(&self, params: &R) -> Result<R::Response> {
        match self.rpc.request(R::METHOD, params).await {
            Ok(MethodResult(response)) => Ok(response),
            Err(e) => Err(self.closed_error(e.into()).await),
        }
    }

    /// A closed connection caused by the agent's exit says why. The connection can see the
    /// agent's stdout close a moment before the exit status is known, so wait briefly for it.
    async fn closed_error(&self, error: Error) -> Error {
        if !matches!(error, Error::ConnectionClosed) || !self.state.spawned.load(Ordering::Acquire)
        {
            return error;
        }
        let recorded = self.state.exit_recorded.clone();
        futures_lite::future::or(recorded.wait(), async {
            smol::Timer::after(std::time::Duration::from_secs(2)).await;
        })
        .await;
        match &*self.state.exit.lock().unwrap() {
            Some((status, tail)) => Error::AgentExited {
                status: status.clone(),
                stderr_tail: tail.clone(),
            },
            None => error,
        }
    }

    fn agent_exited(&self, status: String, stderr_tail: String) {
        *self.state.exit.lock().unwrap() = Some((status, stderr_tail));
        self.state.exit_recorded.fire();
        self.rpc.close();
    }

    fn initialized(&self, method: &str) -> Result<InitializeResponse> {
        self.agent_info()
            .ok_or_else(|| Error::NotInitialized(method.to_owned()))
    }

    fn check_session_setup(&self, cwd: &str, servers: &[McpServer]) -> Result<()> {
        if !Path::new(cwd).is_absolute() {
            return Err(Error::Invalid(format!(
                "cwd must be an absolute path, got `{cwd}`"
            )));
        }
        let caps = self.initialized("session/new")?.agent_capabilities;
        for server in servers {
            match server {
                McpServer::Http(s) if !caps.mcp_capabilities.http => {
                    return Err(Error::NotAdvertised {
                        method: format!("MCP server `{}` over http", s.name),
                        capability: "mcpCapabilities.http",
                    });
                }
                McpServer::Sse(s) if !caps.mcp_capabilities.sse => {
                    return Err(Error::NotAdvertised {
                        method: format!("MCP server `{}` over sse", s.name),
                        capability: "mcpCapabilities.sse",
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn open_session(
        &self,
        id: SessionId,
        cwd: &str,
        additional: Option<&[String]>,
        modes: Option<SessionModeState>,
        config_options: Option<Vec<SessionConfigOption>>,
    ) -> Session {
        let roots = if self.state.options.fs_unrestricted {
            FsRoots::unrestricted()
        } else {
            FsRoots::session(
                cwd,
                additional.unwrap_or_default().iter().map(PathBuf::from),
            )
        };
        let shared = Arc::new(SessionShared {
            id: id.clone(),
            roots,
            cwd: PathBuf::from(cwd),
            updates: UpdateQueue::new(id.clone(), self.state.options.session_update_budget),
            turn_active: AtomicBool::new(false),
            cancel: Mutex::new(Signal::new()),
            tool_calls: Mutex::new(HashMap::new()),
            modes: Mutex::new(modes),
            config_options: Mutex::new(config_options),
        });
        // Under the routes lock, so that no update slips between taking the early ones and
        // registering the session.
        let mut routes = self.state.routes.lock().unwrap();
        routes.open(id, shared.clone(), &shared.updates, |update| {
            shared.track(update)
        });
        drop(routes);
        Session {
            agent: self.clone(),
            shared,
        }
    }

    fn forget_session(&self, id: &SessionId) {
        if let Some(session) = self.state.routes.lock().unwrap().remove(id) {
            session.updates.close();
        }
        if let Some(terminals) = &self.state.options.terminals {
            terminals.release_session(id.as_str());
        }
    }
}

fn check_agent_capability(method: &str, caps: &AgentCapabilities) -> Result<()> {
    let missing = |capability: &'static str| {
        Err(Error::NotAdvertised {
            method: method.to_owned(),
            capability,
        })
    };
    let sessions = &caps.session_capabilities;
    match method {
        "session/load" if !caps.load_session => missing("loadSession"),
        "session/list" if sessions.list.is_none() => missing("sessionCapabilities.list"),
        "session/resume" if sessions.resume.is_none() => missing("sessionCapabilities.resume"),
        "session/close" if sessions.close.is_none() => missing("sessionCapabilities.close"),
        "session/delete" if sessions.delete.is_none() => missing("sessionCapabilities.delete"),
        "logout" if caps.auth.logout.is_none() => missing("auth.logout"),
        _ => Ok(()),
    }
}

fn check_prompt(prompt: &[ContentBlock], caps: &PromptCapabilities) -> Result<()> {
    for block in prompt {
        let needed = match block {
            ContentBlock::Image(_) if !caps.image => "promptCapabilities.image",
            ContentBlock::Audio(_) if !caps.audio => "promptCapabilities.audio",
            ContentBlock::Resource(_) if !caps.embedded_context => {
                "promptCapabilities.embeddedContext"
            }
            _ => continue,
        };
        return Err(Error::NotAdvertised {
            method: "session/prompt".into(),
            capability: needed,
        });
    }
    Ok(())
}

/// A session on the agent: prompt turns, cancellation, modes and config options, and the
/// updates that arrive outside turns.
#[derive(Clone)]
pub struct Session {
    agent: AgentHandle,
    shared: Arc<SessionShared>,
}

impl Session {
    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.shared.id
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.shared.cwd
    }

    /// The modes the session advertised, with the current one.
    pub fn modes(&self) -> Option<SessionModeState> {
        self.shared.modes.lock().unwrap().clone()
    }

    /// The config options the session advertised, with their current values.
    pub fn config_options(&self) -> Option<Vec<SessionConfigOption>> {
        self.shared.config_options.lock().unwrap().clone()
    }

    /// What the client knows of a tool call of this session.
    pub fn tool_call(&self, id: &ToolCallId) -> Option<ToolCallState> {
        self.shared.tool_calls.lock().unwrap().get(id).cloned()
    }

    /// Sends a prompt. At most one turn runs at a time; content types the agent did not
    /// advertise are refused without sending.
    pub async fn prompt(&self, prompt: Vec<ContentBlock>) -> Result<PromptTurn> {
        self.prompt_with(PromptRequest::new(self.shared.id.clone(), prompt))
            .await
    }

    /// Sends a prompt from a full request.
    pub async fn prompt_with(&self, request: PromptRequest) -> Result<PromptTurn> {
        let caps = self.agent.initialized("session/prompt")?.agent_capabilities;
        check_prompt(&request.prompt, &caps.prompt_capabilities)?;
        if self.shared.turn_active.swap(true, Ordering::AcqRel) {
            return Err(Error::Invalid(format!(
                "session `{}` already has a prompt in flight; wait for its end or cancel it",
                self.shared.id
            )));
        }
        *self.shared.cancel.lock().unwrap() = Signal::new();
        let raw = serde_json::value::to_raw_value(&request)
            .map_err(|e| Error::Internal(e.to_string()))?;
        let agent = self.agent.clone();
        let mut response: ResponseFuture = Box::pin(async move {
            let result = match agent.rpc.request_raw("session/prompt", Some(&raw)).await {
                Ok(result) => result,
                Err(e) => return Err(agent.closed_error(e.into()).await),
            };
            decode_response::<PromptResponse>(result.get()).map_err(Error::Decode)
        });
        // Send the prompt now, not when the turn is first polled: a `cancel` right after
        // `prompt` must find the prompt on its way.
        if let Some(end) = futures_lite::future::poll_once(&mut response).await {
            return Ok(PromptTurn {
                session: self.clone(),
                response: None,
                end: Some(end),
            }
            .ended());
        }
        Ok(PromptTurn {
            session: self.clone(),
            response: Some(response),
            end: None,
        })
    }

    /// Cancels the running turn: sends `session/cancel`, answers the session's pending
    /// permission requests with `cancelled`, and marks its unfinished tool calls cancelled.
    /// The turn then ends with `cancelled`.
    pub async fn cancel(&self) -> Result<()> {
        self.shared.cancel.lock().unwrap().fire();
        for state in self.shared.tool_calls.lock().unwrap().values_mut() {
            if !state.is_finished() {
                *state = ToolCallState::Cancelled;
            }
        }
        self.agent
            .notify(&CancelNotification::new(self.shared.id.clone()))
            .await
    }

    /// Switches mode; the mode must be one the session advertised.
    pub async fn set_mode(&self, mode: impl Into<SessionModeId>) -> Result<()> {
        let mode = mode.into();
        let advertised = self
            .modes()
            .is_some_and(|m| m.available_modes.iter().any(|a| a.id == mode));
        if !advertised {
            return Err(Error::Invalid(format!(
                "the session did not advertise the mode `{mode}`"
            )));
        }
        self.agent
            .request(&SetSessionModeRequest::new(
                self.shared.id.clone(),
                mode.clone(),
            ))
            .await?;
        if let Some(modes) = self.shared.modes.lock().unwrap().as_mut() {
            modes.current_mode_id = mode;
        }
        Ok(())
    }

    /// Sets a config option; returns (and records) the full new state.
    pub async fn set_config_option(
        &self,
        config_id: impl Into<SessionConfigId>,
        value: SetSessionConfigOptionRequestKind,
    ) -> Result<Vec<SessionConfigOption>> {
        let config_id = config_id.into();
        let advertised = self
            .config_options()
            .is_some_and(|o| o.iter().any(|o| o.id == config_id));
        if !advertised {
            return Err(Error::Invalid(format!(
                "the session did not advertise the config option `{config_id}`"
            )));
        }
        let request = SetSessionConfigOptionRequest::new(self.shared.id.clone(), config_id, value);
        let response = self.agent.request(&request).await?;
        *self.shared.config_options.lock().unwrap() = Some(response.config_options.clone());
        Ok(response.config_options)
    }

    /// The next update that arrived outside a turn (or was left over by one), waiting for it;
    /// `None` once the connection is over (or the session closed) and every update was taken.
    ///
    /// [`Error::UpdatesDropped`] stands where updates were dropped because the session's
    /// budget was full (see [`ClientOptions::with_session_update_budget`]); the stream goes on
    /// after it.
    /// [`Error::InvalidUpdate`] carries an update that does not decode, raw.
    pub async fn next_update(&self) -> Option<Result<SessionUpdate>> {
        let entry = self.shared.updates.pop().await?;
        Some(entry.map(|notification| notification.update))
    }

    /// An update that already arrived, without waiting.
    pub fn try_next_update(&self) -> Option<Result<SessionUpdate>> {
        match self.shared.updates.try_pop() {
            Popped::Entry(entry) => Some(entry.map(|notification| notification.update)),
            Popped::Empty | Popped::Closed => None,
        }
    }

    /// How many bytes of updates wait in this session for the application (see
    /// [`ClientOptions::with_session_update_budget`]).
    pub fn buffered_update_bytes(&self) -> usize {
        self.shared.updates.bytes()
    }

    /// Closes the session (needs `sessionCapabilities.close`) and releases its terminals.
    pub async fn close(&self) -> Result<()> {
        self.agent
            .request(&CloseSessionRequest::new(self.shared.id.clone()))
            .await?;
        self.agent.forget_session(&self.shared.id);
        Ok(())
    }
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<PromptResponse>> + Send>>;

/// A running prompt turn: [`next`](PromptTurn::next) yields its updates in order, then
/// [`end`](PromptTurn::end) gives the stop reason.
///
/// Reading the updates is optional: the connection never waits for them. A session keeps
/// what is not read up to its budget ([`ClientOptions::with_session_update_budget`]) and
/// records what it had to drop, and `end` skips what is left.
///
/// Dropping it before the end does not cancel the turn (use [`Session::cancel`]); the turn's
/// remaining updates stay in the session ([`Session::next_update`]).
pub struct PromptTurn {
    session: Session,
    response: Option<ResponseFuture>,
    end: Option<Result<PromptResponse>>,
}

impl PromptTurn {
    /// The session of this turn.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The next update of the turn, or `None` once the turn has ended and every update sent
    /// before the end was returned.
    ///
    /// [`Error::UpdatesDropped`] stands where updates were dropped because the session's
    /// budget was full; the turn goes on after it.
    /// [`Error::InvalidUpdate`] carries, as the agent sent it, an update that does not decode
    /// (for example a `null` where a number belongs); the turn goes on after it too.
    pub async fn next(&mut self) -> Option<Result<SessionUpdate>> {
        let updates = &self.session.shared.updates;
        if let Popped::Entry(entry) = updates.try_pop() {
            return Some(entry.map(|notification| notification.update));
        }
        let response = self.response.as_mut()?;
        enum Next {
            Update(Option<Result<Box<SessionNotification>>>),
            End(Result<PromptResponse>),
        }
        let next = futures_lite::future::or(async { Next::Update(updates.pop().await) }, async {
            Next::End(response.as_mut().await)
        })
        .await;
        let entry = match next {
            Next::Update(Some(entry)) => entry,
            Next::Update(None) => {
                // The connection is over and every update was taken: the response resolves
                // too (with the reason the connection ended if it never came).
                let end = response.as_mut().await;
                self.finish(end);
                return None;
            }
            Next::End(end) => {
                self.finish(end);
                // Every update sent before the response is already queued: the connection
                // hands notifications over before any later response.
                match self.session.shared.updates.try_pop() {
                    Popped::Entry(entry) => entry,
                    Popped::Empty | Popped::Closed => return None,
                }
            }
        };
        Some(entry.map(|notification| notification.update))
    }

    /// A turn whose response came with the first poll: free the session at once.
    fn ended(self) -> Self {
        self.session
            .shared
            .turn_active
            .store(false, Ordering::Release);
        self
    }

    fn finish(&mut self, end: Result<PromptResponse>) {
        self.response = None;
        self.session
            .shared
            .turn_active
            .store(false, Ordering::Release);
        self.end = Some(end);
    }

    /// Waits for the end of the turn and returns its response, skipping the updates not yet
    /// taken with [`next`](Self::next) (those of this turn, and any left from before it): the
    /// caller asked for the outcome, not the stream. Tool call states and modes still follow
    /// them ([`Session::tool_call`]). To keep the updates, read them with `next` first, or drop
    /// the turn instead (they then stay for [`Session::next_update`]).
    pub async fn end(mut self) -> Result<PromptResponse> {
        while self.next().await.is_some() {}
        self.end.take().expect("the turn has ended")
    }
}

impl Drop for PromptTurn {
    fn drop(&mut self) {
        if let Some(response) = self.response.take() {
            // Keep the request alive (dropping it would cancel the turn at the agent) and free
            // the session for the next turn when it ends.
            let shared = self.session.shared.clone();
            smol::spawn(async move {
                let _ = response.await;
                shared.turn_active.store(false, Ordering::Release);
            })
            .detach();
        }
    }
}

/// An [`Observer`] that prints every message in and out to stderr, for debugging.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrintTraffic;

impl Observer for PrintTraffic {
    fn incoming(&self, line: &[u8]) {
        eprintln!("<- {}", String::from_utf8_lossy(line));
    }
    fn outgoing(&self, line: &[u8]) {
        eprintln!("-> {}", String::from_utf8_lossy(line));
    }
    fn problem(&self, problem: &Problem) {
        eprintln!("!! {problem}");
    }
}

impl std::fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHandle")
            .field("initialized", &self.state.agent.lock().unwrap().is_some())
            .field("closed", &self.rpc.is_closed())
            .finish()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.shared.id)
            .field("cwd", &self.shared.cwd)
            .field(
                "turn_active",
                &self.shared.turn_active.load(Ordering::Relaxed),
            )
            .finish()
    }
}

impl std::fmt::Debug for PromptTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptTurn")
            .field("session", &self.session.shared.id)
            .field("ended", &self.response.is_none())
            .finish()
    }
}
