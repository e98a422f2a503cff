//! What an agent's connection remembers: how `initialize` went, and the registry of the
//! sessions it serves (directory, MCP servers, modes, config options, the running turn).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use acp_jsonrpc::ConnectionHandle;
use acp_types::*;

use super::options::AgentOptions;
use crate::error::{Error, Result};
use crate::rules;
use crate::signal::Signal;

pub(super) struct AgentState {
    pub(super) rpc: std::sync::OnceLock<ConnectionHandle>,
    pub(super) options: AgentOptions,
    pub(super) init: Mutex<InitState>,
    pub(super) sessions: Mutex<HashMap<SessionId, SessionEntry>>,
    /// The models offered for each session (feature `unstable-models`).
    #[cfg(feature = "unstable-models")]
    /// Kept beside the registry: `new_session` offers them before its session is registered.
    pub(super) models: Mutex<HashMap<SessionId, acp_types::models::SessionModelState>>,
}

#[derive(Default)]
pub(super) enum InitState {
    #[default]
    NotStarted,
    Initializing(Signal),
    Ready(Box<Negotiated>),
}

pub(super) struct Negotiated {
    pub(super) client_capabilities: ClientCapabilities,
    pub(super) agent_capabilities: AgentCapabilities,
    pub(super) protocol_version: ProtocolVersion,
}

/// A session as the agent's connection knows it.
#[derive(Clone)]
pub(super) struct SessionEntry {
    pub(super) cwd: PathBuf,
    pub(super) additional_directories: Vec<PathBuf>,
    pub(super) mcp_servers: Vec<McpServer>,
    pub(super) modes: Option<SessionModeState>,
    pub(super) config_options: Option<Vec<SessionConfigOption>>,
    /// The cancellation signal of the running turn.
    pub(super) turn: Option<Signal>,
    /// The cursors the agent announced for the session (feature `unstable-session-cursors`).
    #[cfg(feature = "unstable-session-cursors")]
    pub(super) cursors: HashMap<CursorId, super::unstable::AnnouncedCursor>,
}

impl SessionEntry {
    pub(super) fn new(
        cwd: &str,
        additional_directories: Option<&[String]>,
        mcp_servers: &[McpServer],
    ) -> Self {
        SessionEntry {
            cwd: PathBuf::from(cwd),
            additional_directories: additional_directories
                .unwrap_or_default()
                .iter()
                .map(PathBuf::from)
                .collect(),
            mcp_servers: mcp_servers.to_vec(),
            modes: None,
            config_options: None,
            turn: None,
            #[cfg(feature = "unstable-session-cursors")]
            cursors: HashMap::new(),
        }
    }

    /// Records what the agent's answer to `session/new`, `load` or `resume` advertised.
    pub(super) fn advertised(
        mut self,
        modes: Option<SessionModeState>,
        config_options: Option<Vec<SessionConfigOption>>,
    ) -> Self {
        self.modes = modes;
        self.config_options = config_options;
        self
    }
}

impl AgentState {
    pub(super) fn new(options: AgentOptions) -> Self {
        AgentState {
            rpc: std::sync::OnceLock::new(),
            options,
            init: Mutex::new(InitState::NotStarted),
            sessions: Mutex::new(HashMap::new()),
            #[cfg(feature = "unstable-models")]
            models: Default::default(),
        }
    }

    pub(super) fn negotiated<T>(&self, read: impl FnOnce(&Negotiated) -> T) -> Option<T> {
        match &*self.init.lock().unwrap() {
            InitState::Ready(n) => Some(read(n)),
            _ => None,
        }
    }

    pub(super) fn register(
        &self,
        id: SessionId,
        entry: SessionEntry,
        allow_existing: bool,
    ) -> Result<()> {
        let mut sessions = self.sessions.lock().unwrap();
        if sessions.contains_key(&id) && !allow_existing {
            return Err(Error::internal(format!(
                "session id `{id}` is already in use"
            )));
        }
        sessions.insert(id, entry);
        Ok(())
    }

    /// Puts `entry` in the registry, returning what was there.
    pub(super) fn replace(&self, id: SessionId, entry: SessionEntry) -> Option<SessionEntry> {
        self.sessions.lock().unwrap().insert(id, entry)
    }

    pub(super) fn with_session<T>(
        &self,
        id: &SessionId,
        f: impl FnOnce(&mut SessionEntry) -> Result<T>,
    ) -> Result<T> {
        let mut sessions = self.sessions.lock().unwrap();
        match sessions.get_mut(id) {
            Some(entry) => f(entry),
            None => Err(rules::unknown_session(id)),
        }
    }

    /// Puts `entry` in the registry in place of the one a `session/load` or `session/resume`
    /// ran with, keeping what the runtime recorded meanwhile (the cursors a replay announced).
    pub(super) fn settle(&self, id: SessionId, entry: SessionEntry) {
        let mut sessions = self.sessions.lock().unwrap();
        #[cfg(feature = "unstable-session-cursors")]
        let entry = {
            let mut entry = entry;
            if let Some(current) = sessions.get_mut(&id) {
                entry.cursors = std::mem::take(&mut current.cursors);
            }
            entry
        };
        sessions.insert(id, entry);
    }

    /// Reads the session's entry, if the session is known.
    pub(super) fn read_session<T>(
        &self,
        id: &SessionId,
        f: impl FnOnce(&SessionEntry) -> T,
    ) -> Option<T> {
        self.sessions.lock().unwrap().get(id).map(f)
    }

    /// Forgets a session, cancelling its running turn.
    pub(super) fn forget(&self, id: &SessionId) {
        let removed = self.sessions.lock().unwrap().remove(id);
        #[cfg(feature = "unstable-models")]
        self.models.lock().unwrap().remove(id);
        if let Some(turn) = removed.and_then(|entry| entry.turn) {
            turn.fire();
        }
    }
}
