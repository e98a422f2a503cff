//! The agent's side of the client's calls: the initialization gate, the session registry's
//! requests, prompt turns and cancellation, each checked against the protocol's rules before
//! it reaches the [`Agent`](super::Agent).

use std::future::Future;
use std::sync::Arc;

use acp_jsonrpc::{Handler, IncomingNotification, IncomingRequest, Responder};
use acp_types::*;

use super::gate::{self, Gate, InitState};
use super::handler::Agent;
use super::session::{ClientHandle, SessionClient, Turn};
use super::state::{AgentState, Negotiated, SessionEntry, SessionSlot};
use crate::error::{Error, Result};
use crate::reply::{Reply, raw, raw_json};
use crate::rules::{self, Breach, SessionSetup};
use acp_jsonrpc::Latch;

pub(super) struct AgentDispatch<A> {
    pub(super) agent: Arc<A>,
    pub(super) state: Arc<AgentState>,
}

/// Marks a session's turn as running for as long as it lives.
struct TurnRunning {
    state: Arc<AgentState>,
    session: SessionId,
    cancel: Latch,
}

impl Drop for TurnRunning {
    fn drop(&mut self) {
        // Off the registry first, so that the session's calls made from now on see no turn
        // rather than this one's signal.
        let _ = self.state.with_session(&self.session, |entry| {
            entry.turn = None;
            Ok(())
        });
        // The turn's handler is gone either way: anything still waiting on its cancellation
        // signal (helpers racing it, the turn's calls to the client) can stop.
        self.cancel.set();
    }
}

impl<A: Agent> AgentDispatch<A> {
    fn client(&self) -> ClientHandle {
        ClientHandle {
            rpc: self.state.rpc.get().expect("set at start").clone(),
            state: self.state.clone(),
        }
    }

    pub(super) fn session(&self, id: &SessionId) -> SessionClient {
        self.client().session(id.clone())
    }

    fn negotiated(&self) -> (AgentCapabilities, ClientCapabilities) {
        self.state
            .negotiated(|n| (n.agent_capabilities.clone(), n.client_capabilities.clone()))
            .unwrap_or_default()
    }

