//! Transcripts: every message of a connection, in order, with its direction; JSON Lines on
//! disk (the format and its line reader and writer are `acp_jsonrpc::transcript`), one
//! readable line per message in snapshots.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_jsonrpc::{ConnectionOptions, Observer, transcript};
use serde_json::Value;

pub use acp_jsonrpc::transcript::{Direction, Entry, MessageKind, compact_message};

const ENVELOPE: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// Pretty JSON with the JSON-RPC envelope's members first.
pub(crate) fn pretty_message(message: &Value) -> String {
    let Some(object) = message.as_object() else {
        return serde_json::to_string_pretty(message).unwrap_or_default();
    };
    let pretty = |value: &Value| {
        serde_json::to_string_pretty(value)
            .unwrap_or_default()
            .replace('\n', "\n  ")
    };
    let mut parts = Vec::with_capacity(object.len());
    for key in ENVELOPE {
        if let Some(value) = object.get(key) {
            parts.push(format!("  {}: {}", Value::from(key), pretty(value)));
        }
    }
    for (key, value) in object {
        if !ENVELOPE.contains(&key.as_str()) {
            parts.push(format!(
                "  {}: {}",
                Value::from(key.as_str()),
                pretty(value)
            ));
        }
    }
    if parts.is_empty() {
        return "{}".to_owned();
    }
    format!("{{\n{}\n}}", parts.join(",\n"))
}

/// Every message of a connection in order, each with its [`Direction`].
///
/// Stored as JSON Lines ([`parse`](Self::parse), [`to_jsonl`](Self::to_jsonl)); shown in
/// snapshots one message per line ([`render`](Self::render)) or as pretty JSON
/// ([`render_pretty`](Self::render_pretty)); made stable across runs by a
/// [`Normalizer`](crate::Normalizer) ([`Normalizer::normalize`](crate::Normalizer::normalize)).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transcript {
    entries: Vec<Entry>,
}

/// A transcript file that could not be read.
#[derive(Debug)]
pub enum TranscriptError {
    /// The file could not be read.
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        error: std::io::Error,
    },
    /// A line is not a `{"dir": ..., "msg": ...}` object.
    Line {
        /// Its 1-based number.
        line: usize,
        /// What is wrong with it.
        error: String,
    },
}

impl fmt::Display for TranscriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TranscriptError::Io { path, error } => write!(f, "cannot read {path}: {error}"),
            TranscriptError::Line { line, error } => write!(
                f,
                "line {line}: {error} (expected {{\"dir\": \"client->agent\" or \"agent->client\", \"msg\": <message>}})"
            ),
        }
    }
}

impl std::error::Error for TranscriptError {}

impl Transcript {
    /// An empty transcript.
    pub fn new() -> Transcript {
        Transcript::default()
    }

    /// Parses JSON Lines: one `{"dir": ..., "msg": ...}` object per line; blank lines and lines
    /// starting with `//` are skipped.
    pub fn parse(jsonl: &str) -> Result<Transcript, TranscriptError> {
        let mut entries = Vec::new();
        for (index, line) in jsonl.lines().enumerate() {
            if transcript::is_comment(line) {
                continue;
            }
            let entry = Entry::parse_line(line).map_err(|error| TranscriptError::Line {
                line: index + 1,
                error: error.to_string(),
            })?;
            entries.push(entry);
        }
        Ok(Transcript { entries })
    }

