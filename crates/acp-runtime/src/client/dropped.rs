//! Updates for session ids this client neither opened nor follows, which no session's stream
//! can show: those kept waiting for a session that may open
//! ([`AgentHandle::take_unopened_updates`](super::AgentHandle::take_unopened_updates) takes
//! them), and the reports of those dropped past the unopened-session bounds, kept as a short
//! list that the application takes with
//! [`AgentHandle::take_dropped_updates`](super::AgentHandle::take_dropped_updates), so that
//! nothing is dropped in silence.

use std::collections::VecDeque;
use std::sync::Mutex;

use acp_types::{SessionId, SessionUpdate};

use super::updates::Unrouted;
use crate::error::Result;

/// An update for a session id this client neither opened nor follows (an agent's update for
/// a session before it answered the call that opens it, or for a subagent it never
/// announced), from [`AgentHandle::take_unopened_updates`](super::AgentHandle::take_unopened_updates).
#[derive(Debug)]
#[non_exhaustive]
pub struct UnopenedUpdate {
    /// The session id the update named.
    pub session_id: SessionId,
    /// The update, or what stands in its place
    /// ([`Error::UpdatesDropped`](crate::Error::UpdatesDropped),
    /// [`Error::InvalidUpdate`](crate::Error::InvalidUpdate)).
    pub update: Result<SessionUpdate>,
}

/// How many reports wait at most (one per session id and reason); past it, the reports of
/// further ids are merged into one without an id, per reason.
pub const DROP_REPORTS_KEPT: usize = 64;

/// Updates dropped for a session id no session stream speaks for, from
/// [`AgentHandle::take_dropped_updates`](super::AgentHandle::take_dropped_updates).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DroppedUpdates {
    /// The session id the updates named (an excerpt of it); `None` for the updates of several
    /// ids, merged once [`DROP_REPORTS_KEPT`] reports were waiting.
    pub session_id: Option<String>,
    /// How many updates were dropped.
    pub updates: u64,
    /// What they held on the wire, in bytes (plus the runtime's own cost of each).
    pub bytes: u64,
    /// Why.
    pub reason: DropReason,
}

/// Why updates were dropped without a session to tell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// The updates kept for session ids not opened yet filled their budget
    /// ([`ClientOptions::with_unopened_update_budget`](super::ClientOptions::with_unopened_update_budget)).
    /// A session opened later with this id also meets the drop in its stream.
    UnopenedBudget {
        /// The budget, in bytes.
        budget: usize,
    },
    /// Updates were kept for `limit` other ids not opened yet.
    UnopenedIds {
        /// How many ids not opened may have updates kept at once.
        limit: usize,
    },
}

impl DroppedUpdates {
    /// The report of one update.
    pub(super) fn one(id: &SessionId, cost: usize, reason: DropReason) -> Self {
        DroppedUpdates {
            session_id: Some(acp_jsonrpc::excerpt(id.as_str()).into_owned()),
            updates: 1,
            bytes: cost as u64,
            reason,
        }
    }
}

impl std::fmt::Display for DroppedUpdates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (updates, bytes) = (self.updates, self.bytes);
        let (noun, verb) = match updates {
            1 => ("update", "was"),
            _ => ("updates", "were"),
        };
        match &self.session_id {
            Some(id) => write!(
                f,
                "{updates} {noun} ({bytes} bytes) for session `{id}` {verb} dropped: "
            )?,
            None => write!(
                f,
                "{updates} {noun} ({bytes} bytes) for several more sessions {verb} dropped: "
            )?,
        }
        match self.reason {
            DropReason::UnopenedBudget { budget } => write!(
                f,
                "this client neither opened nor follows it, and the {budget} bytes kept for such ids were full"
            ),
            DropReason::UnopenedIds { limit } => write!(
                f,
                "this client neither opened nor follows it, and updates for {limit} other such ids were kept already"
            ),
        }
    }
}

impl From<Unrouted> for DropReason {
    fn from(unrouted: Unrouted) -> Self {
        match unrouted {
            Unrouted::UnopenedBudget(budget) => DropReason::UnopenedBudget { budget },
            Unrouted::UnopenedIds(limit) => DropReason::UnopenedIds { limit },
        }
    }
}

/// The reports waiting for the application.
#[derive(Default)]
pub(super) struct DropReports(Mutex<VecDeque<DroppedUpdates>>);

impl DropReports {
    /// Counts one update of `cost` bytes for `id`, dropped for `reason`.
    pub(super) fn record(&self, id: &SessionId, cost: usize, reason: DropReason) {
        let id = acp_jsonrpc::excerpt(id.as_str()).to_string();
        let mut reports = self.0.lock().unwrap();
        let full = reports.len() >= DROP_REPORTS_KEPT;
        let same = |r: &DroppedUpdates| {
            r.reason == reason
                && match &r.session_id {
                    Some(kept) => !full && *kept == id,
                    None => full,
                }
        };
        match reports.iter_mut().rev().find(|r| same(r)) {
            Some(report) => {
                report.updates += 1;
                report.bytes += cost as u64;
            }
            None => reports.push_back(DroppedUpdates {
                session_id: (!full).then_some(id),
                updates: 1,
                bytes: cost as u64,
                reason,
            }),
        }
    }

    pub(super) fn take(&self) -> Vec<DroppedUpdates> {
        self.0.lock().unwrap().drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_merge_by_id_and_stay_bounded() {
        let reports = DropReports::default();
        let reason = DropReason::UnopenedIds { limit: 16 };
        for _ in 0..3 {
            reports.record(&"a".into(), 10, reason);
        }
        for i in 0..200 {
            reports.record(&format!("id-{i}").into(), 1, reason);
        }
        let taken = reports.take();
        assert_eq!(taken.len(), DROP_REPORTS_KEPT + 1);
        assert_eq!((taken[0].updates, taken[0].bytes), (3, 30));
        let merged = taken.last().unwrap();
        assert_eq!(merged.session_id, None);
        assert_eq!(merged.updates, 200 - (DROP_REPORTS_KEPT as u64 - 1));
        assert!(reports.take().is_empty());
    }
}
