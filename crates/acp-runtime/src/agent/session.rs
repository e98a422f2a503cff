//! The agent's handles on its client: [`ClientHandle`] for the connection, [`SessionClient`]
//! for one session (its updates, its calls, what the runtime knows of it), and [`Turn`] for
//! one prompt turn.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::Poll;

use acp_jsonrpc::{ConnectionHandle, RequestError, RequestFuture};
use acp_types::*;
use serde_json::value::RawValue;

use super::file_content;
use super::snapshot::SessionSnapshot;
use super::state::AgentState;
use crate::error::{Error, Result};
use crate::rules;
use acp_jsonrpc::Latch;

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
            turn: None,
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

    /// Checks that the client advertised `R`, then starts it with params that serialize as
    /// `R`'s do, from borrowed parts, the result decoded by `decode`: the request's own
    /// future, with no `async fn` state around it (the hot path of a turn's file reads). Not
    /// for `elicitation/create`, whose rule reads the request itself.
    fn start_as<R: Request + AgentToClient, P: serde::Serialize, T>(
        &self,
        params: &P,
        decode: fn(Box<RawValue>) -> std::result::Result<T, RequestError>,
    ) -> Result<RequestFuture<T>> {
        self.check_advertised(R::METHOD, &())?;
        Ok(self.rpc.request_with(R::METHOD, params, decode))
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
    /// The cancellation signal of the turn this view was made for (a [`Turn`]'s), read
    /// instead of the session registry while it is not set: see [`running_turn`](Self::running_turn).
    pub(super) turn: Option<Latch>,
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

    /// The session as the runtime knows it now: what it was set up with, its modes and config
    /// options (`None` for a session the runtime does not know: closed, or not created
    /// through this connection). One copy; read it through its borrowed getters. Inside a
    /// prompt turn, [`Turn::cwd`] has the working directory without the copy. The client's
    /// capabilities are the connection's: [`ClientHandle::capabilities`].
    pub fn snapshot(&self) -> Option<SessionSnapshot> {
        self.client
            .state
            .read_session(&self.id, SessionSnapshot::of)
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

    /// Sends the execution plan (the complete list each time) as the old `plan` update, which
    /// every client takes. [`set_plan`](Self::set_plan) sends `plan_update` to a client that
    /// advertised `plan`, and this to any other.
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

    /// Replays recorded history, in order (for `session/load`). Prompt suggestions (feature
    /// `unstable-prompt-suggestions`) are not history and are skipped.
    pub async fn replay(&self, history: impl IntoIterator<Item = SessionUpdate>) -> Result<()> {
        for update in history.into_iter().filter(replayed) {
            self.update(update).await?;
        }
        Ok(())
    }

    /// Asks the user for permission to run `tool_call`; returns the outcome.
    ///
    /// Pass the [`ToolCall`] itself (or `&call`): the request then carries its title, kind,
    /// content and locations, and every client can show what it asks about. A bare
    /// `ToolCallUpdate::new(id)` sends only the id: the client has to look the call up among
    /// those it was sent earlier, and one that did not keep it (or does not look) shows an
    /// empty title. A `ToolCallUpdate` with fields set sends those fields.
    ///
    /// ```
    /// use acp_runtime::prelude::*;
    ///
    /// async fn edit(turn: &Turn) -> Result<bool> {
    ///     let call = ToolCall::new("call_1", "Edit main.rs").with_kind(ToolKind::Edit);
    ///     turn.tool_call(call.clone()).await?;
    ///     let options = vec![PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce)];
    ///     let outcome = turn.request_permission(&call, options).await?;
    ///     Ok(matches!(outcome, RequestPermissionOutcome::Selected(s) if s.option_id == "allow"))
    /// }
    /// ```
    ///
    /// `cancelled` means the prompt turn was cancelled, however the client said so: it
    /// answered `cancelled` (which also marks the running turn cancelled, so that it ends
    /// `cancelled` and [`Turn::is_cancelled`] is true), or `session/cancel` arrived first (the
    /// request is then resolved at once and the client gets `$/cancel_request` for it; see
    /// [`Turn`]). Asked after the turn was cancelled, it answers `cancelled` and sends nothing.
    pub async fn request_permission(
        &self,
        tool_call: impl Into<ToolCallUpdate>,
        options: Vec<PermissionOption>,
    ) -> Result<RequestPermissionOutcome> {
        let request = RequestPermissionRequest::new(self.id.clone(), tool_call.into(), options);
        let turn = self.running_turn();
        let outcome = for_turn(
            turn.as_ref(),
            || Ok(self.client.request(&request)),
            || {
                Ok(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Cancelled,
                ))
            },
        )
        .await?
        .outcome;
        if let (RequestPermissionOutcome::Cancelled, Some(turn)) = (&outcome, &turn) {
            // The spec defines this outcome as "the prompt turn was cancelled": some clients
            // answer it before `session/cancel`, or send only the answer.
            turn.set();
        }
        Ok(outcome)
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
        self.elicit(CreateElicitationRequest::new(message, mode))
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
        self.elicit(CreateElicitationRequest::new(message, mode))
            .await
    }

    /// An elicitation for this session: `cancel` at once when the running turn is cancelled.
    async fn elicit(&self, request: CreateElicitationRequest) -> Result<CreateElicitationResponse> {
        let turn = self.running_turn();
        for_turn(
            turn.as_ref(),
            || Ok(self.client.request(&request)),
            || {
                Ok(CreateElicitationResponse::new(
                    CreateElicitationResponseKind::Cancel,
                ))
            },
        )
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

    /// Reads a whole text file through the client (needs `fs.readTextFile`). The client
    /// answers with what its editor holds, unsaved changes included. The protocol wants an
    /// absolute path, as a JSON string: a path that is not UTF-8 goes out with `U+FFFD` in
    /// place of what is not (as in [`AgentHandle::new_session`](crate::client::AgentHandle::new_session)).
    ///
    /// ```
    /// use acp_runtime::prelude::*;
    ///
    /// async fn count_lines(turn: &Turn) -> Result<usize> {
    ///     let text = turn.read_text_file(turn.cwd().join("notes.txt")).await?;
    ///     Ok(text.lines().count())
    /// }
    /// ```
    pub async fn read_text_file(&self, path: impl AsRef<Path>) -> Result<String> {
        /// The params [`ReadTextFileRequest`] serializes, from borrowed parts: the call coding
        /// agents make most, without copying the session id and the path into owned strings
        /// (docs/performance.md).
        #[derive(serde::Serialize)]
        struct Params<'a> {
            #[serde(rename = "sessionId")]
            session_id: &'a SessionId,
            #[serde(serialize_with = "lossy_path")]
            path: &'a Path,
        }
        let params = Params {
            session_id: &self.id,
            path: path.as_ref(),
        };
        self.turn_call(|| {
            self.client
                .start_as::<ReadTextFileRequest, _, _>(&params, file_content::decode)
        })
        .await
    }

    /// Reads a text file from a full request: part of the file, from `line` (1-based) for
    /// `limit` lines. Like [`create_terminal_with`](Self::create_terminal_with), the request
    /// is sent as given; name this session in it.
    ///
    /// ```
    /// use acp_runtime::prelude::*;
    ///
    /// async fn head(turn: &Turn, path: &str) -> Result<String> {
    ///     let request = ReadTextFileRequest::new(turn.id().clone(), path).with_line(1).with_limit(10);
    ///     turn.read_text_file_with(request).await
    /// }
    /// ```
    pub async fn read_text_file_with(&self, request: ReadTextFileRequest) -> Result<String> {
        self.turn_call(|| Ok(self.client.request_decoded(&request, file_content::decode)))
            .await
    }

    /// Writes a text file through the client (needs `fs.writeTextFile`).
    pub async fn write_text_file(
        &self,
        path: impl AsRef<Path>,
        content: impl Into<String>,
    ) -> Result<()> {
        let path = path.as_ref().to_string_lossy().into_owned();
        let request = WriteTextFileRequest::new(self.id.clone(), path, content);
        self.turn_call(|| Ok(self.client.request(&request))).await?;
        Ok(())
    }

    /// Calls any client method for this session, typed, after checking that the client
    /// advertised it: [`ClientHandle::request`] bound to the session's running turn. When the
    /// turn is cancelled first, the call is abandoned (the client gets `$/cancel_request`)
    /// and fails with the `-32800` error [`Error::is_cancelled`] recognizes; after the
    /// turn was cancelled it fails so at once and sends nothing.
    ///
    /// ```
    /// use acp_runtime::prelude::*;
    ///
    /// async fn peek(session: &SessionClient, terminal: TerminalId) -> Result<String> {
    ///     let request = TerminalOutputRequest::new(session.id().clone(), terminal);
    ///     Ok(session.request(&request).await?.output)
    /// }
    /// ```
    pub async fn request<R: Request + AgentToClient + 'static>(
        &self,
        params: &R,
    ) -> Result<R::Response> {
        self.turn_call(|| Ok(self.client.request(params))).await
    }

    /// The cancellation signal of the session's running turn, if one runs.
    ///
    /// A turn's own view knows its signal: a turn is in the registry from before its view is
    /// made until just before its signal is set (the runtime removes it, then sets it), so
    /// while the signal is not set it is the one the registry holds, and the lookup (a lock
    /// and a hash on every call of a turn, docs/performance.md) is skipped. Once it is set,
    /// the registry says whether another turn runs, as for any other view.
    fn running_turn(&self) -> Option<Latch> {
        if let Some(turn) = self.turn.as_ref().filter(|turn| !turn.is_set()) {
            return Some(turn.clone());
        }
        self.client
            .state
            .read_session(&self.id, |entry| entry.turn.clone())
            .flatten()
    }

    /// Runs a call on behalf of the session's running turn: a call the turn's cancellation
    /// overtakes fails with [`turn_cancelled`]; `start` makes the call (see [`for_turn`]).
    async fn turn_call<T, E, F: Future<Output = std::result::Result<T, E>>>(
        &self,
        start: impl FnOnce() -> Result<F>,
    ) -> Result<T>
    where
        Error: From<E>,
    {
        let turn = self.running_turn();
        for_turn(turn.as_ref(), start, || Err(turn_cancelled())).await
    }
}

