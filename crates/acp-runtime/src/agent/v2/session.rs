//! A v2 agent's handles on its client: [`Client`] for the connection, [`Session`] for one
//! session's updates, and [`Turn`] for one prompt: its messages, tool calls, plans and
//! permission requests, each an upsert the runtime writes with the right `messageId`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use acp_jsonrpc::{ConnectionHandle, Latch};
use acp_types::v2::*;
use serde_json::value::RawValue;

use super::history::History;
use super::sessions::Sessions;
use crate::error::Result;

/// What a connection shares between its handles.
pub(super) struct Shared {
    pub(super) rpc: OnceLock<ConnectionHandle>,
    pub(super) sessions: Sessions,
    pub(super) history: Option<History>,
    pub(super) client: Mutex<Option<ClientCapabilities>>,
}

/// The v2 agent's handle on its client. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    pub(super) shared: Arc<Shared>,
}

impl Client {
    /// The client's capabilities, once `initialize` has completed.
    pub fn capabilities(&self) -> Option<ClientCapabilities> {
        self.shared.client.lock().unwrap().clone()
    }

    /// The sessions this connection serves (in `cwd` when given), as `session/list` shows
    /// them.
    pub fn sessions(&self, cwd: Option<&AbsolutePath>) -> Vec<SessionInfo> {
        self.shared
            .sessions
            .list()
            .into_iter()
            .filter(|(_, dir)| cwd.is_none_or(|cwd| Path::new(&cwd.0) == dir))
            .map(|(id, dir)| SessionInfo::new(id, dir.to_string_lossy().into_owned()))
            .collect()
    }

    /// The session-scoped handle for `id`.
    pub fn session(&self, id: impl Into<SessionId>) -> Session {
        Session {
            id: id.into(),
            client: self.clone(),
        }
    }

    /// The underlying JSON-RPC connection, for raw calls.
    pub fn connection(&self) -> &ConnectionHandle {
        self.shared.rpc.get().expect("set when served")
    }
}

/// The client, seen from one session: its updates and its permission requests.
#[derive(Clone)]
pub struct Session {
    pub(super) id: SessionId,
    pub(super) client: Client,
}

impl Session {
    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The connection-wide handle.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Whether this connection serves the session (it was created or resumed here).
    pub fn is_registered(&self) -> bool {
        self.client.shared.sessions.contains(&self.id)
    }

    /// Sends a `session/update`, recorded in the agent's [`History`] unless it is a
    /// `state_update` or a `replay_complete` (which describe the live connection, not the
    /// conversation: a recorded `replay_complete` would be replayed by every later resume).
    pub async fn update(&self, update: impl Into<SessionUpdate>) -> Result<()> {
        let update = update.into();
        let history = match (&update, &self.client.shared.history) {
            (SessionUpdate::StateUpdate(_) | SessionUpdate::ReplayComplete(_), _) | (_, None) => {
                None
            }
            (_, Some(history)) => Some(history),
        };
        let Some(history) = history else {
            // Unrecorded (the common case): serialized once, straight into the frame.
            return self.send(&update).await;
        };
        let raw = serde_json::value::to_raw_value(&update).map_err(crate::Error::internal)?;
        history.record(&self.id, raw.clone());
        self.send(&raw).await
    }

    /// Sends an update already serialized (a replayed one), unrecorded.
    pub(super) async fn send_raw(&self, update: &RawValue) -> Result<()> {
        self.send(update).await
    }

    /// Sends `update` as this session's `session/update`.
    async fn send<U: serde::Serialize + ?Sized>(&self, update: &U) -> Result<()> {
        #[derive(serde::Serialize)]
        struct Params<'a, U: ?Sized> {
            #[serde(rename = "sessionId")]
            session_id: &'a SessionId,
            update: &'a U,
        }
        let params = Params {
            session_id: &self.id,
            update,
        };
        self.client
            .connection()
            .notify("session/update", &params)
            .await?;
        Ok(())
    }

    /// Sends a `state_update`.
    pub(super) async fn state(&self, state: StateUpdate) -> Result<()> {
        self.update(SessionUpdate::StateUpdate(state)).await
    }
}

/// One prompt turn: the session's handle, the turn's cancellation, and the messages it writes.
///
/// [`say`](Turn::say) streams the agent's reply as `agent_message_chunk`s of one message
/// (its `messageId` is made on the first chunk; [`new_message`](Turn::new_message) starts
/// another), [`think`](Turn::think) the same for thoughts; tool calls and plans are upserts
/// (`ToolCallUpdate::new(id).with_status(..)`: an unset field is left unchanged).
///
/// # Cancellation
///
/// `session/cancel`, `session/close` or the end of the connection set the turn's signal:
/// [`is_cancelled`](Turn::is_cancelled) and [`cancelled`](Turn::cancelled) see it, a
/// permission request waiting on the client resolves `cancelled` at once (withdrawn with
/// `$/cancel_request`), and the turn ends `idle` with `stopReason: cancelled` whatever
/// [`Agent::prompt`](super::Agent::prompt) returns.
pub struct Turn {
    pub(super) session: Session,
    pub(super) cancel: Latch,
    pub(super) cwd: PathBuf,
    pub(super) user_message: MessageId,
    pub(super) reply: Mutex<Option<MessageId>>,
    pub(super) thought: Mutex<Option<MessageId>>,
}

