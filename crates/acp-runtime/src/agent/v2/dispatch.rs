//! The v2 agent's side of the client's calls: the initialization gate, the session
//! requests, and the prompt lifecycle (acceptance, echo, `state_update`s, held prompts,
//! idempotency, cancellation), each checked before it reaches the [`Agent`].

use std::future::Future;
use std::sync::{Arc, Mutex};

use acp_jsonrpc::{Handler, IncomingNotification, IncomingRequest, Latch, Responder};
use acp_types::v2::*;
use acp_types::{Meta, Patch};

use super::handler::Agent;
use super::session::{Client, Session, Shared, Turn, new_message_id};
use super::sessions::{Claim, Next, Room, unknown_session};
use crate::agent::gate::{self, Gate, InitState};
use crate::error::{Error, Result};
use crate::reply::{Reply, raw, raw_json};
use crate::rules::{self, SessionSetup};

pub(super) struct Dispatch<A> {
    pub(super) agent: Arc<A>,
    pub(super) shared: Arc<Shared>,
    pub(super) init: Arc<Mutex<InitState<Box<AgentCapabilities>>>>,
    /// Cancels every turn when the connection (which owns the dispatch) is dropped.
    pub(super) _end: Arc<ConnectionEnd>,
}

pub(super) struct ConnectionEnd(pub(super) Arc<Shared>);

impl Drop for ConnectionEnd {
    fn drop(&mut self) {
        self.0.sessions.cancel_all();
    }
}

/// Ends a turn when dropped: also when the connection goes away mid-turn.
struct TurnRunning<'a> {
    shared: &'a Shared,
    session: &'a SessionId,
}

impl Drop for TurnRunning<'_> {
    fn drop(&mut self) {
        self.shared.sessions.end_turn(self.session);
    }
}

/// Takes a held prompt out of line when its request is dropped before its turn.
struct InLine<'a> {
    shared: &'a Shared,
    session: &'a SessionId,
    ticket: u64,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.shared.sessions.leave(self.session, self.ticket);
    }
}

/// Forgets a claimed idempotency key unless the prompt was accepted.
struct KeyClaim<'a> {
    shared: &'a Shared,
    session: &'a SessionId,
    key: Option<IdempotencyKey>,
}

impl KeyClaim<'_> {
    fn accept(mut self, message: &MessageId) {
        if let Some(key) = self.key.take() {
            self.shared
                .sessions
                .settle_key(self.session, &key, Some(message));
        }
    }
}

impl Drop for KeyClaim<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.shared.sessions.settle_key(self.session, &key, None);
        }
    }
}

impl<A: Agent> Dispatch<A> {
    fn client(&self) -> Client {
        Client {
            shared: self.shared.clone(),
        }
    }

    fn capabilities(&self) -> AgentCapabilities {
        match &*self.init.lock().unwrap() {
            InitState::Ready(caps) => (**caps).clone(),
            _ => AgentCapabilities::new(),
        }
    }

    async fn initialize(&self, request: InitializeRequest, done: Latch) -> Result<Reply> {
        let requested = request.protocol_version.0;
        let result = if requested < 2 {
            // Served directly (not through the router): v2 only.
            Err(Error::Rpc(rules::unsupported(requested, &[2])))
        } else {
            *self.shared.client.lock().unwrap() = Some(request.capabilities.clone());
            self.agent.initialize(request, &self.client()).await
        };
        let mut init = self.init.lock().unwrap();
        let result = result.map(|mut response| {
            response.protocol_version = ProtocolVersion::V2;
            *init = InitState::Ready(Box::new(response.capabilities.clone()));
            response
        });
        if result.is_err() {
            *init = InitState::NotStarted;
        }
        drop(init);
        done.set();
        raw(result?)
    }

