//! `acp --trace-view`: the rows of a running connection, kept (bounded in bytes) for the
//! viewers that `http` serves, and the [`Observer`] that makes them.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use acp_jsonrpc::Observer;
use serde_json::value::RawValue;

use super::http::{self, Server};
use super::model::Analyzer;
use super::page::{Header, RowJson, render};
use super::record::{Dir, Payload, Record, now_us};

/// How many bytes of rows the live view keeps for viewers that connect (or reconnect) late;
/// beyond it the oldest rows go, and a viewer that still needed them is told how many it
/// missed.
pub const RETAINED_BYTES: usize = 64 << 20;

/// How many bytes of rows one event carries at most.
const BATCH_BYTES: usize = 1 << 20;

/// The rows so far, shared between the connection's observer and the viewers.
pub struct Feed {
    state: Mutex<FeedState>,
    changed: Condvar,
}

struct FeedState {
    analyzer: Analyzer,
    /// Row JSON, in order; the first is row `first`.
    rows: VecDeque<String>,
    first: usize,
    bytes: usize,
    ended: bool,
}

/// What a viewer gets next.
pub enum Next {
    /// Rows from `cursor` on (as one JSON array), after `missed` rows that are gone; the next
    /// cursor.
    Rows {
        missed: usize,
        json: String,
        next: usize,
    },
    /// Nothing new in the time given.
    Idle,
    /// The session ended and the viewer has every row.
    Ended,
}

impl Feed {
    fn new() -> Feed {
        Feed {
            state: Mutex::new(FeedState {
                analyzer: Analyzer::new(),
                rows: VecDeque::new(),
                first: 0,
                bytes: 0,
                ended: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FeedState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, dir: Dir, line: &[u8]) {
        let payload = match std::str::from_utf8(line)
            .ok()
            .and_then(|text| RawValue::from_string(text.to_owned()).ok())
        {
            Some(raw) => Payload::Json(raw),
            None => Payload::NotJson(String::from_utf8_lossy(line).into_owned()),
        };
        let record = Record::on_hop(0, dir, Some(now_us()), payload);
        let mut state = self.lock();
        let row = state.analyzer.push(record);
        let json = RowJson(&row).to_string();
        state.bytes += json.len();
        state.rows.push_back(json);
        while state.bytes > RETAINED_BYTES && state.rows.len() > 1 {
            let gone = state.rows.pop_front().map_or(0, |r| r.len());
            state.bytes -= gone;
            state.first += 1;
        }
        drop(state);
        self.changed.notify_all();
    }

    /// Marks the end of the session: viewers get what is left, then the end.
    pub fn end(&self) {
        self.lock().ended = true;
        self.changed.notify_all();
    }

    /// Rows from `cursor` on, waiting up to `wait` for some.
    pub fn next(&self, cursor: usize, wait: Duration) -> Next {
        let state = self.lock();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, wait, |s| {
                !s.ended && s.first + s.rows.len() <= cursor
            })
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let end = state.first + state.rows.len();
        if cursor >= end {
            return if state.ended { Next::Ended } else { Next::Idle };
        }
        let missed = state.first.saturating_sub(cursor);
        let start = cursor.max(state.first);
        let mut json = String::from("[");
        let mut next = start;
        for row in state.rows.iter().skip(start - state.first) {
            if next > start && json.len() + row.len() > BATCH_BYTES {
                break;
            }
            if next > start {
                json.push(',');
            }
            json.push_str(row);
            next += 1;
        }
        json.push(']');
        Next::Rows { missed, json, next }
    }
}

/// Feeds a connection's lines to the live view; install it as the client connection's
/// observer (what it reads came from the agent).
pub struct FeedObserver(Arc<Feed>);

impl Observer for FeedObserver {
    fn incoming(&self, line: &[u8]) {
        self.0.push(Dir::ToClient, line);
    }

    fn outgoing(&self, line: &[u8]) {
        self.0.push(Dir::ToAgent, line);
    }
}

/// The live view of one connection: its loopback server and its feed. Dropping it ends the
/// view: viewers get the rest of the rows and the end, for at most [`FINISH_GRACE`].
pub struct LiveView {
    feed: Arc<Feed>,
    server: Server,
}

/// How long the end of a session waits for the viewers to receive the last rows.
pub const FINISH_GRACE: Duration = Duration::from_secs(2);

impl LiveView {
    /// Serves the live view of a client connection on a random loopback port.
    pub fn start(title: &str) -> std::io::Result<LiveView> {
        let feed = Arc::new(Feed::new());
        let token = http::new_token();
        let header = Header {
            title: title.to_owned(),
            lanes: super::lane_names(1),
            notes: Vec::new(),
            events: Some(format!("/events?token={token}")),
        };
        let page = render(&header, &[]);
        let server = http::serve(feed.clone(), page, token)?;
        Ok(LiveView { feed, server })
    }

    /// The page's URL, token included.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The observer that feeds this view.
    pub fn observer(&self) -> FeedObserver {
        FeedObserver(self.feed.clone())
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        self.feed.end();
        self.server.finish(FINISH_GRACE);
    }
}