    async fn initialize(
        &self,
        request: InitializeRequest,
        done: Latch,
    ) -> Result<InitializeResponse> {
        let requested = request.protocol_version;
        let client_capabilities = request.client_capabilities.clone();
        let result = self.agent.initialize(request, &self.client()).await;
        let mut init = self.state.init.lock().unwrap();
        let result = result.map(|mut response| {
            response.protocol_version = rules::negotiate(requested);
            if response.agent_info.is_none() {
                response.agent_info = self.state.options.info().cloned();
            }
            let sessions = &mut response.agent_capabilities.session_capabilities;
            if sessions.system_prompt.is_none() {
                sessions.system_prompt = self.state.options.system_prompt().cloned();
            }
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
        done.set();
        result
    }

    async fn handle(&self, request: ClientRequest) -> Result<Reply> {
        let (caps, client_caps) = self.negotiated();
        let client = self.client();
        // Every request this agent did not advertise is refused before it reaches the agent.
        rules::agent_method(request.method(), &caps).map_err(|b| b.answer("agent"))?;
        let answer = |breach: Breach| breach.answer("agent");
        match request {
            ClientRequest::Initialize(_) => unreachable!("handled by the gate"),
            ClientRequest::Authenticate(request) => {
                raw(self.agent.authenticate(request, &client).await?)
            }
            ClientRequest::Logout(request) => raw(self.agent.logout(request, &client).await?),
            ClientRequest::SessionNew(request) => {
                let (entry, _slot) = set_up((&self.state, None), &request, &caps)?;
                let response = self.agent.new_session(request, &client).await?;
                let advertised = (&response.modes, &response.config_options);
                self.register_new(&response.session_id, entry, advertised, &client_caps)?;
                self.session_answer(&response.session_id.clone(), response)
            }
            ClientRequest::SessionLoad(request) => {
                let (entry, _slot) =
                    set_up((&self.state, Some(&request.session_id)), &request, &caps)?;
                let id = request.session_id.clone();
                let response = self
                    .reopen(id.clone(), entry, &client_caps, |session| {
                        self.agent.load_session(request, session)
                    })
                    .await?;
                self.session_answer(&id, response)
            }
            ClientRequest::SessionResume(request) => {
                let (entry, _slot) =
                    set_up((&self.state, Some(&request.session_id)), &request, &caps)?;
                let id = request.session_id.clone();
                let response = self
                    .reopen(id.clone(), entry, &client_caps, |session| {
                        self.agent.resume_session(request, session)
                    })
                    .await?;
                self.session_answer(&id, response)
            }
            ClientRequest::SessionList(request) => {
                raw(self.agent.list_sessions(request, &client).await?)
            }
            ClientRequest::SessionClose(request) => {
                let id = request.session_id.clone();
                self.state.with_session(&id, |entry| {
                    if let Some(turn) = &entry.turn {
                        turn.set();
                    }
                    Ok(())
                })?;
                let response = self.agent.close_session(request, self.session(&id)).await?;
                self.state.forget(&id);
                raw(response)
            }
            ClientRequest::SessionDelete(request) => {
                let id = request.session_id.clone();
                let response = self
                    .agent
                    .delete_session(request, self.session(&id))
                    .await?;
                self.state.forget(&id);
                raw(response)
            }
            ClientRequest::SessionPrompt(request) => {
                rules::prompt_content(&request.prompt, &caps.prompt_capabilities)
                    .map_err(answer)?;
                let id = request.session_id.clone();
                let cancel = Latch::new();
                let cwd = self.state.with_session(&id, |entry| {
                    if entry.turn.is_some() {
                        return Err(Error::invalid_request(format!(
                            "session `{id}` already has a prompt in flight; wait for it or cancel it"
                        )));
                    }
                    entry.turn = Some(cancel.clone());
                    Ok(entry.cwd.clone())
                })?;
                // Frees the session when the turn ends, also when this future is dropped
                // (`$/cancel_request`, a closing connection) before it gets there.
                let _running = TurnRunning {
                    state: self.state.clone(),
                    session: id.clone(),
                    cancel: cancel.clone(),
                };
                let turn = Turn {
                    session: SessionClient {
                        turn: Some(cancel.clone()),
                        ..self.session(&id)
                    },
                    cancel: cancel.clone(),
                    cwd,
                };
                let result = self.agent.prompt(request, turn).await;
                if cancel.is_set() {
                    // The spec: a cancelled turn answers `cancelled`, never an error caused by
                    // the abort.
                    return raw(cancelled(&result));
                }
                raw(result?)
            }
            ClientRequest::SessionSetMode(request) => {
                let id = request.session_id.clone();
                self.state.with_session(&id, |entry| {
                    rules::mode(&id, entry.modes.as_ref(), &request.mode_id).map_err(answer)
                })?;
                let mode = request.mode_id.clone();
                let response = self.agent.set_mode(request, self.session(&id)).await?;
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
                self.state.with_session(&id, |entry| {
                    rules::config_value(
                        &id,
                        entry.config_options.as_deref(),
                        &request,
                        &client_caps,
                    )
                    .map_err(answer)
                })?;
                let response = self
                    .agent
                    .set_config_option(request, self.session(&id))
                    .await?;
                offered(&Some(response.config_options.clone()), &client_caps)?;
                let _ = self.state.with_session(&id, |entry| {
                    entry.config_options = Some(response.config_options.clone());
                    Ok(())
                });
                raw(response)
            }
            #[cfg(feature = "unstable-session-fork")]
            ClientRequest::SessionFork(request) => {
                let (entry, _slot) = set_up((&self.state, None), &request, &caps)?;
                #[cfg(feature = "unstable-session-cursors")]
                self.check_fork_cursor(&request)?;
                let source = self.session(&request.session_id);
                let response = self.agent.fork_session(request, source).await?;
                let advertised = (&response.modes, &response.config_options);
                self.register_new(&response.session_id, entry, advertised, &client_caps)?;
                self.session_answer(&response.session_id.clone(), response)
            }
            #[cfg(feature = "unstable-session-archive")]
            ClientRequest::SessionArchive(request) => {
                let session = self.session(&request.session_id);
                raw(self.agent.archive_session(request, session).await?)
            }
            #[cfg(feature = "unstable-session-archive")]
            ClientRequest::SessionUnarchive(request) => {
                let session = self.session(&request.session_id);
                raw(self.agent.unarchive_session(request, session).await?)
            }
            #[cfg(feature = "unstable-session-status")]
            ClientRequest::SessionStatus(request) => {
                let session = self.session(&request.session_id);
                raw(self.agent.session_status(request, session).await?)
            }
            #[cfg(feature = "unstable-session-title")]
            ClientRequest::SessionSetTitle(request) => {
                let session = self.session(&request.session_id);
                raw(self.agent.set_session_title(request, session).await?)
            }
            #[cfg(feature = "unstable-providers")]
            ClientRequest::ProvidersList(request) => {
                raw(self.agent.list_providers(request, &client).await?)
            }
            #[cfg(feature = "unstable-providers")]
            ClientRequest::ProvidersSet(request) => {
                raw(self.agent.set_provider(request, &client).await?)
            }
            #[cfg(feature = "unstable-providers")]
            ClientRequest::ProvidersDisable(request) => {
                raw(self.agent.disable_provider(request, &client).await?)
            }
            #[cfg(feature = "unstable-auth-status")]
            ClientRequest::AuthStatus(request) => {
                raw(self.agent.auth_status(request, &client).await?)
            }
            #[cfg(feature = "unstable-session-options")]
            ClientRequest::SessionOptions(request) => {
                self.session_options(request, &client, &caps, &client_caps)
                    .await
            }
            ClientRequest::Extension(call) => raw_json(self.agent.ext_method(call, &client).await?),
            other => Err(Error::method_not_found(other.method())),
        }
    }

    /// The answer to a request that opened a session; with `unstable-models`, carrying the
    /// `models` the agent offered for it (see `models.rs`).
    fn session_answer<T: serde::Serialize + Send + 'static>(
        &self,
        id: &SessionId,
        response: T,
    ) -> Result<Reply> {
        #[cfg(feature = "unstable-models")]
        let response = super::models::with_models(&self.state, id, response)?;
        #[cfg(not(feature = "unstable-models"))]
        let _ = id;
        raw(response)
    }

    /// Registers a session the agent just created (`session/new`, `session/fork`), with what
    /// its answer advertised.
    fn register_new(
        &self,
        id: &SessionId,
        entry: SessionEntry,
        (modes, options): Advertised<'_>,
        client_caps: &ClientCapabilities,
    ) -> Result<()> {
        offered(options, client_caps)?;
        let entry = entry.advertised(modes.clone(), options.clone());
        self.state.register(id.clone(), entry, false)
    }

    /// Runs the agent's `session/load` or `session/resume` with the session known while it
    /// runs (so that its handle shows the directory and servers), then records what the answer
    /// advertised, or puts back what was known before when the agent failed (or answered what
    /// the client cannot take).
    async fn reopen<R: SessionAnswer, F: Future<Output = Result<R>>>(
        &self,
        id: SessionId,
        entry: SessionEntry,
        client_caps: &ClientCapabilities,
        run: impl FnOnce(SessionClient) -> F,
    ) -> Result<R> {
        let previous = self.state.replace(id.clone(), entry.clone());
        let checked = run(self.session(&id)).await.and_then(|response| {
            let (modes, options) = response.advertised();
            offered(options, client_caps)?;
            self.state
                .settle(id.clone(), entry.advertised(modes.clone(), options.clone()));
            Ok(response)
        });
        if checked.is_err() {
            match previous {
                Some(previous) => drop(self.state.replace(id.clone(), previous)),
                None => self.state.forget(&id),
            }
        }
        checked
    }
}

/// The modes and config options a session's answer advertises.
type Advertised<'a> = (
    &'a Option<SessionModeState>,
    &'a Option<Vec<SessionConfigOption>>,
);

