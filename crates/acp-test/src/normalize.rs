//! Making transcripts stable across runs: what varies (ids, paths, timestamps, versions) is
//! replaced by placeholders that keep references consistent.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::transcript::{Direction, Entry, Transcript};

type Hook = Arc<dyn Fn(&mut Value) + Send + Sync>;

/// Replaces what varies between runs of the same conversation by stable placeholders, so that
/// transcripts can be compared and snapshotted.
///
/// Each value gets a placeholder numbered by its first appearance, and keeps it everywhere
/// after, so references stay consistent: the response to a request carries the request's
/// placeholder, a terminal embedded in a tool call shows the id `terminal/create` returned.
///
/// | what | where | placeholder |
/// |---|---|---|
/// | JSON-RPC request ids, one numbering per direction | `id` of requests and responses, `requestId` of `$/cancel_request` | `<id:1>`, `<id:2>`, ... |
/// | session ids | every `sessionId` member, and `senderSessionId` and `recipientSessionId` (a subagent's messages) | `<session:1>`, ... |
/// | terminal ids | every `terminalId` member | `<terminal:1>`, ... |
/// | tool call ids | every `toolCallId` member | `<tool-call:1>`, ... |
/// | session and terminal ids of at least 6 characters inside other strings (error messages) | any string | as above |
/// | directories given to [`path`](Self::path) / [`temp_dir`](Self::temp_dir) | inside any string | `<tmp>` (or yours) |
/// | ISO-8601 date-times (`2025-01-31T12:00:00Z`, with fractions or offsets) | whole strings | `<timestamp>` |
/// | implementation versions | `version` of `clientInfo` and `agentInfo` (and v2's `info`) | `<version>` |
/// | protocol v2's message ids and idempotency keys, only when asked ([`message_ids`](Self::message_ids)) | every `messageId` and `idempotencyKey` member | `<message:1>`, `<key:1>`, ... |
///
/// Then the redaction hooks run on each message, in the order they were added.
///
/// ```
/// use acp_test::{Direction, Entry, Normalizer, Transcript};
/// use serde_json::json;
///
/// let transcript: Transcript = [
///     Entry::new(Direction::ClientToAgent, json!({"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
///         "params": {"sessionId": "sess_9f2c", "prompt": []}})),
///     Entry::new(Direction::AgentToClient, json!({"jsonrpc": "2.0", "id": 7,
///         "result": {"stopReason": "end_turn"}})),
/// ]
/// .into_iter()
/// .collect();
/// let normalized = Normalizer::new().normalize(&transcript);
/// assert_eq!(normalized.entries()[0].msg["id"], "<id:1>");
/// assert_eq!(normalized.entries()[0].msg["params"]["sessionId"], "<session:1>");
/// assert_eq!(normalized.entries()[1].msg["id"], "<id:1>");
/// ```
#[derive(Clone)]
pub struct Normalizer {
    request_ids: bool,
    session_ids: bool,
    terminal_ids: bool,
    tool_call_ids: bool,
    message_ids: bool,
    timestamps: bool,
    versions: bool,
    paths: Vec<(String, String)>,
    hooks: Vec<Hook>,
}

impl Default for Normalizer {
    fn default() -> Self {
        Normalizer::new()
    }
}

impl fmt::Debug for Normalizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Normalizer")
            .field("request_ids", &self.request_ids)
            .field("session_ids", &self.session_ids)
            .field("terminal_ids", &self.terminal_ids)
            .field("tool_call_ids", &self.tool_call_ids)
            .field("message_ids", &self.message_ids)
            .field("timestamps", &self.timestamps)
            .field("versions", &self.versions)
            .field("paths", &self.paths)
            .field("hooks", &self.hooks.len())
            .finish()
    }
}

/// The length from which a known session or terminal id is also replaced inside other strings.
const MIN_EMBEDDED_ID: usize = 6;

/// The value a `<timestamp>` placeholder is sent as when a replay plays it.
pub(crate) const TIMESTAMP_VALUE: &str = "2025-01-01T00:00:00Z";

