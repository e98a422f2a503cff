//! The checker's end of the wire: one spawned agent, the lines exchanged with it, and what
//! was wrong with them.
//!
//! Everything is read and written line by line, below any JSON-RPC machinery, so that the
//! checker sees exactly what the agent sends, including what a connection would reject or
//! hide: stray output, malformed messages, responses nobody asked for, duplicates.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use acp_jsonrpc::{LineEvent, LineReader, Message};
use acp_runtime::process::{AgentCommand, AgentProcess, AgentStdin, AgentStdout};
use acp_types::{AgentNotification, AgentRequest, SessionNotification, de::collect_dropped};
use futures_lite::AsyncWriteExt;
use serde_json::Value;

use crate::client::{Caps, FakeClient, RpcError};
use crate::options::Options;

/// The longest a line is shown in evidence.
const EVIDENCE_CHARS: usize = 400;

/// Where the logs of finished connections go, for the checks that look at everything.
pub(crate) type Sink = Rc<RefCell<Vec<ConnLog>>>;

/// What one connection saw that breaks a rule whatever the check was doing.
#[derive(Debug, Default)]
pub(crate) struct ConnLog {
    /// Which check or scenario ran the connection.
    pub label: String,
    /// Lines on stdout that are not JSON-RPC messages, with why.
    pub garbage: Vec<String>,
    /// Responses that answer no request of ours (unknown id, or a second answer).
    pub unsolicited: Vec<String>,
    /// Requests and notifications from the agent that break the schema or a protocol rule.
    pub invalid: Vec<String>,
}

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
    /// The agent closed its stdout (it exited, most likely).
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
            | Event::Garbage { raw, .. } => Some(raw),
            Event::Eof | Event::Timeout => None,
        }
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
    )
}

/// A received line for evidence: `< {...}`, shortened.
pub(crate) fn received(raw: &str) -> String {
    format!("< {}", shorten(raw))
}

/// A sent line for evidence: `> {...}`, shortened.
pub(crate) fn sent(raw: &str) -> String {
    format!("> {}", shorten(raw))
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= EVIDENCE_CHARS {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(EVIDENCE_CHARS).collect();
        format!("{cut}… ({} bytes)", text.len())
    }
}

/// The outcome of [`Conn::call`].
#[derive(Debug)]
pub(crate) struct Call {
    /// The request as sent.
    pub sent: String,
    /// The response, unless none came in time.
    pub response: Option<Result<Value, RpcError>>,
    /// The response line.
    pub raw: Option<String>,
    /// Everything else that arrived meanwhile (agent requests already answered).
    pub events: Vec<Event>,
}

impl Call {
    /// Evidence: the request and, if any, the response.
    pub fn evidence(&self) -> Vec<String> {
        let mut e = vec![sent(&self.sent)];
        match &self.raw {
            Some(raw) => e.push(received(raw)),
            None => e.push("(no response)".to_owned()),
        }
        e
    }
}

/// A spawned agent and the checker's end of its stdio.
pub(crate) struct Conn {
    pub label: String,
    process: Option<AgentProcess>,
    stdin: Option<AgentStdin>,
    reader: LineReader<AgentStdout>,
    started: Instant,
    next_id: i64,
    /// Our requests without an answer yet: id (as JSON text) → method.
    outstanding: HashMap<String, String>,
    /// Ids already answered, to tell a duplicate from an unknown id.
    answered: HashSet<String>,
    /// How many `null`-id error responses our deliberately malformed lines allow.
    null_allowance: usize,
    pub client: FakeClient,
    /// Session ids this connection created or named.
    pub sessions: HashSet<String>,
    /// Session ids the agent named, with the line: judged at the end of the connection, so
    /// that an update racing the `session/new` response is not taken for a stray one.
    named_sessions: Vec<(String, String)>,
    log: ConnLog,
    sink: Sink,
    trace: bool,
    pub eof: bool,
    pub timeout: Duration,
    pub grace: Duration,
}

