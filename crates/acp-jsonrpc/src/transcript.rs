//! The transcript format: every message of a connection, in order, with its direction, as
//! JSON Lines (`{"dir":"client->agent","msg":{...}}`). Its one line writer and one line
//! reader; acp-test's transcripts and replays, the conductor's trace proxy and `acp --trace`
//! all read and write it through here.
//!
//! A line is `{"dir": DIR, "msg": MESSAGE}`, optionally with `"time_us": MICROS` (when it was
//! written, in microseconds since the Unix epoch) and, instead of `msg`, `"raw": TEXT` for a
//! line of the peer that was not JSON. Readers ignore members they do not know.
//!
//! Byte bounds: the writer holds one line at a time, the message's own length plus at most
//! [`LINE_OVERHEAD_BYTES`] (the same bound as the connection's `max_message_bytes` on what it
//! is given); the reader holds one line and what it parses from it, never more than the line's
//! length in text.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// The most bytes a written line adds to its message: the `dir`, `time_us` and braces
/// (`{"dir":"client->agent","msg":` … `,"time_us":18446744073709551615}` and the newline).
pub const LINE_OVERHEAD_BYTES: usize = 64;

/// Which way a message travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Direction {
    /// Sent by the client, read by the agent (`"client->agent"` in JSON Lines).
    #[serde(rename = "client->agent")]
    ClientToAgent,
    /// Sent by the agent, read by the client (`"agent->client"` in JSON Lines).
    #[serde(rename = "agent->client")]
    AgentToClient,
}

impl Direction {
    /// The other direction.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ClientToAgent => Direction::AgentToClient,
            Direction::AgentToClient => Direction::ClientToAgent,
        }
    }

    /// `client → agent` or `agent → client`, as snapshots show it.
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "client → agent",
            Direction::AgentToClient => "agent → client",
        }
    }

    /// `client->agent` or `agent->client`, as JSON Lines spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "client->agent",
            Direction::AgentToClient => "agent->client",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.arrow())
    }
}

/// One message of a transcript, parsed: `{"dir": "client->agent", "msg": {...}}`.
///
/// `msg` is the JSON-RPC message as sent. A line of the wire that was not JSON (a stray log
/// line) is kept as a JSON string ([`from_wire`](Self::from_wire)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Which way it travelled.
    pub dir: Direction,
    /// The message.
    pub msg: Value,
}

/// What kind of JSON-RPC message an [`Entry`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// Has a `method` and an `id`.
    Request,
    /// Has a `method` and no `id`.
    Notification,
    /// Has an `id` and a `result` or an `error`, no `method`.
    Response,
    /// Anything else (not JSON, not an object, malformed).
    Other,
}

impl Entry {
    /// An entry.
    pub fn new(dir: Direction, msg: Value) -> Entry {
        Entry { dir, msg }
    }

