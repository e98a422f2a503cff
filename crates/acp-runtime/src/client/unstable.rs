//! The client's calls of the protocol's unstable methods, each behind its cargo feature (see
//! the crate docs' table). Every call is checked against the agent's capabilities first
//! ([`AgentHandle::request`](super::AgentHandle::request)): one the agent did not advertise fails with
//! [`Error::NotAdvertised`](crate::Error::NotAdvertised) and sends nothing.

#[cfg(feature = "unstable-session-fork")]
use std::path::Path;

use acp_types::*;

#[cfg(feature = "unstable-session-fork")]
use super::session::Opened;
#[cfg(any(
    feature = "unstable-session-fork",
    feature = "unstable-session-archive",
    feature = "unstable-session-status",
    feature = "unstable-session-title",
    feature = "unstable-session-cursors",
    feature = "unstable-prompt-suggestions",
))]
use super::session::Session;
#[cfg(feature = "unstable-session-cursors")]
use super::unstable_state::SessionCursor;
#[cfg(any(
    feature = "unstable-session-options",
    all(
        feature = "unstable-session-cursors",
        feature = "unstable-session-fork"
    )
))]
use crate::rules;
// Every feature but the update-only ones (cursors, prompt suggestions) adds calls.
#[cfg(any(
    feature = "unstable-session-fork",
    feature = "unstable-session-archive",
    feature = "unstable-session-status",
    feature = "unstable-session-title",
    feature = "unstable-providers",
    feature = "unstable-auth-status",
    feature = "unstable-mcp-over-acp",
    feature = "unstable-session-options",
))]
use {super::handle::AgentHandle, crate::error::Result};

#[cfg(feature = "unstable-session-fork")]
impl AgentHandle {
    /// Forks a session (`session/fork`, needs `sessionCapabilities.fork`): the agent starts
    /// a new session from the context of `request.session_id`. The answer opens a
    /// [`Session`] that streams and prompts like one from `session/new`.
    pub async fn fork_session(&self, request: ForkSessionRequest) -> Result<Session> {
        self.check_session_setup(&request)?;
        #[cfg(feature = "unstable-session-cursors")]
        self.check_fork_cursor(&request)?;
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

#[cfg(feature = "unstable-session-options")]
impl AgentHandle {
    /// The modes and config options a new session in `cwd` (absolute) would start with
    /// (`session/options`, needs `sessionCapabilities.options`), without opening one: the
    /// pickers to show before the first prompt. Set the chosen values on the setup request
    /// with `configOptions` ([`new_session_with`](Self::new_session_with)).
    ///
    /// ```no_run
    /// # async fn example(agent: acp_runtime::client::AgentHandle) -> acp_runtime::Result<()> {
    /// let options = agent.session_options("/home/me/project").await?;
    /// for option in options.config_options.unwrap_or_default() {
    ///     println!("{}: {:?}", option.name, option.kind);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn session_options(
        &self,
        cwd: impl AsRef<std::path::Path>,
    ) -> Result<SessionOptionsResponse> {
        let cwd = cwd.as_ref().to_string_lossy().into_owned();
        self.session_options_with(SessionOptionsRequest::new(cwd))
            .await
    }

    /// `session/options` from a full request: with `additionalDirectories`, or with a
    /// `sessionId` for what loading or resuming that session would answer (only to an agent
    /// that advertises `loadSession` or `sessionCapabilities.resume`, else refused locally).
    /// An answer that offers what this client cannot take is still returned, and reported.
    pub async fn session_options_with(
        &self,
        request: SessionOptionsRequest,
    ) -> Result<SessionOptionsResponse> {
        let caps = self.initialized("session/options")?.agent_capabilities;
        rules::agent_method("session/options", &caps).map_err(rules::Breach::refused)?;
        rules::unstable::session_options(&request, &caps).map_err(rules::Breach::refused)?;
        let response: SessionOptionsResponse = self.request(&request).await?;
        self.check_offered("session/options", response.config_options.as_deref());
        Ok(response)
    }

    /// A setup request's `configOptions`: only to an agent that advertises
    /// `sessionCapabilities.options`, booleans only when this client advertises
    /// `session.configOptions.boolean`, each id once.
    pub(super) fn check_initial_options(
        &self,
        options: Option<&[InitialSessionConfigOption]>,
    ) -> Result<()> {
        if options.is_none_or(<[_]>::is_empty) {
            return Ok(());
        }
        let caps = self.initialized("session/new")?.agent_capabilities;
        rules::unstable::initial_config_options(options, &caps, &self.state.options.capabilities)
            .map_err(rules::Breach::refused)
    }
}

#[cfg(feature = "unstable-session-cursors")]
impl Session {
    /// The cursors the agent announced in this session (feature `unstable-session-cursors`;
    /// the client must advertise `session.cursors`), in the order announced, with their
    /// anchors and what they offer now. A cursor's anchor is the one its first update set.
    pub fn cursors(&self) -> Vec<SessionCursor> {
        self.shared.unstable.cursors.lock().unwrap().all()
    }

    /// One cursor of this session, if the agent announced it.
    pub fn cursor(&self, id: &CursorId) -> Option<SessionCursor> {
        self.shared
            .unstable
            .cursors
            .lock()
            .unwrap()
            .get(id)
            .cloned()
    }
}

#[cfg(all(
    feature = "unstable-session-cursors",
    feature = "unstable-session-fork"
))]
impl Session {
    /// Forks this session at one of its cursors (`session/fork` with `cursorId`): the new
    /// session's history is this one's before the cursor. The cursor must be one the agent
    /// announced here and that offers `capabilities.fork` now
    /// ([`SessionCursor::can_fork`]); any other is refused locally with
    /// [`Error::Invalid`](crate::Error::Invalid) and nothing is sent.
    pub async fn fork_at(&self, cursor: impl Into<CursorId>) -> Result<Session> {
        let cwd = path_string(self.cwd());
        let request = ForkSessionRequest::new(self.id().clone(), cwd).with_cursor_id(cursor);
        self.agent.fork_session(request).await
    }
}

#[cfg(all(
    feature = "unstable-session-cursors",
    feature = "unstable-session-fork"
))]
impl AgentHandle {
    /// A fork at a cursor names one the source session, open here, announced as forkable.
    fn check_fork_cursor(&self, request: &ForkSessionRequest) -> Result<()> {
        let Some(cursor) = &request.cursor_id else {
            return Ok(());
        };
        let session = self
            .state
            .routes
            .lock()
            .unwrap()
            .get(&request.session_id)
            .cloned();
        let forkable = session.and_then(|session| {
            let cursors = session.unstable.cursors.lock().unwrap();
            cursors.get(cursor).map(SessionCursor::can_fork)
        });
        rules::unstable::fork_cursor(&request.session_id, cursor, forkable)
            .map_err(rules::Breach::refused)
    }
}

#[cfg(feature = "unstable-prompt-suggestions")]
impl Session {
    /// The prompts the agent suggests the user send next, most likely first (feature
    /// `unstable-prompt-suggestions`; the client must advertise `session.promptSuggestions`).
    /// Each `prompt_suggestions_update` replaces the list; a session starts with none. A
    /// suggestion's content can be sent as it is with [`Session::prompt`].
    pub fn prompt_suggestions(&self) -> Vec<PromptSuggestion> {
        self.shared
            .unstable
            .prompt_suggestions
            .lock()
            .unwrap()
            .clone()
    }
}
