//! The client side of protocol v2 (feature `unstable-protocol-v2`): connect to a v2 agent,
//! prompt it, and know when each prompt's work is over; [`Conversation`] rebuilds whole
//! messages, tool calls, plans and terminals from the updates.
//!
//! On v2 a prompt's answer only says it was accepted (`{messageId}`); the work is reported in
//! `session/update`s and ends with `state_update` `idle`. [`Agent::prompt`] returns a
//! [`PromptTurn`] once the prompt is accepted; [`PromptTurn::finished`] resolves with the stop
//! reason of the `idle` that follows the echo of that prompt's user message. A prompt gets an
//! `idempotencyKey` drawn by the runtime when it has none: send the same request again after a
//! lost answer and the agent answers the first `messageId` without running it twice.
//!
//! Updates reach [`Client::session_update`] in the order the agent sent them; permission
//! requests reach [`Client::request_permission`] (the default answers `cancelled`: a client
//! that does not ask the user never approves).
//!
//! ```no_run
//! use acp_runtime::client::v2::{self, Conversation};
//! use acp_runtime::prelude::v2::*;
//!
//! struct Show;
//! impl v2::Client for Show {
//!     async fn session_update(&self, update: UpdateSessionNotification) {
//!         println!("{:?}", update.update);
//!     }
//! }
//!
//! # async fn run(reader: impl futures_lite::AsyncBufRead + Unpin + Send + 'static,
//! #              writer: impl futures_lite::AsyncWrite + Unpin + Send + 'static) -> acp_runtime::Result<()> {
//! let (agent, driver) = v2::connect(Show, reader, writer, Default::default());
//! smol::spawn(driver).detach();
//! agent.initialize(InitializeRequest::new(ProtocolVersion::V2, Implementation::new("me", "1"))).await?;
//! let session = agent.new_session(NewSessionRequest::new("/work")).await?;
//! let turn = agent.prompt(PromptRequest::new(session.session_id, vec![ContentBlock::from("hi")])).await?;
//! println!("stopped: {:?}", turn.finished().await?);
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};

use acp_jsonrpc::{
    Connection, ConnectionHandle, ConnectionOptions, Handler, IncomingNotification,
    IncomingRequest, Latch, Responder,
};
use acp_types::v2::*;

use crate::error::{Error, Result};

mod conversation;
mod fast_update;

pub use conversation::{Author, Changed, Conversation, Message, State, Terminal, ToolCall};

/// How many finished turns a session remembers for a [`PromptTurn`] not yet waited on.
pub const FINISHED_TURNS_KEPT: usize = 64;

/// What a v2 client implements: the answers to the agent's requests and the updates.
pub trait Client: Send + Sync + 'static {
    /// Answers `session/request_permission`. The default answers `cancelled`.
    fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> impl Future<Output = Result<RequestPermissionResponse>> + Send {
        let _ = request;
        async {
            Ok(RequestPermissionResponse::new(
                RequestPermissionOutcome::Cancelled(CancelledPermissionOutcome::new()),
            ))
        }
    }

    /// Gets each `session/update`, in order, as the generated types decode it: members they do
    /// not know are passed over, and an update, state or content of a kind this schema does not
    /// know arrives whole in its enum's catch-all variant. Text chunks and
    /// plain `state_update`s, nearly all of a turn's updates, are read by a faster reader that
    /// builds the very same value (property-tested against the generic decode).
    fn session_update(
        &self,
        notification: UpdateSessionNotification,
    ) -> impl Future<Output = ()> + Send {
        let _ = notification;
        async {}
    }
}

/// Where each session's prompts are: which echoed user messages are still working, and the
/// stop reasons of the last finished ones.
#[derive(Default)]
struct Turns {
    sessions: std::collections::HashMap<SessionId, SessionTurns>,
    /// Set (and replaced) on every change a [`PromptTurn`] may be waiting for.
    changed: Latch,
    closed: bool,
}

#[derive(Default)]
struct SessionTurns {
    /// User messages echoed since the last `idle`.
    open: Vec<MessageId>,
    finished: VecDeque<(MessageId, IdleStateUpdateKind)>,
}

impl Turns {
    fn bump(&mut self) {
        std::mem::replace(&mut self.changed, Latch::new()).set();
    }

