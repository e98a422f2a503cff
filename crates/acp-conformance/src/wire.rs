//! The checker's end of the wire: one spawned agent, the lines exchanged with it, and what
//! was wrong with them.
//!
//! Everything is read and written line by line, below any JSON-RPC machinery, so that the
//! checker sees exactly what the agent sends, including what a connection would reject or
//! hide: stray output, malformed messages, responses nobody asked for, duplicates.
//!
//! Nothing the agent does can hold the checker's clock or grow its memory without bound
//! (see [`crate::limits`]): every wait has a deadline that is looked at between slices of
//! reading, writes are queued and written only as the pipe takes them, what is kept of the
//! traffic is bounded in bytes, and a request or turn that times out ends the agent.

mod classify;
mod event;
mod io;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use acp_jsonrpc::{LineEvent, LineReader};
use acp_runtime::process::{AgentCommand, AgentExit, AgentProcess, AgentStdout};
use serde_json::Value;

use self::event::shorten;
pub(crate) use self::event::{
    Call, Capped, ConnLog, Event, Events, is_turn_content, received, received_lines, sent,
};
use self::io::{Metered, Outbox};
use crate::client::{Caps, FakeClient, RpcError};
use crate::limits::{
    EXIT_WAIT, FLOOD_BYTES, READ_SLICE_BYTES, STDERR_TAIL_BYTES, STDERR_TAIL_LINES, bytes,
};
use crate::options::Options;

/// Where the logs of finished connections go, for the checks that look at everything.
pub(crate) type Sink = Rc<RefCell<Vec<ConnLog>>>;

/// A spawned agent and the checker's end of its stdio.
pub(crate) struct Conn {
    pub label: String,
    /// The agent, until the checker kills it or the connection ends.
    process: Option<AgentProcess>,
    /// How the agent ended when the checker killed it.
    killed: Option<AgentExit>,
    outbox: Outbox,
    /// The agent's stdout, until the checker stops reading it.
    reader: Option<LineReader<Metered<AgentStdout>>>,
    /// Bytes of stdout consumed when the last line ended.
    line_start: u64,
    /// Bytes of stdout that were not JSON-RPC messages.
    garbage_bytes: u64,
    /// Why the checker ended the connection (a time limit, a flood), once it has.
    ended: Option<String>,
    started: Instant,
    run_deadline: Option<Instant>,
    max_line: usize,
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
    /// Session ids the agent named, with the first line that did: judged at the end of the
    /// connection, so that an update racing the `session/new` response is not taken for a
    /// stray one.
    named_sessions: Vec<(String, String)>,
    log: ConnLog,
    sink: Sink,
    trace: bool,
    pub eof: bool,
    pub grace: Duration,
    /// Whether the connection speaks protocol v2: the agent's messages are judged by v2's
    /// schema.
    pub v2: bool,
}

/// `d` in seconds, for messages: `1`, `0.5`.
pub(crate) fn secs(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}

