//! The agent side: implement [`Agent`], serve it over any stream pair or stdio, and talk to the
//! client through [`ClientHandle`] and the session-scoped [`SessionClient`].
//!
//! The runtime keeps the protocol's rules so that the implementation does not have to:
//!
//! - `initialize` comes first. Requests before it are refused (`-32600`); requests pipelined
//!   right behind it wait for it to finish instead of racing it. The protocol version is
//!   negotiated here: the client's version when this runtime speaks it, else the latest.
//! - Capabilities are enforced both ways. Calls to the client that it did not advertise
//!   (`fs/*`, `terminal/*`, elicitation) fail locally with [`Error::NotAdvertised`] and send
//!   nothing; incoming calls to what this agent did not advertise (`session/load`, list, resume,
//!   close, delete, logout, prompt content types, MCP transports) are refused.
//! - Sessions live in a registry: ids from `session/new` are unique, `cwd` must be absolute,
//!   calls naming an unknown session get `-32002` with the id.
//! - At most one prompt runs per session. `session/cancel` fires the turn's cancellation signal
//!   ([`Turn::cancelled`]); once cancelled, the prompt answers `stopReason: cancelled` whatever
//!   the handler returns. Updates sent during the turn are written before its response.
//! - `session/set_mode` and `session/set_config_option` are checked against what the session
//!   advertised.
//!
//! ```
//! use acp_runtime::agent::{self, Agent, ClientHandle, Turn};
//! use acp_runtime::Result;
//! use acp_types::*;
//!
//! struct Echo;
//!
//! impl Agent for Echo {
//!     async fn new_session(&self, _: NewSessionRequest, _: &ClientHandle) -> Result<NewSessionResponse> {
//!         Ok(NewSessionResponse::new(agent::new_session_id()))
//!     }
//!
//!     async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
//!         for block in &request.prompt {
//!             turn.message(block.clone()).await?;
//!         }
//!         Ok(StopReason::EndTurn.into())
//!     }
//! }
//!
//! // Over stdio: `agent::serve_stdio(Echo)` from `main`.
//! # let _ = agent::serve_stdio::<Echo>;
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use acp_jsonrpc::{
    Connection, ConnectionHandle, ConnectionOptions, Handler, IncomingNotification,
    IncomingRequest, Responder, ResponseError,
};
use acp_types::*;
use futures_lite::{AsyncBufRead, AsyncWrite};
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::reply::{Reply, not_advertised, raw, raw_json};
use crate::signal::Signal;

/// Protocol versions this runtime speaks, oldest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[u16] = &[1];

/// What an agent implements. Only [`new_session`](Agent::new_session) and
/// [`prompt`](Agent::prompt) are required; the optional methods answer `-32601` unless the
/// agent both implements them and advertises the capability they belong to.
pub trait Agent: Send + Sync + 'static {
    /// Answers `initialize`: the capabilities, auth methods and info of this agent. The runtime
    /// fills in the negotiated `protocolVersion` afterwards and enforces what is advertised.
    fn initialize(
        &self,
        request: InitializeRequest,
    ) -> impl Future<Output = Result<InitializeResponse>> + Send {
        let _ = request;
        async { Ok(InitializeResponse::new(ProtocolVersion::LATEST)) }
    }

    /// Answers `authenticate` with one of the advertised auth methods.
    fn authenticate(
        &self,
        request: AuthenticateRequest,
    ) -> impl Future<Output = Result<AuthenticateResponse>> + Send {
        async move {
            Err(Error::invalid_params(format!(
                "unknown authentication method `{}`",
                request.method_id
            )))
        }
    }

    /// Answers `logout` (needs the `auth.logout` capability).
    fn logout(
        &self,
        request: LogoutRequest,
    ) -> impl Future<Output = Result<LogoutResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("logout")) }
    }

    /// Creates a session. Return a fresh id ([`new_session_id`] makes one); the runtime registers
    /// it and refuses a duplicate.
    fn new_session(
        &self,
        request: NewSessionRequest,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<NewSessionResponse>> + Send;

    /// Loads a stored session (needs `loadSession`): replay its history through `session`
    /// (see [`SessionClient::replay`]) before returning; the response goes out after the replay.
    fn load_session(
        &self,
        request: LoadSessionRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<LoadSessionResponse>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found("session/load")) }
    }

    /// Resumes a stored session without replaying it (needs `sessionCapabilities.resume`).
    fn resume_session(
        &self,
        request: ResumeSessionRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<ResumeSessionResponse>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found("session/resume")) }
    }

    /// Lists sessions (needs `sessionCapabilities.list`). The default lists the sessions of
    /// this connection.
    fn list_sessions(
        &self,
        request: ListSessionsRequest,
        known: Vec<SessionInfo>,
    ) -> impl Future<Output = Result<ListSessionsResponse>> + Send {
        async move {
            let sessions: Vec<SessionInfo> = known
                .into_iter()
                .filter(|s| request.cwd.as_ref().is_none_or(|cwd| &s.cwd == cwd))
                .collect();
            Ok(ListSessionsResponse::new(sessions))
        }
    }

    /// Closes a session (needs `sessionCapabilities.close`). The runtime has already cancelled
    /// its running turn and forgets the session afterwards.
    fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> impl Future<Output = Result<CloseSessionResponse>> + Send {
        let _ = request;
        async { Ok(CloseSessionResponse::new()) }
    }

    /// Deletes a stored session (needs `sessionCapabilities.delete`).
    fn delete_session(
        &self,
        request: DeleteSessionRequest,
    ) -> impl Future<Output = Result<DeleteSessionResponse>> + Send {
        let _ = request;
        async { Ok(DeleteSessionResponse::new()) }
    }

    /// Runs one prompt turn: stream updates through `turn`, then return the stop reason.
    /// Watch [`Turn::cancelled`]: after `session/cancel` the runtime answers `cancelled`
    /// whatever this returns.
    fn prompt(
        &self,
        request: PromptRequest,
        turn: Turn,
    ) -> impl Future<Output = Result<PromptResponse>> + Send;

    /// Switches the session's mode. The runtime has checked that the mode was advertised, and
    /// records it as current when this succeeds.
    fn set_mode(
        &self,
        request: SetSessionModeRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<SetSessionModeResponse>> + Send {
        let _ = (request, session);
        async { Ok(SetSessionModeResponse::new()) }
    }

    /// Sets a config option. The runtime has checked the option and value against what the
    /// session advertised; the default records the new value and answers the full state.
    fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        current: Vec<SessionConfigOption>,
    ) -> impl Future<Output = Result<SetSessionConfigOptionResponse>> + Send {
        async move {
            Ok(SetSessionConfigOptionResponse::new(apply_config_value(
                current, &request,
            )))
        }
    }

    /// Answers an extension request (method starting with `_`).
    fn ext_method(
        &self,
        call: ExtensionCall,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<Box<RawValue>>> + Send {
        let _ = client;
        async move { Err(Error::method_not_found(&call.method)) }
    }

    /// Handles an extension notification. Like every notification handler, it must not wait
    /// for the client (spawn such work).
    fn ext_notification(&self, call: ExtensionCall) -> impl Future<Output = ()> + Send {
        let _ = call;
        async {}
    }
}

