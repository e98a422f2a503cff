//! Where `session/update` notifications wait for the application: one queue per session,
//! bounded in bytes, that never makes the connection wait.
//!
//! The connection hands notifications over strictly in order and reads nothing else while a
//! notification handler runs. If routing an update waited for room, one session nobody reads
//! would stop every response, every other session and every cancellation. So routing never
//! waits: an update that does not fit is dropped, and the drop is recorded in the queue at the
//! place where the update would have been. The application meets it there as
//! [`Error::UpdatesDropped`](crate::Error::UpdatesDropped), in order with the updates around it.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

use acp_types::{SessionId, SessionNotification, SessionUpdate};
use event_listener::Event;
use serde_json::value::RawValue;

use crate::error::Error;

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
    fn session_id(&self) -> &SessionId {
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
    },
    /// Updates that did not fit, where they would have been.
    Dropped {
        updates: u64,
        bytes: u64,
    },
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
    state: Mutex<Entries>,
    /// Notified when an entry is pushed or the queue is closed.
    ready: Event,
}

/// What [`UpdateQueue::try_pop`] found.
pub(crate) enum Popped {
    /// An update (still boxed: it is moved out once, by whoever takes it) or a drop.
    Entry(Result<Box<SessionNotification>, Error>),
    Empty,
    Closed,
}

impl UpdateQueue {
    pub(crate) fn new(session: SessionId, budget: usize) -> Self {
        UpdateQueue {
            session,
            budget,
            state: Mutex::new(Entries::default()),
            ready: Event::new(),
        }
    }

    /// Queues `update` without waiting. An update larger than the whole budget is still kept
    /// when the queue is empty, so that one large update always gets through to a reader that
    /// keeps up; otherwise what does not fit is dropped and recorded. Returns whether it was
    /// kept.
    pub(crate) fn push(&self, update: Arrived, cost: usize) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.closed {
            return false;
        }
        let fits = state.bytes == 0 || state.bytes + cost <= self.budget;
        if fits {
            state.bytes += cost;
            state.entries.push_back(Entry::Update { update, cost });
        } else {
            record_drop(&mut state.entries, cost);
        }
        drop(state);
        self.ready.notify(usize::MAX);
        fits
    }

    /// Moves early updates in, whatever their cost: they were bounded by the unopened-session
    /// budget and none of them may be lost.
    fn adopt(&self, early: Early) {
        let mut state = self.state.lock().unwrap();
        state.bytes += early.bytes;
        state.entries.extend(early.entries);
    }

    pub(crate) fn try_pop(&self) -> Popped {
        let mut state = self.state.lock().unwrap();
        match state.entries.pop_front() {
            Some(Entry::Update { update, cost }) => {
                state.bytes -= cost;
                Popped::Entry(update.into_entry())
            }
            Some(Entry::Dropped { updates, bytes }) => Popped::Entry(Err(Error::UpdatesDropped {
                session_id: self.session.to_string(),
                updates,
                bytes,
                budget: self.budget,
            })),
            None if state.closed => Popped::Closed,
            None => Popped::Empty,
        }
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

    /// No update will come any more (the connection is over); waiting readers are woken.
    pub(crate) fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.ready.notify(usize::MAX);
    }

    /// The cost of the updates waiting, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.state.lock().unwrap().bytes
    }
}

fn record_drop(entries: &mut VecDeque<Entry>, cost: usize) {
    if let Some(Entry::Dropped { updates, bytes }) = entries.back_mut() {
        *updates += 1;
        *bytes += cost as u64;
    } else {
        entries.push_back(Entry::Dropped {
            updates: 1,
            bytes: cost as u64,
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

/// A map keyed by session ids, hashed with [`SessionIdHasher`].
type SessionMap<V> = HashMap<SessionId, V, BuildHasherDefault<SessionIdHasher>>;

/// An FxHash-style multiply-rotate hash, a word at a time, for the session routes: every
/// update is routed by its session id, and SipHash cost ~190 instructions per update, more
/// than the rest of the lookup. Flooding does not apply: `known` holds only the sessions this
/// client opened (so as many entries as the application chose), and `early` at most
/// [`UNOPENED_SESSION_LIMIT`].
#[derive(Default)]
struct SessionIdHasher(u64);

impl SessionIdHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for SessionIdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut tail = [0u8; 8];
            tail[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(tail));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Every session's queue, and the updates for ids not opened yet.
pub(crate) struct Routes<S> {
    known: SessionMap<S>,
    early: SessionMap<Early>,
    /// The cost of every early update kept, over all ids.
    early_bytes: usize,
    early_budget: usize,
}

/// Where [`Routes::route`] sent an update.
pub(crate) enum Routed<S> {
    /// To an open session: the caller queues it.
    Known(S, Arrived),
    /// Kept for an id not opened yet.
    Early,
    /// Dropped, for the reason given (the caller reports it).
    Dropped(String),
}

impl<S: Clone> Routes<S> {
    pub(crate) fn new(early_budget: usize) -> Self {
        Routes {
            known: SessionMap::default(),
            early: SessionMap::default(),
            early_bytes: 0,
            early_budget,
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

    /// Registers an opened session, moving the updates that arrived for it before into `queue`
    /// (each passed to `track` first, as routing does for later ones).
    pub(crate) fn open(
        &mut self,
        id: SessionId,
        session: S,
        queue: &UpdateQueue,
        track: impl Fn(&SessionUpdate),
    ) {
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
        if let Some(session) = self.known.get(update.session_id()) {
            return Routed::Known(session.clone(), update);
        }
        let id = update.session_id();
        if !self.early.contains_key(id) && self.early.len() >= UNOPENED_SESSION_LIMIT {
            let reason = format!(
                "an update for session `{id}`, which this client never opened, while updates for {UNOPENED_SESSION_LIMIT} other unopened sessions are kept; dropping it"
            );
            return Routed::Dropped(reason);
        }
        let fits = self.early_bytes + cost <= self.early_budget;
        let early = self.early.entry(id.clone()).or_default();
        if fits {
            self.early_bytes += cost;
            early.bytes += cost;
            early.entries.push_back(Entry::Update { update, cost });
            Routed::Early
        } else {
            record_drop(&mut early.entries, cost);
            let reason = format!(
                "updates for sessions this client has not opened exceed {} bytes; dropping one for `{}` ({cost} bytes)",
                self.early_budget,
                update.session_id()
            );
            Routed::Dropped(reason)
        }
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
        assert!(queue.push(update("s", "a"), 60));
        assert!(!queue.push(update("s", "b"), 60));
        assert!(!queue.push(update("s", "c"), 60));
        assert_eq!(text(queue.try_pop()), "a");
        assert!(queue.push(update("s", "d"), 60));
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
        assert!(queue.push(update("s", "big"), 1000));
        assert!(!queue.push(update("s", "small"), 1));
        assert_eq!(text(queue.try_pop()), "big");
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
            assert_eq!(
                matches!(routed, Routed::Early),
                i < UNOPENED_SESSION_LIMIT,
                "{i}"
            );
        }
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
