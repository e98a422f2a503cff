//! What an agent's connection remembers: how `initialize` went, and the registry of the
//! sessions it serves (directory, MCP servers, system prompt, modes, config options, plans, the
//! running turn), with the slots that count sessions being opened against the connection's
//! limits.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use acp_jsonrpc::ConnectionHandle;
use acp_types::*;

use super::gate::InitState;
use super::options::AgentOptions;
use crate::error::{Error, Result};
use crate::rules::{self, SessionSetup};
use crate::session_map::SessionMap;
use acp_jsonrpc::Latch;

pub(super) struct AgentState {
    pub(super) rpc: std::sync::OnceLock<ConnectionHandle>,
    pub(super) options: AgentOptions,
    pub(super) init: Mutex<InitState<Box<Negotiated>>>,
    pub(super) sessions: Mutex<SessionMap<SessionEntry>>,
    /// Sessions being opened (their request is with the agent), counted against the limits
    /// until they are registered: see [`AgentState::reserve`].
    opening: Mutex<Opening>,
    /// The models offered for each session (feature `unstable-models`).
    #[cfg(feature = "unstable-models")]
    /// Kept beside the registry: `new_session` offers them before its session is registered.
    pub(super) models: Mutex<SessionMap<acp_types::models::SessionModelState>>,
}

pub(super) struct Negotiated {
    pub(super) client_capabilities: ClientCapabilities,
    pub(super) agent_capabilities: AgentCapabilities,
    pub(super) protocol_version: ProtocolVersion,
}

/// A cursor the agent announced with `cursor_update`: where it is, and whether the client may
/// fork at it now.
#[cfg(feature = "unstable-session-cursors")]
#[derive(Clone, Debug)]
pub(super) struct AnnouncedCursor {
    pub(super) anchor: CursorAnchor,
    pub(super) fork: bool,
}

/// A session as the agent's connection knows it.
#[derive(Clone)]
pub(super) struct SessionEntry {
    pub(super) cwd: PathBuf,
    pub(super) additional_directories: Vec<PathBuf>,
    pub(super) mcp_servers: Vec<McpServer>,
    pub(super) modes: Option<SessionModeState>,
    pub(super) config_options: Option<Vec<SessionConfigOption>>,
    /// The client's system prompt for the session, as checked against what was advertised.
    pub(super) system_prompt: Option<SystemPrompt>,
    /// The item plans sent so far, by id in order of first appearance: what
    /// `SessionClient::set_plan` merges into the old `plan` update for a client without
    /// `plan` (see `plan.rs`).
    pub(super) plans: Vec<(PlanId, Vec<PlanEntry>)>,
    /// The cancellation signal of the running turn.
    pub(super) turn: Option<Latch>,
    /// What the entry keeps, in bytes, against [`AgentOptions::with_session_budget`].
    cost: usize,
    /// The cursors the agent announced for the session (feature `unstable-session-cursors`).
    #[cfg(feature = "unstable-session-cursors")]
    pub(super) cursors: std::collections::HashMap<CursorId, AnnouncedCursor>,
}

/// What an entry costs beside its directories and servers: the map's entry, the id, the
/// modes and options the agent advertised (its own, so counted at a flat rate).
const ENTRY_OVERHEAD: usize = 512;

#[derive(Default)]
struct Opening {
    sessions: usize,
    bytes: usize,
    /// What the sessions (kept and being opened) hold of the shared session budget
    /// ([`AgentOptions::with_shared_session_budget`]): taken as they are reserved, given back
    /// as they are forgotten or fail to open, and when the connection ends.
    charged: usize,
}

/// A session being opened, counted against the connection's limits until it drops (after
/// the session was registered, or when opening it failed).
pub(super) struct SessionSlot {
    state: Option<(Arc<AgentState>, usize)>,
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        if let Some((state, bytes)) = self.state.take() {
            let sessions = state.sessions.lock().unwrap();
            let mut opening = state.opening.lock().unwrap();
            opening.sessions -= 1;
            opening.bytes -= bytes;
            // A session that failed to open gives back its part of the shared budget.
            state.give_back_unkept(&sessions, &mut opening);
        }
    }
}