    fn observe(&mut self, session: &SessionId, observed: Observed) {
        match observed {
            Observed::Echo(id) => {
                let turns = self.sessions.entry(session.clone()).or_default();
                if !turns.open.contains(&id) && turns.open.len() < FINISHED_TURNS_KEPT {
                    turns.open.push(id);
                }
            }
            Observed::Idle(kind) => {
                if let Some(turns) = self.sessions.get_mut(session) {
                    for id in turns.open.drain(..) {
                        if turns.finished.len() == FINISHED_TURNS_KEPT {
                            turns.finished.pop_front();
                        }
                        turns.finished.push_back((id, kind.clone()));
                    }
                    self.bump();
                }
            }
        }
    }
}

/// What a turn's end is read from: the echo of a prompt's user message, and `idle`.
enum Observed {
    Echo(MessageId),
    Idle(IdleStateUpdateKind),
}

impl Observed {
    fn of(update: &SessionUpdate) -> Option<Self> {
        match update {
            SessionUpdate::UserMessage(message) => Some(Observed::Echo(message.message_id.clone())),
            SessionUpdate::UserMessageChunk(chunk) => {
                Some(Observed::Echo(chunk.message_id.clone()))
            }
            SessionUpdate::StateUpdate(StateUpdate::Idle(idle)) => {
                Some(Observed::Idle(idle.kind.clone()))
            }
            _ => None,
        }
    }
}

struct Shared {
    turns: Mutex<Turns>,
}

/// Ends every [`PromptTurn`] wait when the connection goes away.
struct ConnectionEnd(Arc<Shared>);

impl Drop for ConnectionEnd {
    fn drop(&mut self) {
        let mut turns = self.0.turns.lock().unwrap();
        turns.closed = true;
        turns.bump();
    }
}

struct Dispatch<C> {
    client: Arc<C>,
    shared: Arc<Shared>,
    _end: Arc<ConnectionEnd>,
}

impl<C: Client> Handler for Dispatch<C> {
    fn request(
        &self,
        request: IncomingRequest,
        responder: Responder,
    ) -> impl Future<Output = ()> + Send {
        let client = self.client.clone();
        async move {
            match AgentRequest::decode(request.method(), request.raw_params()) {
                Ok(AgentRequest::SessionRequestPermission(params)) => responder.respond(
                    client
                        .request_permission(params)
                        .await
                        .map_err(|e| e.to_response()),
                ),
                Ok(other) => responder
                    .respond_error(acp_jsonrpc::ResponseError::method_not_found(other.method())),
                Err(error) => responder.respond_error(crate::rules::decode_error(error)),
            }
        }
    }

    fn notification(&self, notification: IncomingNotification) -> impl Future<Output = ()> + Send {
        let client = self.client.clone();
        let shared = self.shared.clone();
        async move {
            // Decoded here, in the future's own state, so that the update is not moved into it
            // with the rest of the future.
            match decode_notification(&notification) {
                Ok(AgentNotification::SessionUpdate(update)) => {
                    // The application sees the update first: a `PromptTurn` ends only after
                    // its `idle` (and everything before it) reached `Client::session_update`.
                    // Only an echo or an idle is read for the turns (no copy of the rest).
                    let observed = Observed::of(&update.update)
                        .map(|observed| (update.session_id.clone(), observed));
                    client.session_update(update).await;
                    if let Some((session, observed)) = observed {
                        shared.turns.lock().unwrap().observe(&session, observed);
                    }
                }
                Ok(other) => notification
                    .report_unhandled(format_args!("no handler for `{}`", other.method())),
                Err(error) => notification.report_unhandled(error),
            }
        }
    }
}

/// The agent's notification, typed. Text chunks and state changes, nearly all of a turn's
/// updates, are read without serde's visitors; anything else (and anything the fast reader is
/// unsure of) goes through the generic decode, which holds every rule.
fn decode_notification(
    notification: &IncomingNotification,
) -> std::result::Result<AgentNotification, acp_types::DecodeError> {
    if notification.method() == "session/update"
        && let Some(update) =
            fast_update::decode(notification.raw_params().map_or("", |raw| raw.get()))
    {
        return Ok(AgentNotification::SessionUpdate(update));
    }
    AgentNotification::decode(notification.method(), notification.raw_params())
}