/// A new session id, unique within this process (`sess_<counter>_<random>`).
pub fn new_session_id() -> SessionId {
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
        ^ std::process::id();
    SessionId::new(format!("sess_{n}_{nonce:08x}"))
}

/// Serves `agent` over a reader and a writer. Returns the agent's handle on its client and the
/// connection's driver, which must be polled (on any executor) for anything to happen; it
/// resolves when the client closes the connection.
pub fn serve<A: Agent, R, W>(
    agent: A,
    reader: R,
    writer: W,
    options: ConnectionOptions,
) -> (
    ClientHandle,
    impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<A, R, W>,
)
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let state = Arc::new(AgentState::default());
    let dispatch = AgentDispatch {
        agent: Arc::new(agent),
        state: state.clone(),
    };
    let (rpc, driver) = Connection::new(reader, writer, dispatch, options);
    state.rpc.set(rpc.clone()).expect("set once");
    (ClientHandle { rpc, state }, driver)
}

/// Serves `agent` on this process's stdin and stdout until the client closes stdin. Runs the
/// connection on the calling thread.
pub fn serve_stdio<A: Agent>(agent: A) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some((reader, writer)) = crate::stdio::pipe_fds()? {
        // How editors run agents: both ends are pipes. Waiting on exactly these two in an
        // epoll loop keeps every wake-up on this thread (see `pipe_loop`).
        let (pipes, reader, writer) = crate::pipe_loop::pipes(reader, writer)?;
        let reader = futures_lite::io::BufReader::with_capacity(crate::stdio::READ_BUFFER, reader);
        let (_client, driver) = serve(agent, reader, writer, ConnectionOptions::default());
        return crate::pipe_loop::block_on(&pipes, driver)?.map_err(std::io::Error::other);
    }
    let (reader, writer) = crate::stdio::stdio()?;
    let (_client, driver) = serve(agent, reader, writer, ConnectionOptions::default());
    smol::block_on(driver).map_err(std::io::Error::other)
}

#[derive(Default)]
struct AgentState {
    rpc: std::sync::OnceLock<ConnectionHandle>,
    init: Mutex<InitState>,
    sessions: Mutex<HashMap<SessionId, SessionEntry>>,
}

#[derive(Default)]
enum InitState {
    #[default]
    NotStarted,
    Initializing(Signal),
    Ready(Box<Negotiated>),
}

struct Negotiated {
    client_capabilities: ClientCapabilities,
    agent_capabilities: AgentCapabilities,
    protocol_version: ProtocolVersion,
}

struct SessionEntry {
    cwd: String,
    additional_directories: Option<Vec<String>>,
    modes: Option<SessionModeState>,
    config_options: Option<Vec<SessionConfigOption>>,
    turn: Option<Signal>,
}

impl SessionEntry {
    fn new(
        cwd: String,
        additional_directories: Option<Vec<String>>,
        modes: Option<SessionModeState>,
        config_options: Option<Vec<SessionConfigOption>>,
    ) -> Self {
        SessionEntry {
            cwd,
            additional_directories,
            modes,
            config_options,
            turn: None,
        }
    }
}

impl AgentState {
    fn negotiated<T>(&self, read: impl FnOnce(&Negotiated) -> T) -> Option<T> {
        match &*self.init.lock().unwrap() {
            InitState::Ready(n) => Some(read(n)),
            _ => None,
        }
    }

    fn register(&self, id: SessionId, entry: SessionEntry, allow_existing: bool) -> Result<()> {
        let mut sessions = self.sessions.lock().unwrap();
        if sessions.contains_key(&id) && !allow_existing {
            return Err(Error::internal(format!(
                "session id `{id}` is already in use"
            )));
        }
        sessions.insert(id, entry);
        Ok(())
    }