/// Races the call `start` makes against the cancellation of `turn` (none: the call alone);
/// `start` runs only if the turn is not cancelled yet, and may fail before anything is sent
/// (an unadvertised method), or return the call's future itself (a
/// [`RequestFuture`], without an `async fn` around it). The cancellation
/// wins ties, so that an answer arriving with or after `session/cancel` is not read: `call` is
/// dropped, which sends `$/cancel_request` for a request that went out (its late answer is
/// then dropped by the connection) and sends nothing for one that did not. `cancelled` gives
/// the result in its place.
///
/// The flag is read before and after each poll of `call`, and the latch is waited on only
/// while `call` is pending, through a [`Latch::waiter`]: a call that is ready at once registers
/// nothing, a pending one takes a slot in the latch once, with no allocation (this is on the
/// path of every call a turn makes, docs/performance.md).
async fn for_turn<T, E, F: Future<Output = std::result::Result<T, E>>>(
    turn: Option<&Latch>,
    start: impl FnOnce() -> Result<F>,
    cancelled: impl FnOnce() -> Result<T>,
) -> Result<T>
where
    Error: From<E>,
{
    let Some(turn) = turn else {
        return Ok(start()?.await?);
    };
    if turn.is_set() {
        return cancelled();
    }
    let mut call = std::pin::pin!(start()?);
    let mut overtaken = turn.waiter();
    let answer = std::future::poll_fn(|cx| {
        if turn.is_set() {
            return Poll::Ready(None);
        }
        if let Poll::Ready(answer) = call.as_mut().poll(cx) {
            // Set while `call` was polled: the cancellation still wins.
            return Poll::Ready((!turn.is_set()).then_some(answer.map_err(Error::from)));
        }
        overtaken.poll(cx).map(|()| None)
    })
    .await;
    answer.unwrap_or_else(cancelled)
}

