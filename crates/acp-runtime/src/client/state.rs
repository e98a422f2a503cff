//! What a client's connection remembers: the agent's `initialize` answer, the sessions and
//! their routes, and how a spawned agent ended.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use acp_types::*;

use super::options::ClientOptions;
use super::updates::{Routes, UpdateQueue};
use crate::host::FsRoots;
use crate::signal::Signal;

/// Releases every terminal of every session when the connection's driver finishes or is
/// dropped, and ends the sessions' update streams.
pub(super) struct ReleaseTerminalsWhenDone(pub(super) Arc<ClientState>);

impl Drop for ReleaseTerminalsWhenDone {
    fn drop(&mut self) {
        let sessions: Vec<Arc<SessionShared>> = self
            .0
            .routes
            .lock()
            .unwrap()
            .known()
            .map(|(_, session)| session.clone())
            .collect();
        for session in sessions {
            session.updates.close();
            if let Some(terminals) = &self.0.options.terminals {
                terminals.release_session(session.id.as_str());
            }
        }
    }
}

pub(super) struct ClientState {
    pub(super) options: ClientOptions,
    pub(super) agent: Mutex<Option<InitializeResponse>>,
    pub(super) routes: Mutex<Routes<Arc<SessionShared>>>,
    pub(super) exit: Mutex<Option<(String, String)>>,
    /// Fired once the spawned agent's exit is recorded in `exit`.
    pub(super) exit_recorded: Signal,
    pub(super) spawned: AtomicBool,
}

pub(super) struct SessionShared {
    pub(super) id: SessionId,
    pub(super) roots: FsRoots,
    pub(super) cwd: PathBuf,
    pub(super) updates: UpdateQueue,
    pub(super) turn_active: AtomicBool,
    /// Fired by `cancel`; replaced at the start of each turn.
    pub(super) cancel: Mutex<Signal>,
    pub(super) tool_calls: Mutex<HashMap<ToolCallId, ToolCallState>>,
    pub(super) modes: Mutex<Option<SessionModeState>>,
    pub(super) config_options: Mutex<Option<Vec<SessionConfigOption>>>,
    /// The answer that opened the session, as the agent sent it.
    pub(super) answer: Mutex<Option<Box<serde_json::value::RawValue>>>,
    /// The model set with `set_model` since the answer.
    #[cfg(feature = "unstable-models")]
    /// The model set since the answer that opened the session (`Session::set_model`).
    pub(super) current_model: Mutex<Option<acp_types::models::ModelId>>,
}

/// Where a tool call stands, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolCallState {
    /// Reported with the given status (or none yet).
    Reported(Option<ToolCallStatus>),
    /// Still unfinished when the client cancelled the turn.
    Cancelled,
}

impl ToolCallState {
    pub(super) fn is_finished(&self) -> bool {
        matches!(
            self,
            ToolCallState::Cancelled
                | ToolCallState::Reported(Some(ToolCallStatus::Completed | ToolCallStatus::Failed))
        )
    }
}

impl SessionShared {
    pub(super) fn track(&self, update: &SessionUpdate) {
        match update {
            SessionUpdate::ToolCall(call) => {
                let mut calls = self.tool_calls.lock().unwrap();
                calls.insert(
                    call.tool_call_id.clone(),
                    ToolCallState::Reported(call.status.clone()),
                );
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let mut calls = self.tool_calls.lock().unwrap();
                let state = calls
                    .entry(update.tool_call_id.clone())
                    .or_insert(ToolCallState::Reported(None));
                if let Some(status) = &update.status {
                    *state = ToolCallState::Reported(Some(status.clone()));
                }
            }
            SessionUpdate::CurrentModeUpdate(mode) => {
                if let Some(modes) = self.modes.lock().unwrap().as_mut() {
                    modes.current_mode_id = mode.current_mode_id.clone();
                }
            }
            SessionUpdate::ConfigOptionUpdate(options) => {
                *self.config_options.lock().unwrap() = Some(options.config_options.clone());
            }
            _ => {}
        }
    }
}