    fn with_session<T>(
        &self,
        id: &SessionId,
        f: impl FnOnce(&mut SessionEntry) -> Result<T>,
    ) -> Result<T> {
        let mut sessions = self.sessions.lock().unwrap();
        match sessions.get_mut(id) {
            Some(entry) => f(entry),
            None => Err(unknown_session(id)),
        }
    }
}

fn unknown_session(id: &SessionId) -> Error {
    Error::Rpc(
        ResponseError::new(
            crate::error::codes::RESOURCE_NOT_FOUND,
            format!("Unknown session `{id}`"),
        )
        .with_data(&serde_json::json!({ "sessionId": id })),
    )
}

/// The agent's handle on its client: capabilities, and every call an agent makes.
///
/// Cheap to clone, `Send` and `Sync`.
#[derive(Clone)]
pub struct ClientHandle {
    rpc: ConnectionHandle,
    state: Arc<AgentState>,
}

impl ClientHandle {
    /// The client's capabilities, once `initialize` has completed.
    pub fn capabilities(&self) -> Option<ClientCapabilities> {
        self.state.negotiated(|n| n.client_capabilities.clone())
    }

    /// The negotiated protocol version, once `initialize` has completed.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.state.negotiated(|n| n.protocol_version)
    }

    /// The session-scoped view for `session_id`.
    pub fn session(&self, session_id: impl Into<SessionId>) -> SessionClient {
        SessionClient {
            id: session_id.into(),
            client: self.clone(),
        }
    }

    /// The underlying JSON-RPC connection, for raw calls.
    pub fn connection(&self) -> &ConnectionHandle {
        &self.rpc
    }

    /// Calls any client method, typed, after checking that the client advertised it.
    pub async fn request<R: Request + AgentToClient>(&self, params: &R) -> Result<R::Response> {
        self.check_advertised(R::METHOD, params)?;
        // Params are serialized straight into the message, the result decoded straight from it.
        let MethodResult(response) = self.rpc.request(R::METHOD, params).await?;
        Ok(response)
    }

    /// Sends any notification to the client.
    pub async fn notify<N: Notification + AgentToClient>(&self, params: &N) -> Result<()> {
        self.rpc.notify(N::METHOD, params).await?;
        Ok(())
    }

    /// Sends a `session/update`.
    ///
    /// The update is serialized by this call; the returned future only queues the bytes
    /// (waiting while the outgoing queue is full), so it holds no large value across its
    /// awaits.
    pub fn session_update(
        &self,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.send_update(session_id, &update)
    }

    /// Serializes `update` for `session_id` and returns the future that queues it: the hot
    /// path of a streaming turn, serialized straight from borrowed parts.
    fn send_update(
        &self,
        session_id: &SessionId,
        update: &SessionUpdate,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        #[derive(serde::Serialize)]
        struct Params<'a> {
            #[serde(rename = "sessionId")]
            session_id: &'a SessionId,
            update: &'a SessionUpdate,
        }
        let queued = self
            .rpc
            .notify("session/update", &Params { session_id, update });
        async move { Ok(queued.await?) }
    }

    /// Calls an extension method (its name must start with `_`).
    pub async fn ext_method(&self, method: &str, params: &RawValue) -> Result<Box<RawValue>> {
        if !method.starts_with('_') {
            return Err(Error::Invalid(format!(
                "extension methods start with `_`, not `{method}`"
            )));
        }
        Ok(self.rpc.request_raw(method, Some(params)).await?)
    }

    fn check_advertised<R: serde::Serialize>(&self, method: &str, params: &R) -> Result<()> {
        // Read in place under the lock: this runs on every call to the client.
        let elicitation_mode = (method == "elicitation/create")
            .then(|| {
                serde_json::to_value(params)
                    .ok()?
                    .get("mode")?
                    .as_str()
                    .map(str::to_owned)
            })
            .flatten();
        let missing = self.state.negotiated(|n| {
            let caps = &n.client_capabilities;
            match method {
                "fs/read_text_file" if !caps.fs.read_text_file => Some("fs.readTextFile"),
                "fs/write_text_file" if !caps.fs.write_text_file => Some("fs.writeTextFile"),
                m if m.starts_with("terminal/") && !caps.terminal => Some("terminal"),
                "elicitation/create" => match (&caps.elicitation, elicitation_mode.as_deref()) {
                    (None, _) => Some("elicitation"),
                    (Some(e), Some("form")) if e.form.is_none() => Some("elicitation.form"),
                    (Some(e), Some("url")) if e.url.is_none() => Some("elicitation.url"),
                    _ => None,
                },
                _ => None,
            }
        });
        match missing {
            None => Err(Error::NotInitialized(method.to_owned())),
            Some(Some(capability)) => Err(Error::NotAdvertised {
                method: method.to_owned(),
                capability,
            }),
            Some(None) => Ok(()),
        }
    }
}

/// The client, seen from one session: the helpers for every kind of `session/update`, and the
/// calls that belong to a session (permission, files, terminals).
#[derive(Clone)]
pub struct SessionClient {
    id: SessionId,
    client: ClientHandle,
}

impl SessionClient {
    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The connection-wide handle.
    pub fn client(&self) -> &ClientHandle {
        &self.client
    }

