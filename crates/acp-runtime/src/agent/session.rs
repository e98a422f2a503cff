//! The agent's handles on its client: [`ClientHandle`] for the connection, [`SessionClient`]
//! for one session (its updates, its calls, what the runtime knows of it), and [`Turn`] for
//! one prompt turn.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use acp_jsonrpc::{ConnectionHandle, RequestError};
use acp_types::*;
use serde_json::value::RawValue;

use super::file_content;
use super::state::AgentState;
use crate::error::{Error, Result};
use crate::rules;
use crate::signal::Signal;

/// The agent's handle on its client: capabilities, and every call an agent makes.
///
/// Cheap to clone, `Send` and `Sync`.
#[derive(Clone)]
pub struct ClientHandle {
    pub(super) rpc: ConnectionHandle,
    pub(super) state: Arc<AgentState>,
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

    /// The sessions this connection serves now, as `session/list` describes them.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.state
            .sessions
            .lock()
            .unwrap()
            .iter()
            .map(|(id, entry)| {
                let mut info =
                    SessionInfo::new(id.clone(), entry.cwd.to_string_lossy().into_owned());
                if !entry.additional_directories.is_empty() {
                    info.additional_directories = Some(
                        entry
                            .additional_directories
                            .iter()
                            .map(|d| d.to_string_lossy().into_owned())
                            .collect(),
                    );
                }
                info
            })
            .collect()
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
    pub async fn request<R: Request + AgentToClient + 'static>(
        &self,
        params: &R,
    ) -> Result<R::Response> {
        self.request_decoded(params, decode_result::<R::Response>)
            .await
    }

    /// [`request`](Self::request) with the result decoded by `decode` (a fast path for one
    /// answer's shape).
    async fn request_decoded<R: Request + AgentToClient + 'static, T>(
        &self,
        params: &R,
        decode: fn(Box<RawValue>) -> std::result::Result<T, RequestError>,
    ) -> Result<T> {
        self.check_advertised(R::METHOD, params)?;
        // Params are serialized straight into the message, the result decoded straight from it.
        Ok(self.rpc.request_with(R::METHOD, params, decode).await?)
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
        // Only a few kinds of update need the client's consent; the lock is taken for those.
        let allowed = if rules::update_needs_capability(update) {
            self.state
                .negotiated(|n| rules::session_update(update, &n.client_capabilities))
                .unwrap_or(Ok(()))
                .and_then(|()| self.unstable_update(session_id, update))
        } else {
            Ok(())
        };
        let queued = allowed.map(|()| {
            self.rpc
                .notify("session/update", &Params { session_id, update })
        });
        async move {
            match queued {
                Ok(queued) => Ok(queued.await?),
                Err(breach) => Err(breach.refused()),
            }
        }
    }

    /// Calls an extension method (its name must start with `_`).
    pub async fn ext_method(&self, method: &str, params: &RawValue) -> Result<Box<RawValue>> {
        rules::extension_method(method).map_err(rules::Breach::refused)?;
        Ok(self.rpc.request_raw(method, Some(params)).await?)
    }

    fn check_advertised<R: 'static>(&self, method: &str, params: &R) -> Result<()> {
        let elicitation = (params as &dyn std::any::Any)
            .downcast_ref::<CreateElicitationRequest>()
            .map(|request| &request.kind);
        // Read in place under the lock: this runs on every call to the client.
        match self
            .state
            .negotiated(|n| rules::client_method(method, elicitation, &n.client_capabilities))
        {
            None => Err(Error::NotInitialized(method.to_owned())),
            Some(rule) => rule.map_err(rules::Breach::refused),
        }
    }
}

/// The client, seen from one session: the helpers for every kind of `session/update`, and the
/// calls that belong to a session (permission, files, terminals).
#[derive(Clone)]
pub struct SessionClient {
    pub(super) id: SessionId,
    pub(super) client: ClientHandle,
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

    /// The session's working directory, as the client set it (`None` for a session the
    /// runtime does not know: closed, or not created through this connection).
    pub fn cwd(&self) -> Option<PathBuf> {
        self.client.state.read_session(&self.id, |s| s.cwd.clone())
    }

    /// The directories beside [`cwd`](Self::cwd) the session may work in.
    pub fn additional_directories(&self) -> Vec<PathBuf> {
        self.client
            .state
            .read_session(&self.id, |s| s.additional_directories.clone())
            .unwrap_or_default()
    }

    /// The MCP servers the client asked the session to connect to.
    pub fn mcp_servers(&self) -> Vec<McpServer> {
        self.client
            .state
            .read_session(&self.id, |s| s.mcp_servers.clone())
            .unwrap_or_default()
    }

    /// The session's modes and the current one, as advertised and switched since.
    pub fn modes(&self) -> Option<SessionModeState> {
        self.client
            .state
            .read_session(&self.id, |s| s.modes.clone())
            .flatten()
    }

