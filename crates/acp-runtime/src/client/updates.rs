//! Where `session/update` notifications wait for the application: one queue per session,
//! bounded in bytes, that never makes the connection wait.
//!
//! The connection hands notifications over strictly in order and reads nothing else while a
//! notification handler runs. If routing an update waited for room, one session nobody reads
//! would stop every response, every other session and every cancellation. So routing never
//! waits: an update that does not fit is dropped, and the drop is recorded in the queue at the
//! place where the update would have been. The application meets it there as
//! [`Error::UpdatesDropped`](crate::Error::UpdatesDropped), in order with the updates around it.
//!
//! Every entry carries the connection's sequence number of its update, so that a reader of a
//! session and its subagents (`subagents.rs`) takes the entries of several queues in the
//! order they arrived; the queues of one such tree share the event that wakes their reader.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acp_types::{SessionId, SessionNotification, SessionUpdate};
use event_listener::Event;
use serde_json::value::RawValue;

use crate::error::Error;
use crate::session_map::SessionMap;

/// Default of [`ClientOptions::with_session_update_budget`](super::ClientOptions::with_session_update_budget).
pub const DEFAULT_SESSION_UPDATE_BUDGET: usize = 16 * 1024 * 1024;

/// Default of [`ClientOptions::with_unopened_update_budget`](super::ClientOptions::with_unopened_update_budget).
pub const DEFAULT_UNOPENED_UPDATE_BUDGET: usize = 1024 * 1024;

/// How many session ids not yet opened may have updates kept at once. An agent sends early
/// updates for the one session it is creating; more ids than this are made up.
pub(crate) const UNOPENED_SESSION_LIMIT: usize = 16;

/// What an update costs while it waits: its size on the wire, plus the decoded value's own
/// size, so that a flood of tiny updates is counted at what it really holds.
pub(crate) fn update_cost(wire_bytes: usize) -> usize {
    wire_bytes + std::mem::size_of::<SessionNotification>()
}

/// A `session/update` as it arrived: decoded, or kept raw with why it did not decode (a
/// newer peer's field, a `null` where a number belongs...). Neither kind may vanish.
pub(crate) enum Arrived {
    Update(Box<SessionNotification>),
    Invalid {
        session_id: SessionId,
        /// The `update` member as sent.
        update: Box<RawValue>,
        error: String,
    },
}

impl Arrived {
    pub(crate) fn session_id(&self) -> &SessionId {
        match self {
            Arrived::Update(update) => &update.session_id,
            Arrived::Invalid { session_id, .. } => session_id,
        }
    }

    fn into_entry(self) -> Result<Box<SessionNotification>, Error> {
        match self {
            Arrived::Update(update) => Ok(update),
            Arrived::Invalid {
                session_id,
                update,
                error,
            } => Err(Error::InvalidUpdate {
                session_id: session_id.to_string(),
                update,
                error,
            }),
        }
    }
}

enum Entry {
    Update {
        update: Arrived,
        cost: usize,
        seq: u64,
    },
    /// Updates that did not fit, where they would have been.
    Dropped { updates: u64, bytes: u64, seq: u64 },
    /// A subagent announced on this session that the client does not follow, and the updates
    /// of it dropped since the entry was queued.
    Unfollowed {
        subagent: SessionId,
        limit: usize,
        updates: u64,
        bytes: u64,
        /// What the entry itself costs in the queue.
        cost: usize,
        seq: u64,
    },
}

impl Entry {
    fn seq(&self) -> u64 {
        match self {
            Entry::Update { seq, .. }
            | Entry::Dropped { seq, .. }
            | Entry::Unfollowed { seq, .. } => *seq,
        }
    }
}

/// The byte budget that the queues of every followed subagent of a connection share, beside
/// each queue's own.
pub(crate) struct Pool {
    bytes: AtomicUsize,
    budget: usize,
}

impl Pool {
    pub(crate) fn new(budget: usize) -> Self {
        Pool {
            bytes: AtomicUsize::new(0),
            budget,
        }
    }

    /// The bytes kept in the pool's queues.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    fn fits(&self, cost: usize) -> bool {
        let bytes = self.bytes();
        bytes == 0 || bytes + cost <= self.budget
    }
}