impl Conn {
    /// Starts the agent.
    pub fn spawn(
        options: &Options,
        label: &str,
        caps: Caps,
        files: HashMap<String, String>,
        sink: Sink,
    ) -> Result<Conn, String> {
        let mut command = AgentCommand::new(&options.command[0])
            .args(&options.command[1..])
            .shutdown_grace(Duration::from_millis(100))
            .term_grace(Duration::from_millis(500));
        for (name, value) in &options.env {
            command = command.env(name, value);
        }
        if let Some(dir) = &options.agent_cwd {
            command = command.cwd(dir);
        }
        if options.trace {
            let label = label.to_owned();
            command = command.on_stderr_line(move |line| eprintln!("[{label}] stderr: {line}"));
        }
        let mut process = command.spawn().map_err(|e| e.to_string())?;
        let (stdout, stdin) = process.take_stdio().expect("fresh process");
        if options.trace {
            eprintln!("[{label}] started pid {}", process.id());
        }
        Ok(Conn {
            label: label.to_owned(),
            process: Some(process),
            stdin: Some(stdin),
            reader: LineReader::new(stdout),
            started: Instant::now(),
            next_id: 0,
            outstanding: HashMap::new(),
            answered: HashSet::new(),
            null_allowance: 0,
            client: FakeClient::new(caps, files),
            sessions: HashSet::new(),
            named_sessions: Vec::new(),
            log: ConnLog {
                label: label.to_owned(),
                ..ConnLog::default()
            },
            sink,
            trace: options.trace,
            eof: false,
            timeout: options.timeout,
            grace: options.grace,
        })
    }

    fn trace(&self, arrow: &str, text: &str) {
        if self.trace {
            let ms = self.started.elapsed().as_millis();
            eprintln!("[{}] {ms:>6}ms {arrow} {text}", self.label);
        }
    }

    /// Writes one line (a `\n` is added). False if the agent's stdin is closed or stuck.
    pub fn send_line(&mut self, line: &str) -> bool {
        self.trace(">", line);
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let timeout = self.timeout;
        let written = smol::block_on(futures_lite::future::or(
            async {
                stdin.write_all(&bytes).await?;
                stdin.flush().await
            },
            async {
                smol::Timer::after(timeout).await;
                Err(std::io::ErrorKind::TimedOut.into())
            },
        ));
        written.is_ok()
    }

    fn note_sessions(&mut self, params: &Value) {
        if let Some(id) = params.get("sessionId").and_then(Value::as_str) {
            self.sessions.insert(id.to_owned());
        }
    }

