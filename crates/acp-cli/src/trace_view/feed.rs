//! The rows of a running connection for `acp --trace-view`, kept bounded in bytes, and what a
//! viewer gets next: the one place the observer (`live.rs`) writes and the server (`http.rs`)
//! reads, so that neither imports the other.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;

use super::model::Analyzer;
use super::page::RowJson;
use super::record::{Payload, Record, now_us};
use acp_jsonrpc::transcript::Direction;

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
    pub fn new() -> Feed {
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

    /// Adds one line of the connection, as it passed in `dir`.
    pub fn push(&self, dir: Direction, line: &[u8]) {
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