/// The answers that reopen a stored session.
trait SessionAnswer {
    fn advertised(&self) -> Advertised<'_>;
}

impl SessionAnswer for LoadSessionResponse {
    fn advertised(&self) -> Advertised<'_> {
        (&self.modes, &self.config_options)
    }
}

impl SessionAnswer for ResumeSessionResponse {
    fn advertised(&self) -> Advertised<'_> {
        (&self.modes, &self.config_options)
    }
}

/// The rules every request that sets a session up keeps (absolute directories within the
/// path limits, advertised MCP transports, a system prompt in an advertised mode, room for one
/// more session: `reopening` is the id a `load` or `resume` names), and the registry entry it
/// starts from, with the slot that counts it until it is registered.
fn set_up(
    (state, reopening): (&Arc<AgentState>, Option<&SessionId>),
    request: &impl SessionSetup<Directory = String, McpServer = McpServer, SystemPrompt = SystemPrompt>,
    caps: &AgentCapabilities,
) -> Result<(SessionEntry, SessionSlot)> {
    let answer = |breach: Breach| breach.answer("agent");
    rules::absolute_cwd(request.cwd(), request.additional_directories()).map_err(answer)?;
    rules::mcp_servers(request.mcp_servers(), caps).map_err(answer)?;
    rules::system_prompt(request.system_prompt(), caps).map_err(answer)?;
    let entry = SessionEntry::new(request);
    let slot = state.reserve(&entry, reopening)?;
    // `configOptions`, checked with the slot held as before: duplicate ids are refused with
    // `-32602` (the spec's one refusal); ids and values the agent does not know reach it.
    #[cfg(feature = "unstable-session-options")]
    rules::unstable::distinct_config_ids(request.config_options()).map_err(answer)?;
    Ok((entry, slot))
}