impl Normalizer {
    /// Every built-in normalization on (see the table above), no directory, no hook.
    pub fn new() -> Normalizer {
        Normalizer {
            request_ids: true,
            session_ids: true,
            terminal_ids: true,
            tool_call_ids: true,
            // Off: v1's own `messageId`s (a subagent's session messages) are pinned as sent.
            message_ids: false,
            timestamps: true,
            versions: true,
            paths: Vec::new(),
            hooks: Vec::new(),
        }
    }

    /// Nothing at all: the transcript as sent (add what you need).
    pub fn none() -> Normalizer {
        Normalizer {
            request_ids: false,
            session_ids: false,
            terminal_ids: false,
            tool_call_ids: false,
            message_ids: false,
            timestamps: false,
            versions: false,
            paths: Vec::new(),
            hooks: Vec::new(),
        }
    }

    /// Whether request ids become `<id:N>`.
    pub fn request_ids(mut self, on: bool) -> Normalizer {
        self.request_ids = on;
        self
    }

    /// Whether session ids become `<session:N>`.
    pub fn session_ids(mut self, on: bool) -> Normalizer {
        self.session_ids = on;
        self
    }

    /// Whether protocol v2's `messageId`s and `idempotencyKey`s become `<message:N>` and
    /// `<key:N>` (drawn at random by the runtime; on for `acp_test::v2::connect`'s pairs).
    pub fn message_ids(mut self, on: bool) -> Normalizer {
        self.message_ids = on;
        self
    }

    /// Whether terminal ids become `<terminal:N>`.
    pub fn terminal_ids(mut self, on: bool) -> Normalizer {
        self.terminal_ids = on;
        self
    }

    /// Whether tool call ids become `<tool-call:N>`. Turn it off when your agent's tool call
    /// ids are deterministic and you want to see them.
    pub fn tool_call_ids(mut self, on: bool) -> Normalizer {
        self.tool_call_ids = on;
        self
    }

    /// Whether ISO-8601 date-times become `<timestamp>`.
    pub fn timestamps(mut self, on: bool) -> Normalizer {
        self.timestamps = on;
        self
    }

    /// Whether `clientInfo.version` and `agentInfo.version` become `<version>`.
    pub fn versions(mut self, on: bool) -> Normalizer {
        self.versions = on;
        self
    }

    /// Replaces the directory `dir` by `placeholder` inside every string (`/tmp/x1/a.txt` →
    /// `<tmp>/a.txt`); its canonical form too, when it differs. A longer directory wins over a
    /// shorter one that contains it.
    pub fn path(mut self, dir: impl AsRef<Path>, placeholder: impl Into<String>) -> Normalizer {
        let placeholder = placeholder.into();
        let dir = dir.as_ref();
        let mut forms = vec![dir.to_path_buf()];
        if let Ok(canonical) = std::fs::canonicalize(dir)
            && canonical != dir
        {
            forms.push(canonical);
        }
        for form in forms {
            let text = form.to_string_lossy().trim_end_matches('/').to_owned();
            if !text.is_empty() && !self.paths.iter().any(|(p, _)| *p == text) {
                self.paths.push((text, placeholder.clone()));
            }
        }
        self.paths
            .sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        self
    }

    /// [`path`](Self::path) with the placeholder `<tmp>`: for the scratch directory of a test.
    pub fn temp_dir(self, dir: impl AsRef<Path>) -> Normalizer {
        self.path(dir, "<tmp>")
    }