/// Connects `client` to a v2 agent over a reader and a writer. Returns the handle on the agent
/// and the connection's driver, which must be polled for anything to happen.
pub fn connect<C: Client, R, W>(
    client: C,
    reader: R,
    writer: W,
    options: ConnectionOptions,
) -> (
    Agent,
    impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<C, R, W>,
)
where
    R: futures_lite::AsyncBufRead + Unpin + Send + 'static,
    W: futures_lite::AsyncWrite + Unpin + Send + 'static,
{
    let shared = Arc::new(Shared {
        turns: Mutex::new(Turns::default()),
    });
    let dispatch = Dispatch {
        client: Arc::new(client),
        shared: shared.clone(),
        _end: Arc::new(ConnectionEnd(shared.clone())),
    };
    let options = options.with_null_request_ids_refused(true);
    let (rpc, driver) = Connection::new(reader, writer, dispatch, options);
    (Agent { rpc, shared }, driver)
}

/// Spawns `command`, connects `client` to it as a v2 client, runs `work` with the handle on the
/// calling thread, then closes the connection and shuts the agent down: v1's
/// [`client::run_spawned`](crate::client::run_spawned) for v2, with the same guarantees (the
/// final flush bounded by the command's shutdown grace, the agent's staged shutdown) and the
/// same loop: on Linux the connection waits in `epoll_wait(2)` on the agent's two pipes, with no
/// reactor thread to wake per exchange. `work` sends `initialize` itself (an agent that answers
/// another version is [`Error::UnsupportedProtocolVersion`]). Do not call it from inside an async
/// executor.
///
/// ```no_run
/// use acp_runtime::client::v2;
/// use acp_runtime::prelude::v2::*;
/// use acp_runtime::process::AgentCommand;
///
/// struct Quiet;
/// impl v2::Client for Quiet {}
///
/// let command = AgentCommand::new("my-agent");
/// let (stop, exit) = v2::run_spawned(Quiet, command, Default::default(), |agent| async move {
///     let hello = InitializeRequest::new(ProtocolVersion::V2, Implementation::new("me", "1"));
///     agent.initialize(hello).await?;
///     let session = agent.new_session(NewSessionRequest::new("/tmp")).await?;
///     let prompt = PromptRequest::new(session.session_id, vec![ContentBlock::from("hi")]);
///     agent.prompt(prompt).await?.finished().await
/// })?;
/// println!("{stop:?}, agent {exit}");
/// # Ok::<(), acp_runtime::Error>(())
/// ```
pub fn run_spawned<C: Client, T, F: Future<Output = Result<T>>>(
    client: C,
    command: crate::process::AgentCommand,
    options: ConnectionOptions,
    work: impl FnOnce(Agent) -> F,
) -> Result<(T, crate::process::AgentExit)> {
    super::spawned::run_process(
        command,
        |reader, writer, _| connect(client, reader, writer, options),
        Agent::close,
        work,
    )
}

/// The client's handle on a v2 agent. Cheap to clone.
#[derive(Clone)]
pub struct Agent {
    rpc: ConnectionHandle,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").finish_non_exhaustive()
    }
}

impl Agent {
    /// `initialize`. An agent that answers another version than 2 is refused
    /// ([`Error::UnsupportedProtocolVersion`]).
    ///
    /// The answer's version is read before its shape: a v1 agent answers version 1 with a v1
    /// body, which is that error, not a decoding failure.
    pub async fn initialize(&self, request: InitializeRequest) -> Result<InitializeResponse> {
        let response: serde_json::Value = self.call("initialize", &request).await?;
        let offered = response.get("protocolVersion").and_then(|v| v.as_u64());
        if offered != Some(u64::from(ProtocolVersion::V2.0)) {
            return Err(Error::UnsupportedProtocolVersion {
                offered: offered.and_then(|v| u16::try_from(v).ok()).unwrap_or(0),
                supported: &[2],
            });
        }
        serde_json::from_value(response).map_err(Error::Decode)
    }

    /// `auth/login` with one of the methods the agent advertised at `initialize`.
    pub async fn login(&self, request: LoginAuthRequest) -> Result<LoginAuthResponse> {
        self.call("auth/login", &request).await
    }

    /// `auth/logout`.
    pub async fn logout(&self, request: LogoutAuthRequest) -> Result<LogoutAuthResponse> {
        self.call("auth/logout", &request).await
    }

    /// `session/new`.
    pub async fn new_session(&self, request: NewSessionRequest) -> Result<NewSessionResponse> {
        self.call("session/new", &request).await
    }

