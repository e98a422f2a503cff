//! The client's side of the agent's calls: `fs/*`, `terminal/*`, permission requests and
//! extension methods answered through the built-in hosts or the application's [`Client`], and
//! `session/update` routed to its session.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use acp_host::fs::FsError;
use acp_host::process::ExitStatus;
use acp_host::terminal::{CreateTerminal, TerminalError, TerminalHost, TerminalScope};
use acp_jsonrpc::{Handler, IncomingNotification, IncomingRequest, Responder, ResponseError};
use acp_types::*;
use serde_json::value::RawValue;

use super::dropped::{DropReason, DroppedUpdates};
use super::handler::Client;
use super::state::{ClientState, SessionShared};
use super::subagents::{self, Announced};
use super::text_chunk;
#[cfg(feature = "unstable-session-cursors")]
use super::unstable_state::CURSOR_BUDGET;
use super::updates::{Arrived, Routed, update_cost};
use crate::error::{Error, Result, codes};
use crate::reply::{Reply, raw, raw_json};
use crate::rules::{self, Breach};
use acp_jsonrpc::Latch;

pub(super) struct ClientDispatch<C> {
    pub(super) client: Arc<C>,
    pub(super) state: Arc<ClientState>,
}

impl<C> Clone for ClientDispatch<C> {
    fn clone(&self) -> Self {
        ClientDispatch {
            client: self.client.clone(),
            state: self.state.clone(),
        }
    }
}

fn session_of(request: &AgentRequest) -> Option<&SessionId> {
    Some(match request {
        AgentRequest::FsReadTextFile(r) => &r.session_id,
        AgentRequest::FsWriteTextFile(r) => &r.session_id,
        AgentRequest::SessionRequestPermission(r) => &r.session_id,
        AgentRequest::TerminalCreate(r) => &r.session_id,
        AgentRequest::TerminalOutput(r) => &r.session_id,
        AgentRequest::TerminalRelease(r) => &r.session_id,
        AgentRequest::TerminalWaitForExit(r) => &r.session_id,
        AgentRequest::TerminalKill(r) => &r.session_id,
        _ => return None,
    })
}

fn fs_error(error: FsError) -> Error {
    match &error {
        FsError::NotFound(path) => {
            Error::resource_not_found(&error, &acp_jsonrpc::excerpt(&path.to_string_lossy()))
        }
        FsError::RelativePath(_) | FsError::InvalidLine(_) | FsError::TooLarge { .. } => {
            Error::invalid_params(&error)
        }
        FsError::OutsideRoots { .. }
        | FsError::ParentOfMissing(_)
        | FsError::DanglingSymlink { .. }
        | FsError::NotARegularFile { .. }
        | FsError::HardLinked { .. } => Error::invalid_params(&error),
        _ => Error::internal(&error),
    }
}

/// The protocol's form of how a terminal's command ended. Its exit code is unsigned; a negative
/// code (which no Unix exit reports) becomes `None`.
fn terminal_exit_status(status: ExitStatus) -> TerminalExitStatus {
    let mut out = TerminalExitStatus::new();
    out.exit_code = status.code.and_then(|code| u32::try_from(code).ok());
    out.signal = status.signal;
    out
}

fn terminal_error(error: TerminalError) -> Error {
    match &error {
        TerminalError::UnknownTerminal(id) | TerminalError::WrongSession { id, .. } => Error::Rpc(
            ResponseError::new(codes::RESOURCE_NOT_FOUND, error.to_string())
                .with_data(&serde_json::json!({ "terminalId": acp_jsonrpc::excerpt(id) })),
        ),
        TerminalError::RelativeCwd(_) | TerminalError::MissingCwd(_) => {
            Error::invalid_params(&error)
        }
        TerminalError::TooManyTerminals { limit, scope } => {
            let scope = match scope {
                TerminalScope::Session => "session",
                TerminalScope::Host => "connection",
            };
            Error::Rpc(
                ResponseError::new(acp_jsonrpc::ErrorCode::INVALID_PARAMS, error.to_string())
                    .with_data(&serde_json::json!({ "limit": limit, "scope": scope })),
            )
        }
        _ => Error::internal(&error),
    }
}

/// What [`ClientDispatch::handle`] returns.
type HandlerFuture<'a> = Pin<Box<dyn Future<Output = Result<Reply>> + Send + 'a>>;