    async fn handle(&self, request: ClientRequest, caps: AgentCapabilities) -> Result<Reply> {
        let client = self.client();
        match request {
            ClientRequest::Initialize(_) => unreachable!("handled by the gate"),
            ClientRequest::AuthLogin(request) => raw(self.agent.login(request, &client).await?),
            ClientRequest::AuthLogout(request) => raw(self.agent.logout(request, &client).await?),
            ClientRequest::SessionNew(request) => {
                let room = self.set_up(&request, &caps)?;
                let response = self.agent.new_session(request, &client).await?;
                self.shared
                    .sessions
                    .register(&response.session_id, room, true)?;
                raw(response)
            }
            ClientRequest::SessionResume(request) => self.resume(request, &caps).await,
            ClientRequest::SessionList(request) => {
                raw(self.agent.list_sessions(request, &client).await?)
            }
            ClientRequest::SessionClose(request) => {
                let id = request.session_id.clone();
                // Closing is idempotent: a session this connection does not serve is closed.
                if let Ok(Some(mut changed)) = self.shared.sessions.cancel(&id) {
                    while self.shared.sessions.running(&id) {
                        changed.wait().await;
                        changed = match self.shared.sessions.cancel(&id) {
                            Ok(Some(next)) => next,
                            _ => break,
                        };
                    }
                }
                let response = self
                    .agent
                    .close_session(request, &client.session(id.clone()))
                    .await;
                self.shared.sessions.remove(&id);
                raw(response?)
            }
            ClientRequest::SessionDelete(request) => {
                if caps
                    .session
                    .as_ref()
                    .and_then(|s| s.delete.as_ref())
                    .is_none()
                {
                    return Err(Error::method_not_found("session/delete"));
                }
                let id = request.session_id.clone();
                let response = self.agent.delete_session(request, &client).await?;
                self.shared.sessions.remove(&id);
                if let Some(history) = &self.shared.history {
                    history.forget(&id);
                }
                raw(response)
            }
            ClientRequest::SessionSetConfigOption(request) => {
                let session = self.known(&request.session_id)?;
                raw(self.agent.set_config_option(request, &session).await?)
            }
            ClientRequest::ToolCallCancel(request) => {
                let session = self.known(&request.session_id)?;
                raw(self.agent.cancel_tool_call(request, &session).await?)
            }
            ClientRequest::TerminalCancel(request) => {
                let session = self.known(&request.session_id)?;
                raw(self.agent.cancel_terminal(request, &session).await?)
            }
            ClientRequest::SessionPrompt(_) => unreachable!("answered by `prompt`"),
            ClientRequest::Extension(call) => raw_json(
                self.agent
                    .ext_method(&call.method, Some(&call.params), &client)
                    .await?,
            ),
            other => Err(Error::method_not_found(other.method())),
        }
    }

    /// The session's handle, or `-32002` for a session this connection does not serve.
    fn known(&self, id: &SessionId) -> Result<Session> {
        if !self.shared.sessions.contains(id) {
            return Err(unknown_session(id));
        }
        Ok(self.client().session(id.clone()))
    }

    /// Checks a setup request (absolute directories, the `additionalDirectories` capability,
    /// room for one more session): the room the session takes until it is registered.
    fn set_up(&self, request: &impl SessionSetup, caps: &AgentCapabilities) -> Result<Room> {
        let directories = request.additional_directories();
        let offered = caps
            .session
            .as_ref()
            .and_then(|s| s.additional_directories.as_ref());
        if !directories.is_empty() && offered.is_none() {
            return Err(Error::invalid_params(
                "additionalDirectories needs the agent's `session.additionalDirectories` capability",
            ));
        }
        rules::absolute_cwd(request.cwd(), directories).map_err(|b| b.answer("agent"))?;
        self.shared
            .sessions
            .room(request.cwd(), request.kept_bytes())
    }

    async fn resume(
        &self,
        request: ResumeSessionRequest,
        caps: &AgentCapabilities,
    ) -> Result<Reply> {
        let room = self.set_up(&request, caps)?;
        let replay = match &request.replay_from {
            Patch::Unchanged | Patch::Clear => false,
            Patch::Set(ReplayFrom::Start(_)) => true,
            Patch::Set(other) => {
                return Err(Error::invalid_params(format!(
                    "replayFrom {} is not a cursor this agent knows",
                    acp_jsonrpc::excerpt(&serde_json::to_string(other).unwrap_or_default())
                )));
            }
        };
        let id = request.session_id.clone();
        let session = self.client().session(id.clone());
        let response = self.agent.resume_session(request, &session).await?;
        self.shared.sessions.register(&id, room, false)?;
        if replay {
            let mut complete = ReplayComplete::new();
            if let Some(history) = &self.shared.history {
                let retained = history.retained(&id).unwrap_or_default();
                for update in &retained.updates {
                    session.send_raw(update).await?;
                }
                if retained.truncated {
                    let mut meta = Meta::new();
                    meta.insert("acp-rs/truncated".to_owned(), serde_json::Value::Bool(true));
                    complete = complete.with_meta(meta);
                }
            }
            session
                .update(SessionUpdate::ReplayComplete(complete))
                .await?;
        }
        // The current state after any replay and before the answer, with or without replay
        // (v2's current-state synchronization): `running` while a turn of this connection
        // runs, `idle` otherwise.
        let current = if self.shared.sessions.running(&id) {
            StateUpdate::Running(RunningStateUpdate::new())
        } else {
            StateUpdate::Idle(IdleStateUpdate::new(IdleStateUpdateKindNone::new()))
        };
        session.state(current).await?;
        raw(response)
    }