    /// Adds a redaction hook: it sees every message (after the built-in normalization) and
    /// may change it.
    ///
    /// ```
    /// use acp_test::Normalizer;
    /// // Hide the usage figures an agent reports, which depend on the model.
    /// let normalizer = Normalizer::new().redact(|message| {
    ///     if let Some(update) = message.pointer_mut("/params/update")
    ///         && update["sessionUpdate"] == "usage_update"
    ///     {
    ///         update["used"] = "<used>".into();
    ///     }
    /// });
    /// # drop(normalizer);
    /// ```
    pub fn redact(mut self, hook: impl Fn(&mut Value) + Send + Sync + 'static) -> Normalizer {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Replaces the value of every object member named `key`, at any depth, by `replacement`.
    ///
    /// ```
    /// use acp_test::Normalizer;
    /// let normalizer = Normalizer::new().redact_field("updatedAt", "<when>");
    /// # drop(normalizer);
    /// ```
    pub fn redact_field(self, key: impl Into<String>, replacement: impl Into<Value>) -> Normalizer {
        let key = key.into();
        let replacement = replacement.into();
        self.redact(move |message| replace_member(message, &key, &replacement))
    }

    /// The transcript with every normalization and hook applied. Numbering starts afresh for
    /// each call.
    pub fn normalize(&self, transcript: &Transcript) -> Transcript {
        let mut state = State::default();
        transcript
            .iter()
            .map(|entry| {
                let mut msg = entry.msg.clone();
                self.normalize_message(&mut state, entry.dir, &mut msg);
                self.apply_hooks(&mut msg);
                Entry::new(entry.dir, msg)
            })
            .collect()
    }

    /// The directories and their placeholders, longest first.
    pub(crate) fn paths(&self) -> &[(String, String)] {
        &self.paths
    }

    pub(crate) fn apply_hooks(&self, message: &mut Value) {
        for hook in &self.hooks {
            hook(message);
        }
    }

    /// The built-in normalizations of one message, continuing the numbering in `state`.
    pub(crate) fn normalize_message(&self, state: &mut State, dir: Direction, message: &mut Value) {
        if self.request_ids
            && let Some(object) = message.as_object_mut()
        {
            let is_request = object.get("method").is_some_and(Value::is_string);
            let cancel = object.get("method").and_then(Value::as_str) == Some("$/cancel_request");
            if let Some(id) = object.get_mut("id")
                && !id.is_null()
            {
                let namespace = if is_request { dir } else { dir.reverse() };
                *id = Value::String(state.requests(namespace).placeholder("id", id));
            }
            if cancel
                && let Some(id) = object
                    .get_mut("params")
                    .and_then(|p| p.get_mut("requestId"))
                && !id.is_null()
            {
                *id = Value::String(state.requests(dir).placeholder("id", id));
            }
        }
        self.normalize_members(state, message);
        let mut patterns: Vec<Pattern> = self
            .paths
            .iter()
            .map(|(from, to)| Pattern::path(from, to))
            .collect();
        for ids in [&state.sessions, &state.terminals] {
            for (concrete, placeholder) in ids.string_pairs() {
                if concrete.len() >= MIN_EMBEDDED_ID && concrete != placeholder {
                    patterns.push(Pattern::id(&concrete, placeholder));
                }
            }
        }
        patterns.sort_by(|a, b| b.from.len().cmp(&a.from.len()).then(a.from.cmp(&b.from)));
        self.normalize_strings(message, &patterns);
    }

    fn normalize_members(&self, state: &mut State, value: &mut Value) {
        match value {
            Value::Object(object) => {
                for (key, member) in object.iter_mut() {
                    let (on, ids, kind) = match key.as_str() {
                        // A subagent's session messages name sessions as sender and recipient:
                        // the same ids, so the same placeholders.
                        "sessionId" | "senderSessionId" | "recipientSessionId" => {
                            (self.session_ids, &mut state.sessions, "session")
                        }
                        "terminalId" => (self.terminal_ids, &mut state.terminals, "terminal"),
                        "toolCallId" => (self.tool_call_ids, &mut state.tool_calls, "tool-call"),
                        "messageId" => (self.message_ids, &mut state.messages, "message"),
                        "idempotencyKey" => (self.message_ids, &mut state.keys, "key"),
                        "clientInfo" | "agentInfo" | "info" => {
                            if self.versions
                                && let Some(version) = member.get_mut("version")
                                && version.is_string()
                            {
                                *version = Value::from("<version>");
                            }
                            self.normalize_members(state, member);
                            continue;
                        }
                        _ => {
                            self.normalize_members(state, member);
                            continue;
                        }
                    };
                    if on && member.is_string() {
                        *member = Value::String(ids.placeholder(kind, member));
                    } else {
                        self.normalize_members(state, member);
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.normalize_members(state, item);
                }
            }
            _ => {}
        }
    }

    fn normalize_strings(&self, value: &mut Value, patterns: &[Pattern]) {
        match value {
            Value::String(text) => {
                if self.timestamps && is_timestamp(text) {
                    *text = "<timestamp>".to_owned();
                } else if !patterns.is_empty() {
                    *text = replace_patterns(text, patterns);
                }
            }
            Value::Object(object) => {
                for member in object.values_mut() {
                    self.normalize_strings(member, patterns);
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.normalize_strings(item, patterns);
                }
            }
            _ => {}
        }
    }
}

fn replace_member(value: &mut Value, key: &str, replacement: &Value) {
    match value {
        Value::Object(object) => {
            for (name, member) in object.iter_mut() {
                if name == key {
                    *member = replacement.clone();
                } else {
                    replace_member(member, key, replacement);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                replace_member(item, key, replacement);
            }
        }
        _ => {}
    }
}

/// One text replacement inside strings.
pub(crate) struct Pattern {
    pub(crate) from: String,
    pub(crate) to: String,
    /// Ids must not be glued to other word characters on either side; paths only on the right
    /// (`/tmp/a` must not match inside `/tmp/ab`).
    check_before: bool,
}

impl Pattern {
    pub(crate) fn path(from: &str, to: &str) -> Pattern {
        Pattern {
            from: from.to_owned(),
            to: to.to_owned(),
            check_before: false,
        }
    }

    pub(crate) fn id(from: &str, to: &str) -> Pattern {
        Pattern {
            from: from.to_owned(),
            to: to.to_owned(),
            check_before: true,
        }
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-' || c == '.'
}

/// Replaces every occurrence of the patterns (the first that matches at a position wins, so
/// pass the longest first), in one left-to-right pass that never looks at replaced text.
pub(crate) fn replace_patterns(text: &str, patterns: &[Pattern]) -> String {
    if !patterns.iter().any(|p| text.contains(&p.from)) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut position = 0;
    let mut previous: Option<char> = None;
    'scan: while position < text.len() {
        let rest = &text[position..];
        for pattern in patterns {
            if pattern.from.is_empty() || !rest.starts_with(&pattern.from) {
                continue;
            }
            let after = rest[pattern.from.len()..].chars().next();
            let glued_after = after.is_some_and(is_word) && !pattern.from.ends_with('/');
            let glued_before = pattern.check_before && previous.is_some_and(is_word);
            if glued_after || glued_before {
                continue;
            }
            out.push_str(&pattern.to);
            position += pattern.from.len();
            previous = pattern.from.chars().last();
            continue 'scan;
        }
        let c = rest.chars().next().expect("not at the end");
        out.push(c);
        position += c.len_utf8();
        previous = Some(c);
    }
    out
}

/// Whether `text` is, as a whole, an ISO-8601 date-time: `YYYY-MM-DDTHH:MM:SS` (or with a
/// space or `t` in the middle), optional fraction of seconds, optional `Z` or `±HH:MM` /
/// `±HHMM` offset.
pub fn is_timestamp(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        range.end <= b.len() && b[range].iter().all(u8::is_ascii_digit)
    };
    if b.len() < 19
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || !matches!(b[10], b'T' | b't' | b' ')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        None => true,
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let offset = &b[i + 1..];
            match offset.len() {
                5 => {
                    offset[2] == b':'
                        && offset[..2].iter().all(u8::is_ascii_digit)
                        && offset[3..].iter().all(u8::is_ascii_digit)
                }
                4 => offset.iter().all(u8::is_ascii_digit),
                _ => false,
            }
        }
        Some(_) => false,
    }
}

