//! The [`Agent`] trait: what an agent implements.

use std::future::Future;

use acp_types::*;
use serde_json::value::RawValue;

use super::session::{ClientHandle, SessionClient, Turn};
use crate::error::{Error, Result};
use crate::rules::apply_config_value;

/// What an agent implements. Only [`new_session`](Agent::new_session) and
/// [`prompt`](Agent::prompt) are required; the optional methods answer `-32601` unless the
/// agent both implements them and advertises the capability they belong to.
///
/// Every method gets the request and one context, by one rule:
///
/// | the request concerns | context | methods |
/// |---|---|---|
/// | the connection | [`&ClientHandle`](ClientHandle) | `initialize`, `authenticate`, `logout`, `new_session`, `list_sessions`, `ext_method`, `ext_notification` |
/// | one session | [`SessionClient`] | `load_session`, `resume_session`, `close_session`, `delete_session`, `set_mode`, `set_config_option`, `set_model` |
/// | one prompt turn | [`Turn`] (a [`SessionClient`] with the turn's cancellation) | `prompt` |
///
/// A [`SessionClient`] streams updates and calls the client for its session, and shows what
/// the runtime knows of it in one [`snapshot`](SessionClient::snapshot): cwd, additional
/// directories, MCP servers, system prompt, modes and config options.
pub trait Agent: Send + Sync + 'static {
    /// Answers `initialize`: the capabilities, auth methods and info of this agent. The runtime
    /// fills in the negotiated `protocolVersion` afterwards (and `agentInfo` from
    /// [`AgentOptions::with_info`](super::AgentOptions::with_info) when this leaves it out)
    /// and enforces what is advertised.
    fn initialize(
        &self,
        request: InitializeRequest,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<InitializeResponse>> + Send {
        let _ = (request, client);
        async { Ok(InitializeResponse::new(ProtocolVersion::LATEST)) }
    }

    /// Answers `authenticate` with one of the advertised auth methods.
    fn authenticate(
        &self,
        request: AuthenticateRequest,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<AuthenticateResponse>> + Send {
        let _ = client;
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
        client: &ClientHandle,
    ) -> impl Future<Output = Result<LogoutResponse>> + Send {
        let _ = (request, client);
        async { Err(Error::method_not_found("logout")) }
    }

    /// Creates a session. Return a fresh id ([`new_session_id`](super::new_session_id) makes
    /// one); the runtime registers it and refuses a duplicate.
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
    /// this connection ([`ClientHandle::sessions`]).
    fn list_sessions(
        &self,
        request: ListSessionsRequest,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<ListSessionsResponse>> + Send {
        let known = client.sessions();
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
        session: SessionClient,
    ) -> impl Future<Output = Result<CloseSessionResponse>> + Send {
        let _ = (request, session);
        async { Ok(CloseSessionResponse::new()) }
    }

    /// Deletes a stored session (needs `sessionCapabilities.delete`). The runtime forgets it
    /// afterwards, cancelling its running turn.
    fn delete_session(
        &self,
        request: DeleteSessionRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<DeleteSessionResponse>> + Send {
        let _ = (request, session);
        async { Ok(DeleteSessionResponse::new()) }
    }

    /// Runs one prompt turn: stream updates through `turn`, then return the stop reason.
    /// Watch [`Turn::cancelled`]: once the turn is cancelled (`session/cancel`, or a permission
    /// request answered `cancelled`) its calls to the client resolve as cancelled and the
    /// runtime answers `cancelled` whatever this returns (see [`Turn`]).
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
    /// The runtime records the answered state as the session's.
    fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<SetSessionConfigOptionResponse>> + Send {
        // Only the options, not a whole snapshot.
        let current = session
            .client
            .state
            .read_session(&session.id, |s| s.config_options.clone())
            .flatten()
            .unwrap_or_default();
        async move {
            Ok(SetSessionConfigOptionResponse::new(apply_config_value(
                current, &request,
            )))
        }
    }

    /// Forks a session (feature `unstable-session-fork`, needs
    /// `sessionCapabilities.fork`): a new session from the context of `session`, which the
    /// runtime registers like one from `session/new` and which then prompts like any other.
    #[cfg(feature = "unstable-session-fork")]
    fn fork_session(
        &self,
        request: ForkSessionRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<ForkSessionResponse>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found("session/fork")) }
    }

    /// Archives a session (feature `unstable-session-archive`, needs
    /// `sessionCapabilities.archive`): hidden from default listings, kept for later.
    #[cfg(feature = "unstable-session-archive")]
    fn archive_session(
        &self,
        request: ArchiveSessionRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<ArchiveSessionResponse>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found("session/archive")) }
    }

    /// Unarchives a session (feature `unstable-session-archive`, needs
    /// `sessionCapabilities.archive`).
    #[cfg(feature = "unstable-session-archive")]
    fn unarchive_session(
        &self,
        request: UnarchiveSessionRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<UnarchiveSessionResponse>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found("session/unarchive")) }
    }

    /// Answers `session/status` (feature `unstable-session-status`, needs
    /// `sessionCapabilities.status`). Must have no side effect: the session may not be loaded
    /// on this connection at all.
    #[cfg(feature = "unstable-session-status")]
    fn session_status(
        &self,
        request: SessionStatusRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<SessionStatusResponse>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found("session/status")) }
    }

    /// Sets a session's title (feature `unstable-session-title`, needs
    /// `sessionCapabilities.title`).
    #[cfg(feature = "unstable-session-title")]
    fn set_session_title(
        &self,
        request: SetSessionTitleRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<SetSessionTitleResponse>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found("session/set_title")) }
    }

    /// Lists the LLM providers the agent can use (feature `unstable-providers`, needs
    /// `providers`).
    #[cfg(feature = "unstable-providers")]
    fn list_providers(
        &self,
        request: ListProvidersRequest,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<ListProvidersResponse>> + Send {
        let _ = (request, client);
        async { Err(Error::method_not_found("providers/list")) }
    }

    /// Configures one LLM provider (feature `unstable-providers`, needs `providers`).
    #[cfg(feature = "unstable-providers")]
    fn set_provider(
        &self,
        request: SetProviderRequest,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<SetProviderResponse>> + Send {
        let _ = (request, client);
        async { Err(Error::method_not_found("providers/set")) }
    }

    /// Disables one LLM provider (feature `unstable-providers`, needs `providers`).
    #[cfg(feature = "unstable-providers")]
    fn disable_provider(
        &self,
        request: DisableProviderRequest,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<DisableProviderResponse>> + Send {
        let _ = (request, client);
        async { Err(Error::method_not_found("providers/disable")) }
    }

    /// Answers `auth/status` (feature `unstable-auth-status`, needs `auth.status`): the
    /// current authentication state, without changing it. Never answer `-32000` here.
    #[cfg(feature = "unstable-auth-status")]
    fn auth_status(
        &self,
        request: AuthStatusRequest,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<AuthStatusResponse>> + Send {
        let _ = (request, client);
        async { Err(Error::method_not_found("auth/status")) }
    }

    /// Handles an `mcp/message` notification from the client to an MCP server this agent
    /// declared with the ACP transport (feature `unstable-mcp-over-acp`, needs
    /// `mcpCapabilities.acp`). Like every notification handler, it must not wait for the client.
    #[cfg(feature = "unstable-mcp-over-acp")]
    fn mcp_notification(
        &self,
        notification: MessageMcpNotification,
        client: &ClientHandle,
    ) -> impl Future<Output = ()> + Send {
        let _ = (notification, client);
        async {}
    }

    /// Answers `session/options` (feature `unstable-session-options`, needs
    /// `sessionCapabilities.options`): the modes and config options a session would start
    /// with in `request.cwd`, or, with `sessionId`, what `session/load` or `session/resume`
    /// of that session would answer (a session this agent does not know: `-32002`, see
    /// [`Error::resource_not_found`]).
    ///
    /// The runtime has checked that the directories are absolute and that a `sessionId` comes
    /// only when this agent advertises `loadSession` or `sessionCapabilities.resume`, and
    /// checks the answer like a session's (a boolean option needs the client's
    /// `session.configOptions.boolean`). It registers no session, and the hook gets no
    /// session handle: the method MUST NOT create, resume or change a session, nor send
    /// `session/update`.
    ///
    /// Advertising `sessionCapabilities.options` also says that setup requests (`session/new`,
    /// `load`, `resume`, `fork`) may carry `configOptions`, initial values applied in order as
    /// if set with `session/set_config_option`. The runtime refuses only a `configId` named
    /// twice (`-32602`); an unknown id, a value of the wrong type or one not allowed reaches
    /// the hook, which MUST ignore it, not refuse the request.
    #[cfg(feature = "unstable-session-options")]
    fn session_options(
        &self,
        request: SessionOptionsRequest,
        client: &ClientHandle,
    ) -> impl Future<Output = Result<SessionOptionsResponse>> + Send {
        let _ = (request, client);
        async { Err(Error::method_not_found("session/options")) }
    }

    /// Switches the session's model (feature `unstable-models`; the seed-era
    /// `session/set_model`). Reached only for a model the session offered (see
    /// [`ClientHandle::offer_models`]); the runtime records it as current when this succeeds.
    #[cfg(feature = "unstable-models")]
    fn set_model(
        &self,
        request: acp_types::models::SetSessionModelRequest,
        session: SessionClient,
    ) -> impl Future<Output = Result<acp_types::models::SetSessionModelResponse>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found("session/set_model")) }
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
    fn ext_notification(
        &self,
        call: ExtensionCall,
        client: &ClientHandle,
    ) -> impl Future<Output = ()> + Send {
        let _ = (call, client);
        async {}
    }
}