/// The id of the session a request names, or "" for requests that name none.
fn session_id(session: &Option<Arc<SessionShared>>) -> &str {
    session.as_ref().map(|s| s.id.as_str()).unwrap_or_default()
}

impl<C: Client> ClientDispatch<C> {
    fn session(&self, id: &SessionId) -> Result<Arc<SessionShared>> {
        match self.state.routes.lock().unwrap().get(id) {
            Some(shared) => Ok(shared.clone()),
            None => Err(rules::unknown_session(id)),
        }
    }

    /// The work of answering `request`. Each arm is boxed on its own: one future holding every
    /// arm inline was over 4 KiB, and moving it into place cost more than the small allocation
    /// of the one arm run.
    ///
    /// Handlers that answer with megabytes reserve room for the answer on `responder` first
    /// (see [`Responder::reserve`]).
    fn handle<'a>(
        &'a self,
        request: AgentRequest,
        responder: &'a mut Responder,
    ) -> HandlerFuture<'a> {
        let caps = &self.state.options.capabilities;
        let elicitation = match &request {
            AgentRequest::ElicitationCreate(request) => Some(&request.kind),
            _ => None,
        };
        // Every request this client did not advertise is refused before it reaches a host or
        // the application.
        if let Err(breach) = rules::client_method(request.method(), elicitation, caps) {
            return Box::pin(std::future::ready(Err(breach.answer("client"))));
        }
        let session = match session_of(&request) {
            Some(id) => match self.session(id) {
                Ok(session) => Some(session),
                // The agent may use a session as soon as it has answered the call that opens
                // it; the application's call registers it a moment later. `wait_for_session`
                // answers at once when no such call is in flight.
                Err(error) => {
                    let id = id.clone();
                    return Box::pin(async move {
                        if self.state.wait_for_session(&id).await {
                            self.handle(request, responder).await
                        } else {
                            Err(error)
                        }
                    });
                }
            },
            None => None,
        };
        match request {
            AgentRequest::SessionRequestPermission(request) => Box::pin(async move {
                let cancel = session
                    .as_ref()
                    .map(|s| s.cancel.lock().unwrap().clone())
                    .unwrap_or_else(Latch::new);
                if cancel.is_set() {
                    return raw(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Cancelled,
                    ));
                }
                let client = self.client.clone();
                let answer = futures_lite::future::or(
                    async move { Some(client.request_permission(request).await) },
                    async move {
                        cancel.wait().await;
                        None
                    },
                )
                .await;
                match answer {
                    Some(response) => raw(response?),
                    // The spec's MUST: pending permission requests of a cancelled turn are
                    // answered `cancelled`.
                    None => raw(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Cancelled,
                    )),
                }
            }),
            AgentRequest::FsReadTextFile(request) => Box::pin(async move {
                match (&self.state.options.fs, &session) {
                    (Some(fs), Some(session)) => {
                        let content = fs
                            .read_text_file_reserving(
                                &session.roots,
                                Path::new(&request.path),
                                request.line,
                                request.limit,
                                async |bytes| {
                                    responder
                                        .reserve(usize::try_from(bytes).unwrap_or(usize::MAX))
                                        .await
                                },
                            )
                            .await
                            .map_err(fs_error)?;
                        raw(ReadTextFileResponse::new(content))
                    }
                    _ => raw(self.client.read_text_file(request).await?),
                }
            }),
            AgentRequest::FsWriteTextFile(request) => Box::pin(async move {
                match (&self.state.options.fs, &session) {
                    (Some(fs), Some(session)) => {
                        fs.write_text_file(
                            &session.roots,
                            Path::new(&request.path),
                            request.content,
                        )
                        .await
                        .map_err(fs_error)?;
                        raw(WriteTextFileResponse::new())
                    }
                    _ => raw(self.client.write_text_file(request).await?),
                }
            }),
            AgentRequest::TerminalCreate(request) => Box::pin(async move {
                let Some(terminals) = self.terminals() else {
                    return raw(self.client.create_terminal(request).await?);
                };
                let session = session.as_ref().expect("terminal requests name a session");
                let mut create = CreateTerminal::new(request.command);
                create.args = request.args.unwrap_or_default();
                create.env = request
                    .env
                    .unwrap_or_default()
                    .into_iter()
                    .map(|v| (v.name, v.value))
                    .collect();
                create.cwd = request.cwd.map(PathBuf::from);
                create.output_byte_limit = request.output_byte_limit;
                let id = terminals
                    .create(session.id.as_str(), create, &session.cwd)
                    .map_err(terminal_error)?;
                raw(CreateTerminalResponse::new(id))
            }),
            AgentRequest::TerminalOutput(request) => Box::pin(async move {
                let Some(terminals) = self.terminals() else {
                    return raw(self.client.terminal_output(request).await?);
                };
                let (session, terminal) = (session_id(&session), request.terminal_id.as_str());
                // Room for the answer first: escaped, a byte of output takes at most 6.
                let limit = terminals
                    .output_limit(session, terminal)
                    .map_err(terminal_error)?;
                responder
                    .reserve(limit.saturating_mul(6).saturating_add(256))
                    .await;
                let output = terminals
                    .output(session, terminal)
                    .map_err(terminal_error)?;
                let mut response = TerminalOutputResponse::new(output.output, output.truncated);
                response.exit_status = output.exit_status.map(terminal_exit_status);
                raw(response)
            }),
            AgentRequest::TerminalWaitForExit(request) => Box::pin(async move {
                let Some(terminals) = self.terminals() else {
                    return raw(self.client.wait_for_terminal_exit(request).await?);
                };
                let status = terminals
                    .wait_for_exit(session_id(&session), request.terminal_id.as_str())
                    .await
                    .map_err(terminal_error)?;
                let status = terminal_exit_status(status);
                let mut response = WaitForTerminalExitResponse::new();
                response.exit_code = status.exit_code;
                response.signal = status.signal;
                raw(response)
            }),
            AgentRequest::TerminalKill(request) => Box::pin(async move {
                let Some(terminals) = self.terminals() else {
                    return raw(self.client.kill_terminal(request).await?);
                };
                terminals
                    .kill(session_id(&session), request.terminal_id.as_str())
                    .map_err(terminal_error)?;
                raw(KillTerminalResponse::new())
            }),
            AgentRequest::TerminalRelease(request) => Box::pin(async move {
                let Some(terminals) = self.terminals() else {
                    return raw(self.client.release_terminal(request).await?);
                };
                terminals
                    .release(session_id(&session), request.terminal_id.as_str())
                    .map_err(terminal_error)?;
                raw(ReleaseTerminalResponse::new())
            }),
            AgentRequest::ElicitationCreate(request) => {
                Box::pin(async move { raw(self.client.create_elicitation(request).await?) })
            }
            #[cfg(feature = "unstable-mcp-over-acp")]
            AgentRequest::McpMessage(request) => {
                Box::pin(async move { raw(self.client.mcp_message(request).await?) })
            }
            AgentRequest::Extension(call) => {
                Box::pin(async move { raw_json(self.client.ext_method(call).await?) })
            }
            other => Box::pin(std::future::ready(Err(Error::method_not_found(
                other.method(),
            )))),
        }
    }

    /// The terminal host, or `None` when the [`Client`] serves `terminal/*` itself.
    fn terminals(&self) -> Option<&TerminalHost> {
        self.state.options.terminals.as_deref()
    }

    /// An update of a kind this client did not opt into is still delivered (lenient in what
    /// we accept), and reported.
    fn check_update(&self, update: &Arrived, notification: &IncomingNotification) {
        let Arrived::Update(update) = update else {
            return;
        };
        if !rules::update_needs_capability(&update.update) {
            return;
        }
        let caps = &self.state.options.capabilities;
        let checked = rules::session_update(&update.update, caps)
            .and_then(|()| check_unstable_update(&self.state, update));
        if let Err(breach) = checked {
            notification
                .connection()
                .report(acp_jsonrpc::Problem::PeerBrokeRule {
                    method: "session/update".to_owned(),
                    rule: breach.to_string(),
                });
        }
    }

    /// Hands an update to its session without ever waiting for room (see [`updates`]).
    /// `wire_bytes` is the size of its params on the wire.
    async fn route_update(&self, update: Arrived, wire_bytes: usize, report: impl Fn(String)) {
        match &update {
            Arrived::Update(notification) => self.client.session_update(notification).await,
            Arrived::Invalid {
                session_id, error, ..
            } => report(format!(
                "an update for session `{session_id}` does not decode ({error}); the application gets it raw"
            )),
        }
        let cost = update_cost(wire_bytes);
        let mut routes = self.state.routes.lock().unwrap();
        subagents::follow_again(&self.state, &mut routes, update.session_id());
        let routed = routes.route(update, cost);
        drop(routes);
        match routed {
            Routed::Known(shared, update, seq) => {
                // A new subagent is registered before its announcement is queued, so that
                // whoever meets the announcement finds the child.
                let announced = match &update {
                    Arrived::Update(notification) => match &notification.update {
                        SessionUpdate::SubagentUpdate(subagent) => Some((
                            subagent.session_id.clone(),
                            subagents::announce(&self.state, &shared, subagent),
                        )),
                        _ => None,
                    },
                    Arrived::Invalid { .. } => None,
                };
                // Tracked even when the queue drops it: tool call states and modes stay true.
                if let Arrived::Update(notification) = &update {
                    shared.track(&notification.update);
                }
                if !shared.updates.push(update, cost, seq) {
                    report(format!(
                        "session `{}` keeps more than its budget of updates nobody took; dropping one of {cost} bytes (the application sees UpdatesDropped)",
                        shared.id
                    ));
                }
                if let Some((child, Announced::NotFollowed(limit))) = announced {
                    report(format!(
                        "subagent `{child}` of session `{}` is not followed: {limit} subagents are followed already (the application sees SubagentNotFollowed)",
                        shared.id
                    ));
                    shared.updates.record_unfollowed(&child, limit, None, seq);
                }
            }
            Routed::Unfollowed(parent, update, seq) => {
                // The subagents of a subagent not followed are not followed either; their
                // updates are told on the same session.
                if let Arrived::Update(notification) = &update
                    && let SessionUpdate::SubagentUpdate(subagent) = &notification.update
                {
                    subagents::unfollow(&self.state, subagent.session_id.clone(), &parent);
                }
                let limit = self.state.options.max_subagents;
                parent
                    .updates
                    .record_unfollowed(update.session_id(), limit, Some(cost), seq);
            }
            Routed::Early => {}
            Routed::Dropped(reason, id) => {
                let reason = DropReason::from(reason);
                self.state.dropped.record(&id, cost, reason);
                report(format!(
                    "{} (the application sees it from AgentHandle::take_dropped_updates)",
                    DroppedUpdates::one(&id, cost, reason)
                ));
            }
        }
    }
}

