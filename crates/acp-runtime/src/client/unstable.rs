//! The client's calls of the protocol's unstable methods, each behind its cargo feature (see
//! the crate docs' table). Every call is checked against the agent's capabilities first
//! ([`AgentHandle::request`](super::AgentHandle::request)): one the agent did not advertise fails with
//! [`Error::NotAdvertised`](crate::Error::NotAdvertised) and sends nothing.

#[cfg(feature = "unstable-session-fork")]
use std::path::Path;

use acp_types::*;

use super::handle::AgentHandle;
#[cfg(feature = "unstable-session-fork")]
use super::session::Opened;
#[cfg(any(
    feature = "unstable-session-fork",
    feature = "unstable-session-archive",
    feature = "unstable-session-status",
    feature = "unstable-session-title",
))]
use super::session::Session;
use crate::error::Result;

#[cfg(feature = "unstable-session-fork")]
impl AgentHandle {
    /// Forks a session (`session/fork`, needs `sessionCapabilities.fork`): the agent starts
    /// a new session from the context of `request.session_id`. The answer opens a
    /// [`Session`] that streams and prompts like one from `session/new`.
    pub async fn fork_session(&self, request: ForkSessionRequest) -> Result<Session> {
        let servers = request.mcp_servers.clone().unwrap_or_default();
        self.check_session_setup(
            &request.cwd,
            request.additional_directories.as_deref(),
            &servers,
            request.system_prompt.as_ref(),
        )?;
        let opening = self.state.begin_opening();
        let (response, answer): (ForkSessionResponse, _) =
            self.request_keeping_answer(&request).await?;
        let opened = Opened {
            method: "session/fork",
            id: response.session_id,
            modes: response.modes,
            config_options: response.config_options,
            answer,
        };
        let dirs = request.additional_directories.as_deref();
        let session = self.opened(opened, &request.cwd, dirs);
        drop(opening);
        Ok(session)
    }
}

#[cfg(feature = "unstable-session-fork")]
impl Session {
    /// Forks this session into a new one in the same directory (see
    /// [`AgentHandle::fork_session`](super::AgentHandle::fork_session)).
    pub async fn fork(&self) -> Result<Session> {
        let cwd = path_string(self.cwd());
        self.agent
            .fork_session(ForkSessionRequest::new(self.id().clone(), cwd))
            .await
    }
}

#[cfg(feature = "unstable-session-fork")]
fn path_string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(feature = "unstable-session-archive")]
impl AgentHandle {
    /// Archives a session, open here or not (`session/archive`, needs
    /// `sessionCapabilities.archive`).
    pub async fn archive_session(&self, session_id: impl Into<SessionId>) -> Result<()> {
        self.request(&ArchiveSessionRequest::new(session_id))
            .await?;
        Ok(())
    }

    /// Unarchives a session (`session/unarchive`, needs `sessionCapabilities.archive`).
    pub async fn unarchive_session(&self, session_id: impl Into<SessionId>) -> Result<()> {
        self.request(&UnarchiveSessionRequest::new(session_id))
            .await?;
        Ok(())
    }
}

#[cfg(feature = "unstable-session-archive")]
impl Session {
    /// Archives this session (see [`AgentHandle::archive_session`](super::AgentHandle::archive_session)).
    pub async fn archive(&self) -> Result<()> {
        self.agent.archive_session(self.id().clone()).await
    }

    /// Unarchives this session.
    pub async fn unarchive(&self) -> Result<()> {
        self.agent.unarchive_session(self.id().clone()).await
    }
}

#[cfg(feature = "unstable-session-status")]
impl AgentHandle {
    /// Asks where a session stands (`session/status`, needs `sessionCapabilities.status`);
    /// the agent answers without loading or changing it.
    pub async fn session_status(
        &self,
        session_id: impl Into<SessionId>,
    ) -> Result<SessionStatusResponse> {
        self.request(&SessionStatusRequest::new(session_id)).await
    }
}

#[cfg(feature = "unstable-session-status")]
impl Session {
    /// Where this session stands (see [`AgentHandle::session_status`](super::AgentHandle::session_status)).
    pub async fn status(&self) -> Result<SessionStatus> {
        Ok(self.agent.session_status(self.id().clone()).await?.status)
    }
}

#[cfg(feature = "unstable-session-title")]
impl AgentHandle {
    /// Sets a session's title (`session/set_title`, needs `sessionCapabilities.title`).
    pub async fn set_session_title(
        &self,
        session_id: impl Into<SessionId>,
        title: impl Into<String>,
    ) -> Result<()> {
        self.request(&SetSessionTitleRequest::new(session_id, title))
            .await?;
        Ok(())
    }
}

#[cfg(feature = "unstable-session-title")]
impl Session {
    /// Sets this session's title.
    pub async fn set_title(&self, title: impl Into<String>) -> Result<()> {
        self.agent.set_session_title(self.id().clone(), title).await
    }
}

#[cfg(feature = "unstable-providers")]
impl AgentHandle {
    /// Lists the LLM providers the agent can use (`providers/list`, needs `providers`).
    pub async fn list_providers(&self) -> Result<ListProvidersResponse> {
        self.request(&ListProvidersRequest::new()).await
    }

    /// Configures one LLM provider (`providers/set`, needs `providers`).
    pub async fn set_provider(&self, request: SetProviderRequest) -> Result<()> {
        self.request(&request).await?;
        Ok(())
    }

    /// Disables one LLM provider (`providers/disable`, needs `providers`).
    pub async fn disable_provider(&self, provider_id: impl Into<ProviderId>) -> Result<()> {
        self.request(&DisableProviderRequest::new(provider_id))
            .await?;
        Ok(())
    }
}

#[cfg(feature = "unstable-auth-status")]
impl AgentHandle {
    /// The agent's authentication state (`auth/status`, needs `auth.status`).
    pub async fn auth_status(&self) -> Result<AuthStatusResponse> {
        self.request(&AuthStatusRequest::new()).await
    }
}

#[cfg(feature = "unstable-mcp-over-acp")]
impl AgentHandle {
    /// Sends an MCP message to an MCP server the agent declared with the ACP transport
    /// (`mcp/message`, needs `mcpCapabilities.acp`).
    pub async fn mcp_message(&self, message: MessageMcpNotification) -> Result<()> {
        self.check_agent_method("mcp/message")?;
        self.notify(&message).await
    }
}
