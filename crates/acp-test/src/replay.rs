//! Replaying a recorded transcript against an implementation: the kit plays one side, message
//! for message, and checks that the other side answers as recorded.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::time::Duration;

use acp_jsonrpc::memory;
use acp_runtime::agent::{self, Agent};
use acp_runtime::client::{self, AgentHandle, Client, ClientOptions};
use futures_lite::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use serde_json::Value;

use crate::normalize::{
    Normalizer, Pattern, State, TIMESTAMP_VALUE, is_placeholder, replace_patterns,
};
use crate::pair::TempDir;
use crate::transcript::{
    Direction, Entry, Transcript, TranscriptError, compact_message, pretty_message,
};
use crate::wait::within;
use acp_jsonrpc::transcript::wire_message;

/// How long a replay waits for each message by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A recorded transcript played back against an implementation, as a test.
///
/// The kit plays one side of the conversation: it sends that side's messages as recorded, in
/// order, and before each one waits for every message the transcript shows from the other side
/// until then. Each message the implementation sends is normalized (with the same
/// [`Normalizer`] as the transcript, so ids and paths may differ from the recording) and must
/// equal the recorded one; the first difference fails the replay with a unified diff of the
/// two messages as pretty JSON. After the last message, the implementation must close the
/// connection without sending more.
///
/// Placeholders in the messages the kit sends become concrete values again: `<tmp>` the replay's
/// [`temp_dir`](Self::temp_dir) (a fresh one unless given), request ids numbers, ids the
/// implementation created (`<session:1>` from its `session/new` answer) the values it used, and
/// ids the kit creates itself the values the transcript was recorded with (the placeholder
/// itself when the recording normalized them away).
///
/// ```
/// use acp_test::{Direction, Entry, Replay, ScriptedAgent, Transcript};
/// use serde_json::json;
///
/// // Usually loaded from a `.jsonl` file recorded once (`Pair::finish`, `Transcript::save`).
/// let recorded: Transcript = [
///     Entry::new(Direction::ClientToAgent, json!({"jsonrpc": "2.0", "id": "<id:1>",
///         "method": "initialize", "params": {"protocolVersion": 1}})),
///     Entry::new(Direction::AgentToClient, json!({"jsonrpc": "2.0", "id": "<id:1>",
///         "result": {"protocolVersion": 1, "authMethods": [], "agentCapabilities": {
///             "auth": {}, "loadSession": false, "mcpCapabilities": {"http": false, "sse": false},
///             "promptCapabilities": {"audio": false, "embeddedContext": false, "image": false},
///             "sessionCapabilities": {}}}})),
/// ]
/// .into_iter()
/// .collect();
///
/// let agent = ScriptedAgent::new().on_initialize(|response| response.agent_info = None);
/// smol::block_on(Replay::new(recorded).against_agent(agent)).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Replay {
    source: String,
    transcript: Transcript,
    normalizer: Normalizer,
    timeout: Duration,
    unordered: bool,
    temp_dir: Option<PathBuf>,
}

/// Why a replay failed: a readable report (with the diff), also shown by `Debug` so that
/// `.unwrap()` prints it as it is.
#[derive(Clone, PartialEq, Eq)]
pub struct ReplayError {
    report: String,
}

impl ReplayError {
    fn new(report: impl Into<String>) -> ReplayError {
        ReplayError {
            report: report.into(),
        }
    }

    /// The report.
    pub fn report(&self) -> &str {
        &self.report
    }
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.report)
    }
}

impl fmt::Debug for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\n{}", self.report)
    }
}

impl std::error::Error for ReplayError {}

impl Replay {
    /// A replay of `transcript`.
    pub fn new(transcript: Transcript) -> Replay {
        Replay {
            source: "the transcript".to_owned(),
            transcript,
            normalizer: Normalizer::new(),
            timeout: DEFAULT_TIMEOUT,
            unordered: false,
            temp_dir: None,
        }
    }

    /// A replay of the transcript in a `.jsonl` file.
    pub fn load(path: impl AsRef<Path>) -> Result<Replay, TranscriptError> {
        let path = path.as_ref();
        let mut replay = Replay::new(Transcript::load(path)?);
        replay.source = path.display().to_string();
        Ok(replay)
    }

    /// The normalizer for both the transcript and the live messages (default:
    /// [`Normalizer::new`]); its redaction hooks apply to the compared messages. The replay's
    /// temporary directory is added to it as `<tmp>`.
    pub fn normalizer(mut self, normalizer: Normalizer) -> Replay {
        self.normalizer = normalizer;
        self
    }

