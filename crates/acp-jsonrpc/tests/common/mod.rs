//! Test support: a raw peer that speaks bytes, a recording observer, and a
//! handler with one method per behaviour under test.

#![allow(dead_code)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_jsonrpc::memory::{self, PipeReader, PipeWriter};
use acp_jsonrpc::{
    Connection, ConnectionError, ConnectionHandle, ConnectionOptions, Handler,
    IncomingNotification, IncomingRequest, LineEvent, LineReader, Observer, Problem, Responder,
    ResponseError,
};
use futures_lite::AsyncWriteExt;
use serde::Deserialize;
use smol::Timer;

/// Runs a test body on smol, failing it if it takes longer than 10 s.
pub fn run<T>(body: impl Future<Output = T>) -> T {
    smol::block_on(smol::future::or(body, async {
        Timer::after(Duration::from_secs(10)).await;
        panic!("test timed out")
    }))
}

/// Whether `future` is still pending after `wait`.
pub async fn stays_pending<F: Future + Unpin>(future: &mut F, wait: Duration) -> bool {
    smol::future::or(async { Some(future.await) }, async {
        Timer::after(wait).await;
        None
    })
    .await
    .is_none()
}

/// The other end of a connection under test, speaking raw lines.
pub struct RawPeer {
    pub writer: Option<PipeWriter>,
    pub reader: LineReader<PipeReader>,
}

impl RawPeer {
    pub async fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
        self.send_bytes(b"\n").await;
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        let writer = self.writer.as_mut().expect("writer still open");
        writer.write_all(bytes).await.unwrap();
    }

    /// Closes our writing side: the connection sees end of input.
    pub fn close(&mut self) {
        self.writer = None;
    }

    /// The next line from the connection, or `None` at end of its output.
    pub async fn recv(&mut self) -> Option<String> {
        let reader = &mut self.reader;
        let read = async {
            match reader.read_line().await.unwrap() {
                None => None,
                Some(LineEvent::Line(line)) => Some(String::from_utf8(line.to_vec()).unwrap()),
                Some(LineEvent::TooLong { length }) => panic!("unexpected long line ({length})"),
            }
        };
        smol::future::or(read, async {
            Timer::after(Duration::from_secs(5)).await;
            panic!("no line from the connection within 5 s")
        })
        .await
    }

    pub async fn recv_json(&mut self) -> serde_json::Value {
        let line = self.recv().await.expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends `line`, then a ping with id `"sentinel"`, and returns every line
    /// the connection wrote before the pong: exactly what `line` caused.
    pub async fn replies_to(&mut self, line: &[u8]) -> Vec<String> {
        self.send_bytes(line).await;
        self.send_bytes(b"\n").await;
        self.send(r#"{"jsonrpc":"2.0","id":"sentinel","method":"ping"}"#)
            .await;
        let mut replies = Vec::new();
        loop {
            let reply = self.recv().await.expect("a reply");
            if reply == r#"{"jsonrpc":"2.0","id":"sentinel","result":"pong"}"# {
                return replies;
            }
            replies.push(reply);
        }
    }
}

/// Starts a connection with `handler` whose peer is a [`RawPeer`]; the
/// driver runs on smol's global executor.
pub fn connect<H: Handler>(
    handler: H,
    options: ConnectionOptions,
) -> (
    ConnectionHandle,
    RawPeer,
    smol::Task<Result<(), ConnectionError>>,
) {
    let (ours, theirs) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (handle, driver) = Connection::new(ours.reader, ours.writer, handler, options);
    let task = smol::spawn(driver);
    let peer = RawPeer {
        writer: Some(theirs.writer),
        reader: LineReader::new(theirs.reader),
    };
    (handle, peer, task)
}

/// Records everything an observer sees.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Mutex<Recorded>>);

#[derive(Default, Debug)]
pub struct Recorded {
    pub incoming: Vec<String>,
    pub outgoing: Vec<String>,
    pub problems: Vec<Problem>,
}

impl Recorder {
    pub fn problems(&self) -> Vec<Problem> {
        self.0.lock().unwrap().problems.clone()
    }

    pub fn incoming(&self) -> Vec<String> {
        self.0.lock().unwrap().incoming.clone()
    }

    pub fn outgoing(&self) -> Vec<String> {
        self.0.lock().unwrap().outgoing.clone()
    }
}

impl Observer for Recorder {
    fn incoming(&self, line: &[u8]) {
        let line = String::from_utf8_lossy(line).into_owned();
        self.0.lock().unwrap().incoming.push(line);
    }

    fn outgoing(&self, line: &[u8]) {
        let line = String::from_utf8(line.to_vec()).unwrap();
        self.0.lock().unwrap().outgoing.push(line);
    }

    fn problem(&self, problem: &Problem) {
        self.0.lock().unwrap().problems.push(problem.clone());
    }
}

/// A handler with one method per behaviour under test, logging the
/// notifications it handled.
#[derive(Clone, Default)]
pub struct TestHandler {
    pub log: Arc<Mutex<Vec<String>>>,
}

impl TestHandler {
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

#[derive(Deserialize)]
struct AddParams {
    a: i64,
    b: i64,
}

impl Handler for TestHandler {
    async fn request(&self, request: IncomingRequest, responder: Responder) {
        match request.method() {
            "ping" => responder.respond_ok("pong"),
            "add" => responder.respond(request.params::<AddParams>().map(|p| p.a + p.b)),
            "echo" => responder.respond_raw(Ok(request.raw_params().unwrap())),
            "fail" => responder.respond_error(ResponseError::new(1.into(), "it failed")),
            "panic" => panic!("boom"),
            "drop" => drop(responder),
            "sleep" => {
                Timer::after(Duration::from_millis(50)).await;
                responder.respond_ok("slept");
            }
            "forever" => {
                let _keep = responder;
                std::future::pending::<()>().await;
            }
            _ => responder.respond_error(request.method_not_found()),
        }
    }

    async fn notification(&self, notification: IncomingNotification) {
        match notification.method() {
            "note" => {
                let params = notification
                    .raw_params()
                    .map_or("-".to_owned(), |p| p.get().to_owned());
                self.log.lock().unwrap().push(format!("note {params}"));
            }
            "slow_note" => {
                Timer::after(Duration::from_millis(100)).await;
                self.log.lock().unwrap().push("slow_note done".to_owned());
            }
            "typed_note" => match notification.params::<AddParams>() {
                Ok(p) => self.log.lock().unwrap().push(format!("sum {}", p.a + p.b)),
                Err(error) => notification.report_unhandled(error),
            },
            "panic_note" => panic!("note boom"),
            _ => notification.report_unhandled("unknown method"),
        }
    }
}

/// A driver running on smol.
pub type DriverTask = smol::Task<Result<(), ConnectionError>>;

/// Two connections joined by an in-memory pipe, their drivers spawned on smol.
pub fn connected_pair<A: Handler, B: Handler>(
    a: A,
    b: B,
    options: ConnectionOptions,
) -> (ConnectionHandle, ConnectionHandle, DriverTask, DriverTask) {
    let (a_end, b_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (a_handle, a_driver) = Connection::new(a_end.reader, a_end.writer, a, options.clone());
    let (b_handle, b_driver) = Connection::new(b_end.reader, b_end.writer, b, options);
    (
        a_handle,
        b_handle,
        smol::spawn(a_driver),
        smol::spawn(b_driver),
    )
}
