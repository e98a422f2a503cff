//! What a session remembers of its tool calls, for
//! [`Session::tool_call`](super::Session::tool_call) and for marking unfinished ones cancelled:
//! bounded in count and in bytes. Every `tool_call` and `tool_call_update` the agent sends
//! names an id, and a long session sends thousands; so when a new id does not fit, the
//! calls reported longest ago are forgotten, finished ones (completed, failed, cancelled)
//! before unfinished ones.

use std::collections::{BTreeMap, HashMap};

use acp_types::{ToolCallId, ToolCallStatus};

/// Where a tool call stands, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolCallState {
    /// Reported with the given status (or none yet).
    Reported(Option<ToolCallStatus>),
    /// Still unfinished when the client cancelled the turn.
    Cancelled,
}

impl ToolCallState {
    pub(crate) fn is_finished(&self) -> bool {
        matches!(
            self,
            ToolCallState::Cancelled
                | ToolCallState::Reported(Some(ToolCallStatus::Completed | ToolCallStatus::Failed))
        )
    }
}

/// Default of [`ClientOptions::with_tool_call_budget`](super::ClientOptions::with_tool_call_budget):
/// 1 MiB per session.
pub const DEFAULT_TOOL_CALL_BUDGET: usize = 1024 * 1024;

/// Default of [`ClientOptions::with_max_tool_calls`](super::ClientOptions::with_max_tool_calls):
/// 4096 per session.
pub const DEFAULT_MAX_TOOL_CALLS: usize = 4096;

/// What one remembered call costs besides its id, which is kept twice (the map's key and the
/// order's value): the map's and the order's entries, the state.
const ENTRY_OVERHEAD: usize = 96;

/// The cost of remembering the call `id`.
fn cost(id: &ToolCallId) -> usize {
    2 * id.0.len() + ENTRY_OVERHEAD
}

struct Tracked {
    state: ToolCallState,
    /// Its key in `finished` or `unfinished`: when it was last reported.
    order: u64,
}

/// A session's tool calls, within a count and a byte budget.
pub(crate) struct ToolCalls {
    calls: HashMap<ToolCallId, Tracked>,
    /// The finished calls, the one reported longest ago first: forgotten first.
    finished: BTreeMap<u64, ToolCallId>,
    /// The others, likewise.
    unfinished: BTreeMap<u64, ToolCallId>,
    next_order: u64,
    bytes: usize,
    max_calls: usize,
    budget: usize,
}

impl ToolCalls {
    pub(crate) fn new(max_calls: usize, budget: usize) -> Self {
        ToolCalls {
            calls: HashMap::new(),
            finished: BTreeMap::new(),
            unfinished: BTreeMap::new(),
            next_order: 0,
            bytes: 0,
            max_calls: max_calls.max(1),
            budget,
        }
    }

    pub(crate) fn get(&self, id: &ToolCallId) -> Option<ToolCallState> {
        self.calls.get(id).map(|tracked| tracked.state.clone())
    }

    /// A `tool_call`: the call is (re)reported with `status`.
    pub(crate) fn report(&mut self, id: &ToolCallId, status: Option<ToolCallStatus>) {
        self.place(id, ToolCallState::Reported(status));
    }

    /// A `tool_call_update`: the status changes when it names one; a call not seen before is
    /// remembered without one.
    pub(crate) fn update(&mut self, id: &ToolCallId, status: Option<&ToolCallStatus>) {
        let state = match (status, self.calls.get(id)) {
            (Some(status), _) => ToolCallState::Reported(Some(status.clone())),
            (None, Some(tracked)) => tracked.state.clone(),
            (None, None) => ToolCallState::Reported(None),
        };
        self.place(id, state);
    }

    /// Marks every unfinished call cancelled (the client cancelled the turn).
    pub(crate) fn cancel_unfinished(&mut self) {
        for (order, id) in std::mem::take(&mut self.unfinished) {
            if let Some(tracked) = self.calls.get_mut(&id) {
                tracked.state = ToolCallState::Cancelled;
            }
            self.finished.insert(order, id);
        }
    }