/// A `session/update` that names its session but does not decode: kept raw, with `error`.
/// Fails when not even the session id can be read.
fn undecoded(params: &str, error: serde_json::Error) -> std::result::Result<Arrived, String> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Addressed {
        session_id: SessionId,
        update: Option<Box<RawValue>>,
    }
    let addressed: Addressed = serde_json::from_str(params).map_err(|_| error.to_string())?;
    let update = match addressed.update {
        Some(update) => update,
        None => RawValue::from_string(params.to_owned()).map_err(|e| e.to_string())?,
    };
    Ok(Arrived::Invalid {
        session_id: addressed.session_id,
        update,
        error: error.to_string(),
    })
}

/// A tool call update whose id or title is longer than the rules allow
/// ([`rules::tool_call_sizes`]) goes on as one that does not decode: the application gets it
/// raw, with the reason, and its id is never tracked.
fn within_sizes(update: Arrived, params: &str) -> Arrived {
    let Arrived::Update(notification) = &update else {
        return update;
    };
    let Err(breach) = rules::tool_call_sizes(&notification.update) else {
        return update;
    };
    #[derive(serde::Deserialize)]
    struct Member {
        update: Box<RawValue>,
    }
    let raw = match serde_json::from_str::<Member>(params) {
        Ok(member) => member.update,
        // It decoded once; keep the whole params rather than lose it.
        Err(_) => match RawValue::from_string(params.to_owned()) {
            Ok(raw) => raw,
            Err(_) => return update,
        },
    };
    Arrived::Invalid {
        session_id: notification.session_id.clone(),
        update: raw,
        error: breach.to_string(),
    }
}

