//! What a client keeps of schema 1.20's unstable updates, per session: the cursors the agent
//! announced with their anchors (`unstable-session-cursors`) and the current prompt
//! suggestions (`unstable-prompt-suggestions`). `dispatch.rs` checks those updates on arrival
//! against it (reported, never refused: the update is still delivered).

#[cfg(feature = "unstable-session-cursors")]
use std::collections::HashMap;

use acp_types::*;

/// The bytes of cursor state one session keeps at most (ids and anchors as JSON, plus a
/// fixed cost per cursor); a cursor announced beyond it is reported and not kept
/// (docs/limits.md).
#[cfg(feature = "unstable-session-cursors")]
pub const CURSOR_BUDGET: usize = 1 << 20;

/// The fixed cost of one cursor in [`CURSOR_BUDGET`].
#[cfg(feature = "unstable-session-cursors")]
const CURSOR_OVERHEAD: usize = 64;

/// A session cursor the agent announced (feature `unstable-session-cursors`): a position in
/// the session's timeline, next to an entity the client holds, and what it offers.
#[cfg(feature = "unstable-session-cursors")]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SessionCursor {
    /// The agent's id of the cursor, unique within the session.
    pub id: CursorId,
    /// Where the cursor is. Set by the cursor's first update and never changed: a later
    /// update that names another anchor is reported and this one kept.
    pub anchor: CursorAnchor,
    /// What the cursor offers now (`None`: nothing).
    pub capabilities: Option<CursorCapabilities>,
}

#[cfg(feature = "unstable-session-cursors")]
impl SessionCursor {
    /// Whether the session can be forked at this cursor now (`Session::fork_at`, with feature
    /// `unstable-session-fork`).
    pub fn can_fork(&self) -> bool {
        self.capabilities
            .as_ref()
            .is_some_and(|capabilities| capabilities.fork.is_some())
    }
}

/// The cursors of one session, in the order they were announced.
#[cfg(feature = "unstable-session-cursors")]
#[derive(Default)]
pub(super) struct Cursors {
    list: Vec<SessionCursor>,
    index: HashMap<CursorId, usize>,
    bytes: usize,
}

#[cfg(feature = "unstable-session-cursors")]
impl Cursors {
    pub(super) fn get(&self, id: &CursorId) -> Option<&SessionCursor> {
        self.index.get(id).map(|&i| &self.list[i])
    }

    pub(super) fn all(&self) -> Vec<SessionCursor> {
        self.list.clone()
    }

    /// Applies an update leniently: the first anchor is kept whatever later updates say, and
    /// a first update without one (or beyond the budget) is not kept. Whether the update
    /// broke the rule is [`check_update`]'s to report.
    fn apply(&mut self, update: &CursorUpdate) {
        if let Some(&i) = self.index.get(&update.cursor_id) {
            update
                .capabilities
                .clone()
                .apply_to(&mut self.list[i].capabilities);
            return;
        }
        let Some(anchor) = &update.anchor else {
            return;
        };
        let cost = cursor_cost(&update.cursor_id, anchor);
        if self.bytes + cost > CURSOR_BUDGET {
            return;
        }
        self.bytes += cost;
        let mut capabilities = None;
        update.capabilities.clone().apply_to(&mut capabilities);
        self.index.insert(update.cursor_id.clone(), self.list.len());
        self.list.push(SessionCursor {
            id: update.cursor_id.clone(),
            anchor: anchor.clone(),
            capabilities,
        });
    }

    pub(super) fn full_for(&self, update: &CursorUpdate) -> bool {
        match &update.anchor {
            Some(anchor) if !self.index.contains_key(&update.cursor_id) => {
                self.bytes + cursor_cost(&update.cursor_id, anchor) > CURSOR_BUDGET
            }
            _ => false,
        }
    }
}

#[cfg(feature = "unstable-session-cursors")]
fn cursor_cost(id: &CursorId, anchor: &CursorAnchor) -> usize {
    let anchor = serde_json::to_string(anchor).map_or(0, |json| json.len());
    CURSOR_OVERHEAD + id.as_str().len() + anchor
}

/// A session's state of the unstable updates.
#[derive(Default)]
pub(super) struct UnstableState {
    #[cfg(feature = "unstable-session-cursors")]
    pub(super) cursors: std::sync::Mutex<Cursors>,
    #[cfg(feature = "unstable-prompt-suggestions")]
    pub(super) prompt_suggestions: std::sync::Mutex<Vec<PromptSuggestion>>,
}

impl UnstableState {
    /// Records an update of an unstable kind (called for every update of the session, in
    /// order, also for those dropped from its queue).
    pub(super) fn track(&self, update: &SessionUpdate) {
        match update {
            #[cfg(feature = "unstable-session-cursors")]
            SessionUpdate::CursorUpdate(update) => self.cursors.lock().unwrap().apply(update),
            #[cfg(feature = "unstable-prompt-suggestions")]
            SessionUpdate::PromptSuggestionsUpdate(update) => {
                // The list is replaced each time: it is bounded by the one update's size.
                *self.prompt_suggestions.lock().unwrap() = update.suggestions.clone();
            }
            _ => {}
        }
    }
}
