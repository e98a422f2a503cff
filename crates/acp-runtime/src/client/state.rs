//! What a client's connection remembers: the agent's `initialize` answer, the sessions and
//! their routes, how a spawned agent ended, and the session-opening calls in flight (which the
//! agent's requests for a session it has just answered for wait on).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use acp_types::*;

use super::dropped::DropReports;
use super::family::{Family, Followed};
use super::options::ClientOptions;
use super::tool_calls::ToolCalls;
use super::unstable_state::UnstableState;
use super::updates::{Routes, UpdateQueue};
use crate::process::ExitStatus;
use acp_host::fs::FsRoots;
use acp_jsonrpc::Latch;

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
    pub(super) opening: Mutex<Opening>,
    pub(super) exit: Mutex<Option<(ExitStatus, String)>>,
    /// Fired once the spawned agent's exit is recorded in `exit`.
    pub(super) exit_recorded: Latch,
    pub(super) spawned: AtomicBool,
    /// The subagents followed, and the budget their queues share.
    pub(super) subagents: Followed<SessionShared>,
    /// Updates dropped where no session stream can tell it.
    pub(super) dropped: DropReports,
}

pub(super) struct SessionShared {
    pub(super) id: SessionId,
    pub(super) roots: FsRoots,
    pub(super) cwd: PathBuf,
    pub(super) updates: UpdateQueue,
    pub(super) turn_active: AtomicBool,
    /// Fired by `cancel`; replaced at the start of each turn.
    pub(super) cancel: Mutex<Latch>,
    pub(super) tool_calls: Mutex<ToolCalls>,
    pub(super) modes: Mutex<Option<SessionModeState>>,
    pub(super) config_options: Mutex<Option<Vec<SessionConfigOption>>>,
    /// The answer that opened the session, as the agent sent it.
    pub(super) answer: Mutex<Option<Box<serde_json::value::RawValue>>>,
    /// The cursors and prompt suggestions of the unstable features.
    pub(super) unstable: UnstableState,
    /// The model set with `set_model` since the answer.
    #[cfg(feature = "unstable-models")]
    /// The model set since the answer that opened the session (`Session::set_model`).
    pub(super) current_model: Mutex<Option<acp_types::models::ModelId>>,
    /// Its parent, when it is a subagent, and its own subagents.
    pub(super) family: Family<SessionShared>,
}

impl SessionShared {
    /// The state of a session the application opens, or of a subagent (with its `family`).
    pub(super) fn new(
        options: &ClientOptions,
        id: SessionId,
        roots: FsRoots,
        cwd: PathBuf,
        updates: UpdateQueue,
        family: Family<SessionShared>,
    ) -> Arc<Self> {
        Arc::new(SessionShared {
            id,
            roots,
            cwd,
            updates,
            turn_active: AtomicBool::new(false),
            cancel: Mutex::new(Latch::new()),
            tool_calls: Mutex::new(ToolCalls::new(
                options.max_tool_calls,
                options.tool_call_budget,
            )),
            modes: Mutex::new(None),
            config_options: Mutex::new(None),
            answer: Mutex::new(None),
            unstable: Default::default(),
            #[cfg(feature = "unstable-models")]
            current_model: Mutex::new(None),
            family,
        })
    }
}

impl SessionShared {
    pub(super) fn track(&self, update: &SessionUpdate) {
        match update {
            SessionUpdate::ToolCall(call) => self
                .tool_calls
                .lock()
                .unwrap()
                .report(&call.tool_call_id, call.status.clone()),
            SessionUpdate::ToolCallUpdate(update) => self
                .tool_calls
                .lock()
                .unwrap()
                .update(&update.tool_call_id, update.status.as_ref()),
            SessionUpdate::CurrentModeUpdate(mode) => {
                if let Some(modes) = self.modes.lock().unwrap().as_mut() {
                    modes.current_mode_id = mode.current_mode_id.clone();
                }
            }
            SessionUpdate::ConfigOptionUpdate(options) => {
                *self.config_options.lock().unwrap() = Some(options.config_options.clone());
            }
            _ => self.unstable.track(update),
        }
    }
}

/// The calls that open a session by their answer (`session/new`, `session/fork`) and have not
/// registered it yet. The agent may use a session as soon as it has sent that answer, and its
/// requests can arrive in the same read, before the application's call has run again to
/// register the session: they wait for it (see [`ClientState::wait_for_session`]).
pub(super) struct Opening {
    calls: usize,
    /// Fired, and replaced, whenever one of the calls ends.
    ended: Latch,
}

impl Opening {
    pub(super) fn new() -> Self {
        Opening {
            calls: 0,
            ended: Latch::new(),
        }
    }
}

impl ClientState {
    /// Counts a session-opening call until the returned guard drops: after its session is
    /// registered, or when the call fails or is dropped.
    pub(super) fn begin_opening(self: &Arc<Self>) -> OpeningCall {
        self.opening.lock().unwrap().calls += 1;
        OpeningCall(self.clone())
    }

    /// Waits until the session `id` is registered (`true`), or until no session-opening call
    /// is left that could register it (`false`).
    pub(super) async fn wait_for_session(&self, id: &SessionId) -> bool {
        loop {
            let ended = {
                let opening = self.opening.lock().unwrap();
                if self.routes.lock().unwrap().get(id).is_some() {
                    return true;
                }
                if opening.calls == 0 {
                    return false;
                }
                opening.ended.clone()
            };
            ended.wait().await;
        }
    }
}

/// See [`ClientState::begin_opening`].
pub(super) struct OpeningCall(Arc<ClientState>);

impl Drop for OpeningCall {
    fn drop(&mut self) {
        let ended = {
            let mut opening = self.0.opening.lock().unwrap();
            opening.calls -= 1;
            std::mem::replace(&mut opening.ended, Latch::new())
        };
        ended.set();
    }
}