/// The numbering state of a normalization in progress.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    client_requests: Ids,
    agent_requests: Ids,
    pub(crate) sessions: Ids,
    pub(crate) terminals: Ids,
    pub(crate) tool_calls: Ids,
    pub(crate) messages: Ids,
    pub(crate) keys: Ids,
}

impl State {
    /// The ids of the requests that travel in `dir` (and of their responses).
    pub(crate) fn requests(&mut self, dir: Direction) -> &mut Ids {
        match dir {
            Direction::ClientToAgent => &mut self.client_requests,
            Direction::AgentToClient => &mut self.agent_requests,
        }
    }
}

/// Concrete values and their placeholders, both ways.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ids {
    /// The concrete value's JSON text → its placeholder.
    forward: HashMap<String, String>,
    backward: HashMap<String, Value>,
    count: usize,
}

impl Ids {
    /// The placeholder of `concrete`, numbering it if it is new.
    pub(crate) fn placeholder(&mut self, kind: &str, concrete: &Value) -> String {
        let key = concrete.to_string();
        if let Some(placeholder) = self.forward.get(&key) {
            return placeholder.clone();
        }
        let placeholder = loop {
            self.count += 1;
            let candidate = format!("<{kind}:{}>", self.count);
            if !self.backward.contains_key(&candidate) {
                break candidate;
            }
        };
        self.forward.insert(key, placeholder.clone());
        self.backward.insert(placeholder.clone(), concrete.clone());
        placeholder
    }

