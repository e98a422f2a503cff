//! What the viewer draws, decided here once for the file and the live view: each message
//! becomes a [`Row`] (its lanes, kind, session, turn, the request an answer answers and the
//! time between, errors and cancellations, the run of streamed chunks it continues), one
//! message at a time, so that rows can be sent as they happen.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::record::{Payload, Record};
use super::summary;

/// What kind of message a row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Has a `method` and an `id`.
    Request,
    /// Has an `id` and a `result` or an `error`.
    Response,
    /// Has a `method` and no `id`.
    Notification,
    /// Not a JSON-RPC message (not JSON, not a record, malformed).
    Other,
}

/// One message as the viewer draws it: an arrow from lane `from` to lane `to`.
#[derive(Debug, Serialize)]
pub struct Row {
    /// Its position in the transcript, from 0.
    pub i: usize,
    /// The lane it left.
    pub from: usize,
    /// The lane it reached.
    pub to: usize,
    /// Milliseconds since the transcript's first message, when the transcript has times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t: Option<f64>,
    /// Request, response, notification or other.
    pub kind: Kind,
    /// The method; for a response, the method of the request it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A `session/update`'s `sessionUpdate` tag (`tool_call`, `agent_message_chunk`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
    /// The JSON-RPC id, as JSON text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The session it belongs to (its `sessionId`, or its request's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The turn it belongs to: the row of the `session/prompt` request whose turn was running
    /// in its session between the same two lanes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    /// For a response: the row of the request it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answers: Option<usize>,
    /// For a response: milliseconds since its request, when the transcript has times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed: Option<f64>,
    /// What went wrong: an error response's code and message, or why a line is no message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A cancellation: `session/cancel`, `$/cancel_request`, a turn that ended `cancelled`, a
    /// permission answered `cancelled`, an error `-32800`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cancel: bool,
    /// For a streamed chunk that continues a run: the row of the run's first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fold: Option<usize>,
    /// For a streamed text chunk: its text, which the viewer joins along the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// One short line about what it says.
    pub summary: String,
    /// The message as it was sent (a JSON string for a line that was not JSON).
    pub msg: Box<RawValue>,
}

/// A request waiting for its answer.
struct Pending {
    row: usize,
    method: String,
    session: Option<String>,
    turn: Option<usize>,
    time_us: Option<u64>,
}

/// What a run of streamed chunks has in common: lanes, session and chunk kind.
type RunKey = (usize, usize, Option<String>, String);

/// How many requests may wait for an answer before the oldest are forgotten (their answers
/// then show as answering nothing). Bounds what a peer that never answers makes the live view
/// keep.
const PENDING_LIMIT: usize = 65_536;

/// Turns messages into rows, in order. Remembers the requests in flight (at most
/// [`PENDING_LIMIT`]), the running turn of each session and the current run of chunks.
#[derive(Default)]
pub struct Analyzer {
    next: usize,
    first_time_us: Option<u64>,
    /// By sender lane, receiver lane and id.
    pending: HashMap<(usize, usize, String), Pending>,
    /// By the two lanes and the session: the row of the running prompt.
    turns: HashMap<((usize, usize), String), usize>,
    run: Option<(RunKey, usize)>,
}

impl Analyzer {
    /// An analyzer at the start of a transcript.
    pub fn new() -> Analyzer {
        Analyzer::default()
    }