    /// Sends any session update. Like every update helper here, it serializes the update
    /// when called; the returned future queues it.
    pub fn update(&self, update: SessionUpdate) -> impl Future<Output = Result<()>> + Send + use<> {
        self.client.send_update(&self.id, &update)
    }

    /// Streams a chunk of the agent's reply.
    pub fn message(
        &self,
        content: impl Into<ContentBlock>,
    ) -> impl Future<Output = Result<()>> + Send {
        self.update(SessionUpdate::agent_message_chunk(content))
    }

    /// Streams a chunk of the agent's reasoning.
    pub fn thought(
        &self,
        content: impl Into<ContentBlock>,
    ) -> impl Future<Output = Result<()>> + Send {
        self.update(SessionUpdate::agent_thought_chunk(content))
    }

    /// Streams a chunk of the user's message (history replay).
    pub fn user_message(
        &self,
        content: impl Into<ContentBlock>,
    ) -> impl Future<Output = Result<()>> + Send {
        self.update(SessionUpdate::user_message_chunk(content))
    }

    /// Reports a new tool call.
    pub fn tool_call(&self, call: ToolCall) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::ToolCall(call))
    }

    /// Reports progress of a tool call.
    pub fn tool_call_update(
        &self,
        update: ToolCallUpdate,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::ToolCallUpdate(update))
    }

    /// Sends the execution plan (the complete list each time).
    pub fn plan(&self, entries: Vec<PlanEntry>) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::Plan(Plan::new(entries)))
    }

    /// Advertises the slash commands available now.
    pub fn available_commands(
        &self,
        commands: Vec<AvailableCommand>,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate::new(commands),
        ))
    }

    /// Reports that the agent switched mode itself; the runtime records it as current.
    pub async fn current_mode(&self, mode: impl Into<SessionModeId>) -> Result<()> {
        let mode = mode.into();
        let _ = self.client.state.with_session(&self.id, |entry| {
            if let Some(modes) = &mut entry.modes {
                modes.current_mode_id = mode.clone();
            }
            Ok(())
        });
        self.update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
            mode,
        )))
        .await
    }

    /// Sends the full config option state after the agent changed it; the runtime records it.
    pub async fn config_options(&self, options: Vec<SessionConfigOption>) -> Result<()> {
        let _ = self.client.state.with_session(&self.id, |entry| {
            entry.config_options = Some(options.clone());
            Ok(())
        });
        self.update(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
            options,
        )))
        .await
    }

    /// Updates session metadata (title, last activity).
    pub fn session_info(
        &self,
        info: SessionInfoUpdate,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::SessionInfoUpdate(info))
    }

    /// Reports context window usage.
    pub fn usage(&self, used: u64, size: u64) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::UsageUpdate(UsageUpdate::new(used, size)))
    }

    /// Replays recorded history, in order (for `session/load`).
    pub async fn replay(&self, history: impl IntoIterator<Item = SessionUpdate>) -> Result<()> {
        for update in history {
            self.update(update).await?;
        }
        Ok(())
    }

    /// Asks the user for permission; returns the outcome (`cancelled` when the turn was
    /// cancelled meanwhile).
    pub async fn request_permission(
        &self,
        tool_call: ToolCallUpdate,
        options: Vec<PermissionOption>,
    ) -> Result<RequestPermissionOutcome> {
        let request = RequestPermissionRequest::new(self.id.clone(), tool_call, options);
        Ok(self.client.request(&request).await?.outcome)
    }

    /// Reads a text file through the client (needs `fs.readTextFile`); `line` is 1-based.
    pub async fn read_text_file(
        &self,
        path: impl Into<String>,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String> {
        let mut request = ReadTextFileRequest::new(self.id.clone(), path);
        request.line = line;
        request.limit = limit;
        Ok(self.client.request(&request).await?.content)
    }

    /// Writes a text file through the client (needs `fs.writeTextFile`).
    pub async fn write_text_file(
        &self,
        path: impl Into<String>,
        content: impl Into<String>,
    ) -> Result<()> {
        let request = WriteTextFileRequest::new(self.id.clone(), path, content);
        self.client.request(&request).await?;
        Ok(())
    }
}

/// One running prompt turn: the session's client helpers (through `Deref`), plus the
/// cancellation signal.
#[derive(Clone)]
pub struct Turn {
    session: SessionClient,
    cancel: Signal,
}

impl Turn {
    /// Whether the client cancelled the turn.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_fired()
    }

    /// Resolves when the client cancels the turn (`session/cancel`, or closing the session).
    /// Race the turn's work against it.
    pub async fn cancelled(&self) {
        self.cancel.wait().await
    }

    /// The session-scoped client.
    pub fn session(&self) -> &SessionClient {
        &self.session
    }
}

impl std::ops::Deref for Turn {
    type Target = SessionClient;
    fn deref(&self) -> &SessionClient {
        &self.session
    }
}

/// The config option state after applying `request`'s value.
pub fn apply_config_value(
    mut current: Vec<SessionConfigOption>,
    request: &SetSessionConfigOptionRequest,
) -> Vec<SessionConfigOption> {
    for option in &mut current {
        if option.id != request.config_id {
            continue;
        }
        match (&mut option.kind, &request.kind) {
            (
                SessionConfigOptionKind::Select(select),
                SetSessionConfigOptionRequestKind::ValueId(v),
            ) => {
                select.current_value = v.value.clone();
            }
            (
                SessionConfigOptionKind::Boolean(b),
                SetSessionConfigOptionRequestKind::Boolean(v),
            ) => {
                b.current_value = v.value;
            }
            _ => {}
        }
    }
    current
}