    /// The concrete value behind a placeholder, once known.
    pub(crate) fn concrete(&self, placeholder: &str) -> Option<&Value> {
        self.backward.get(placeholder)
    }

    /// Records that `placeholder` stands for `concrete`.
    pub(crate) fn bind(&mut self, placeholder: &str, concrete: Value) {
        self.forward
            .insert(concrete.to_string(), placeholder.to_owned());
        self.backward.insert(placeholder.to_owned(), concrete);
    }

    /// (concrete string, placeholder) pairs, for text replacement.
    pub(crate) fn string_pairs(&self) -> impl Iterator<Item = (String, &str)> {
        self.backward.iter().filter_map(|(placeholder, concrete)| {
            concrete
                .as_str()
                .map(|concrete| (concrete.to_owned(), placeholder.as_str()))
        })
    }
}

/// Whether `text` is a placeholder of `kind`: `<kind:N>`.
pub(crate) fn is_placeholder(text: &str, kind: &str) -> bool {
    text.strip_prefix('<')
        .and_then(|t| t.strip_prefix(kind))
        .and_then(|t| t.strip_prefix(':'))
        .and_then(|t| t.strip_suffix('>'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        for yes in [
            "2025-01-31T12:00:00Z",
            "2025-01-31T12:00:00.123456Z",
            "2025-01-31 12:00:00",
            "2025-01-31T12:00:00+02:00",
            "2025-01-31T12:00:00-0500",
        ] {
            assert!(is_timestamp(yes), "{yes}");
        }
        for no in [
            "2025-01-31",
            "2025-01-31T12:00",
            "2025-01-31T12:00:00.Z",
            "2025-01-31T12:00:00Zx",
            "2025-01-31T12:00:00+2",
            "x2025-01-31T12:00:00Z",
            "hello",
        ] {
            assert!(!is_timestamp(no), "{no}");
        }
    }

    #[test]
    fn patterns_respect_word_boundaries() {
        let patterns = [
            Pattern::path("/tmp/a", "<tmp>"),
            Pattern::id("sess_12", "<s>"),
        ];
        assert_eq!(
            replace_patterns("/tmp/a/x /tmp/ab file:///tmp/a", &patterns),
            "<tmp>/x /tmp/ab file://<tmp>"
        );
        assert_eq!(
            replace_patterns("`sess_12` xsess_12 sess_123", &patterns),
            "`<s>` xsess_12 sess_123"
        );
    }

    #[test]
    fn placeholders() {
        assert!(is_placeholder("<session:12>", "session"));
        assert!(!is_placeholder("<session:>", "session"));
        assert!(!is_placeholder("<session:1>x", "session"));
        assert!(!is_placeholder("<terminal:1>", "session"));
    }
}