    /// What the remembered calls cost, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Remembers `id` as the call reported last, in `state`, forgetting older ones until it
    /// fits.
    fn place(&mut self, id: &ToolCallId, state: ToolCallState) {
        let id = match self.calls.remove(id) {
            Some(old) => {
                let order = if old.state.is_finished() {
                    &mut self.finished
                } else {
                    &mut self.unfinished
                };
                let id = order.remove(&old.order).unwrap_or_else(|| id.clone());
                self.bytes -= cost(&id);
                id
            }
            None => id.clone(),
        };
        let cost = cost(&id);
        while !self.calls.is_empty()
            && (self.calls.len() >= self.max_calls || self.bytes + cost > self.budget)
        {
            self.forget_one();
        }
        let order = self.next_order;
        self.next_order += 1;
        if state.is_finished() {
            self.finished.insert(order, id.clone());
        } else {
            self.unfinished.insert(order, id.clone());
        }
        self.bytes += cost;
        self.calls.insert(id, Tracked { state, order });
    }

    /// Forgets the finished call reported longest ago, or else the unfinished one.
    fn forget_one(&mut self) {
        let oldest = self
            .finished
            .pop_first()
            .or_else(|| self.unfinished.pop_first());
        if let Some((_, id)) = oldest
            && self.calls.remove(&id).is_some()
        {
            self.bytes -= cost(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: usize) -> ToolCallId {
        ToolCallId::new(format!("call-{n:04}"))
    }

    #[test]
    fn finished_calls_are_forgotten_first_and_the_count_holds() {
        let mut calls = ToolCalls::new(4, usize::MAX);
        calls.report(&id(0), Some(ToolCallStatus::InProgress));
        calls.report(&id(1), Some(ToolCallStatus::Completed));
        calls.report(&id(2), None);
        calls.report(&id(3), Some(ToolCallStatus::Failed));
        calls.report(&id(4), None);
        // The oldest finished one went, not the oldest.
        assert_eq!(calls.get(&id(1)), None);
        assert!(calls.get(&id(0)).is_some());
        calls.report(&id(5), None);
        assert_eq!(calls.get(&id(3)), None);
        // No finished one is left: the oldest unfinished goes.
        calls.report(&id(6), None);
        assert_eq!(calls.get(&id(0)), None);
        assert_eq!(calls.calls.len(), 4);
    }

    #[test]
    fn bytes_stay_within_the_budget_and_are_given_back() {
        let budget = 10 * cost(&id(0));
        let mut calls = ToolCalls::new(usize::MAX, budget);
        for n in 0..1000 {
            calls.update(&id(n), Some(&ToolCallStatus::Completed));
            assert!(calls.bytes() <= budget);
        }
        assert_eq!(calls.bytes(), budget);
        assert_eq!(
            calls.get(&id(999)),
            Some(ToolCallState::Reported(Some(ToolCallStatus::Completed)))
        );
        calls.update(&id(999), None);
        assert_eq!(calls.bytes(), budget);
    }

    #[test]
    fn an_update_keeps_the_status_and_cancel_marks_unfinished_ones() {
        let mut calls = ToolCalls::new(10, usize::MAX);
        calls.report(&id(0), Some(ToolCallStatus::InProgress));
        calls.update(&id(0), None);
        calls.update(&id(1), Some(&ToolCallStatus::Completed));
        assert_eq!(
            calls.get(&id(0)),
            Some(ToolCallState::Reported(Some(ToolCallStatus::InProgress)))
        );
        calls.cancel_unfinished();
        assert_eq!(calls.get(&id(0)), Some(ToolCallState::Cancelled));
        assert_eq!(
            calls.get(&id(1)),
            Some(ToolCallState::Reported(Some(ToolCallStatus::Completed)))
        );
        assert!(calls.unfinished.is_empty());
        assert_eq!(calls.finished.len(), 2);
    }
}