    /// The prompt lifecycle: wait for the turn (in line, withdrawn by a cancel), accept
    /// (`{messageId}`), echo, `running`, the agent's turn, `idle`.
    async fn prompt(&self, request: PromptRequest, responder: Responder) {
        let id = request.session_id.clone();
        let key_claim = match self.claim(&id, request.idempotency_key.as_ref()).await {
            Ok(Ok(claim)) => claim,
            Ok(Err(accepted)) => return responder.respond_ok(&PromptResponse::new(accepted)),
            Err(error) => return responder.respond_error(error.to_response()),
        };
        let (ticket, withdraw) = match self.shared.sessions.enqueue(&id) {
            Ok(line) => line,
            Err(error) => return responder.respond_error(error.to_response()),
        };
        let (cancel, cwd) = {
            // Takes the prompt out of line if its request is dropped while it waits (`next`
            // has already done so when the prompt starts or is withdrawn: leaving is then a
            // no-op).
            let _in_line = InLine {
                shared: &self.shared,
                session: &id,
                ticket,
            };
            loop {
                match self.shared.sessions.next(&id, ticket, &withdraw) {
                    Next::Start(cancel, cwd) => break (cancel, cwd),
                    Next::Withdrawn => {
                        return responder
                            .respond_error(acp_jsonrpc::ResponseError::request_cancelled());
                    }
                    Next::Wait(changed, withdrawn) => {
                        futures_lite::future::or(changed.wait(), withdrawn.wait()).await;
                    }
                }
            }
        };
        let _running = TurnRunning {
            shared: &self.shared,
            session: &id,
        };
        let message = new_message_id();
        key_claim.accept(&message);
        responder.respond_ok(&PromptResponse::new(message.clone()));
        let session = self.client().session(id.clone());
        let echo = UserMessage::new(message.clone()).with_content(request.prompt.clone());
        let started = async {
            session.update(SessionUpdate::UserMessage(echo)).await?;
            session
                .state(StateUpdate::Running(RunningStateUpdate::new()))
                .await
        };
        if started.await.is_err() {
            return; // The connection is closing.
        }
        let turn = Turn {
            session: session.clone(),
            cancel: cancel.clone(),
            cwd,
            user_message: message,
            reply: Mutex::new(None),
            thought: Mutex::new(None),
        };
        let result = self.agent.prompt(request, turn).await;
        let kind = match result {
            _ if cancel.is_set() => IdleStateUpdateKind::Cancelled,
            Ok(kind) => kind,
            Err(error) => {
                let error = serde_json::to_value(error.to_response())
                    .ok()
                    .and_then(|value| {
                        serde_json::from_value::<acp_types::v2::rpc::Error>(value).ok()
                    });
                let reason = match error {
                    Some(error) => ErrorStopReason::new().with_error(error),
                    None => ErrorStopReason::new(),
                };
                IdleStateUpdateKind::Error(reason)
            }
        };
        let _ = session
            .state(StateUpdate::Idle(IdleStateUpdate::new(kind)))
            .await;
    }

    /// Claims the prompt's idempotency key: `Ok(Ok(claim))` to go on, `Ok(Err(id))` for a
    /// retry of an accepted prompt.
    async fn claim<'a>(
        &'a self,
        id: &'a SessionId,
        key: Option<&IdempotencyKey>,
    ) -> Result<std::result::Result<KeyClaim<'a>, MessageId>> {
        let Some(key) = key else {
            if !self.shared.sessions.contains(id) {
                return Err(unknown_session(id));
            }
            return Ok(Ok(KeyClaim {
                shared: &self.shared,
                session: id,
                key: None,
            }));
        };
        loop {
            match self.shared.sessions.claim_key(id, key)? {
                Claim::Fresh => {
                    return Ok(Ok(KeyClaim {
                        shared: &self.shared,
                        session: id,
                        key: Some(key.clone()),
                    }));
                }
                Claim::Accepted(message) => return Ok(Err(message)),
                Claim::Wait(latch) => latch.wait().await,
            }
        }
    }
}