    /// Reads and parses a `.jsonl` file.
    pub fn load(path: impl AsRef<Path>) -> Result<Transcript, TranscriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| TranscriptError::Io {
            path: path.display().to_string(),
            error,
        })?;
        Transcript::parse(&text)
    }

    /// The transcript as JSON Lines, one entry per line, ending with a newline; each message
    /// with the JSON-RPC envelope's members first (`jsonrpc`, `id`, `method`, then `params`,
    /// `result` or `error`).
    pub fn to_jsonl(&self) -> String {
        self.entries.iter().map(Entry::to_line).collect()
    }

    /// Writes [`to_jsonl`](Self::to_jsonl) to `path`, creating its directory.
    pub fn save(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, self.to_jsonl())
    }

    /// Appends an entry.
    pub fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entries, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Entry> {
        self.entries.iter()
    }

    /// How many messages.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no message.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries for which `keep` returns true (for example, without the message chunks).
    pub fn filter(&self, keep: impl Fn(&Entry) -> bool) -> Transcript {
        self.entries.iter().filter(|e| keep(e)).cloned().collect()
    }

    /// One line per message: `client → agent  {...}` / `agent → client  {...}`, the form
    /// [`assert_transcript!`](crate::assert_transcript) snapshots.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for entry in &self.entries {
            out.push_str(&entry.render());
            out.push('\n');
        }
        out
    }

    /// Each message as pretty JSON under its direction, separated by blank lines: longer,
    /// easier to read when messages are large.
    pub fn render_pretty(&self) -> String {
        let mut out = String::new();
        for (index, entry) in self.entries.iter().enumerate() {
            if index > 0 {
                out.push('\n');
            }
            out.push_str(entry.dir.arrow());
            out.push('\n');
            out.push_str(&pretty_message(&entry.msg));
            out.push('\n');
        }
        out
    }

    /// One short line per message, without payloads: `client → agent  request <id:1>
    /// session/prompt`, `agent → client  session/update tool_call`, `agent → client  response
    /// <id:1> error -32602`. For snapshots that pin the shape of a conversation only.
    pub fn outline(&self) -> String {
        let mut out = String::new();
        for entry in &self.entries {
            let id = entry.id().map(|id| match id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            let line = match entry.kind() {
                MessageKind::Request => format!(
                    "request {} {}",
                    id.unwrap_or_default(),
                    entry.method().unwrap_or_default()
                ),
                MessageKind::Notification => match entry.session_update() {
                    Some(update) => format!("session/update {update}"),
                    None => entry.method().unwrap_or_default().to_owned(),
                },
                MessageKind::Response => match entry.msg.get("error") {
                    Some(error) => format!(
                        "response {} error {}",
                        id.unwrap_or_default(),
                        error.get("code").unwrap_or(&Value::Null)
                    ),
                    None => format!("response {}", id.unwrap_or_default()),
                },
                MessageKind::Other => compact_message(&entry.msg),
            };
            out.push_str(entry.dir.arrow());
            out.push_str("  ");
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

impl fmt::Display for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl FromIterator<Entry> for Transcript {
    fn from_iter<I: IntoIterator<Item = Entry>>(iter: I) -> Self {
        Transcript {
            entries: iter.into_iter().collect(),
        }
    }
}

impl IntoIterator for Transcript {
    type Item = Entry;
    type IntoIter = std::vec::IntoIter<Entry>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a Transcript {
    type Item = &'a Entry;
    type IntoIter = std::slice::Iter<'a, Entry>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

impl Extend<Entry> for Transcript {
    fn extend<I: IntoIterator<Item = Entry>>(&mut self, iter: I) {
        self.entries.extend(iter);
    }
}

/// An [`Observer`] that records a connection's traffic into a [`Transcript`].
///
/// Install it on one end of a connection ([`connection_options`](Self::connection_options));
/// it must know which end, to tell the directions apart. Cheap to clone: clones share the
/// recording.
///
/// ```
/// use acp_test::{Direction, Recorder};
/// use acp_jsonrpc::Observer;
///
/// let recorder = Recorder::agent_side();
/// recorder.incoming(br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#);
/// let transcript = recorder.transcript();
/// assert_eq!(transcript.entries()[0].dir, Direction::ClientToAgent);
/// ```
#[derive(Clone)]
pub struct Recorder {
    incoming: Direction,
    entries: Arc<Mutex<Vec<Entry>>>,
}

impl Recorder {
    /// A recorder for the agent's end: what it reads came from the client.
    pub fn agent_side() -> Recorder {
        Recorder {
            incoming: Direction::ClientToAgent,
            entries: Arc::default(),
        }
    }

    /// A recorder for the client's end: what it reads came from the agent.
    pub fn client_side() -> Recorder {
        Recorder {
            incoming: Direction::AgentToClient,
            entries: Arc::default(),
        }
    }

    /// Default connection options with this recorder as the observer.
    pub fn connection_options(&self) -> ConnectionOptions {
        ConnectionOptions::default().with_observer(self.clone())
    }

    /// What was recorded so far, as sent (not normalized).
    pub fn transcript(&self) -> Transcript {
        self.entries.lock().unwrap().iter().cloned().collect()
    }

    /// How many messages were recorded so far.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }

    /// Whether nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits until a recorded message satisfies `found` and returns it; panics after
    /// `timeout`. For tests that act at a given point of a conversation, e.g. cancel once the
    /// agent asked for permission.
    pub async fn wait_for(&self, timeout: Duration, found: impl Fn(&Entry) -> bool) -> Entry {
        let entries = self.entries.clone();
        let search = move || entries.lock().unwrap().iter().find(|e| found(e)).cloned();
        match crate::wait::poll_until(timeout, search).await {
            Some(entry) => entry,
            None => panic!(
                "no recorded message matched within {timeout:?}; recorded so far:\n{}",
                self.transcript().render()
            ),
        }
    }

    fn record(&self, dir: Direction, line: &[u8]) {
        let entry = Entry::from_wire(dir, line);
        self.entries.lock().unwrap().push(entry);
    }
}

impl Observer for Recorder {
    fn incoming(&self, line: &[u8]) {
        self.record(self.incoming, line);
    }

    fn outgoing(&self, line: &[u8]) {
        self.record(self.incoming.reverse(), line);
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("incoming", &self.incoming)
            .field("messages", &self.len())
            .finish()
    }
}