#[derive(Default)]
struct Entries {
    entries: VecDeque<Entry>,
    /// The cost of the updates in `entries`.
    bytes: usize,
    closed: bool,
}

/// Updates of one session, waiting for [`Session::next_update`](super::Session::next_update)
/// or a [`PromptTurn`](super::PromptTurn).
pub(crate) struct UpdateQueue {
    session: SessionId,
    budget: usize,
    /// The budget shared by every subagent's queue (`None` for a session the application
    /// opened).
    pool: Option<Arc<Pool>>,
    state: Mutex<Entries>,
    /// Notified when an entry is pushed or the queue is closed; shared by a session and its
    /// subagents, so that one reader of them all wakes for any.
    ready: Arc<Event>,
}

/// What [`UpdateQueue::try_pop`] found.
pub(crate) enum Popped {
    /// An update (still boxed: it is moved out once, by whoever takes it) or a drop.
    Entry(Result<Box<SessionNotification>, Error>),
    Empty,
    Closed,
}

impl UpdateQueue {
    /// The queue of a session the application opened.
    pub(crate) fn new(session: SessionId, budget: usize) -> Self {
        UpdateQueue {
            session,
            budget,
            pool: None,
            state: Mutex::new(Entries::default()),
            ready: Arc::new(Event::new()),
        }
    }

    /// The queue of a subagent: its own `budget` and the connection's `pool`, and the event
    /// of the tree it belongs to.
    pub(crate) fn subagent(
        session: SessionId,
        budget: usize,
        pool: Arc<Pool>,
        ready: Arc<Event>,
    ) -> Self {
        UpdateQueue {
            session,
            budget,
            pool: Some(pool),
            state: Mutex::new(Entries::default()),
            ready,
        }
    }

    /// The event the queues of this session's tree share.
    pub(crate) fn ready(&self) -> &Arc<Event> {
        &self.ready
    }