/// The agent's own answer must not offer what the client cannot take: a breach is the
/// agent's bug, answered as an internal error that names it.
fn offered(options: &Option<Vec<SessionConfigOption>>, client: &ClientCapabilities) -> Result<()> {
    rules::offered_config_options(options.as_deref(), client)
        .map_err(|breach| Error::internal(format!("the agent answered {breach}")))
}

impl<A: Agent> Handler for AgentDispatch<A> {
    fn request(
        &self,
        request: IncomingRequest,
        responder: Responder,
    ) -> impl Future<Output = ()> + Send {
        let gate = gate::arrive(&self.state.init, request.method());
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
                            done.set();
                            return responder.respond_error(rules::decode_error(error));
                        }
                    };
                    return responder.respond(result.map_err(|e| e.to_response()));
                }
                Gate::WaitFor(latch) => latch.wait().await,
                Gate::Go => {}
            }
            if dispatch.state.negotiated(|_| ()).is_none() {
                return responder.respond_error(rules::not_initialized(format!(
                    "`{}` before a successful `initialize`",
                    request.method()
                )));
            }
            let result = match decoded {
                Ok(call) => dispatch.handle(call).await.map_err(|e| e.to_response()),
                // Not a method of the current schema: the seed-era `session/set_model`.
                #[cfg(feature = "unstable-models")]
                Err(DecodeError::UnknownMethod(method)) if method == super::models::METHOD => {
                    let params = request.raw_params();
                    dispatch
                        .set_model(params)
                        .await
                        .map_err(|e| e.to_response())
                }
                Err(error) => Err(rules::decode_error(error)),
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
        let client = self.client();
        async move {
            match decoded {
                Ok(ClientNotification::SessionCancel(cancel)) => {
                    let found = state.with_session(&cancel.session_id, |entry| {
                        if let Some(turn) = &entry.turn {
                            turn.set();
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
                Ok(ClientNotification::Extension(call)) => {
                    agent.ext_notification(call, &client).await
                }
                #[cfg(feature = "unstable-mcp-over-acp")]
                Ok(ClientNotification::McpMessage(message)) => {
                    let advertised = state
                        .negotiated(|n| rules::agent_method("mcp/message", &n.agent_capabilities))
                        .unwrap_or(Ok(()));
                    match advertised {
                        Ok(()) => agent.mcp_notification(message, &client).await,
                        Err(breach) => notification.report_unhandled(breach),
                    }
                }
                Ok(other) => notification
                    .report_unhandled(format_args!("no handler for `{}`", other.method())),
                Err(error) => notification.report_unhandled(error),
            }
        }
    }
}

#[cfg(feature = "unstable-models")]
impl<A: Agent> AgentDispatch<A> {
    /// `session/set_model`: decoded here (the current schema does not know it), checked against
    /// the models the session offered, then handed to the agent.
    async fn set_model(&self, params: Option<&serde_json::value::RawValue>) -> Result<Reply> {
        let text = params.map_or("{}", serde_json::value::RawValue::get);
        let request: acp_types::models::SetSessionModelRequest = serde_json::from_str(text)
            .map_err(|e| {
                Error::invalid_params(format!(
                    "invalid params for `{}`: {e}",
                    super::models::METHOD
                ))
            })?;
        let id = request.session_id.clone();
        // The session must be known; its models are the ones it offered.
        self.state.with_session(&id, |_| Ok(()))?;
        let offered = self.state.models.lock().unwrap().get(&id).cloned();
        rules::model(&id, offered.as_ref(), &request.model_id).map_err(|b| b.answer("agent"))?;
        let model = request.model_id.clone();
        let response = self.agent.set_model(request, self.session(&id)).await?;
        if let Some(models) = self.state.models.lock().unwrap().get_mut(&id) {
            models.current_model_id = model;
        }
        raw(response)
    }
}

/// The answer to a turn the client cancelled: `cancelled`, with the token usage the agent
/// reported for it (feature `unstable-end-turn-usage`).
pub(super) fn cancelled(result: &Result<PromptResponse>) -> PromptResponse {
    let response = PromptResponse::new(StopReason::Cancelled);
    #[cfg(feature = "unstable-end-turn-usage")]
    if let Some(usage) = result.as_ref().ok().and_then(|r| r.usage.clone()) {
        return response.with_usage(usage);
    }
    #[cfg(not(feature = "unstable-end-turn-usage"))]
    let _ = result;
    response
}