    /// The session's current mode.
    pub fn current_mode_id(&self) -> Option<SessionModeId> {
        self.modes().map(|m| m.current_mode_id)
    }

    /// The session's config options with their current values, as advertised and set since.
    pub fn config_options(&self) -> Option<Vec<SessionConfigOption>> {
        self.client
            .state
            .read_session(&self.id, |s| s.config_options.clone())
            .flatten()
    }

    /// The client's capabilities (the same for every session of the connection).
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        self.client.capabilities()
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

    /// Sends the full config option state after the agent changed it (a
    /// `config_option_update`); the runtime records it.
    pub async fn config_option_update(&self, options: Vec<SessionConfigOption>) -> Result<()> {
        let update = SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options.clone()));
        // Recorded once sent: a refused update changes nothing.
        self.update(update).await?;
        let _ = self.client.state.with_session(&self.id, |entry| {
            entry.config_options = Some(options);
            Ok(())
        });
        Ok(())
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

    /// Updates one plan by its id (feature `unstable-plans`; the client must advertise
    /// `plan`, else this fails with [`Error::NotAdvertised`](crate::Error::NotAdvertised) and sends nothing).
    #[cfg(feature = "unstable-plans")]
    pub fn plan_update(
        &self,
        update: PlanUpdate,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::PlanUpdate(update))
    }

    /// Removes one plan by its id (feature `unstable-plans`, client capability `plan`).
    #[cfg(feature = "unstable-plans")]
    pub fn plan_removed(
        &self,
        removed: PlanRemoved,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::PlanRemoved(removed))
    }

    /// Announces or updates a child session owned by this one (feature
    /// `unstable-subagents`, client capability `subagents`).
    #[cfg(feature = "unstable-subagents")]
    pub fn subagent_update(
        &self,
        update: SubagentUpdate,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::SubagentUpdate(update))
    }

    /// Records a message sent to or received from another session (feature
    /// `unstable-subagents`, client capability `subagents`).
    #[cfg(feature = "unstable-subagents")]
    pub fn session_message(
        &self,
        message: SessionMessage,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::SessionMessage(message))
    }

    /// Appends one content block to a session message (feature `unstable-subagents`).
    #[cfg(feature = "unstable-subagents")]
    pub fn session_message_chunk(
        &self,
        chunk: SessionMessageChunk,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        self.update(SessionUpdate::SessionMessageChunk(chunk))
    }

    /// Replays recorded history, in order (for `session/load`). Prompt suggestions (feature
    /// `unstable-prompt-suggestions`) are not history and are skipped.
    pub async fn replay(&self, history: impl IntoIterator<Item = SessionUpdate>) -> Result<()> {
        for update in history.into_iter().filter(super::unstable::replayed) {
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

    /// Asks the user to fill in a form (`elicitation/create` in form mode; needs the client's
    /// `elicitation.form`), scoped to this session. The answer says whether the user
    /// accepted, declined or cancelled, with the values when accepted.
    pub async fn elicit_form(
        &self,
        message: impl Into<String>,
        schema: ElicitationSchema,
    ) -> Result<CreateElicitationResponse> {
        let mode = ElicitationFormMode::new(schema, ElicitationSessionScope::new(self.id.clone()));
        self.client
            .request(&CreateElicitationRequest::new(message, mode))
            .await
    }

    /// Sends the user to a URL (`elicitation/create` in url mode; needs the client's
    /// `elicitation.url`), scoped to this session. Tell the client when the flow behind the
    /// URL is done with [`elicitation_complete`](Self::elicitation_complete).
    pub async fn elicit_url(
        &self,
        message: impl Into<String>,
        elicitation_id: impl Into<ElicitationId>,
        url: impl Into<String>,
    ) -> Result<CreateElicitationResponse> {
        let mode = ElicitationUrlMode::new(
            elicitation_id,
            url,
            ElicitationSessionScope::new(self.id.clone()),
        );
        self.client
            .request(&CreateElicitationRequest::new(message, mode))
            .await
    }

    /// Tells the client that the url-mode elicitation `elicitation_id` is complete
    /// (`elicitation/complete`).
    pub async fn elicitation_complete(
        &self,
        elicitation_id: impl Into<ElicitationId>,
    ) -> Result<()> {
        self.client
            .notify(&CompleteElicitationNotification::new(elicitation_id))
            .await
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
        self.client
            .request_decoded(&request, file_content::decode)
            .await
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
    pub(super) session: SessionClient,
    pub(super) cancel: Signal,
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

/// A method's result, as [`decode_response`] reads it.
#[expect(
    clippy::boxed_local,
    reason = "the decoder signature `request_with` takes"
)]
fn decode_result<T: serde::de::DeserializeOwned>(
    result: Box<RawValue>,
) -> std::result::Result<T, RequestError> {
    decode_response(result.get()).map_err(RequestError::Decode)
}