    /// How long to wait for each message of the implementation (default: 5 seconds).
    pub fn timeout(mut self, timeout: Duration) -> Replay {
        self.timeout = timeout;
        self
    }

    /// Accepts the implementation's messages in any order within each run of consecutive
    /// messages from it (between two messages of the kit): for implementations whose
    /// concurrent handlers may answer in either order.
    pub fn unordered(mut self) -> Replay {
        self.unordered = true;
        self
    }

    /// The directory `<tmp>` stands for (default: a fresh temporary directory).
    pub fn temp_dir(mut self, dir: impl AsRef<Path>) -> Replay {
        self.temp_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The transcript being replayed.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Plays the client side against `agent`, served by this runtime over an in-memory pipe.
    /// Returns the normalized transcript of the replay.
    pub async fn against_agent<A: Agent>(self, agent: A) -> Result<Transcript, ReplayError> {
        let (kit_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        let (_client, driver) = agent::serve(
            agent,
            agent_end.reader,
            agent_end.writer,
            agent::AgentOptions::default(),
        );
        let driver = smol::spawn(driver);
        let timeout = self.timeout;
        let result = self.play_client(kit_end.reader, kit_end.writer).await;
        if result.is_ok() && within(timeout, driver).await.is_none() {
            return Err(ReplayError::new(
                "the agent's connection did not shut down after the replay",
            ));
        }
        result
    }

    /// Plays the agent side against a client of this runtime (`client` with `options`) over an
    /// in-memory pipe. `drive` is the client's side of the conversation: it initializes,
    /// opens sessions and prompts through the handle, as the recording did; the connection is
    /// closed when it returns. Returns the normalized transcript of the replay.
    pub async fn against_client<C, F, Fut>(
        self,
        client: C,
        options: ClientOptions,
        drive: F,
    ) -> Result<Transcript, ReplayError>
    where
        C: Client,
        F: FnOnce(AgentHandle) -> Fut,
        Fut: Future,
    {
        let (kit_end, client_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        let (handle, driver) =
            client::connect(client, client_end.reader, client_end.writer, options);
        let _driver = smol::spawn(driver);
        let timeout = self.timeout;
        let closer = handle.clone();
        let mut drive = pin!(async move {
            drive(handle).await;
            closer.close();
        });
        let mut kit = pin!(self.play_agent(kit_end.reader, kit_end.writer));
        enum First<T> {
            Kit(T),
            Drive,
        }
        let first = futures_lite::future::or(async { First::Kit(kit.as_mut().await) }, async {
            drive.as_mut().await;
            First::Drive
        })
        .await;
        match first {
            First::Kit(Err(error)) => Err(error),
            First::Kit(Ok(transcript)) => match within(timeout, drive).await {
                Some(()) => Ok(transcript),
                None => Err(ReplayError::new(format!(
                    "the transcript was played to its end, but the drive closure did not return within {timeout:?}"
                ))),
            },
            First::Drive => kit.await,
        }
    }

    /// Plays the client side over any stream pair: `reader` reads what the agent under test
    /// writes, `writer` goes to its input (e.g. a process's stdout and stdin).
    pub async fn play_client<R, W>(self, reader: R, writer: W) -> Result<Transcript, ReplayError>
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        self.play(Direction::ClientToAgent, reader, writer).await
    }

    /// Plays the agent side over any stream pair: `reader` reads what the client under test
    /// writes, `writer` goes to it (as an agent process does on its stdin and stdout).
    pub async fn play_agent<R, W>(self, reader: R, writer: W) -> Result<Transcript, ReplayError>
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        self.play(Direction::AgentToClient, reader, writer).await
    }

    async fn play<R, W>(
        self,
        plays: Direction,
        reader: R,
        writer: W,
    ) -> Result<Transcript, ReplayError>
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let own_dir;
        let dir = match &self.temp_dir {
            Some(dir) => dir.clone(),
            None => {
                own_dir = TempDir::new();
                own_dir.path().to_path_buf()
            }
        };
        let normalizer = self.normalizer.clone().temp_dir(&dir);
        let mut state = State::default();
        let expected: Vec<Entry> = self
            .transcript
            .iter()
            .map(|entry| {
                let mut msg = entry.msg.clone();
                normalizer.normalize_message(&mut state, entry.dir, &mut msg);
                if entry.dir != plays {
                    normalizer.apply_hooks(&mut msg);
                }
                Entry::new(entry.dir, msg)
            })
            .collect();
        let mut player = Player {
            replay: &self,
            plays,
            normalizer,
            expected,
            recorded: state,
            state: State::default(),
            actual: Transcript::new(),
            reader,
            writer,
            next_id: 0,
        };
        player.run().await?;
        Ok(player.actual)
    }
}