/// A path as a JSON string, with `U+FFFD` in place of what is not UTF-8 (borrowed when it all
/// is).
fn lossy_path<S: serde::Serializer>(
    path: &&Path,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match path.to_str() {
        Some(path) => serializer.serialize_str(path),
        None => serializer.serialize_str(&path.to_string_lossy()),
    }
}

/// What a call that the turn's cancellation overtook fails with: the answer a client gives
/// to `$/cancel_request`.
fn turn_cancelled() -> Error {
    Error::rpc(
        crate::error::codes::REQUEST_CANCELLED,
        "the prompt turn was cancelled",
    )
}

/// One running prompt turn: the session's client helpers (through `Deref`), plus the
/// cancellation signal.
///
/// # Cancellation
///
/// The client cancels a turn with `session/cancel`, by closing its session, or by answering
/// one of the turn's permission requests `cancelled` (which the spec defines as "the prompt
/// turn was cancelled"; some clients answer it before sending `session/cancel`, some send only
/// the answer). Whichever comes, in whatever order:
///
/// - [`is_cancelled`](Self::is_cancelled) is true and [`cancelled`](Self::cancelled) resolves;
/// - the session's calls the turn is waiting on resolve at once, and the client gets
///   `$/cancel_request` for each (its late answer is dropped): a permission request answers
///   `cancelled`, an elicitation `cancel`; file reads and writes, terminal output and waits,
///   and [`SessionClient::request`] fail with an error whose
///   [`is_cancelled`](crate::Error::is_cancelled) is true. Made after the cancellation, they
///   resolve the same way without sending anything. Creating, killing and releasing a
///   terminal still go out, so a cancelled turn can clean up;
/// - the prompt is answered `stopReason: cancelled` whatever [`Agent::prompt`] returns, an
///   error included, so `?` on a cancelled call is a fine way to stop.
///
/// So a client that never answers a pending permission request after `session/cancel` (the
/// spec says it must) does not hang the turn. Calls made through the connection-wide
/// [`ClientHandle`] belong to no turn and are not cancelled.
///
/// ```
/// use acp_runtime::prelude::*;
///
/// async fn edit(turn: &Turn, call: &ToolCall) -> Result<PromptResponse> {
///     let options = vec![PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce)];
///     let outcome = turn.request_permission(call, options).await?;
///     if turn.is_cancelled() {
///         // `session/cancel`, or the client answered `cancelled`, in either order.
///         return Ok(StopReason::Cancelled.into());
///     }
///     if matches!(outcome, RequestPermissionOutcome::Selected(_)) {
///         turn.write_text_file("/project/notes.txt", "checked\n").await?;
///     }
///     Ok(turn.stop_reason(StopReason::EndTurn).into())
/// }
/// ```
///
/// [`Agent::prompt`]: super::Agent::prompt
#[derive(Clone)]
pub struct Turn {
    pub(super) session: SessionClient,
    pub(super) cancel: Latch,
    /// The session's directory, read when the turn started: the session exists then, and
    /// its directory never changes.
    pub(super) cwd: PathBuf,
}