impl<C: Client> Handler for ClientDispatch<C> {
    fn request(
        &self,
        request: IncomingRequest,
        responder: Responder,
    ) -> impl Future<Output = ()> + Send {
        let dispatch = self.clone();
        async move {
            let mut responder = responder;
            let result = match AgentRequest::decode(request.method(), request.raw_params()) {
                Ok(call) => dispatch
                    .handle(call, &mut responder)
                    .await
                    .map_err(|e| e.to_response()),
                Err(error) => Err(rules::decode_error(error)),
            };
            match result {
                Ok(reply) => reply(responder),
                Err(error) => responder.respond_error(error),
            }
        }
    }

    fn notification(&self, notification: IncomingNotification) -> impl Future<Output = ()> + Send {
        let dispatch = self.clone();
        async move {
            if notification.method() == "session/update" {
                // The hot path of a streaming turn: decoded straight into a box, so that the
                // large value is not moved through every layer on its way to its session, and
                // text chunks, nearly all of a turn's updates, without serde's visitors.
                let params = notification.raw_params().map_or("null", |raw| raw.get());
                let update = match text_chunk::decode(params) {
                    // A text chunk has no tool call to size and needs no capability: the
                    // checks below would pass it (about 100 instructions per update).
                    Some(chunk) => {
                        debug_assert!(
                            !rules::update_needs_capability(&chunk.update)
                                && rules::tool_call_sizes(&chunk.update).is_ok()
                        );
                        Arrived::Update(chunk)
                    }
                    None => {
                        let update = match serde_json::from_str::<Box<SessionNotification>>(params)
                        {
                            Ok(update) => Arrived::Update(update),
                            Err(error) => match undecoded(params, error) {
                                Ok(invalid) => invalid,
                                // Not even a session to give it to.
                                Err(error) => {
                                    return notification.report_unhandled(format_args!(
                                        "invalid session/update: {error}"
                                    ));
                                }
                            },
                        };
                        let update = within_sizes(update, params);
                        dispatch.check_update(&update, &notification);
                        update
                    }
                };
                dispatch
                    .route_update(update, params.len(), |problem| {
                        notification.report_unhandled(problem)
                    })
                    .await;
                return;
            }
            match AgentNotification::decode(notification.method(), notification.raw_params()) {
                Ok(AgentNotification::SessionUpdate(update)) => {
                    let wire_bytes = notification.raw_params().map_or(0, |raw| raw.get().len());
                    dispatch
                        .route_update(Arrived::Update(Box::new(update)), wire_bytes, |problem| {
                            notification.report_unhandled(problem)
                        })
                        .await
                }
                Ok(AgentNotification::CancelRequest(_)) => {}
                Ok(AgentNotification::ElicitationComplete(complete)) => {
                    dispatch.client.elicitation_complete(complete).await
                }
                #[cfg(feature = "unstable-auth-status")]
                Ok(AgentNotification::AuthStatusUpdate(update)) => {
                    dispatch.client.auth_status_update(update).await
                }
                Ok(AgentNotification::Extension(call)) => {
                    dispatch.client.ext_notification(call).await
                }
                Ok(other) => notification
                    .report_unhandled(format_args!("no handler for `{}`", other.method())),
                Err(error) => notification.report_unhandled(error),
            }
        }
    }
}