impl<A: Agent> Handler for Dispatch<A> {
    fn request(
        &self,
        request: IncomingRequest,
        responder: Responder,
    ) -> impl Future<Output = ()> + Send {
        let gate = gate::arrive(&self.init, request.method());
        let dispatch = Dispatch {
            agent: self.agent.clone(),
            shared: self.shared.clone(),
            init: self.init.clone(),
            _end: self._end.clone(),
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
                            *dispatch.init.lock().unwrap() = InitState::NotStarted;
                            done.set();
                            return responder.respond_error(rules::decode_error(error));
                        }
                    };
                    return match result {
                        Ok(reply) => reply(responder),
                        Err(error) => responder.respond_error(error.to_response()),
                    };
                }
                Gate::WaitFor(latch) => latch.wait().await,
                Gate::Go => {}
            }
            if !matches!(&*dispatch.init.lock().unwrap(), InitState::Ready(_)) {
                return responder.respond_error(rules::not_initialized(format!(
                    "`{}` before a successful `initialize`",
                    request.method()
                )));
            }
            let call = match decoded {
                Ok(call) => call,
                Err(error) => return responder.respond_error(rules::decode_error(error)),
            };
            let caps = dispatch.capabilities();
            let result = match call {
                // The session methods are served only by an agent that advertised `session`.
                call if call.method().starts_with("session/") && caps.session.is_none() => {
                    Err(Error::method_not_found(call.method()))
                }
                // A prompt is answered when it is accepted, and its turn runs on after that.
                ClientRequest::SessionPrompt(request) => {
                    match prompt_content(&request.prompt, &caps) {
                        Ok(()) => return dispatch.prompt(request, responder).await,
                        Err(error) => Err(error),
                    }
                }
                call => dispatch.handle(call, caps).await,
            };
            match result {
                Ok(reply) => reply(responder),
                Err(error) => responder.respond_error(error.to_response()),
            }
        }
    }

    fn notification(&self, notification: IncomingNotification) -> impl Future<Output = ()> + Send {
        let decoded = ClientNotification::decode(notification.method(), notification.raw_params());
        let shared = self.shared.clone();
        async move {
            match decoded {
                Ok(ClientNotification::SessionCancel(cancel)) => {
                    if shared.sessions.cancel(&cancel.session_id).is_err() {
                        notification.report_unhandled(format_args!(
                            "session/cancel for unknown session `{}`",
                            acp_jsonrpc::excerpt(&cancel.session_id.0)
                        ));
                    }
                }
                // `$/cancel_request` is handled by the JSON-RPC layer before it gets here.
                Ok(ClientNotification::CancelRequest(_)) => {}
                Ok(other) => notification
                    .report_unhandled(format_args!("no handler for `{}`", other.method())),
                Err(error) => notification.report_unhandled(error),
            }
        }
    }
}

/// A prompt's content must be of the kinds the agent advertised (`session.prompt`: `image`,
/// `audio`, `embeddedContext`; text and resource links always): `-32602` naming the first
/// that is not, before the prompt waits or reaches the agent.
fn prompt_content(prompt: &[ContentBlock], caps: &AgentCapabilities) -> Result<()> {
    let offered = caps.session.as_ref().and_then(|s| s.prompt.as_ref());
    for (index, block) in prompt.iter().enumerate() {
        let (kind, advertised) = match block {
            ContentBlock::Image(_) => ("image", offered.is_some_and(|p| p.image.is_some())),
            ContentBlock::Audio(_) => ("audio", offered.is_some_and(|p| p.audio.is_some())),
            ContentBlock::Resource(_) => (
                "resource",
                offered.is_some_and(|p| p.embedded_context.is_some()),
            ),
            _ => continue,
        };
        if !advertised {
            return Err(Error::invalid_params(format!(
                "prompt[{index}] is {kind} content, which this agent does not advertise (session.prompt)"
            )));
        }
    }
    Ok(())
}
