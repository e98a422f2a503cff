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

use acp_jsonrpc::{Connection, ConnectionHandle, ConnectionOptions, ResponseError};
use acp_types::*;
use futures_lite::{AsyncBufRead, AsyncWrite};
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::signal::Signal;

mod dispatch;
mod rules;
mod terminal;

use dispatch::AgentDispatch;
pub use rules::apply_config_value;
use rules::{
    check_absolute, check_config_value, check_mcp_servers, check_prompt_content, negotiate,
};
pub use terminal::{CommandResult, Terminal};

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
        let (pipes, reader, writer) = crate::os::pipe_loop::pipes(reader, writer)?;
        let reader = futures_lite::io::BufReader::with_capacity(crate::stdio::READ_BUFFER, reader);
        let (_client, driver) = serve(agent, reader, writer, ConnectionOptions::default());
        return crate::os::pipe_loop::block_on(&pipes, driver)?.map_err(std::io::Error::other);
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