    /// Queues `update` (the connection's `seq`-th) without waiting. An update larger than the
    /// whole budget is still kept when the queue (and its pool) is empty, so that one large
    /// update always gets through to a reader that keeps up; otherwise what does not fit is
    /// dropped and recorded. Returns whether it was kept.
    pub(crate) fn push(&self, update: Arrived, cost: usize, seq: u64) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.closed {
            return false;
        }
        let fits = self.fits(&state, cost);
        if fits {
            self.charge(&mut state, cost);
            state.entries.push_back(Entry::Update { update, cost, seq });
        } else {
            record_drop(&mut state.entries, cost, seq);
        }
        drop(state);
        self.ready.notify(usize::MAX);
        fits
    }

    fn fits(&self, state: &Entries, cost: usize) -> bool {
        let own = state.bytes == 0 || state.bytes + cost <= self.budget;
        own && self.pool.as_ref().is_none_or(|pool| pool.fits(cost))
    }

    fn charge(&self, state: &mut Entries, cost: usize) {
        state.bytes += cost;
        if let Some(pool) = &self.pool {
            pool.bytes.fetch_add(cost, Ordering::AcqRel);
        }
    }

    fn refund(&self, state: &mut Entries, cost: usize) {
        state.bytes -= cost;
        if let Some(pool) = &self.pool {
            pool.bytes.fetch_sub(cost, Ordering::AcqRel);
        }
    }

    /// Records that `subagent`, announced on this session, is not followed (`dropped` is
    /// `None`), or that one of its updates, of `dropped` bytes, was dropped: added to the
    /// last record of it when that is the last entry, else queued as a new one (costing its
    /// room like an update; without room, the drop is recorded as any other).
    pub(crate) fn record_unfollowed(
        &self,
        subagent: &SessionId,
        limit: usize,
        dropped: Option<usize>,
        seq: u64,
    ) {
        let mut state = self.state.lock().unwrap();
        if state.closed {
            return;
        }
        let (updates, bytes) = dropped.map_or((0, 0), |cost| (1, cost as u64));
        if let Some(Entry::Unfollowed {
            subagent: last,
            updates: last_updates,
            bytes: last_bytes,
            ..
        }) = state.entries.back_mut()
            && last == subagent
        {
            *last_updates += updates;
            *last_bytes += bytes;
            return;
        }
        let cost = std::mem::size_of::<Entry>() + subagent.as_str().len();
        if self.fits(&state, cost) {
            self.charge(&mut state, cost);
            state.entries.push_back(Entry::Unfollowed {
                subagent: subagent.clone(),
                limit,
                updates,
                bytes,
                cost,
                seq,
            });
        } else if let Some(cost) = dropped {
            record_drop(&mut state.entries, cost, seq);
        }
        drop(state);
        self.ready.notify(usize::MAX);
    }

    /// Moves early updates in, whatever their cost: they were bounded by the unopened-session
    /// budget and none of them may be lost.
    fn adopt(&self, early: Early) {
        let mut state = self.state.lock().unwrap();
        self.charge(&mut state, early.bytes);
        state.entries.extend(early.entries);
    }

    /// The sequence number of the first entry waiting.
    pub(crate) fn head(&self) -> Option<u64> {
        self.state.lock().unwrap().entries.front().map(Entry::seq)
    }

    pub(crate) fn try_pop(&self) -> Popped {
        let mut state = self.state.lock().unwrap();
        match state.entries.pop_front() {
            Some(Entry::Update { update, cost, .. }) => {
                self.refund(&mut state, cost);
                Popped::Entry(update.into_entry())
            }
            Some(Entry::Dropped { updates, bytes, .. }) => {
                Popped::Entry(Err(Error::UpdatesDropped {
                    session_id: self.session.to_string(),
                    updates,
                    bytes,
                    budget: self.budget,
                }))
            }
            Some(Entry::Unfollowed {
                subagent,
                limit,
                updates,
                bytes,
                cost,
                ..
            }) => {
                self.refund(&mut state, cost);
                Popped::Entry(Err(Error::SubagentNotFollowed {
                    session_id: self.session.to_string(),
                    subagent: subagent.to_string(),
                    limit,
                    updates,
                    bytes,
                }))
            }
            None if state.closed => Popped::Closed,
            None => Popped::Empty,
        }
    }

    /// Whether the queue is closed and empty: nothing will come from it any more.
    pub(crate) fn is_done(&self) -> bool {
        let state = self.state.lock().unwrap();
        state.closed && state.entries.is_empty()
    }

    /// The next entry, waiting for one; `None` once the connection is over and every entry
    /// was taken.
    pub(crate) async fn pop(&self) -> Option<Result<Box<SessionNotification>, Error>> {
        loop {
            match self.try_pop() {
                Popped::Entry(entry) => return Some(entry),
                Popped::Closed => return None,
                Popped::Empty => {}
            }
            // Listen, then look again: a push between the two is not missed.
            let listener = self.ready.listen();
            match self.try_pop() {
                Popped::Entry(entry) => return Some(entry),
                Popped::Closed => return None,
                Popped::Empty => listener.await,
            }
        }
    }

    /// No update will come any more (the connection is over, or the session was closed or
    /// forgotten); waiting readers are woken. What waits is still delivered.
    pub(crate) fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.ready.notify(usize::MAX);
    }

    /// The cost of the updates waiting, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.state.lock().unwrap().bytes
    }
}

fn record_drop(entries: &mut VecDeque<Entry>, cost: usize, seq: u64) {
    if let Some(Entry::Dropped { updates, bytes, .. }) = entries.back_mut() {
        *updates += 1;
        *bytes += cost as u64;
    } else {
        entries.push_back(Entry::Dropped {
            updates: 1,
            bytes: cost as u64,
            seq,
        });
    }
}

/// Updates for a session id this client has not opened (yet): an agent may stream a few
/// before its `session/new` answer arrives.
#[derive(Default)]
struct Early {
    entries: VecDeque<Entry>,
    bytes: usize,
}

/// Why an update was dropped without a session to record it in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unrouted {
    /// Updates kept for ids not opened filled their budget.
    UnopenedBudget(usize),
    /// Updates were kept for [`UNOPENED_SESSION_LIMIT`] other ids already.
    UnopenedIds(usize),
}