impl Conn {
    /// Starts the agent. Every wait on it ends at `run_deadline` at the latest.
    pub fn spawn(
        options: &Options,
        label: &str,
        caps: Caps,
        files: HashMap<String, String>,
        sink: Sink,
        run_deadline: Option<Instant>,
    ) -> Result<Conn, String> {
        let mut command = AgentCommand::new(&options.command[0])
            .args(&options.command[1..])
            .shutdown_grace(Duration::from_millis(100))
            .term_grace(Duration::from_millis(500))
            .stderr_tail_lines(STDERR_TAIL_LINES)
            .stderr_tail_bytes(STDERR_TAIL_BYTES);
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
            killed: None,
            outbox: Outbox::new(stdin),
            reader: Some(LineReader::with_max_line_length(
                Metered::new(stdout),
                options.max_line_bytes,
            )),
            line_start: 0,
            garbage_bytes: 0,
            ended: None,
            started: Instant::now(),
            run_deadline,
            max_line: options.max_line_bytes,
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
            grace: options.grace,
            v2: options.protocol == crate::options::Protocol::V2,
        })
    }

    fn trace(&self, arrow: &str, text: &str) {
        if self.trace {
            let ms = self.started.elapsed().as_millis();
            eprintln!("[{}] {ms:>6}ms {arrow} {text}", self.label);
        }
    }

    /// Queues one line (a `\n` is added); it is written as the agent reads. False if the
    /// agent's stdin is closed, or so far behind that the line was dropped.
    pub fn send_line(&mut self, line: &str) -> bool {
        self.trace(">", line);
        let queued = self.outbox.push(line);
        if !queued && self.outbox.is_open() {
            self.trace(
                "-",
                "(the line was dropped: the agent is not reading its stdin)",
            );
        }
        queued
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

    /// The next thing the agent sends, or `Timeout` at `deadline` (or at the run's deadline),
    /// or `Eof`. Agent requests are returned unanswered. Queued lines are written meanwhile.
    pub fn next_event(&mut self, deadline: Instant) -> Event {
        if self.eof {
            return Event::Eof;
        }
        let deadline = self.run_deadline.map_or(deadline, |run| run.min(deadline));
        if Instant::now() >= deadline {
            return Event::Timeout;
        }
        enum Read {
            Line(Vec<u8>),
            TooLong(usize),
            Endless(u64),
            End,
            Failed(String),
            Timeout,
        }
        let Some(reader) = self.reader.as_mut() else {
            self.eof = true;
            return Event::Eof;
        };
        let outbox = &mut self.outbox;
        let (line_start, max_line) = (self.line_start, self.max_line as u64);
        let flood_room = FLOOD_BYTES.saturating_sub(self.garbage_bytes);
        let mut timer = smol::Timer::at(deadline);
        let read = smol::block_on(futures_lite::future::poll_fn(|cx| {
            let _ = outbox.poll_flush(cx);
            reader.get_ref().refill(READ_SLICE_BYTES);
            match reader.poll_read_line(cx) {
                Poll::Ready(Ok(Some(LineEvent::Line(line)))) => {
                    return Poll::Ready(Read::Line(line.to_vec()));
                }
                Poll::Ready(Ok(Some(LineEvent::TooLong { length }))) => {
                    return Poll::Ready(Read::TooLong(length));
                }
                Poll::Ready(Ok(None)) => return Poll::Ready(Read::End),
                Poll::Ready(Err(e)) => return Poll::Ready(Read::Failed(e.to_string())),
                Poll::Pending => {}
            }
            // A line without end, already too long to be a message, is garbage so far.
            let partial = reader.get_ref().consumed() - line_start;
            if partial > max_line && partial > flood_room {
                return Poll::Ready(Read::Endless(partial));
            }
            if Instant::now() >= deadline || Pin::new(&mut timer).poll(cx).is_ready() {
                return Poll::Ready(Read::Timeout);
            }
            Poll::Pending
        }));
        if matches!(read, Read::Line(_) | Read::TooLong(_))
            && let Some(reader) = &self.reader
        {
            self.line_start = reader.get_ref().consumed();
        }
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
                let max = self.max_line;
                self.log.garbage.push(
                    || format!("{raw}: longer than the limit of {}", bytes(max as u64)),
                    length,
                );
                self.note_garbage(length as u64);
                Event::Garbage { raw }
            }
            Read::Endless(length) => {
                self.log.garbage.push(
                    || format!("(a line of more than {length} bytes, without end)"),
                    length as usize,
                );
                self.note_garbage(length);
                Event::Eof
            }
            Read::Line(bytes) => self.classify(&bytes),
        }
    }

    /// Counts output that is not JSON-RPC, and ends the connection once there is more than
    /// [`FLOOD_BYTES`] of it.
    fn note_garbage(&mut self, size: u64) {
        self.garbage_bytes += size;
        if self.garbage_bytes > FLOOD_BYTES && self.ended.is_none() {
            let what = format!(
                "the agent flooded its stdout with {} that is not JSON-RPC ({} lines); the checker stopped reading at the limit of {} and ended the agent",
                bytes(self.garbage_bytes),
                self.log.garbage.total,
                bytes(FLOOD_BYTES)
            );
            self.log.flood = Some(what.clone());
            self.end(what);
        }
    }

    /// Why the checker ended the connection, if it did.
    pub fn ended(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    /// Ends the connection: closes stdin, stops reading stdout, and kills the agent's process
    /// group. Every later wait returns `Eof` at once.
    pub fn end(&mut self, why: String) {
        if self.ended.is_some() {
            return;
        }
        self.trace("-", &format!("ending the agent: {why}"));
        self.ended = Some(why);
        self.eof = true;
        self.outbox.close();
        self.reader = None;
        if let Some(process) = self.process.take() {
            let exited = process.exited();
            // Dropping the handle kills the whole group.
            drop(process);
            self.killed = smol::block_on(futures_lite::future::or(
                async { Some(exited.await) },
                async {
                    smol::Timer::after(EXIT_WAIT).await;
                    None
                },
            ));
        }
    }

    /// Ends the connection after a wait for `what` that lasted `limit` in vain.
    pub fn expire(&mut self, what: &str, limit: Duration) {
        if self.ended.is_some() || self.eof {
            return;
        }
        let mut why = if self.run_deadline.is_some_and(|d| Instant::now() >= d) {
            format!("the run's time limit (--run-timeout) was reached while waiting for {what}")
        } else {
            format!("timed out after {} s waiting for {what}", secs(limit))
        };
        if self.outbox.dropped > 0 {
            why.push_str(&format!(
                "; the agent was not reading its stdin ({} line(s), {}, could not be written)",
                self.outbox.dropped,
                bytes(self.outbox.dropped_bytes)
            ));
        } else if self.outbox.pending() > 0 {
            why.push_str(&format!(
                "; the agent was not reading its stdin ({} not written)",
                bytes(self.outbox.pending() as u64)
            ));
        }
        why.push_str("; the checker ended the agent");
        self.end(why);
    }

    /// Sends a request and waits up to `timeout` for its response, answering the agent's
    /// requests meanwhile. Without a response in time, the agent is ended.
    pub fn call(&mut self, method: &str, params: Value, timeout: Duration) -> Call {
        let (id, sent) = self.request(method, params);
        let deadline = Instant::now() + timeout;
        let mut events = Events::default();
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
                        ended: None,
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
                end @ (Event::Timeout | Event::Eof) => {
                    if matches!(end, Event::Timeout) {
                        self.expire(&format!("the response to `{method}`"), timeout);
                    }
                    return Call {
                        sent,
                        response: None,
                        raw: None,
                        events,
                        ended: self.ended.clone(),
                    };
                }
                other => events.push(other),
            }
        }
    }

    /// Listens for `duration` (or until end of output), answering the agent's requests.
    pub fn listen(&mut self, duration: Duration) -> Events {
        let deadline = Instant::now() + duration;
        let mut events = Events::default();
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

    /// Closes the agent's stdin, once what is queued is written (or a short while passed).
    pub fn close_stdin(&mut self) {
        self.trace(">", "(stdin closed)");
        if self.outbox.pending() > 0 {
            let outbox = &mut self.outbox;
            let mut timer = smol::Timer::after(self.grace.max(Duration::from_millis(200)));
            smol::block_on(futures_lite::future::poll_fn(|cx| {
                if outbox.poll_flush(cx).is_ready() || Pin::new(&mut timer).poll(cx).is_ready() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }));
        }
        self.outbox.close();
    }

    /// Waits up to `timeout` for the agent to exit; its status, if it did.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<String> {
        let Some(process) = self.process.as_ref() else {
            return self.killed.as_ref().map(|exit| exit.status.to_string());
        };
        let exited = process.exited();
        let deadline = Instant::now() + timeout;
        let deadline = self.run_deadline.map_or(deadline, |run| run.min(deadline));
        smol::block_on(futures_lite::future::or(
            async { Some(exited.await.status.to_string()) },
            async {
                smol::Timer::at(deadline).await;
                None
            },
        ))
    }

    /// How the agent ended, if it has.
    fn exit(&self) -> Option<AgentExit> {
        match &self.process {
            Some(process) => process.try_exited(),
            None => self.killed.clone(),
        }
    }

    /// The agent's exit status and stderr tail if it has exited (or why the checker ended
    /// it), for evidence.
    pub fn exit_evidence(&self) -> Vec<String> {
        let exit = self.exit();
        let mut evidence = match (&self.ended, &exit) {
            (Some(_), _) => vec!["(the checker ended the agent)".to_owned()],
            (None, Some(exit)) => vec![format!("(the agent exited: {})", exit.status)],
            (None, None) => return Vec::new(),
        };
        if let Some(exit) = exit {
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
        }
        evidence
    }

    /// Whether the agent has exited (or was ended by the checker).
    pub fn has_exited(&self) -> bool {
        self.ended.is_some() || self.exit().is_some()
    }
}