struct Player<'a, R, W> {
    replay: &'a Replay,
    plays: Direction,
    normalizer: Normalizer,
    expected: Vec<Entry>,
    /// The numbering of the transcript as recorded: what each placeholder stood for there.
    recorded: State,
    /// The numbering of the live conversation.
    state: State,
    actual: Transcript,
    reader: R,
    writer: W,
    next_id: u64,
}

/// What the other side is, in messages.
fn side_name(dir: Direction) -> &'static str {
    match dir {
        Direction::ClientToAgent => "client",
        Direction::AgentToClient => "agent",
    }
}

impl<R: AsyncBufRead + Unpin, W: AsyncWrite + Unpin> Player<'_, R, W> {
    async fn run(&mut self) -> Result<(), ReplayError> {
        let mut index = 0;
        while index < self.expected.len() {
            if self.expected[index].dir == self.plays {
                let end = (index..self.expected.len())
                    .find(|&i| self.expected[i].dir != self.plays)
                    .unwrap_or(self.expected.len());
                self.send_run(index, end).await?;
                index = end;
            } else {
                let end = (index..self.expected.len())
                    .find(|&i| self.expected[i].dir == self.plays)
                    .unwrap_or(self.expected.len());
                self.receive_run(index, end).await?;
                index = end;
            }
        }
        let _ = self.writer.close().await;
        match self.receive().await? {
            None => Ok(()),
            Some(message) => {
                let mut normalized = message;
                self.normalize(&mut self.state.clone(), &mut normalized);
                Err(self.report(
                    format!(
                        "the {} sent a message after the end of the transcript:\n{}",
                        side_name(self.plays.reverse()),
                        pretty_message(&normalized)
                    ),
                    None,
                ))
            }
        }
    }

    fn normalize(&self, state: &mut State, message: &mut Value) {
        self.normalizer
            .normalize_message(state, self.plays.reverse(), message);
        self.normalizer.apply_hooks(message);
    }

    /// Sends the entries `start..end`, all of the played side, in one write: a peer writes what
    /// it has to say at once, and the implementation then reads it as one batch, which keeps
    /// the replay deterministic where the order of reading decides (an answer that comes with
    /// `session/cancel` is read before the agent acts on the cancellation).
    async fn send_run(&mut self, start: usize, end: usize) -> Result<(), ReplayError> {
        let mut lines = Vec::new();
        for index in start..end {
            let message = self.concretize(&self.expected[index].msg.clone());
            serde_json::to_writer(&mut lines, &message).expect("JSON encodes");
            lines.push(b'\n');
            let mut normalized = message;
            self.normalizer
                .normalize_message(&mut self.state, self.plays, &mut normalized);
            self.actual.push(Entry::new(self.plays, normalized));
        }
        let written = async {
            self.writer.write_all(&lines).await?;
            self.writer.flush().await
        };
        let entries = if end - start == 1 {
            format!("entry {}", start + 1)
        } else {
            format!("entries {}-{}", start + 1, end)
        };
        match within(self.replay.timeout, written).await {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => Err(self.report(
                format!(
                    "could not send {entries} to the {}: {error}",
                    side_name(self.plays.reverse())
                ),
                None,
            )),
            None => Err(self.report(
                format!(
                    "could not send {entries} within {:?}: the {} does not read",
                    self.replay.timeout,
                    side_name(self.plays.reverse())
                ),
                None,
            )),
        }
    }

    /// Receives the messages of entries `start..end`, all from the implementation.
    async fn receive_run(&mut self, start: usize, end: usize) -> Result<(), ReplayError> {
        let mut pending: Vec<usize> = (start..end).collect();
        while let Some(&next) = pending.first() {
            let Some(message) = self.receive().await? else {
                return Err(self.report(
                    format!(
                        "the {} closed the connection; entry {} was expected:\n{}",
                        side_name(self.plays.reverse()),
                        next + 1,
                        pretty_message(&self.expected[next].msg)
                    ),
                    Some(next),
                ));
            };
            let candidates: &[usize] = if self.replay.unordered {
                &pending
            } else {
                &pending[..1]
            };
            let mut first_try = None;
            let mut matched = None;
            for (position, &candidate) in candidates.iter().enumerate() {
                let mut state = self.state.clone();
                let mut normalized = message.clone();
                self.normalize(&mut state, &mut normalized);
                if normalized == self.expected[candidate].msg {
                    matched = Some((position, state, normalized));
                    break;
                }
                if first_try.is_none() {
                    first_try = Some(normalized);
                }
            }
            let Some((position, state, normalized)) = matched else {
                let normalized = first_try.expect("at least one candidate");
                return Err(self.mismatch(next, &pending, &normalized));
            };
            self.state = state;
            self.actual
                .push(Entry::new(self.plays.reverse(), normalized));
            pending.remove(position);
        }
        Ok(())
    }

    /// The next message from the implementation, `None` at the end of its output.
    async fn receive(&mut self) -> Result<Option<Value>, ReplayError> {
        loop {
            let mut line = String::new();
            match within(self.replay.timeout, self.reader.read_line(&mut line)).await {
                None => {
                    let waiting_for = self
                        .expected
                        .iter()
                        .enumerate()
                        .skip(self.actual.len())
                        .find(|(_, e)| e.dir != self.plays);
                    let what = match waiting_for {
                        Some((index, entry)) => format!(
                            "entry {} was expected:\n{}",
                            index + 1,
                            pretty_message(&entry.msg)
                        ),
                        None => format!(
                            "the transcript has ended: the {} should close the connection",
                            side_name(self.plays.reverse())
                        ),
                    };
                    return Err(self.report(
                        format!(
                            "nothing from the {} within {:?}; {what}",
                            side_name(self.plays.reverse()),
                            self.replay.timeout
                        ),
                        waiting_for.map(|(i, _)| i),
                    ));
                }
                Some(Err(error)) => {
                    return Err(self.report(format!("reading failed: {error}"), None));
                }
                Some(Ok(0)) => return Ok(None),
                Some(Ok(_)) => {
                    let trimmed = line.trim();
                    if !trimmed.is_empty() {
                        return Ok(Some(wire_message(trimmed.as_bytes())));
                    }
                }
            }
        }
    }

    fn mismatch(&self, index: usize, pending: &[usize], actual: &Value) -> ReplayError {
        let expected = pretty_message(&self.expected[index].msg) + "\n";
        let got = pretty_message(actual) + "\n";
        let diff = similar::TextDiff::from_lines(&expected, &got)
            .unified_diff()
            .context_radius(6)
            .header(
                &format!("expected (entry {})", index + 1),
                &format!("actual ({})", self.expected[index].dir.arrow()),
            )
            .to_string();
        let mut report = if self.replay.unordered && pending.len() > 1 {
            format!(
                "the {} sent a message that matches none of the {} expected here (entries {}); compared with entry {}:\n{diff}",
                side_name(self.plays.reverse()),
                pending.len(),
                pending
                    .iter()
                    .map(|i| (i + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                index + 1
            )
        } else {
            format!(
                "entry {} differs from what the {} sent:\n{diff}",
                index + 1,
                side_name(self.plays.reverse())
            )
        };
        if !self.replay.unordered {
            let later = (index + 1..self.expected.len())
                .take_while(|&i| self.expected[i].dir != self.plays)
                .find(|&i| *actual == self.expected[i].msg);
            if let Some(later) = later {
                report.push_str(&format!(
                    "\nThe message matches entry {} further on: the order differs. If it may vary, use `Replay::unordered`.\n",
                    later + 1
                ));
            }
        }
        self.report(report, Some(index))
    }

    fn report(&self, what: String, index: Option<usize>) -> ReplayError {
        let mut report = format!(
            "replay of {} (the kit plays the {}) failed: {what}",
            self.replay.source,
            side_name(self.plays)
        );
        if !report.ends_with('\n') {
            report.push('\n');
        }
        let shown = self.actual.len().min(6);
        if shown > 0 {
            report.push_str("\nlast messages exchanged:\n");
            for entry in &self.actual.entries()[self.actual.len() - shown..] {
                let mut line = format!("  {}  {}", entry.dir.arrow(), compact_message(&entry.msg));
                if line.chars().count() > 160 {
                    line = line.chars().take(157).collect::<String>() + "...";
                }
                report.push_str(&line);
                report.push('\n');
            }
        }
        if let Some(index) = index {
            report.push_str(&format!(
                "(entry {} of {} in the transcript)\n",
                index + 1,
                self.expected.len()
            ));
        }
        ReplayError::new(report)
    }

    /// The message to send for a recorded one: placeholders become concrete values.
    fn concretize(&mut self, template: &Value) -> Value {
        let mut message = template.clone();
        let plays = self.plays;
        if let Some(object) = message.as_object_mut() {
            let method = object
                .get("method")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let is_request = method.is_some();
            if let Some(id) = object.get_mut("id")
                && let Some(placeholder) = id.as_str().filter(|s| is_placeholder(s, "id"))
            {
                let placeholder = placeholder.to_owned();
                let namespace = if is_request { plays } else { plays.reverse() };
                let ids = self.state.requests(namespace);
                match ids.concrete(&placeholder) {
                    Some(concrete) => *id = concrete.clone(),
                    None if is_request => {
                        let concrete = Value::from(self.next_id);
                        self.next_id += 1;
                        ids.bind(&placeholder, concrete.clone());
                        *id = concrete;
                    }
                    None => {}
                }
            }
            if method.as_deref() == Some("$/cancel_request")
                && let Some(id) = object
                    .get_mut("params")
                    .and_then(|p| p.get_mut("requestId"))
                && let Some(placeholder) = id.as_str().filter(|s| is_placeholder(s, "id"))
                && let Some(concrete) = self.state.requests(plays).concrete(placeholder)
            {
                *id = concrete.clone();
            }
        }
        self.concretize_members(&mut message);
        let mut patterns: Vec<Pattern> = Vec::new();
        let mut seen = HashMap::new();
        for (path, placeholder) in self.normalizer.paths() {
            seen.entry(placeholder.clone())
                .or_insert_with(|| path.clone());
        }
        for (placeholder, path) in &seen {
            patterns.push(Pattern::path(placeholder, path));
        }
        for ids in [&self.state.sessions, &self.state.terminals] {
            for (concrete, placeholder) in ids.string_pairs() {
                if concrete != placeholder {
                    patterns.push(Pattern::id(placeholder, &concrete));
                }
            }
        }
        patterns.sort_by(|a, b| b.from.len().cmp(&a.from.len()).then(a.from.cmp(&b.from)));
        concretize_strings(&mut message, &patterns);
        message
    }

    fn concretize_members(&mut self, value: &mut Value) {
        match value {
            Value::Object(object) => {
                for (key, member) in object.iter_mut() {
                    let (ids, recorded, kind) = match key.as_str() {
                        // The ids of other sessions a subagent's messages name are session ids
                        // too (see `normalize.rs`).
                        "sessionId" | "senderSessionId" | "recipientSessionId" => {
                            (&mut self.state.sessions, &self.recorded.sessions, "session")
                        }
                        "terminalId" => (
                            &mut self.state.terminals,
                            &self.recorded.terminals,
                            "terminal",
                        ),
                        "toolCallId" => (
                            &mut self.state.tool_calls,
                            &self.recorded.tool_calls,
                            "tool-call",
                        ),
                        _ => {
                            self.concretize_members(member);
                            continue;
                        }
                    };
                    if let Some(placeholder) = member.as_str().filter(|s| is_placeholder(s, kind)) {
                        let placeholder = placeholder.to_owned();
                        match ids.concrete(&placeholder) {
                            Some(concrete) => *member = concrete.clone(),
                            // A value this side creates: sent as the transcript has it.
                            None => {
                                let written = recorded
                                    .concrete(&placeholder)
                                    .cloned()
                                    .unwrap_or_else(|| Value::String(placeholder.clone()));
                                ids.bind(&placeholder, written.clone());
                                *member = written;
                            }
                        }
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.concretize_members(item);
                }
            }
            _ => {}
        }
    }
}

fn concretize_strings(value: &mut Value, patterns: &[Pattern]) {
    match value {
        Value::String(text) => {
            if text == "<timestamp>" {
                *text = TIMESTAMP_VALUE.to_owned();
            } else if !patterns.is_empty() {
                *text = replace_patterns(text, patterns);
            }
        }
        Value::Object(object) => {
            for member in object.values_mut() {
                concretize_strings(member, patterns);
            }
        }
        Value::Array(items) => {
            for item in items {
                concretize_strings(item, patterns);
            }
        }
        _ => {}
    }
}