/// Every session's queue (those the application opened and the subagents followed), the
/// subagents not followed, and the updates for ids not opened yet.
pub(crate) struct Routes<S> {
    known: SessionMap<S>,
    /// Subagents announced but not followed, with the session they were announced on.
    unfollowed: SessionMap<S>,
    early: SessionMap<Early>,
    /// The cost of every early update kept, over all ids.
    early_bytes: usize,
    early_budget: usize,
    /// The sequence number of the next update routed.
    next_seq: u64,
}

/// Where [`Routes::route`] sent an update.
pub(crate) enum Routed<S> {
    /// To an open session or a followed subagent: the caller queues it, with its sequence
    /// number.
    Known(S, Arrived, u64),
    /// For a subagent not followed: the caller records the drop on the session it was
    /// announced on.
    Unfollowed(S, Arrived, u64),
    /// Kept for an id not opened yet.
    Early,
    /// Dropped, for the reason given (the caller reports it), with the id it was for.
    Dropped(Unrouted, SessionId),
}

impl<S: Clone> Routes<S> {
    pub(crate) fn new(early_budget: usize) -> Self {
        Routes {
            known: SessionMap::default(),
            unfollowed: SessionMap::default(),
            early: SessionMap::default(),
            early_bytes: 0,
            early_budget,
            next_seq: 0,
        }
    }

    pub(crate) fn get(&self, id: &SessionId) -> Option<&S> {
        self.known.get(id)
    }

    pub(crate) fn known(&self) -> impl Iterator<Item = (&SessionId, &S)> {
        self.known.iter()
    }

    pub(crate) fn remove(&mut self, id: &SessionId) -> Option<S> {
        self.known.remove(id)
    }

    /// The next sequence number, for an entry queued beside the routed updates.
    pub(crate) fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// Remembers that the subagent `id`, announced on `parent`, is not followed; `false`
    /// (and not remembered) when `limit` such subagents are remembered already.
    pub(crate) fn unfollow(&mut self, id: SessionId, parent: S, limit: usize) -> bool {
        if self.unfollowed.len() >= limit && !self.unfollowed.contains_key(&id) {
            return false;
        }
        self.unfollowed.insert(id, parent);
        true
    }

    pub(crate) fn is_unfollowed(&self, id: &SessionId) -> bool {
        self.unfollowed.contains_key(id)
    }

    /// Forgets the subagents not followed that `parent` says were announced on a session
    /// being forgotten.
    pub(crate) fn forget_unfollowed(&mut self, announced_on: impl Fn(&S) -> bool) {
        self.unfollowed.retain(|_, parent| !announced_on(parent));
    }

    /// Registers an opened session, moving the updates that arrived for it before into `queue`
    /// (each passed to `track` first, as routing does for later ones).
    pub(crate) fn open(
        &mut self,
        id: SessionId,
        session: S,
        queue: &UpdateQueue,
        track: impl Fn(&SessionUpdate),
    ) {
        self.unfollowed.remove(&id);
        if let Some(early) = self.early.remove(&id) {
            self.early_bytes -= early.bytes;
            for entry in &early.entries {
                if let Entry::Update {
                    update: Arrived::Update(update),
                    ..
                } = entry
                {
                    track(&update.update);
                }
            }
            queue.adopt(early);
        }
        self.known.insert(id, session);
    }

    /// Finds where `update` goes. Updates for ids not opened share one budget; unlike an
    /// open session's queue, nothing larger than it is ever kept for them.
    pub(crate) fn route(&mut self, update: Arrived, cost: usize) -> Routed<S> {
        let seq = self.seq();
        if let Some(session) = self.known.get(update.session_id()) {
            return Routed::Known(session.clone(), update, seq);
        }
        if let Some(parent) = self.unfollowed.get(update.session_id()) {
            return Routed::Unfollowed(parent.clone(), update, seq);
        }
        let id = update.session_id();
        if !self.early.contains_key(id) && self.early.len() >= UNOPENED_SESSION_LIMIT {
            return Routed::Dropped(Unrouted::UnopenedIds(UNOPENED_SESSION_LIMIT), id.clone());
        }
        let fits = self.early_bytes + cost <= self.early_budget;
        let early = self.early.entry(id.clone()).or_default();
        if !fits {
            // Also recorded in place, for a session opened later.
            record_drop(&mut early.entries, cost, seq);
            return Routed::Dropped(Unrouted::UnopenedBudget(self.early_budget), id.clone());
        }
        self.early_bytes += cost;
        early.bytes += cost;
        early.entries.push_back(Entry::Update { update, cost, seq });
        Routed::Early
    }

