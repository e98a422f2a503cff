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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use acp_jsonrpc::{Connection, ConnectionHandle, ConnectionOptions, Observer, Problem};
use acp_types::*;
use futures_lite::{AsyncBufRead, AsyncWrite};
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::host::{FsHost, FsRoots, TerminalHost};
use crate::signal::Signal;

/// Protocol versions this runtime speaks.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[u16] = crate::agent::SUPPORTED_PROTOCOL_VERSIONS;

mod dispatch;
mod handler;
mod session;
mod spawned;
mod updates;

use dispatch::ClientDispatch;
pub use handler::{AutoAllow, AutoReject, Client, Interactive};
pub use session::{PromptTurn, Session};
pub use spawned::{run_spawned, spawn};

pub use updates::{DEFAULT_SESSION_UPDATE_BUDGET, DEFAULT_UNOPENED_UPDATE_BUDGET};
use updates::{Routes, UpdateQueue};

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