fn select_values(options: &SessionConfigSelectOptions) -> Vec<&SessionConfigValueId> {
    match options {
        SessionConfigSelectOptions::Ungrouped(options) => {
            options.iter().map(|o| &o.value).collect()
        }
        SessionConfigSelectOptions::Grouped(groups) => groups
            .iter()
            .flat_map(|g| g.options.iter().map(|o| &o.value))
            .collect(),
    }
}

fn check_config_value(
    options: &[SessionConfigOption],
    request: &SetSessionConfigOptionRequest,
) -> Result<()> {
    let Some(option) = options.iter().find(|o| o.id == request.config_id) else {
        return Err(Error::invalid_params(format!(
            "unknown config option `{}`; the session advertised {:?}",
            request.config_id,
            options.iter().map(|o| o.id.as_str()).collect::<Vec<_>>()
        )));
    };
    match (&option.kind, &request.kind) {
        (
            SessionConfigOptionKind::Select(select),
            SetSessionConfigOptionRequestKind::ValueId(v),
        ) => {
            let values = select_values(&select.options);
            if values.contains(&&v.value) {
                Ok(())
            } else {
                Err(Error::invalid_params(format!(
                    "`{}` is not a value of config option `{}`; allowed: {:?}",
                    v.value,
                    option.id,
                    values.iter().map(|v| v.as_str()).collect::<Vec<_>>()
                )))
            }
        }
        (SessionConfigOptionKind::Boolean(_), SetSessionConfigOptionRequestKind::Boolean(_)) => {
            Ok(())
        }
        _ => Err(Error::invalid_params(format!(
            "config option `{}` does not take a value of that type",
            option.id
        ))),
    }
}

fn check_absolute(cwd: &str, what: &str) -> Result<()> {
    if Path::new(cwd).is_absolute() {
        Ok(())
    } else {
        Err(Error::invalid_params(format!(
            "{what} must be an absolute path, got `{cwd}`"
        )))
    }
}