impl Drop for Conn {
    /// Closes stdin, reads what the agent still writes (stray output at exit counts too) for
    /// up to the grace period, stops reading, then ends the agent stepwise (bounded by
    /// [`EXIT_WAIT`]), and hands the log to the sink.
    fn drop(&mut self) {
        self.outbox.close();
        let deadline = Instant::now() + self.grace.max(Duration::from_millis(200));
        while !matches!(self.next_event(deadline), Event::Eof | Event::Timeout) {}
        // An agent blocked writing to a full pipe gets an error and can exit.
        self.reader = None;
        if let Some(process) = self.process.take() {
            let exit = smol::block_on(futures_lite::future::or(
                async { Some(process.shutdown().await) },
                async {
                    smol::Timer::after(EXIT_WAIT).await;
                    None
                },
            ));
            match exit {
                Some(exit) => self.trace("-", &format!("agent ended: {exit}")),
                None => self.trace("-", "agent killed: it did not end in time"),
            }
        }
        for (session, line) in std::mem::take(&mut self.named_sessions) {
            if !self.sessions.contains(&session) {
                let size = line.len();
                self.log.invalid.push(
                    || {
                        format!(
                            "{line} (names session `{session}`, which this connection never created or named)"
                        )
                    },
                    size,
                );
            }
        }
        let log = std::mem::take(&mut self.log);
        self.sink.borrow_mut().push(log);
    }
}