impl Drop for AgentState {
    fn drop(&mut self) {
        // The connection is gone: its sessions give back their part of the shared budget.
        let opening = self.opening.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = &self.options.shared_session_budget
            && opening.charged != 0
        {
            shared.give_back(opening.charged);
        }
    }
}

impl SessionEntry {
    /// The entry for a session set up by `request`, costing what it keeps
    /// ([`SessionSetup::kept_bytes`]) and its own overhead.
    pub(super) fn new(
        request: &impl SessionSetup<
            Directory = String,
            McpServer = McpServer,
            SystemPrompt = SystemPrompt,
        >,
    ) -> Self {
        SessionEntry {
            // The system prompt is kept for the session's life too (`SessionSnapshot::system_prompt`).
            cost: ENTRY_OVERHEAD + request.kept_bytes(),
            cwd: PathBuf::from(request.cwd()),
            additional_directories: request
                .additional_directories()
                .iter()
                .map(PathBuf::from)
                .collect(),
            mcp_servers: request.mcp_servers().to_vec(),
            modes: None,
            config_options: None,
            system_prompt: request.system_prompt().cloned(),
            plans: Vec::new(),
            turn: None,
            #[cfg(feature = "unstable-session-cursors")]
            cursors: std::collections::HashMap::new(),
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
            sessions: Mutex::new(SessionMap::default()),
            opening: Mutex::new(Opening::default()),
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

    /// Counts a session about to be opened with `entry` against the connection's limits
    /// ([`rules::session_room`]), or refuses it. `reopening` names the id a `load` or
    /// `resume` opens: one already open takes no more room.
    pub(super) fn reserve(
        self: &Arc<Self>,
        entry: &SessionEntry,
        reopening: Option<&SessionId>,
    ) -> Result<SessionSlot> {
        let sessions = self.sessions.lock().unwrap();
        if reopening.is_some_and(|id| sessions.contains_key(id)) {
            return Ok(SessionSlot { state: None });
        }
        let mut opening = self.opening.lock().unwrap();
        let kept = sessions.values().map(|e| e.cost).sum::<usize>() + opening.bytes;
        rules::session_room(
            (sessions.len() + opening.sessions, self.options.max_sessions),
            (kept, entry.cost, self.options.session_budget),
        )
        .map_err(|breach| breach.answer("agent"))?;
        if let Some(shared) = &self.options.shared_session_budget {
            let wanted = kept + entry.cost;
            if wanted > opening.charged {
                let more = wanted - opening.charged;
                rules::shared_session_room(shared, (more, wanted), entry.cost)
                    .map_err(|breach| breach.answer("agent"))?;
                opening.charged = wanted;
            }
        }
        opening.sessions += 1;
        opening.bytes += entry.cost;
        Ok(SessionSlot {
            state: Some((self.clone(), entry.cost)),
        })
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

    /// Gives back what the shared session budget holds for sessions no longer kept nor being
    /// opened. Called with both locks held, in the order `reserve` takes them.
    fn give_back_unkept(&self, sessions: &SessionMap<SessionEntry>, opening: &mut Opening) {
        let Some(shared) = &self.options.shared_session_budget else {
            return;
        };
        let kept = sessions.values().map(|e| e.cost).sum::<usize>() + opening.bytes;
        if opening.charged > kept {
            shared.give_back(opening.charged - kept);
            opening.charged = kept;
        }
    }

    /// Forgets a session, cancelling its running turn.
    pub(super) fn forget(&self, id: &SessionId) {
        let removed = {
            let mut sessions = self.sessions.lock().unwrap();
            let removed = sessions.remove(id);
            self.give_back_unkept(&sessions, &mut self.opening.lock().unwrap());
            removed
        };
        #[cfg(feature = "unstable-models")]
        self.models.lock().unwrap().remove(id);
        if let Some(turn) = removed.and_then(|entry| entry.turn) {
            turn.set();
        }
    }
}