/// The unstable part of the check of an arriving update (see
/// [`rules::unstable::session_update`] and [`rules::unstable::cursor_update`]), against what
/// the session already holds.
fn check_unstable_update(
    state: &ClientState,
    notification: &SessionNotification,
) -> Result<(), Breach> {
    if !rules::unstable::update_needs_capability(&notification.update) {
        return Ok(());
    }
    let agent = state
        .agent
        .lock()
        .unwrap()
        .as_ref()
        .map(|answer| answer.agent_capabilities.prompt_capabilities.clone())
        .unwrap_or_default();
    rules::unstable::session_update(&notification.update, &state.options.capabilities, &agent)?;
    #[cfg(feature = "unstable-session-cursors")]
    if let SessionUpdate::CursorUpdate(update) = &notification.update {
        let Some(session) = state
            .routes
            .lock()
            .unwrap()
            .get(&notification.session_id)
            .cloned()
        else {
            // Not opened yet: what it knows of the cursor arrives with it.
            return Ok(());
        };
        let cursors = session.unstable.cursors.lock().unwrap();
        let known = cursors.get(&update.cursor_id).map(|c| &c.anchor);
        rules::unstable::cursor_update(known, update)?;
        if cursors.full_for(update) {
            return Err(Breach::Invalid(format!(
                "session `{}` announced more cursors than the {CURSOR_BUDGET} bytes kept; cursor `{}` is not kept",
                notification.session_id, update.cursor_id
            )));
        }
    }
    Ok(())
}