    /// The next message's row.
    pub fn push(&mut self, record: Record) -> Row {
        let i = self.next;
        self.next += 1;
        let (from, to, time_us) = (record.from, record.to, record.time_us);
        if self.first_time_us.is_none() {
            self.first_time_us = time_us;
        }
        let t = match (time_us, self.first_time_us) {
            (Some(now), Some(first)) => Some(millis(now.saturating_sub(first))),
            _ => None,
        };
        let mut row = Row {
            i,
            from,
            to,
            t,
            kind: Kind::Other,
            method: None,
            update: None,
            id: None,
            session: None,
            turn: None,
            answers: None,
            elapsed: None,
            error: None,
            cancel: false,
            fold: None,
            text: None,
            summary: String::new(),
            msg: string_json(""),
        };
        let msg = match record.payload {
            Payload::Json(raw) => {
                let value = serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null);
                row.msg = raw;
                value
            }
            Payload::NotJson(text) => {
                row.error = Some("not JSON".to_owned());
                row.summary = summary::clip(&text);
                row.msg = string_json(&text);
                self.run = None;
                return row;
            }
            Payload::NotARecord { line, text } => {
                row.error = Some(format!("line {line} is not a transcript record"));
                row.summary = summary::clip(&text);
                row.msg = string_json(&text);
                self.run = None;
                return row;
            }
        };
        self.classify(&mut row, &msg, time_us);
        self.fold(&mut row, &msg);
        row
    }

    fn classify(&mut self, row: &mut Row, msg: &Value, time_us: Option<u64>) {
        // A session's turn runs between two lanes; the lane nearer the client first.
        let link = (row.from.min(row.to), row.from.max(row.to));
        let Some(object) = msg.as_object() else {
            row.error = Some("not a JSON-RPC message".to_owned());
            row.summary = summary::clip(&msg.to_string());
            return;
        };
        let id = object.get("id").map(Value::to_string);
        match (object.get("method").and_then(Value::as_str), &id) {
            (Some(method), _) => {
                row.kind = if id.is_some() {
                    Kind::Request
                } else {
                    Kind::Notification
                };
                row.method = Some(method.to_owned());
                row.id = id.clone();
                let params = object.get("params").unwrap_or(&Value::Null);
                row.session = params
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                row.update = params
                    .pointer("/update/sessionUpdate")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                row.cancel = matches!(method, "session/cancel" | "$/cancel_request");
                row.summary = summary::of_call(method, params);
                if let Some(session) = &row.session {
                    row.turn = self.turns.get(&(link, session.clone())).copied();
                    if method == "session/prompt" && row.kind == Kind::Request {
                        row.turn = Some(row.i);
                        if self.turns.len() >= PENDING_LIMIT {
                            // Prompts that were never answered, in sessions without end.
                            self.turns.clear();
                        }
                        self.turns.insert((link, session.clone()), row.i);
                    }
                }
                if let Some(id) = id {
                    self.remember(
                        (row.from, row.to, id),
                        Pending {
                            row: row.i,
                            method: method.to_owned(),
                            session: row.session.clone(),
                            turn: row.turn,
                            time_us,
                        },
                    );
                }
            }
            (None, Some(id)) if object.contains_key("result") || object.contains_key("error") => {
                row.kind = Kind::Response;
                row.id = Some(id.clone());
                let request = self.pending.remove(&(row.to, row.from, id.clone()));
                let method = request.as_ref().map(|p| p.method.as_str());
                if let Some(error) = object.get("error") {
                    let code = error.get("code").and_then(Value::as_i64);
                    row.cancel = code == Some(-32800);
                    let text = summary::of_error(error);
                    if !row.cancel {
                        row.error = Some(text.clone());
                    }
                    row.summary = text;
                } else {
                    let result = object.get("result").unwrap_or(&Value::Null);
                    row.summary = summary::of_result(method, result);
                    row.cancel = result.get("stopReason").and_then(Value::as_str)
                        == Some("cancelled")
                        || result.pointer("/outcome/outcome").and_then(Value::as_str)
                            == Some("cancelled");
                }
                match request {
                    Some(request) => {
                        row.answers = Some(request.row);
                        row.elapsed = match (time_us, request.time_us) {
                            (Some(now), Some(then)) => Some(millis(now.saturating_sub(then))),
                            _ => None,
                        };
                        if request.method == "session/prompt"
                            && let Some(session) = &request.session
                            && self.turns.get(&(link, session.clone())) == Some(&request.row)
                        {
                            self.turns.remove(&(link, session.clone()));
                        }
                        row.session = request.session;
                        row.turn = request.turn;
                        row.method = Some(request.method);
                    }
                    None => {
                        row.summary = format!("answers no request seen · {}", row.summary);
                    }
                }
            }
            _ => {
                row.error = Some("not a JSON-RPC message".to_owned());
                row.summary = summary::clip(&msg.to_string());
            }
        }
    }

    /// Streamed text chunks of one kind, one after the other in one session, are one run.
    fn fold(&mut self, row: &mut Row, msg: &Value) {
        let chunk = matches!(
            row.update.as_deref(),
            Some("agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk")
        );
        let text = msg
            .pointer("/params/update/content")
            .filter(|content| content.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|content| content.get("text"))
            .and_then(Value::as_str);
        let (true, Some(text)) = (chunk, text) else {
            self.run = None;
            return;
        };
        row.text = Some(text.to_owned());
        let key = (
            row.from,
            row.to,
            row.session.clone(),
            row.update.clone().unwrap_or_default(),
        );
        match &self.run {
            Some((run, head)) if *run == key => row.fold = Some(*head),
            _ => self.run = Some((key, row.i)),
        }
    }

    fn remember(&mut self, key: (usize, usize, String), pending: Pending) {
        if self.pending.len() >= PENDING_LIMIT {
            let oldest = self.next.saturating_sub(PENDING_LIMIT);
            self.pending.retain(|_, p| p.row >= oldest);
            if self.pending.len() >= PENDING_LIMIT {
                self.pending.clear();
            }
        }
        // A second request with an id still in flight (a peer's bug) takes the id over.
        self.pending.insert(key, pending);
    }
}

fn millis(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

fn string_json(text: &str) -> Box<RawValue> {
    RawValue::from_string(Value::from(text).to_string()).expect("a JSON string is JSON")
}