    /// `session/resume` (with `replayFrom`, the replayed updates reach
    /// [`Client::session_update`], then `replay_complete`, before this resolves).
    pub async fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse> {
        self.call("session/resume", &request).await
    }

    /// `session/list`.
    pub async fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse> {
        self.call("session/list", &request).await
    }

    /// `session/close`: answered once the session's work has ended.
    pub async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse> {
        self.call("session/close", &request).await
    }

    /// `session/delete` (an agent advertising `session.delete`).
    pub async fn delete_session(
        &self,
        request: DeleteSessionRequest,
    ) -> Result<DeleteSessionResponse> {
        self.call("session/delete", &request).await
    }

    /// `session/set_config_option`: the answer is the session's whole list of options after
    /// the change (the agent may change others with it).
    ///
    /// ```no_run
    /// # async fn example(agent: acp_runtime::client::v2::Agent) -> acp_runtime::Result<()> {
    /// use acp_runtime::prelude::v2::*;
    /// let kind = SetSessionConfigOptionRequestKind::Boolean(
    ///     SetSessionConfigOptionRequestKindBoolean::new(true),
    /// );
    /// let answer = agent
    ///     .set_config_option(SetSessionConfigOptionRequest::new("s1", "fast", kind))
    ///     .await?;
    /// println!("{} options", answer.config_options.len());
    /// # Ok(()) }
    /// ```
    pub async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse> {
        self.call("session/set_config_option", &request).await
    }

    /// `tool_call/cancel`.
    pub async fn cancel_tool_call(
        &self,
        request: CancelToolCallRequest,
    ) -> Result<CancelToolCallResponse> {
        self.call("tool_call/cancel", &request).await
    }

    /// `session/cancel`: the session's work ends `idle` with `stopReason: cancelled`.
    pub async fn cancel(&self, session: &SessionId) -> Result<()> {
        self.rpc
            .notify(
                "session/cancel",
                &CancelSessionNotification::new(session.clone()),
            )
            .await?;
        Ok(())
    }

    /// `session/prompt`, with an `idempotencyKey` drawn here when the request has none (send
    /// the returned request's key again to retry). Resolves once the agent accepted the prompt.
    pub async fn prompt(&self, mut request: PromptRequest) -> Result<PromptTurn> {
        if request.idempotency_key.is_none() {
            request.idempotency_key = Some(new_idempotency_key());
        }
        let response: PromptResponse = self.call("session/prompt", &request).await?;
        Ok(PromptTurn {
            session: request.session_id,
            message: response.message_id,
            shared: self.shared.clone(),
        })
    }

    /// The JSON-RPC connection, for raw calls.
    pub fn connection(&self) -> &ConnectionHandle {
        &self.rpc
    }

    /// Closes the connection: what is queued is written, then the agent's input is closed.
    pub fn close(&self) {
        self.rpc.close();
    }

    async fn call<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<T> {
        Ok(self.rpc.request::<T, P>(method, params).await?)
    }
}

/// A new idempotency key, unique within this process (`key_<counter>_<random>`).
pub fn new_idempotency_key() -> IdempotencyKey {
    IdempotencyKey::new(crate::unique_id::unique_id("key"))
}

/// An accepted prompt: its user message, and the end of its work.
#[derive(Clone)]
pub struct PromptTurn {
    session: SessionId,
    message: MessageId,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for PromptTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptTurn")
            .field("session", &self.session)
            .field("message", &self.message)
            .finish()
    }
}

impl PromptTurn {
    /// The `messageId` of the prompt's user message.
    pub fn message_id(&self) -> &MessageId {
        &self.message
    }

    /// Resolves with the stop reason of the `idle` that ends this prompt's work (the first
    /// after the echo of its user message), or [`Error::ConnectionClosed`].
    pub async fn finished(&self) -> Result<IdleStateUpdateKind> {
        loop {
            let changed = {
                let turns = self.shared.turns.lock().unwrap();
                let done = turns.sessions.get(&self.session).and_then(|s| {
                    s.finished
                        .iter()
                        .find(|(id, _)| *id == self.message)
                        .map(|(_, kind)| kind.clone())
                });
                if let Some(kind) = done {
                    return Ok(kind);
                }
                if turns.closed {
                    return Err(Error::ConnectionClosed);
                }
                turns.changed.clone()
            };
            changed.wait().await;
        }
    }
}