impl Turn {
    /// Whether the turn was cancelled: `session/cancel`, the session closing, or a permission
    /// request of the turn answered `cancelled`.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_set()
    }

    /// Resolves when the turn is cancelled (see [`is_cancelled`](Self::is_cancelled)). Race
    /// the turn's work against it.
    pub async fn cancelled(&self) {
        self.cancel.wait().await
    }

    /// The stop reason the turn ends with: [`StopReason::Cancelled`] once it was cancelled,
    /// else `reason`. The runtime answers the prompt so either way; this is for what the agent
    /// records or logs itself.
    pub fn stop_reason(&self, reason: StopReason) -> StopReason {
        if self.is_cancelled() {
            StopReason::Cancelled
        } else {
            reason
        }
    }

    /// The session's working directory, as the client set it when it created, loaded or
    /// resumed the session. Unlike [`SessionClient::snapshot`], always there: a turn runs in a
    /// session that exists (it stays readable if the session is closed during the turn).
    ///
    /// ```
    /// use acp_runtime::prelude::*;
    ///
    /// async fn readme(turn: &Turn) -> Result<String> {
    ///     turn.read_text_file(turn.cwd().join("README.md")).await
    /// }
    /// ```
    pub fn cwd(&self) -> &Path {
        &self.cwd
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

/// Whether [`SessionClient::replay`] sends `update`: prompt suggestions are not history.
pub(super) fn replayed(update: &SessionUpdate) -> bool {
    match update {
        #[cfg(feature = "unstable-prompt-suggestions")]
        SessionUpdate::PromptSuggestionsUpdate(_) => false,
        _ => true,
    }
}
