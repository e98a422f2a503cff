//! The conversation history a v2 agent retains for `session/resume` with `replayFrom`: every
//! `session/update` the runtime sends for a session but the state changes, kept as the bytes
//! sent, bounded in bytes per session and in sessions per store.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use acp_types::v2::SessionId;
use serde_json::value::RawValue;

/// Default of [`History::with_limits`]: what one session retains, 4 MiB.
pub const DEFAULT_HISTORY_BYTES: usize = 4 * 1024 * 1024;
/// Default of [`History::with_limits`]: how many sessions a store retains, 256.
pub const DEFAULT_HISTORY_SESSIONS: usize = 256;

/// The history an agent retains, shared by every connection that serves the agent (cheap to
/// clone: the clones are one store).
///
/// The runtime records each update it sends for a session (messages, tool calls, plans,
/// usage, ...; not `state_update` nor `replay_complete`, which describe the live connection)
/// and replays them, in
/// order and as sent, when a client resumes the session with `replayFrom: {"type": "start"}`.
/// A session keeps at most its byte limit: the oldest updates go first, and a replay of a
/// session that lost some says so (`replay_complete`'s `_meta`, `"acp-rs/truncated": true`).
/// Past the session limit the session written to longest ago is forgotten.
///
/// ```
/// use acp_runtime::agent::v2::History;
///
/// let history = History::default().with_limits(1024 * 1024, 64);
/// assert_eq!(history.sessions(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct History {
    inner: Arc<Mutex<Store>>,
}

#[derive(Debug)]
struct Store {
    max_bytes: usize,
    max_sessions: usize,
    clock: u64,
    sessions: HashMap<SessionId, Log>,
}

#[derive(Debug, Default)]
struct Log {
    updates: VecDeque<Box<RawValue>>,
    bytes: usize,
    truncated: bool,
    last_write: u64,
}

/// A session's retained updates, oldest first, and whether older ones were dropped.
#[derive(Clone, Debug, Default)]
pub struct Retained {
    /// The updates (each a `SessionUpdate` as sent), oldest first.
    pub updates: Vec<Box<RawValue>>,
    /// Whether updates older than the first were dropped to keep the byte limit.
    pub truncated: bool,
}

impl Default for History {
    fn default() -> Self {
        History {
            inner: Arc::new(Mutex::new(Store {
                max_bytes: DEFAULT_HISTORY_BYTES,
                max_sessions: DEFAULT_HISTORY_SESSIONS,
                clock: 0,
                sessions: HashMap::new(),
            })),
        }
    }
}

impl History {
    /// At most `bytes_per_session` retained per session and `sessions` sessions.
    pub fn with_limits(self, bytes_per_session: usize, sessions: usize) -> Self {
        {
            let mut store = self.inner.lock().unwrap();
            store.max_bytes = bytes_per_session;
            store.max_sessions = sessions.max(1);
        }
        self
    }

    /// How many sessions have history.
    pub fn sessions(&self) -> usize {
        self.inner.lock().unwrap().sessions.len()
    }

    /// Records `update` (a `SessionUpdate` as sent) for `session`.
    pub fn record(&self, session: &SessionId, update: Box<RawValue>) {
        let mut store = self.inner.lock().unwrap();
        store.clock += 1;
        let now = store.clock;
        let (max_bytes, max_sessions) = (store.max_bytes, store.max_sessions);
        if !store.sessions.contains_key(session) && store.sessions.len() >= max_sessions {
            let oldest = store
                .sessions
                .iter()
                .min_by_key(|(_, log)| log.last_write)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                store.sessions.remove(&oldest);
            }
        }
        let log = store.sessions.entry(session.clone()).or_default();
        log.last_write = now;
        log.bytes += update.get().len();
        log.updates.push_back(update);
        while log.bytes > max_bytes {
            let Some(dropped) = log.updates.pop_front() else {
                break;
            };
            log.bytes -= dropped.get().len();
            log.truncated = true;
        }
    }

    /// The updates retained for `session` (`None`: none were ever recorded, or they were
    /// forgotten).
    pub fn retained(&self, session: &SessionId) -> Option<Retained> {
        let store = self.inner.lock().unwrap();
        store.sessions.get(session).map(|log| Retained {
            updates: log.updates.iter().cloned().collect(),
            truncated: log.truncated,
        })
    }

    /// Forgets `session`'s history (`session/delete`).
    pub fn forget(&self, session: &SessionId) {
        self.inner.lock().unwrap().sessions.remove(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(format!("\"{text}\"")).unwrap()
    }

    #[test]
    fn a_session_keeps_its_newest_updates_within_its_byte_limit() {
        let history = History::default().with_limits(10, 4);
        let id = SessionId::new("s");
        for text in ["aaa", "bbb", "ccc"] {
            history.record(&id, raw(text));
        }
        let kept = history.retained(&id).unwrap();
        let texts: Vec<&str> = kept.updates.iter().map(|u| u.get()).collect();
        assert_eq!(texts, ["\"bbb\"", "\"ccc\""]);
        assert!(kept.truncated);
    }

    #[test]
    fn past_the_session_limit_the_least_recently_written_session_goes() {
        let history = History::default().with_limits(100, 2);
        let (a, b, c) = (
            SessionId::new("a"),
            SessionId::new("b"),
            SessionId::new("c"),
        );
        history.record(&a, raw("1"));
        history.record(&b, raw("2"));
        history.record(&a, raw("3"));
        history.record(&c, raw("4"));
        assert!(history.retained(&b).is_none());
        assert_eq!(history.retained(&a).unwrap().updates.len(), 2);
        assert_eq!(history.sessions(), 2);
    }
}