    /// Takes every update kept for ids not opened, in the order they arrived, each with its
    /// id (a drop recorded there as [`Error::UpdatesDropped`]).
    pub(crate) fn take_early(
        &mut self,
    ) -> Vec<(SessionId, Result<Box<SessionNotification>, Error>)> {
        let mut taken = Vec::new();
        for (id, early) in self.early.drain() {
            for entry in early.entries {
                let seq = entry.seq();
                let item = match entry {
                    Entry::Update { update, .. } => update.into_entry(),
                    Entry::Dropped { updates, bytes, .. } => Err(Error::UpdatesDropped {
                        session_id: id.to_string(),
                        updates,
                        bytes,
                        budget: self.early_budget,
                    }),
                    // Only opened sessions record subagents.
                    Entry::Unfollowed { .. } => continue,
                };
                taken.push((seq, id.clone(), item));
            }
        }
        self.early_bytes = 0;
        taken.sort_by_key(|(seq, ..)| *seq);
        taken.into_iter().map(|(_, id, item)| (id, item)).collect()
    }

    /// The cost of the updates kept for ids not opened, in bytes.
    pub(crate) fn early_bytes(&self) -> usize {
        self.early_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_types::ContentBlock;

    fn update(session: &str, text: &str) -> Arrived {
        Arrived::Update(Box::new(SessionNotification::new(
            session,
            SessionUpdate::agent_message_chunk(ContentBlock::text(text)),
        )))
    }

    fn text(entry: Popped) -> String {
        match entry {
            Popped::Entry(Ok(update)) => match update.update {
                SessionUpdate::AgentMessageChunk(chunk) => match chunk.content {
                    ContentBlock::Text(text) => text.text,
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            },
            Popped::Entry(other) => panic!("{other:?}"),
            Popped::Empty => "<empty>".into(),
            Popped::Closed => "<closed>".into(),
        }
    }

    #[test]
    fn a_full_queue_records_the_drop_in_place() {
        let queue = UpdateQueue::new("s".into(), 100);
        assert!(queue.push(update("s", "a"), 60, 1));
        assert!(!queue.push(update("s", "b"), 60, 2));
        assert!(!queue.push(update("s", "c"), 60, 3));
        assert_eq!(text(queue.try_pop()), "a");
        assert_eq!(queue.head(), Some(2));
        assert!(queue.push(update("s", "d"), 60, 4));
        match queue.try_pop() {
            Popped::Entry(Err(Error::UpdatesDropped { updates, bytes, .. })) => {
                assert_eq!((updates, bytes), (2, 120))
            }
            _ => panic!("expected the drop"),
        }
        assert_eq!(text(queue.try_pop()), "d");
        assert_eq!(queue.bytes(), 0);
        queue.close();
        assert_eq!(text(queue.try_pop()), "<closed>");
    }

    #[test]
    fn one_oversized_update_passes_an_empty_queue() {
        let queue = UpdateQueue::new("s".into(), 100);
        assert!(queue.push(update("s", "big"), 1000, 1));
        assert!(!queue.push(update("s", "small"), 1, 2));
        assert_eq!(text(queue.try_pop()), "big");
    }

    #[test]
    fn subagent_queues_share_their_pool() {
        let pool = Arc::new(Pool::new(100));
        let ready = Arc::new(Event::new());
        let a = UpdateQueue::subagent("a".into(), 1000, pool.clone(), ready.clone());
        let b = UpdateQueue::subagent("b".into(), 1000, pool.clone(), ready);
        assert!(a.push(update("a", "1"), 60, 1));
        assert!(!b.push(update("b", "2"), 60, 2));
        assert_eq!(pool.bytes(), 60);
        assert_eq!(text(a.try_pop()), "1");
        assert_eq!(pool.bytes(), 0);
        assert!(b.push(update("b", "3"), 60, 3));
        assert!(matches!(
            b.try_pop(),
            Popped::Entry(Err(Error::UpdatesDropped { updates: 1, .. }))
        ));
        assert_eq!(text(b.try_pop()), "3");
    }

    #[test]
    fn an_unfollowed_subagent_is_recorded_with_its_drops() {
        let queue = UpdateQueue::new("p".into(), 1000);
        let child = SessionId::from("c");
        queue.record_unfollowed(&child, 4, None, 1);
        queue.record_unfollowed(&child, 4, Some(10), 2);
        queue.record_unfollowed(&child, 4, Some(20), 3);
        match queue.try_pop() {
            Popped::Entry(Err(Error::SubagentNotFollowed {
                session_id,
                subagent,
                limit,
                updates,
                bytes,
            })) => assert_eq!(
                (
                    session_id.as_str(),
                    subagent.as_str(),
                    limit,
                    updates,
                    bytes
                ),
                ("p", "c", 4, 2, 30)
            ),
            _ => panic!("expected the record"),
        }
        assert_eq!(queue.bytes(), 0);
    }

    #[test]
    fn unopened_sessions_share_one_budget_and_a_count() {
        let mut routes: Routes<()> = Routes::new(250);
        for i in 0..3 {
            let routed = routes.route(update("s", "x"), 100);
            assert_eq!(matches!(routed, Routed::Early), i < 2);
        }
        assert_eq!(routes.early_bytes(), 200);
        let queue = UpdateQueue::new("s".into(), 10);
        routes.open("s".into(), (), &queue, |_| {});
        assert_eq!(routes.early_bytes(), 0);
        assert_eq!(queue.bytes(), 200);
        assert_eq!(text(queue.try_pop()), "x");
        assert_eq!(text(queue.try_pop()), "x");
        assert!(matches!(
            queue.try_pop(),
            Popped::Entry(Err(Error::UpdatesDropped { updates: 1, .. }))
        ));
        for i in 0..UNOPENED_SESSION_LIMIT + 1 {
            let routed = routes.route(update(&format!("id{i}"), "x"), 1);
            match routed {
                Routed::Early => assert!(i < UNOPENED_SESSION_LIMIT, "{i}"),
                Routed::Dropped(Unrouted::UnopenedIds(limit), _) => {
                    assert_eq!((i, limit), (UNOPENED_SESSION_LIMIT, UNOPENED_SESSION_LIMIT))
                }
                _ => panic!("{i}"),
            }
        }
    }

    #[test]
    fn updates_of_an_unfollowed_subagent_go_to_its_parent() {
        let mut routes: Routes<&str> = Routes::new(250);
        assert!(routes.unfollow("c".into(), "p", 1));
        assert!(!routes.unfollow("d".into(), "p", 1));
        assert!(matches!(
            routes.route(update("c", "x"), 1),
            Routed::Unfollowed("p", _, _)
        ));
        routes.forget_unfollowed(|parent| *parent == "p");
        assert!(!routes.is_unfollowed(&"c".into()));
    }
}

#[cfg(test)]
mod invalid_tests {
    use super::*;

    #[test]
    fn an_update_that_does_not_decode_keeps_its_place_and_its_json() {
        let queue = UpdateQueue::new("s".into(), 1000);
        let raw = RawValue::from_string(r#"{"sessionUpdate":"usage_update","used":null}"#.into())
            .unwrap();
        queue.push(
            Arrived::Invalid {
                session_id: "s".into(),
                update: raw,
                error: "invalid type: null, expected u64".into(),
            },
            10,
            1,
        );
        match queue.try_pop() {
            Popped::Entry(Err(Error::InvalidUpdate {
                session_id, update, ..
            })) => {
                assert_eq!(session_id, "s");
                assert!(update.get().contains("usage_update"));
            }
            _ => panic!("expected the raw update"),
        }
    }
}