    /// An entry for one line of the wire; a line that is not JSON is kept as a JSON string.
    pub fn from_wire(dir: Direction, line: &[u8]) -> Entry {
        Entry {
            dir,
            msg: wire_message(line),
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        self.msg.get("method").and_then(Value::as_str)
    }

    /// The `id` of a request or response.
    pub fn id(&self) -> Option<&Value> {
        self.msg.get("id")
    }

    /// The `params` of a request or notification.
    pub fn params(&self) -> Option<&Value> {
        self.msg.get("params")
    }

    /// Request, notification, response, or something else.
    pub fn kind(&self) -> MessageKind {
        let Some(object) = self.msg.as_object() else {
            return MessageKind::Other;
        };
        match (object.get("method"), object.contains_key("id")) {
            (Some(Value::String(_)), true) => MessageKind::Request,
            (Some(Value::String(_)), false) => MessageKind::Notification,
            (None, true) if object.contains_key("result") || object.contains_key("error") => {
                MessageKind::Response
            }
            _ => MessageKind::Other,
        }
    }

    /// For a `session/update` notification, its `sessionUpdate` tag (`agent_message_chunk`,
    /// `tool_call`, ...).
    pub fn session_update(&self) -> Option<&str> {
        if self.method() != Some("session/update") {
            return None;
        }
        self.msg
            .pointer("/params/update/sessionUpdate")
            .and_then(Value::as_str)
    }

    /// The entry as one line: `client → agent  {"jsonrpc":"2.0","id":...}`, with the
    /// envelope's members first (`jsonrpc`, `id`, `method`, then `params`, `result` or
    /// `error`).
    pub fn render(&self) -> String {
        format!("{}  {}", self.dir.arrow(), compact_message(&self.msg))
    }

    /// The entry as a line of JSON Lines (with its newline), the message's envelope members
    /// first, as [`write_line`] writes it.
    pub fn to_line(&self) -> String {
        write_line(
            self.dir,
            LineMessage::Json(&compact_message(&self.msg)),
            None,
        )
    }

    /// Parses one line of JSON Lines with [`read_line`]; a line without `msg` is an error.
    pub fn parse_line(line: &str) -> Result<Entry, serde_json::Error> {
        let line = read_line(line)?;
        let msg = line
            .msg
            .ok_or_else(|| <serde_json::Error as serde::de::Error>::missing_field("msg"))?;
        Ok(Entry {
            dir: line.dir,
            msg: serde_json::from_str(msg.get())?,
        })
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

/// One line of the wire as an entry's message: its JSON, or the line as a JSON string when it
/// is not JSON (a stray log line).
pub fn wire_message(line: &[u8]) -> Value {
    serde_json::from_slice(line)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(line).into_owned()))
}

const ENVELOPE: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// One line of JSON with the JSON-RPC envelope's members first (`jsonrpc`, `id`, `method`,
/// then `params`, `result` or `error`), the rest in the map's order.
///
/// ```
/// use acp_jsonrpc::transcript::compact_message;
///
/// let message = serde_json::json!({"method": "m", "jsonrpc": "2.0", "id": 1});
/// assert_eq!(compact_message(&message), r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#);
/// ```
pub fn compact_message(message: &Value) -> String {
    let Some(object) = message.as_object() else {
        return message.to_string();
    };
    let mut parts = Vec::with_capacity(object.len());
    for key in ENVELOPE {
        if let Some(value) = object.get(key) {
            parts.push(format!("{}:{value}", Value::from(key)));
        }
    }
    for (key, value) in object {
        if !ENVELOPE.contains(&key.as_str()) {
            parts.push(format!("{}:{value}", Value::from(key.as_str())));
        }
    }
    format!("{{{}}}", parts.join(","))
}

/// What a written line carries.
#[derive(Clone, Debug)]
pub enum LineMessage<'a> {
    /// JSON text, written as is (the caller has checked that it is JSON and holds no newline,
    /// as a line of the wire never does: the reader splits lines on it).
    Json(&'a str),
    /// A line of the peer that was not JSON, written as the string `raw`.
    NotJson(Cow<'a, str>),
}

impl<'a> LineMessage<'a> {
    /// The line `wire` as it came: [`Json`](Self::Json) when it is JSON text (without its
    /// surrounding whitespace), else
    /// [`NotJson`](Self::NotJson) (lossily decoded).
    pub fn of_wire(wire: &'a [u8]) -> LineMessage<'a> {
        match std::str::from_utf8(wire) {
            // Trimmed: JSON's surrounding whitespace may hold a newline, which would split the
            // line.
            Ok(text) if serde_json::from_str::<&RawValue>(text).is_ok() => {
                LineMessage::Json(text.trim())
            }
            _ => LineMessage::NotJson(String::from_utf8_lossy(wire)),
        }
    }
}

/// The one line writer: `{"dir":DIR,"msg":MESSAGE[,"time_us":MICROS]}` and a newline, or
/// `"raw":TEXT` in place of `msg` for [`LineMessage::NotJson`].
///
/// ```
/// use acp_jsonrpc::transcript::{Direction, LineMessage, write_line};
///
/// let line = write_line(Direction::AgentToClient, LineMessage::Json(r#"{"id":1}"#), Some(7));
/// assert_eq!(line, "{\"dir\":\"agent->client\",\"msg\":{\"id\":1},\"time_us\":7}\n");
/// let line = write_line(Direction::AgentToClient, LineMessage::NotJson("oops".into()), None);
/// assert_eq!(line, "{\"dir\":\"agent->client\",\"raw\":\"oops\"}\n");
/// ```
pub fn write_line(dir: Direction, message: LineMessage<'_>, time_us: Option<u64>) -> String {
    let message_bytes = match &message {
        LineMessage::Json(text) => text.len(),
        LineMessage::NotJson(text) => text.len(),
    };
    let mut line = String::with_capacity(LINE_OVERHEAD_BYTES + message_bytes);
    line.push_str("{\"dir\":\"");
    line.push_str(dir.as_str());
    match message {
        LineMessage::Json(json) => {
            line.push_str("\",\"msg\":");
            line.push_str(json);
        }
        LineMessage::NotJson(text) => {
            line.push_str("\",\"raw\":");
            line.push_str(&Value::from(text.into_owned()).to_string());
        }
    }
    if let Some(time_us) = time_us {
        line.push_str(",\"time_us\":");
        line.push_str(&time_us.to_string());
    }
    line.push_str("}\n");
    line
}

/// One line, read by [`read_line`]: what it says, the message kept as the text it was
/// written as.
#[derive(Debug, Deserialize)]
pub struct Line {
    /// Which way it travelled.
    pub dir: Direction,
    /// The message, as written.
    #[serde(default)]
    pub msg: Option<Box<RawValue>>,
    /// A line of the peer that was not JSON, when there is no `msg`.
    #[serde(default)]
    pub raw: Option<String>,
    /// When it was written, in microseconds since the Unix epoch, if the writer said.
    #[serde(default)]
    pub time_us: Option<u64>,
}

/// Whether a line of a transcript file is to be skipped: blank, or a `//` comment.
pub fn is_comment(line: &str) -> bool {
    let line = line.trim();
    line.is_empty() || line.starts_with("//")
}

/// The one line reader: a line of a transcript file (not a comment, see [`is_comment`]).
///
/// ```
/// use acp_jsonrpc::transcript::{Direction, read_line};
///
/// let line = read_line(r#"{"dir":"client->agent","msg":{"id":1},"time_us":7}"#).unwrap();
/// assert_eq!(line.dir, Direction::ClientToAgent);
/// assert_eq!(line.msg.unwrap().get(), r#"{"id":1}"#);
/// assert_eq!(line.time_us, Some(7));
/// assert!(read_line(r#"{"dir":"sideways","msg":{}}"#).is_err());
/// ```
pub fn read_line(line: &str) -> Result<Line, serde_json::Error> {
    serde_json::from_str(line.trim())
}
