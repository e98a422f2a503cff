//! The agent's side of the client's calls: the initialization gate, the session registry's
//! requests, prompt turns and cancellation, each checked against the protocol's rules before
//! it reaches the [`Agent`](super::Agent).

use std::future::Future;
use std::sync::Arc;

use acp_jsonrpc::{Handler, IncomingNotification, IncomingRequest, Responder, ResponseError};
use acp_types::*;

use crate::error::{Error, Result};
use crate::reply::{Reply, not_advertised, raw, raw_json};
use crate::signal::Signal;

use super::*;

pub(super) struct AgentDispatch<A> {
    pub(super) agent: Arc<A>,
    pub(super) state: Arc<AgentState>,
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
