//! `SessionSnapshot`: what a session was set up with and its current modes and config
//! options, copied once out of the agent's session registry and read through borrowed
//! getters.

use std::path::{Path, PathBuf};

use acp_types::{McpServer, SessionConfigOption, SessionModeId, SessionModeState, SystemPrompt};

use super::state::SessionEntry;

/// A session as the runtime knows it at one moment, from
/// [`SessionClient::snapshot`](super::SessionClient::snapshot): one copy under the registry's
/// lock, then borrowed reads, instead of a lock and a clone per getter.
///
/// ```no_run
/// # async fn handler(session: acp_runtime::agent::SessionClient) {
/// if let Some(session) = session.snapshot() {
///     let cwd = session.cwd();
///     let servers = session.mcp_servers().len();
///     println!("{} with {servers} MCP servers", cwd.display());
/// }
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct SessionSnapshot {
    cwd: PathBuf,
    additional_directories: Vec<PathBuf>,
    mcp_servers: Vec<McpServer>,
    system_prompt: Option<SystemPrompt>,
    modes: Option<SessionModeState>,
    config_options: Option<Vec<SessionConfigOption>>,
}

impl SessionSnapshot {
    pub(super) fn of(entry: &SessionEntry) -> SessionSnapshot {
        SessionSnapshot {
            cwd: entry.cwd.clone(),
            additional_directories: entry.additional_directories.clone(),
            mcp_servers: entry.mcp_servers.clone(),
            system_prompt: entry.system_prompt.clone(),
            modes: entry.modes.clone(),
            config_options: entry.config_options.clone(),
        }
    }

    /// The session's working directory, as the client set it.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The directories beside [`cwd`](Self::cwd) the session may work in.
    pub fn additional_directories(&self) -> &[PathBuf] {
        &self.additional_directories
    }

    /// The MCP servers the client asked the session to connect to.
    pub fn mcp_servers(&self) -> &[McpServer] {
        &self.mcp_servers
    }

    /// The system prompt the client gave when it created, loaded or resumed the session (or
    /// forked it), checked against what this agent advertises (see
    /// [`AgentOptions::with_system_prompt`](super::AgentOptions::with_system_prompt)): its
    /// mode is `append` or, when advertised, `override`, and its content is text. `None` when
    /// the client gave none: the agent uses its own instructions.
    pub fn system_prompt(&self) -> Option<&SystemPrompt> {
        self.system_prompt.as_ref()
    }

    /// The session's modes and the current one, as advertised and switched since.
    pub fn modes(&self) -> Option<&SessionModeState> {
        self.modes.as_ref()
    }

    /// The session's current mode.
    pub fn current_mode_id(&self) -> Option<&SessionModeId> {
        self.modes.as_ref().map(|modes| &modes.current_mode_id)
    }

    /// The session's config options with their current values, as advertised and set since.
    pub fn config_options(&self) -> Option<&[SessionConfigOption]> {
        self.config_options.as_deref()
    }
}