impl Turn {
    /// The session's handle.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The `messageId` of the user message this turn answers (the prompt's echo).
    pub fn user_message_id(&self) -> &MessageId {
        &self.user_message
    }

    /// Whether the turn was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_set()
    }

    /// Resolves when the turn is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.wait().await
    }

    /// Starts a new agent message: the next [`say`](Turn::say) gets a new `messageId`.
    pub fn new_message(&self) {
        *self.reply.lock().unwrap() = None;
        *self.thought.lock().unwrap() = None;
    }

    fn current(slot: &Mutex<Option<MessageId>>) -> MessageId {
        slot.lock()
            .unwrap()
            .get_or_insert_with(new_message_id)
            .clone()
    }

    /// Streams `text` as an `agent_message_chunk` of the turn's current agent message.
    pub async fn say(&self, text: impl Into<String>) -> Result<()> {
        let chunk = ContentChunk::new(
            Self::current(&self.reply),
            ContentBlock::Text(TextContent::new(text)),
        );
        self.session
            .update(SessionUpdate::AgentMessageChunk(chunk))
            .await
    }

    /// Streams `text` as an `agent_thought_chunk` of the turn's current thought.
    pub async fn think(&self, text: impl Into<String>) -> Result<()> {
        let chunk = ContentChunk::new(
            Self::current(&self.thought),
            ContentBlock::Text(TextContent::new(text)),
        );
        self.session
            .update(SessionUpdate::AgentThoughtChunk(chunk))
            .await
    }

    /// Sends a tool call upsert (`tool_call_update`): fields left unset stay as they were.
    pub async fn tool_call(&self, update: ToolCallUpdate) -> Result<()> {
        self.session
            .update(SessionUpdate::ToolCallUpdate(update))
            .await
    }

    /// Sends a plan (`plan_update`).
    pub async fn plan(&self, plan: PlanUpdate) -> Result<()> {
        self.session.update(SessionUpdate::PlanUpdate(plan)).await
    }

    /// Sends any update.
    pub async fn update(&self, update: impl Into<SessionUpdate>) -> Result<()> {
        self.session.update(update).await
    }

    /// Sends a display terminal upsert (`terminal_update`: command, cwd, exit status, ...).
    pub async fn terminal(&self, update: TerminalUpdate) -> Result<()> {
        self.session
            .update(SessionUpdate::TerminalUpdate(update))
            .await
    }

    /// Appends `bytes` to a display terminal's output (`terminal_output_chunk`, base64 on the
    /// wire: any bytes, a character split between two calls included).
    pub async fn terminal_output(&self, terminal: &TerminalId, bytes: &[u8]) -> Result<()> {
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let chunk = TerminalOutputChunk::new(terminal.clone(), data);
        self.session
            .update(SessionUpdate::TerminalOutputChunk(chunk))
            .await
    }

    /// Asks the client for permission: reports `requires_action` while the request waits and
    /// `running` again after. Resolves `cancelled` at once when the turn is cancelled.
    pub async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionOutcome> {
        let cancelled = || RequestPermissionOutcome::Cancelled(CancelledPermissionOutcome::new());
        if self.is_cancelled() {
            return Ok(cancelled());
        }
        // Queued first, as the protocol shows it: the request, then the state it causes.
        let params = serde_json::value::to_raw_value(&request).map_err(crate::Error::internal)?;
        let asked = self
            .session
            .client
            .connection()
            .send_request_raw("session/request_permission", Some(&params))
            .await?;
        self.session
            .state(StateUpdate::RequiresAction(RequiresActionStateUpdate::new()))
            .await?;
        // Dropping `asked` when the turn is cancelled withdraws it (`$/cancel_request`).
        let answer = futures_lite::future::or(async { Some(asked.await) }, async {
            self.cancel.wait().await;
            None
        })
        .await;
        let outcome = match answer {
            Some(answer) => {
                let answer: RequestPermissionResponse = serde_json::from_str(answer?.get())
                    .map_err(|e| {
                        crate::Error::invalid_params(format!("the client's permission answer: {e}"))
                    })?;
                answer.outcome
            }
            None => cancelled(),
        };
        if !self.is_cancelled() {
            self.session
                .state(StateUpdate::Running(RunningStateUpdate::new()))
                .await?;
        }
        Ok(outcome)
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("sessions", &self.shared.sessions.list().len())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("session", &self.session.id)
            .field("user_message", &self.user_message)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// A new message id, unique within this process (`msg_<counter>_<random>`).
pub fn new_message_id() -> MessageId {
    MessageId::new(crate::unique_id::unique_id("msg"))
}
