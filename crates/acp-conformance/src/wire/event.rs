//! What happens on the wire, and the bounded collections the checker keeps of it.

use serde_json::Value;

use crate::client::RpcError;
use crate::limits::{EVIDENCE_CHARS, LOG_LINES, STEP_BYTES, bytes};

/// One thing that happened on the wire.
#[derive(Debug, Clone)]
pub(crate) enum Event {
    /// A notification from the agent.
    Notification {
        method: String,
        params: Value,
        raw: String,
    },
    /// A request from the agent (not answered yet).
    Request {
        id: Value,
        method: String,
        params: Value,
        raw: String,
    },
    /// A response from the agent.
    Response {
        id: Value,
        result: Result<Value, RpcError>,
        raw: String,
        /// Whether the id is one the checker sent (even if answered before), or `null` after
        /// a deliberately invalid line: a response that is not `ours` answers a notification
        /// or nothing at all.
        ours: bool,
    },
    /// A line that is not a JSON-RPC message.
    Garbage { raw: String },
    /// A line shaped like a response but without `id`: not a JSON-RPC message (it counts as
    /// such for `transport.stdout_clean`), yet an answer to something, most likely to a
    /// notification or to a line the agent could not parse.
    Idless {
        result: Result<Value, RpcError>,
        raw: String,
    },
    /// The agent closed its stdout (it exited, most likely), or the checker ended the
    /// connection (a time limit, a flood).
    Eof,
    /// Nothing came before the deadline.
    Timeout,
}

impl Event {
    /// The line as received, for evidence.
    pub fn raw(&self) -> Option<&str> {
        match self {
            Event::Notification { raw, .. }
            | Event::Request { raw, .. }
            | Event::Response { raw, .. }
            | Event::Garbage { raw, .. }
            | Event::Idless { raw, .. } => Some(raw),
            Event::Eof | Event::Timeout => None,
        }
    }

    /// Roughly the memory the event holds: its line and its decoded form.
    pub fn footprint(&self) -> usize {
        let decoded = match self {
            Event::Notification { method, params, .. } | Event::Request { method, params, .. } => {
                method.len() + value_footprint(params)
            }
            Event::Response { result, .. } | Event::Idless { result, .. } => match result {
                Ok(value) => value_footprint(value),
                Err(error) => error.message.len() + value_footprint(&error.raw),
            },
            Event::Garbage { .. } | Event::Eof | Event::Timeout => 0,
        };
        std::mem::size_of::<Event>() + self.raw().map_or(0, str::len) + decoded
    }

    /// For a `session/update`: its session id and `sessionUpdate` kind.
    pub fn session_update(&self) -> Option<(&str, &str)> {
        match self {
            Event::Notification { method, params, .. } if method == "session/update" => Some((
                params
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                params
                    .pointer("/update/sessionUpdate")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            )),
            _ => None,
        }
    }
}

/// Roughly the heap memory of a decoded JSON value: its strings, and for arrays and objects
/// their slots and entries.
fn value_footprint(value: &Value) -> usize {
    const SLOT: usize = std::mem::size_of::<Value>();
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(|v| SLOT + value_footprint(v)).sum(),
        // A map node holds room for eleven entries whatever their number; then each entry's
        // key and the value's slot.
        Value::Object(map) => {
            20 * SLOT
                + map
                    .iter()
                    .map(|(k, v)| k.len() + 2 * SLOT + value_footprint(v))
                    .sum::<usize>()
        }
    }
}

/// The events of one step, bounded by [`STEP_BYTES`] of memory (lines and their decoded form,
/// estimated): what does not fit is counted, not kept.
#[derive(Debug, Clone, Default)]
pub(crate) struct Events {
    items: Vec<Event>,
    bytes: usize,
    /// Events not kept.
    pub dropped: usize,
    /// The bytes of their lines.
    pub dropped_bytes: u64,
}

impl Events {
    /// Keeps `event` if it fits (a first event always does: a line is bounded by the line
    /// length limit), or counts it.
    pub fn push(&mut self, event: Event) {
        let footprint = event.footprint();
        if self.items.is_empty() || self.bytes + footprint <= STEP_BYTES {
            self.bytes += footprint;
            self.items.push(event);
        } else {
            self.dropped += 1;
            self.dropped_bytes += event.raw().map_or(0, str::len) as u64;
        }
    }

    /// Evidence that some events were not kept, if so.
    pub fn note(&self) -> Option<String> {
        (self.dropped > 0).then(|| {
            format!(
                "(… {} more line(s), {}, read and judged but not kept: {} are kept per step)",
                self.dropped,
                bytes(self.dropped_bytes),
                bytes(STEP_BYTES as u64)
            )
        })
    }
}