    /// Sends a request with a fresh id; returns the id and the line sent.
    pub fn request(&mut self, method: &str, params: Value) -> (Value, String) {
        self.next_id += 1;
        let id = Value::from(self.next_id);
        self.note_sessions(&params);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":{},"params":{params}}}"#,
            Value::from(method)
        );
        self.outstanding.insert(id.to_string(), method.to_owned());
        self.send_line(&line);
        (id, line)
    }

    /// Sends a notification; returns the line sent.
    pub fn notify(&mut self, method: &str, params: Value) -> String {
        self.note_sessions(&params);
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":{},"params":{params}}}"#,
            Value::from(method)
        );
        self.send_line(&line);
        line
    }

    /// Sends a deliberately invalid line. `reply_id` is the id a correct answer carries, if
    /// one can be read from the line; an answer with id `null` is accepted in any case.
    pub fn send_invalid(&mut self, line: &str, reply_id: Option<Value>) {
        if let Some(id) = reply_id {
            self.outstanding
                .insert(id.to_string(), "(invalid line)".to_owned());
        }
        self.null_allowance += 1;
        self.send_line(line);
    }

    /// Answers one of the agent's requests; returns the line sent.
    pub fn respond(&mut self, id: &Value, result: Result<Value, RpcError>) -> String {
        let line = match result {
            Ok(result) => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
            Err(error) => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{}}}"#, error.raw),
        };
        self.send_line(&line);
        line
    }

    /// Answers one of the agent's requests the way the fake client does; returns the line
    /// sent.
    pub fn answer(&mut self, id: &Value, method: &str, params: &Value) -> String {
        let result = self.client.answer(method, params);
        self.respond(id, result)
    }

    /// The next thing the agent sends, or `Timeout` at `deadline`, or `Eof`. Agent requests
    /// are returned unanswered.
    pub fn next_event(&mut self, deadline: Instant) -> Event {
        if self.eof {
            return Event::Eof;
        }
        enum Read {
            Line(Vec<u8>),
            TooLong(usize),
            End,
            Failed(String),
            Timeout,
        }
        let reader = &mut self.reader;
        let read = smol::block_on(futures_lite::future::or(
            async {
                match reader.read_line().await {
                    Ok(Some(LineEvent::Line(line))) => Read::Line(line.to_vec()),
                    Ok(Some(LineEvent::TooLong { length })) => Read::TooLong(length),
                    Ok(None) => Read::End,
                    Err(e) => Read::Failed(e.to_string()),
                }
            },
            async {
                smol::Timer::at(deadline).await;
                Read::Timeout
            },
        ));
        match read {
            Read::Timeout => Event::Timeout,
            Read::End => {
                self.trace("<", "(end of output)");
                self.eof = true;
                Event::Eof
            }
            Read::Failed(error) => {
                self.trace("<", &format!("(reading failed: {error})"));
                self.eof = true;
                Event::Eof
            }
            Read::TooLong(length) => {
                let raw = format!("(a line of {length} bytes)");
                self.log.garbage.push(format!("{raw}: longer than 64 MiB"));
                Event::Garbage { raw }
            }
            Read::Line(bytes) => self.classify(&bytes),
        }
    }

    fn classify(&mut self, bytes: &[u8]) -> Event {
        let raw = String::from_utf8_lossy(bytes).into_owned();
        self.trace("<", &raw);
        let message = match Message::from_slice(bytes) {
            Ok(message) => message,
            Err(error) => {
                let why = error.to_string();
                self.log.garbage.push(format!("{} ({why})", received(&raw)));
                return Event::Garbage { raw };
            }
        };
        // Valid JSON-RPC, hence valid JSON.
        let value: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        let params = value.get("params").cloned().unwrap_or(Value::Null);
        match message {
            Message::Request(request) => {
                let problem = match AgentRequest::decode(&request.method, request.params.as_deref())
                {
                    Err(error) => Some(error.to_string()),
                    Ok(_) => request_problem(&request.method, &params),
                };
                if let Some(session) = params.get("sessionId").and_then(Value::as_str)
                    && !request.method.starts_with('_')
                {
                    self.named_sessions
                        .push((session.to_owned(), received(&raw)));
                }
                if let Some(problem) = problem {
                    self.log
                        .invalid
                        .push(format!("{} ({problem})", received(&raw)));
                }
                Event::Request {
                    id: value["id"].clone(),
                    method: request.method,
                    params,
                    raw,
                }
            }
            Message::Notification(notification) => {
                let method = notification.method;
                let problem = if method == "session/update" {
                    let (decoded, dropped) = collect_dropped(|| {
                        serde_json::from_value::<SessionNotification>(params.clone())
                    });
                    match decoded {
                        Err(error) => Some(format!("does not match the schema: {error}")),
                        Ok(_) if !dropped.is_empty() => Some(format!(
                            "values that do not match the schema: {}",
                            dropped
                                .iter()
                                .map(|d| d.value.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                        Ok(n) => {
                            self.named_sessions
                                .push((n.session_id.to_string(), received(&raw)));
                            None
                        }
                    }
                } else {
                    AgentNotification::decode(&method, notification.params.as_deref())
                        .err()
                        .map(|e| e.to_string())
                };
                if let Some(problem) = problem {
                    self.log
                        .invalid
                        .push(format!("{} ({problem})", received(&raw)));
                }
                Event::Notification {
                    method,
                    params,
                    raw,
                }
            }
            Message::Response(_) => {
                let id = value["id"].clone();
                let key = id.to_string();
                let mut ours = true;
                if let Some(method) = self.outstanding.remove(&key) {
                    self.answered.insert(key);
                    if method == "session/new"
                        && let Some(session) =
                            value.pointer("/result/sessionId").and_then(Value::as_str)
                    {
                        self.sessions.insert(session.to_owned());
                    }
                } else if id.is_null() && self.null_allowance > 0 {
                    self.null_allowance -= 1;
                } else if self.answered.contains(&key) {
                    self.log.unsolicited.push(format!(
                        "{} (a second response to request {key})",
                        received(&raw)
                    ));
                } else {
                    ours = false;
                    self.log.unsolicited.push(format!(
                        "{} (no request with id {key} was sent)",
                        received(&raw)
                    ));
                }
                let result = match value.get("error") {
                    Some(error) => Err(RpcError::from_value(error.clone())),
                    None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
                };
                Event::Response {
                    id,
                    result,
                    raw,
                    ours,
                }
            }
        }
    }

    /// Sends a request and waits up to `timeout` for its response, answering the agent's
    /// requests meanwhile.
    pub fn call(&mut self, method: &str, params: Value, timeout: Duration) -> Call {
        let (id, sent) = self.request(method, params);
        let deadline = Instant::now() + timeout;
        let mut events = Vec::new();
        loop {
            match self.next_event(deadline) {
                Event::Response {
                    id: rid,
                    result,
                    raw,
                    ..
                } if rid == id => {
                    return Call {
                        sent,
                        response: Some(result),
                        raw: Some(raw),
                        events,
                    };
                }
                Event::Request {
                    id: rid,
                    method,
                    params,
                    raw,
                } => {
                    self.answer(&rid, &method, &params);
                    events.push(Event::Request {
                        id: rid,
                        method,
                        params,
                        raw,
                    });
                }
                Event::Timeout | Event::Eof => {
                    return Call {
                        sent,
                        response: None,
                        raw: None,
                        events,
                    };
                }
                other => events.push(other),
            }
        }
    }

    /// Listens for `duration` (or until end of output), answering the agent's requests.
    pub fn listen(&mut self, duration: Duration) -> Vec<Event> {
        let deadline = Instant::now() + duration;
        let mut events = Vec::new();
        loop {
            match self.next_event(deadline) {
                Event::Timeout | Event::Eof => return events,
                Event::Request {
                    id,
                    method,
                    params,
                    raw,
                } => {
                    self.answer(&id, &method, &params);
                    events.push(Event::Request {
                        id,
                        method,
                        params,
                        raw,
                    });
                }
                other => events.push(other),
            }
        }
    }

    /// Closes the agent's stdin.
    pub fn close_stdin(&mut self) {
        self.trace(">", "(stdin closed)");
        self.stdin = None;
    }

    /// Waits up to `timeout` for the agent to exit; its status, if it did.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<String> {
        let process = self.process.as_ref()?;
        let exited = process.exited();
        smol::block_on(futures_lite::future::or(
            async { Some(exited.await.status.to_string()) },
            async {
                smol::Timer::after(timeout).await;
                None
            },
        ))
    }

    /// The agent's exit status and stderr tail if it has exited, for evidence.
    pub fn exit_evidence(&self) -> Vec<String> {
        let Some(exit) = self.process.as_ref().and_then(AgentProcess::try_exited) else {
            return Vec::new();
        };
        let mut evidence = vec![format!("(the agent exited: {})", exit.status)];
        evidence.extend(
            exit.stderr_tail
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .map(|l| format!("stderr: {}", shorten(l))),
        );
        evidence
    }

    /// Whether the agent has exited.
    pub fn has_exited(&self) -> bool {
        self.process
            .as_ref()
            .is_some_and(|p| p.try_exited().is_some())
    }
}

impl Drop for Conn {
    /// Closes stdin, reads what the agent still writes (stray output at exit counts too) for
    /// up to the grace period, then ends the agent stepwise, and hands the log to the sink.
    fn drop(&mut self) {
        self.stdin = None;
        let deadline = Instant::now() + self.grace.max(Duration::from_millis(200));
        while !matches!(self.next_event(deadline), Event::Eof | Event::Timeout) {}
        if let Some(process) = self.process.take() {
            let exit = smol::block_on(process.shutdown());
            self.trace("-", &format!("agent ended: {exit}"));
        }
        for (session, line) in std::mem::take(&mut self.named_sessions) {
            if !self.sessions.contains(&session) {
                self.log.invalid.push(format!(
                    "{line} (names session `{session}`, which this connection never created or named)"
                ));
            }
        }
        let log = std::mem::take(&mut self.log);
        self.sink.borrow_mut().push(log);
    }
}

/// A protocol rule on the agent's requests beyond the schema: file paths are absolute.
fn request_problem(method: &str, params: &Value) -> Option<String> {
    let path_field = match method {
        "fs/read_text_file" | "fs/write_text_file" => Some("path"),
        "terminal/create" => Some("cwd"),
        _ => None,
    };
    if let Some(field) = path_field
        && let Some(path) = params.get(field).and_then(Value::as_str)
        && !Path::new(path).is_absolute()
    {
        return Some(format!("`{field}` is not an absolute path"));
    }
    None
}