fn check_mcp_servers(servers: &[McpServer], caps: &AgentCapabilities) -> Result<()> {
    for server in servers {
        match server {
            McpServer::Http(s) if !caps.mcp_capabilities.http => {
                return Err(Error::invalid_params(format!(
                    "MCP server `{}` uses http, which this agent does not advertise (mcpCapabilities.http)",
                    s.name
                )));
            }
            McpServer::Sse(s) if !caps.mcp_capabilities.sse => {
                return Err(Error::invalid_params(format!(
                    "MCP server `{}` uses sse, which this agent does not advertise (mcpCapabilities.sse)",
                    s.name
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_prompt_content(prompt: &[ContentBlock], caps: &PromptCapabilities) -> Result<()> {
    for block in prompt {
        let needed = match block {
            ContentBlock::Image(_) if !caps.image => "image",
            ContentBlock::Audio(_) if !caps.audio => "audio",
            ContentBlock::Resource(_) if !caps.embedded_context => "embeddedContext",
            _ => continue,
        };
        return Err(Error::invalid_params(format!(
            "prompt contains content this agent does not accept (promptCapabilities.{needed} is not advertised)"
        )));
    }
    Ok(())
}

/// Negotiates the version as the spec says: the client's when supported, else our latest.
fn negotiate(requested: ProtocolVersion) -> ProtocolVersion {
    if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested.0) {
        requested
    } else {
        ProtocolVersion(
            *SUPPORTED_PROTOCOL_VERSIONS
                .last()
                .expect("at least one version"),
        )
    }
}

struct AgentDispatch<A> {
    agent: Arc<A>,
    state: Arc<AgentState>,
}

/// Marks a session's turn as running for as long as it lives.
struct TurnRunning {
    state: Arc<AgentState>,
    session: SessionId,
    cancel: Signal,
}

impl Drop for TurnRunning {
    fn drop(&mut self) {
        // The turn's handler is gone either way: anything still waiting on its cancellation
        // signal (helpers racing it) can stop.
        self.cancel.fire();
        let _ = self.state.with_session(&self.session, |entry| {
            entry.turn = None;
            Ok(())
        });
    }
}

/// What the initialization gate decided for one request, at arrival.
enum Gate {
    Initialize(Signal),
    Go,
    WaitFor(Signal),
    Refuse(ResponseError),
}

impl<A: Agent> AgentDispatch<A> {
    /// Runs when the request arrives, before any later message is read, so that the order of
    /// arrival decides (no race between `initialize` and what is pipelined behind it).
    fn gate(&self, method: &str) -> Gate {
        let mut init = self.state.init.lock().unwrap();
        match (&*init, method) {
            (InitState::NotStarted, "initialize") => {
                let signal = Signal::new();
                *init = InitState::Initializing(signal.clone());
                Gate::Initialize(signal)
            }
            (_, "initialize") => Gate::Refuse(invalid_request("`initialize` was already called")),
            (InitState::NotStarted, _) => Gate::Refuse(invalid_request(format!(
                "`{method}` before `initialize`: the client must call `initialize` first"
            ))),
            (InitState::Initializing(signal), _) => Gate::WaitFor(signal.clone()),
            (InitState::Ready(_), _) => Gate::Go,
        }
    }

    fn client(&self) -> ClientHandle {
        ClientHandle {
            rpc: self.state.rpc.get().expect("set at start").clone(),
            state: self.state.clone(),
        }
    }

    fn agent_capabilities(&self) -> AgentCapabilities {
        self.state
            .negotiated(|n| n.agent_capabilities.clone())
            .unwrap_or_default()
    }

    async fn initialize(
        &self,
        request: InitializeRequest,
        done: Signal,
    ) -> Result<InitializeResponse> {
        let requested = request.protocol_version;
        let client_capabilities = request.client_capabilities.clone();
        let result = self.agent.initialize(request).await;
        let mut init = self.state.init.lock().unwrap();
        let result = result.map(|mut response| {
            response.protocol_version = negotiate(requested);
            *init = InitState::Ready(Box::new(Negotiated {
                client_capabilities,
                agent_capabilities: response.agent_capabilities.clone(),
                protocol_version: response.protocol_version,
            }));
            response
        });
        if result.is_err() {
            *init = InitState::NotStarted;
        }
        drop(init);
        done.fire();
        result
    }

    async fn handle(&self, request: ClientRequest) -> Result<Reply> {
        let caps = self.agent_capabilities();
        let client = self.client();
        match request {
            ClientRequest::Initialize(_) => unreachable!("handled by the gate"),
            ClientRequest::Authenticate(request) => {
                let advertised = self.state.negotiated(|_| ()).is_some();
                if !advertised {
                    return Err(Error::invalid_params("authenticate before initialize"));
                }
                raw(self.agent.authenticate(request).await?)
            }
            ClientRequest::Logout(request) => {
                if caps.auth.logout.is_none() {
                    return Err(not_advertised("agent", "logout", "auth.logout"));
                }
                raw(self.agent.logout(request).await?)
            }
            ClientRequest::SessionNew(request) => {
                check_absolute(&request.cwd, "cwd")?;
                check_mcp_servers(&request.mcp_servers, &caps)?;
                let (cwd, dirs) = (request.cwd.clone(), request.additional_directories.clone());
                let response = self.agent.new_session(request, &client).await?;
                let entry = SessionEntry::new(
                    cwd,
                    dirs,
                    response.modes.clone(),
                    response.config_options.clone(),
                );
                self.state
                    .register(response.session_id.clone(), entry, false)?;
                raw(response)
            }
            ClientRequest::SessionLoad(request) => {
                if !caps.load_session {
                    return Err(not_advertised("agent", "session/load", "loadSession"));
                }
                check_absolute(&request.cwd, "cwd")?;
                check_mcp_servers(&request.mcp_servers, &caps)?;
                let id = request.session_id.clone();
                let (cwd, dirs) = (request.cwd.clone(), request.additional_directories.clone());
                let response = self
                    .agent
                    .load_session(request, client.session(id.clone()))
                    .await?;
                let entry = SessionEntry::new(
                    cwd,
                    dirs,
                    response.modes.clone(),
                    response.config_options.clone(),
                );
                self.state.register(id, entry, true)?;
                raw(response)
            }
            ClientRequest::SessionResume(request) => {
                if caps.session_capabilities.resume.is_none() {
                    return Err(not_advertised(
                        "agent",
                        "session/resume",
                        "sessionCapabilities.resume",
                    ));
                }
                check_absolute(&request.cwd, "cwd")?;
                check_mcp_servers(request.mcp_servers.as_deref().unwrap_or_default(), &caps)?;
                let id = request.session_id.clone();
                let (cwd, dirs) = (request.cwd.clone(), request.additional_directories.clone());
                let response = self
                    .agent
                    .resume_session(request, client.session(id.clone()))
                    .await?;
                let entry = SessionEntry::new(
                    cwd,
                    dirs,
                    response.modes.clone(),
                    response.config_options.clone(),
                );
                self.state.register(id, entry, true)?;
                raw(response)
            }
            ClientRequest::SessionList(request) => {
                if caps.session_capabilities.list.is_none() {
                    return Err(not_advertised(
                        "agent",
                        "session/list",
                        "sessionCapabilities.list",
                    ));
                }
                let known = self
                    .state
                    .sessions
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(id, entry)| {
                        let mut info = SessionInfo::new(id.clone(), entry.cwd.clone());
                        info.additional_directories = entry.additional_directories.clone();
                        info
                    })
                    .collect();
                raw(self.agent.list_sessions(request, known).await?)
            }
            ClientRequest::SessionClose(request) => {
                if caps.session_capabilities.close.is_none() {
                    return Err(not_advertised(
                        "agent",
                        "session/close",
                        "sessionCapabilities.close",
                    ));
                }
                self.state.with_session(&request.session_id, |entry| {
                    if let Some(turn) = &entry.turn {
                        turn.fire();
                    }
                    Ok(())
                })?;
                let id = request.session_id.clone();
                let response = self.agent.close_session(request).await?;
                self.state.sessions.lock().unwrap().remove(&id);
                raw(response)
            }
            ClientRequest::SessionDelete(request) => {
                if caps.session_capabilities.delete.is_none() {
                    return Err(not_advertised(
                        "agent",
                        "session/delete",
                        "sessionCapabilities.delete",
                    ));
                }
                let id = request.session_id.clone();
                let response = self.agent.delete_session(request).await?;
                let removed = self.state.sessions.lock().unwrap().remove(&id);
                if let Some(turn) = removed.and_then(|entry| entry.turn) {
                    turn.fire();
                }
                raw(response)
            }
            ClientRequest::SessionPrompt(request) => {
                check_prompt_content(&request.prompt, &caps.prompt_capabilities)?;
                let id = request.session_id.clone();
                let cancel = Signal::new();
                self.state.with_session(&id, |entry| {
                    if entry.turn.is_some() {
                        return Err(Error::invalid_request(format!(
                            "session `{id}` already has a prompt in flight; wait for it or cancel it"
                        )));
                    }
                    entry.turn = Some(cancel.clone());
                    Ok(())
                })?;
                // Frees the session when the turn ends, also when this future is dropped
                // (`$/cancel_request`, a closing connection) before it gets there.
                let _running = TurnRunning {
                    state: self.state.clone(),
                    session: id.clone(),
                    cancel: cancel.clone(),
                };
                let turn = Turn {
                    session: client.session(id.clone()),
                    cancel: cancel.clone(),
                };
                let result = self.agent.prompt(request, turn).await;
                if cancel.is_fired() {
                    // The spec: a cancelled turn answers `cancelled`, never an error caused by
                    // the abort.
                    return raw(PromptResponse::new(StopReason::Cancelled));
                }
                raw(result?)
            }
            ClientRequest::SessionSetMode(request) => {
                let id = request.session_id.clone();
                self.state.with_session(&id, |entry| match &entry.modes {
                    None => Err(Error::invalid_params(format!(
                        "session `{id}` advertised no modes"
                    ))),
                    Some(modes)
                        if !modes
                            .available_modes
                            .iter()
                            .any(|m| m.id == request.mode_id) =>
                    {
                        Err(Error::invalid_params(format!(
                            "unknown mode `{}`; the session advertised {:?}",
                            request.mode_id,
                            modes
                                .available_modes
                                .iter()
                                .map(|m| m.id.as_str())
                                .collect::<Vec<_>>()
                        )))
                    }
                    Some(_) => Ok(()),
                })?;
                let mode = request.mode_id.clone();
                let response = self
                    .agent
                    .set_mode(request, client.session(id.clone()))
                    .await?;
                let _ = self.state.with_session(&id, |entry| {
                    if let Some(modes) = &mut entry.modes {
                        modes.current_mode_id = mode;
                    }
                    Ok(())
                });
                raw(response)
            }
            ClientRequest::SessionSetConfigOption(request) => {
                let id = request.session_id.clone();
                let current =
                    self.state
                        .with_session(&id, |entry| match &entry.config_options {
                            None => Err(Error::invalid_params(format!(
                                "session `{id}` advertised no config options"
                            ))),
                            Some(options) => {
                                check_config_value(options, &request)?;
                                Ok(options.clone())
                            }
                        })?;
                let response = self.agent.set_config_option(request, current).await?;
                let _ = self.state.with_session(&id, |entry| {
                    entry.config_options = Some(response.config_options.clone());
                    Ok(())
                });
                raw(response)
            }
            ClientRequest::Extension(call) => raw_json(self.agent.ext_method(call, &client).await?),
            other => Err(Error::method_not_found(other.method())),
        }
    }
}

fn invalid_request(detail: impl std::fmt::Display) -> ResponseError {
    ResponseError::new(acp_jsonrpc::ErrorCode::INVALID_REQUEST, detail.to_string())
}

fn decode_error(error: DecodeError) -> ResponseError {
    match error {
        DecodeError::UnknownMethod(method) => ResponseError::method_not_found(&method),
        DecodeError::InvalidParams { error, .. } => ResponseError::invalid_params(error),
    }
}

impl<A: Agent> Handler for AgentDispatch<A> {
    fn request(
        &self,
        request: IncomingRequest,
        responder: Responder,
    ) -> impl Future<Output = ()> + Send {
        let gate = self.gate(request.method());
        let dispatch = AgentDispatch {
            agent: self.agent.clone(),
            state: self.state.clone(),
        };
        async move {
            let decoded = ClientRequest::decode(request.method(), request.raw_params());
            match gate {
                Gate::Refuse(error) => return responder.respond_error(error),
                Gate::Initialize(done) => {
                    let result = match decoded {
                        Ok(ClientRequest::Initialize(params)) => {
                            dispatch.initialize(params, done).await
                        }
                        Ok(_) => unreachable!("the gate saw `initialize`"),
                        Err(error) => {
                            *dispatch.state.init.lock().unwrap() = InitState::NotStarted;
                            done.fire();
                            return responder.respond_error(decode_error(error));
                        }
                    };
                    return responder.respond(result.map_err(|e| e.to_response()));
                }
                Gate::WaitFor(signal) => signal.wait().await,
                Gate::Go => {}
            }
            if dispatch.state.negotiated(|_| ()).is_none() {
                return responder.respond_error(invalid_request(format!(
                    "`{}` before a successful `initialize`",
                    request.method()
                )));
            }
            let result = match decoded {
                Ok(call) => dispatch.handle(call).await.map_err(|e| e.to_response()),
                Err(error) => Err(decode_error(error)),
            };
            match result {
                Ok(reply) => reply(responder),
                Err(error) => responder.respond_error(error),
            }
        }
    }

    fn notification(&self, notification: IncomingNotification) -> impl Future<Output = ()> + Send {
        let decoded = ClientNotification::decode(notification.method(), notification.raw_params());
        let agent = self.agent.clone();
        let state = self.state.clone();
        async move {
            match decoded {
                Ok(ClientNotification::SessionCancel(cancel)) => {
                    let found = state.with_session(&cancel.session_id, |entry| {
                        if let Some(turn) = &entry.turn {
                            turn.fire();
                        }
                        Ok(())
                    });
                    if found.is_err() {
                        notification.report_unhandled(format_args!(
                            "session/cancel for unknown session `{}`",
                            cancel.session_id
                        ));
                    }
                }
                // `$/cancel_request` is handled by the JSON-RPC layer before it gets here.
                Ok(ClientNotification::CancelRequest(_)) => {}
                Ok(ClientNotification::Extension(call)) => agent.ext_notification(call).await,
                Ok(other) => notification
                    .report_unhandled(format_args!("no handler for `{}`", other.method())),
                Err(error) => notification.report_unhandled(error),
            }
        }
    }
}

impl SessionClient {
    /// Starts `command` in a client terminal (needs the client's `terminal` capability). The
    /// returned handle releases the terminal when dropped.
    pub async fn create_terminal(
        &self,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Terminal> {
        let mut request = CreateTerminalRequest::new(self.id.clone(), command);
        request.args = Some(args.into_iter().map(Into::into).collect());
        self.create_terminal_with(request).await
    }

    /// Starts a terminal from a full request (env, cwd, output limit).
    pub async fn create_terminal_with(&self, request: CreateTerminalRequest) -> Result<Terminal> {
        let response = self.client.request(&request).await?;
        Ok(Terminal {
            id: response.terminal_id,
            session: self.clone(),
            released: false,
        })
    }
}

/// A terminal running on the client, created with [`SessionClient::create_terminal`].
///
/// **Drop:** a terminal that was not [`release`](Terminal::release)d is released in the
/// background when dropped (the client kills its process and frees its output), so that
/// abandoned terminals do not pile up on the client.
pub struct Terminal {
    id: TerminalId,
    session: SessionClient,
    released: bool,
}

/// What a command printed and how it ended, from [`Terminal::run_with_timeout`].
#[derive(Clone, Debug, PartialEq)]
pub struct CommandResult {
    /// The output the client kept (see `truncated`).
    pub output: String,
    /// Whether the client dropped the beginning of the output to honour the byte limit.
    pub truncated: bool,
    /// How the command ended.
    pub exit_status: Option<TerminalExitStatus>,
    /// Whether the deadline passed and the command was killed.
    pub timed_out: bool,
}

impl Terminal {
    /// The terminal's id.
    pub fn id(&self) -> &TerminalId {
        &self.id
    }

    /// Tool call content that shows this terminal's live output in the client.
    ///
    /// ```
    /// # fn show(terminal: &acp_runtime::agent::Terminal) -> acp_types::ToolCall {
    /// acp_types::ToolCall::new("call_1", "Running tests").content(terminal.tool_call_content())
    /// # }
    /// ```
    pub fn tool_call_content(&self) -> ToolCallContent {
        ToolCallContent::Terminal(acp_types::Terminal::new(self.id.clone()))
    }

    /// The output so far, and the exit status once exited.
    pub async fn output(&self) -> Result<TerminalOutputResponse> {
        let request = TerminalOutputRequest::new(self.session.id.clone(), self.id.clone());
        self.session.client.request(&request).await
    }

    /// Waits for the command to exit.
    pub async fn wait_for_exit(&self) -> Result<WaitForTerminalExitResponse> {
        let request = WaitForTerminalExitRequest::new(self.session.id.clone(), self.id.clone());
        self.session.client.request(&request).await
    }

    /// Kills the command; the terminal stays valid for `output` and `wait_for_exit`.
    pub async fn kill(&self) -> Result<()> {
        let request = KillTerminalRequest::new(self.session.id.clone(), self.id.clone());
        self.session.client.request(&request).await?;
        Ok(())
    }

    /// Kills the command if it still runs and frees the terminal on the client.
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        let request = ReleaseTerminalRequest::new(self.session.id.clone(), self.id.clone());
        self.session.client.request(&request).await?;
        Ok(())
    }

    /// The spec's "run with a timeout" recipe: wait for the exit, or kill the command at the
    /// deadline; then collect the output.
    pub async fn run_with_timeout(&self, timeout: std::time::Duration) -> Result<CommandResult> {
        let exited = futures_lite::future::or(async { Some(self.wait_for_exit().await) }, async {
            smol::Timer::after(timeout).await;
            None
        })
        .await;
        let timed_out = match exited {
            Some(result) => {
                result?;
                false
            }
            None => {
                self.kill().await?;
                self.wait_for_exit().await?;
                true
            }
        };
        let output = self.output().await?;
        Ok(CommandResult {
            output: output.output,
            truncated: output.truncated,
            exit_status: output.exit_status,
            timed_out,
        })
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let request = ReleaseTerminalRequest::new(self.session.id.clone(), self.id.clone());
        let client = self.session.client.clone();
        smol::spawn(async move {
            let _ = client.request(&request).await;
        })
        .detach();
    }
}

impl std::fmt::Debug for ClientHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientHandle")
            .field("initialized", &self.state.negotiated(|_| ()).is_some())
            .field("sessions", &self.state.sessions.lock().unwrap().len())
            .finish()
    }
}

impl std::fmt::Debug for SessionClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionClient")
            .field("id", &self.id)
            .finish()
    }
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("session", &self.session.id)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("id", &self.id)
            .field("session", &self.session.id)
            .finish()
    }
}