impl std::ops::Deref for Events {
    type Target = [Event];
    fn deref(&self) -> &[Event] {
        &self.items
    }
}

impl Extend<Event> for Events {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, events: I) {
        for event in events {
            self.push(event);
        }
    }
}

impl IntoIterator for Events {
    type Item = Event;
    type IntoIter = std::vec::IntoIter<Event>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a> IntoIterator for &'a Events {
    type Item = &'a Event;
    type IntoIter = std::slice::Iter<'a, Event>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

/// Evidence lines of one kind of problem on one connection: the first [`LOG_LINES`], and a
/// count (with bytes) of all of them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Capped {
    pub lines: Vec<String>,
    /// How many there were in all.
    pub total: usize,
    /// The bytes of the offending lines, all of them.
    pub bytes: u64,
}

impl Capped {
    /// Counts a problem of `size` bytes, keeping its evidence line while there is room.
    pub fn push(&mut self, line: impl FnOnce() -> String, size: usize) {
        self.total += 1;
        self.bytes += size as u64;
        if self.lines.len() < LOG_LINES {
            self.lines.push(line());
        }
    }

    /// The evidence lines, and a last line counting those not kept.
    pub fn evidence(&self) -> impl Iterator<Item = String> + '_ {
        let more = self.total - self.lines.len();
        self.lines.iter().cloned().chain((more > 0).then(|| {
            format!(
                "(… {more} more, {} in all: {LOG_LINES} are kept per connection)",
                bytes(self.bytes)
            )
        }))
    }
}

/// What one connection saw that breaks a rule whatever the check was doing.
#[derive(Debug, Default)]
pub(crate) struct ConnLog {
    /// Which check or scenario ran the connection.
    pub label: String,
    /// Lines on stdout that are not JSON-RPC messages, with why.
    pub garbage: Capped,
    /// Set when the agent wrote more than [`crate::limits::FLOOD_BYTES`] that is not
    /// JSON-RPC and the checker ended the connection: what happened.
    pub flood: Option<String>,
    /// Responses that answer no request of ours (unknown id, or a second answer).
    pub unsolicited: Capped,
    /// Requests and notifications from the agent that break the schema or a protocol rule.
    pub invalid: Capped,
    /// `elicitation/*` requests from the agent: the checker never advertises elicitation.
    pub elicitations: Capped,
    /// Updates that need `plan` or `subagents`, which the checker never advertises.
    pub ungated: Capped,
}

/// Update kinds that belong to a prompt turn (or a replay), as opposed to state the agent may
/// announce at any time (commands, modes, config, session info, usage).
pub(crate) fn is_turn_content(kind: &str) -> bool {
    matches!(
        kind,
        "user_message_chunk"
            | "agent_message_chunk"
            | "agent_thought_chunk"
            | "tool_call"
            | "tool_call_update"
            | "plan"
            | "plan_update"
            | "plan_removed"
    )
}

/// Received lines for evidence: the first [`LOG_LINES`] of them, and a count of the rest.
pub(crate) fn received_lines<'a>(raws: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut lines = Vec::new();
    let mut more = 0;
    for raw in raws {
        if lines.len() < LOG_LINES {
            lines.push(received(raw));
        } else {
            more += 1;
        }
    }
    if more > 0 {
        lines.push(format!("(… {more} more)"));
    }
    lines
}

/// A received line for evidence: `< {...}`, shortened.
pub(crate) fn received(raw: &str) -> String {
    format!("< {}", shorten(raw))
}

/// A sent line for evidence: `> {...}`, shortened.
pub(crate) fn sent(raw: &str) -> String {
    format!("> {}", shorten(raw))
}

/// `text`, cut to [`EVIDENCE_CHARS`] characters with its size when longer.
pub(crate) fn shorten(text: &str) -> String {
    match text.char_indices().nth(EVIDENCE_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
    }
}

/// The outcome of [`Conn::call`](super::Conn::call).
#[derive(Debug)]
pub(crate) struct Call {
    /// The request as sent.
    pub sent: String,
    /// The response, unless none came in time.
    pub response: Option<Result<Value, RpcError>>,
    /// The response line.
    pub raw: Option<String>,
    /// Everything else that arrived meanwhile (agent requests already answered).
    pub events: Events,
    /// Why there is no response, when the checker ended the connection (time limit, flood).
    pub ended: Option<String>,
}

impl Call {
    /// Evidence: the request and, if any, the response.
    pub fn evidence(&self) -> Vec<String> {
        let mut e = vec![sent(&self.sent)];
        match (&self.raw, &self.ended) {
            (Some(raw), _) => e.push(received(raw)),
            (None, Some(why)) => e.push(format!("(no response: {why})")),
            (None, None) => e.push("(no response)".to_owned()),
        }
        e.extend(self.events.note());
        e
    }
}
