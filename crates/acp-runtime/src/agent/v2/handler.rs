//! The v2 [`Agent`] trait: what a v2 agent implements.

use std::future::Future;

use acp_types::v2::*;
use serde_json::value::RawValue;

use super::history::History;
use super::session::{Client, Session, Turn};
use super::sessions::unknown_session;
use crate::error::{Error, Result};

/// What a v2 agent implements. Only [`new_session`](Agent::new_session) and
/// [`prompt`](Agent::prompt) are required.
///
/// The runtime keeps v2's lifecycle so that the implementation does not have to: a prompt is
/// answered `{messageId}` once it is accepted, echoed as a `user_message`, framed by
/// `state_update` `running` and `idle` (with the stop reason [`prompt`](Agent::prompt)
/// returns, `cancelled` when the turn was cancelled, `error` when it failed); prompts sent
/// during a turn wait for it; retries with the same `idempotencyKey` get the first answer;
/// `session/cancel` and `session/close` cancel the turn; `session/resume` with `replayFrom`
/// replays the [`History`] the agent retains.
///
/// Every method gets the request and one context: [`&Client`](Client) for the connection,
/// [`&Session`](Session) for one session, [`Turn`] for one prompt.
pub trait Agent: Send + Sync + 'static {
    /// Answers `initialize`: this agent's info, capabilities and auth methods. The runtime
    /// sets `protocolVersion` to 2. The default advertises `session` (the baseline session
    /// methods) and nothing else.
    fn initialize(
        &self,
        request: InitializeRequest,
        client: &Client,
    ) -> impl Future<Output = Result<InitializeResponse>> + Send {
        let _ = (request, client);
        async {
            Ok(InitializeResponse::new(
                ProtocolVersion::V2,
                Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            )
            .with_capabilities(AgentCapabilities::new().with_session(SessionCapabilities::new())))
        }
    }

    /// The history this agent retains for `session/resume` with `replayFrom` (share one
    /// [`History`] between the connections that serve the agent). `None` (the default): the
    /// agent replays in [`resume_session`](Agent::resume_session) itself.
    fn history(&self) -> Option<&History> {
        None
    }

    /// Answers `auth/login` with one of the advertised auth methods.
    fn login(
        &self,
        request: LoginAuthRequest,
        client: &Client,
    ) -> impl Future<Output = Result<LoginAuthResponse>> + Send {
        let _ = (request, client);
        async { Err(Error::method_not_found("auth/login")) }
    }

    /// Answers `auth/logout`.
    fn logout(
        &self,
        request: LogoutAuthRequest,
        client: &Client,
    ) -> impl Future<Output = Result<LogoutAuthResponse>> + Send {
        let _ = (request, client);
        async { Err(Error::method_not_found("auth/logout")) }
    }

    /// Creates a session. Return a fresh id ([`new_session_id`](crate::agent::new_session_id)
    /// makes one); the runtime registers it and refuses a duplicate.
    fn new_session(
        &self,
        request: NewSessionRequest,
        client: &Client,
    ) -> impl Future<Output = Result<NewSessionResponse>> + Send;

    /// Reattaches a session. The runtime replays the retained [`History`] after this returns
    /// (when the client asked with `replayFrom` and [`history`](Agent::history) is set), then
    /// sends `replay_complete`, then the session's current `state_update` (also without
    /// replay), then the answer. The default accepts a session this connection or the history
    /// knows, and answers `-32002` for any other.
    fn resume_session(
        &self,
        request: ResumeSessionRequest,
        session: &Session,
    ) -> impl Future<Output = Result<ResumeSessionResponse>> + Send {
        let known = session.is_registered()
            || self
                .history()
                .is_some_and(|history| history.retained(&request.session_id).is_some());
        let id = request.session_id;
        async move {
            if known {
                Ok(ResumeSessionResponse::new())
            } else {
                Err(unknown_session(&id))
            }
        }
    }

    /// Answers `session/list`. The default lists the sessions of this connection (filtered by
    /// `cwd` when the request names one).
    fn list_sessions(
        &self,
        request: ListSessionsRequest,
        client: &Client,
    ) -> impl Future<Output = Result<ListSessionsResponse>> + Send {
        let sessions = client.sessions(request.cwd.as_ref());
        async move { Ok(ListSessionsResponse::new(sessions)) }
    }

    /// Runs one prompt turn. Stream output through `turn`; return why the turn stopped. When
    /// the turn was cancelled, the runtime reports `cancelled` whatever this returns; an error
    /// ends the turn with the stop reason `error`.
    fn prompt(
        &self,
        request: PromptRequest,
        turn: Turn,
    ) -> impl Future<Output = Result<IdleStateUpdateKind>> + Send;

    /// Called on `session/close` once the session's turn has ended, before the runtime
    /// forgets the session.
    fn close_session(
        &self,
        request: CloseSessionRequest,
        session: &Session,
    ) -> impl Future<Output = Result<CloseSessionResponse>> + Send {
        let _ = (request, session);
        async { Ok(CloseSessionResponse::new()) }
    }

    /// Answers `session/delete` (needs the `session.delete` capability).
    fn delete_session(
        &self,
        request: DeleteSessionRequest,
        client: &Client,
    ) -> impl Future<Output = Result<DeleteSessionResponse>> + Send {
        let _ = (request, client);
        async { Err(Error::method_not_found("session/delete")) }
    }

    /// Answers `session/set_config_option`. The default refuses: the session offers none.
    fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        session: &Session,
    ) -> impl Future<Output = Result<SetSessionConfigOptionResponse>> + Send {
        let _ = session;
        async move {
            Err(Error::invalid_params(format!(
                "session `{}` has no config option `{}`",
                request.session_id, request.config_id
            )))
        }
    }

    /// Answers `tool_call/cancel`. The default: `-32602`, the tool call cannot be cancelled.
    fn cancel_tool_call(
        &self,
        request: CancelToolCallRequest,
        session: &Session,
    ) -> impl Future<Output = Result<CancelToolCallResponse>> + Send {
        let _ = session;
        async move {
            Err(Error::invalid_params(format!(
                "tool call `{}` is unknown or cannot be cancelled",
                request.tool_call_id
            )))
        }
    }

    /// Answers `terminal/cancel`. The default: `-32602`, the terminal cannot be cancelled.
    fn cancel_terminal(
        &self,
        request: CancelTerminalRequest,
        session: &Session,
    ) -> impl Future<Output = Result<CancelTerminalResponse>> + Send {
        let _ = session;
        async move {
            Err(Error::invalid_params(format!(
                "terminal `{}` is unknown or cannot be cancelled",
                request.terminal_id
            )))
        }
    }

    /// Answers an extension method (its name starts with `_`).
    fn ext_method(
        &self,
        method: &str,
        params: Option<&RawValue>,
        client: &Client,
    ) -> impl Future<Output = Result<Box<RawValue>>> + Send {
        let _ = (params, client);
        let method = method.to_owned();
        async move { Err(Error::method_not_found(&method)) }
    }
}
