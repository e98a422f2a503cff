//! The `tracing` feature: the spans and events of a request, an error
//! answer and a notification, captured by a small subscriber of this file
//! (`cargo test -p acp-rs-jsonrpc --features tracing --test tracing`).
#![cfg(feature = "tracing")]

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use acp_jsonrpc::{
    Connection, ConnectionOptions, Handler, IncomingRequest, Observer, Responder, memory,
};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

#[derive(Debug, Clone)]
struct SpanRecord {
    name: &'static str,
    fields: BTreeMap<String, String>,
    parent: Option<u64>,
}

#[derive(Debug, Clone)]
struct EventRecord {
    level: Level,
    fields: BTreeMap<String, String>,
    parent: Option<u64>,
}

impl EventRecord {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// Records every span and event, with its fields as text and its parent
/// (explicit, or the span entered at the time). Installed per thread with
/// `with_default`, so the other tests of this binary do not interfere.
#[derive(Clone, Default)]
struct Capture(Arc<Log>);

#[derive(Default)]
struct Log {
    next_id: AtomicU64,
    spans: Mutex<BTreeMap<u64, SpanRecord>>,
    events: Mutex<Vec<EventRecord>>,
    entered: Mutex<Vec<u64>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Log {
    fn current(&self) -> Option<u64> {
        self.entered.lock().unwrap().last().copied()
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let id = self.0.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = BTreeMap::new();
        attributes.record(&mut Fields(&mut fields));
        let parent = match attributes.parent() {
            Some(parent) => Some(parent.into_u64()),
            None if attributes.is_contextual() => self.0.current(),
            None => None,
        };
        let span = SpanRecord {
            name: attributes.metadata().name(),
            fields,
            parent,
        };
        self.0.spans.lock().unwrap().insert(id, span);
        Id::from_u64(id)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let parent = match event.parent() {
            Some(parent) => Some(parent.into_u64()),
            None if event.is_contextual() => self.0.current(),
            None => None,
        };
        let level = *event.metadata().level();
        let record = EventRecord {
            level,
            fields,
            parent,
        };
        self.0.events.lock().unwrap().push(record);
    }

    fn enter(&self, span: &Id) {
        self.0.entered.lock().unwrap().push(span.into_u64());
    }

    fn exit(&self, _: &Id) {
        self.0.entered.lock().unwrap().pop();
    }
}

impl Capture {
    fn span(&self, id: u64) -> SpanRecord {
        self.0.spans.lock().unwrap()[&id].clone()
    }

    /// The `connection` field of the connection span above `parent`.
    fn connection_of(&self, mut parent: Option<u64>) -> Option<String> {
        while let Some(id) = parent {
            let span = self.span(id);
            if span.name == "connection" {
                return span.fields.get("connection").cloned();
            }
            parent = span.parent;
        }
        None
    }

    /// The one event whose fields include all of `fields`.
    fn event(&self, fields: &[(&str, &str)]) -> EventRecord {
        let events = self.0.events.lock().unwrap();
        let found: Vec<_> = events
            .iter()
            .filter(|e| fields.iter().all(|(k, v)| e.field(k) == Some(*v)))
            .cloned()
            .collect();
        assert_eq!(found.len(), 1, "events with {fields:?}: {found:#?}");
        found.into_iter().next().unwrap()
    }
}

/// The client's wire, for the sizes the events must report.
#[derive(Default)]
struct Lines {
    sent: Mutex<Vec<String>>,
    read: Mutex<Vec<String>>,
}

impl Observer for Lines {
    fn incoming(&self, line: &[u8]) {
        self.read
            .lock()
            .unwrap()
            .push(String::from_utf8_lossy(line).into());
    }

    fn outgoing(&self, line: &[u8]) {
        self.sent
            .lock()
            .unwrap()
            .push(String::from_utf8_lossy(line).into());
    }
}

impl Lines {
    fn length(lines: &Mutex<Vec<String>>, containing: &str) -> String {
        let lines = lines.lock().unwrap();
        let found: Vec<_> = lines.iter().filter(|l| l.contains(containing)).collect();
        assert_eq!(found.len(), 1, "lines with {containing}: {found:?}");
        found[0].len().to_string()
    }
}

struct Calculator;

impl Handler for Calculator {
    async fn request(&self, request: IncomingRequest, responder: Responder) {
        match request.method() {
            "add" => responder.respond(request.params::<[i64; 2]>().map(|[a, b]| a + b)),
            _ => responder.respond_error(request.method_not_found()),
        }
    }
}

#[test]
fn a_request_an_error_and_a_notification_are_traced_on_both_sides() {
    let capture = Capture::default();
    let lines = Arc::new(Lines::default());
    tracing::subscriber::with_default(capture.clone(), || {
        let (client_end, server_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        let options = ConnectionOptions::default().with_shared_observer(lines.clone());
        let (client, client_driver) =
            Connection::new(client_end.reader, client_end.writer, (), options);
        let (_server, server_driver) = Connection::new(
            server_end.reader,
            server_end.writer,
            Calculator,
            ConnectionOptions::default(),
        );
        smol::block_on(async {
            let calls = async {
                let sum: i64 = client.request("add", &[2, 3]).await.unwrap();
                assert_eq!(sum, 5);
                client
                    .request::<i64, _>("divide", &[1, 0])
                    .await
                    .unwrap_err();
                client.notify("note", &["hi"]).await.unwrap();
                client.close();
            };
            let (drivers, ()) =
                smol::future::zip(smol::future::zip(client_driver, server_driver), calls).await;
            drivers.0.unwrap();
            drivers.1.unwrap();
        });
    });

    // The client's connection span is opened first.
    let spans = capture.0.spans.lock().unwrap().clone();
    let mut connections = spans.values().filter(|s| s.name == "connection");
    let client = connections.next().unwrap().fields["connection"].clone();
    let server = connections.next().unwrap().fields["connection"].clone();
    assert_ne!(client, server);

    let request_line = Lines::length(&lines.sent, r#""method":"add""#);
    let response_line = Lines::length(&lines.read, r#""result":5"#);

    // The request as sent: an event in the request's own span, under the
    // client's connection.
    let sent = capture.event(&[("direction", "out"), ("kind", "request"), ("method", "add")]);
    assert_eq!(sent.level, Level::DEBUG);
    assert_eq!(sent.field("message"), Some("sent"));
    assert_eq!(sent.field("id"), Some("0"));
    assert_eq!(sent.field("bytes"), Some(request_line.as_str()));
    let span = capture.span(sent.parent.unwrap());
    assert_eq!(
        (span.name, span.fields["direction"].as_str()),
        ("request", "out")
    );
    assert_eq!(capture.connection_of(sent.parent), Some(client.clone()));

    // ...as received, in the server's span for the request.
    let received = capture.event(&[("direction", "in"), ("kind", "request"), ("method", "add")]);
    assert_eq!(received.level, Level::DEBUG);
    assert_eq!(received.field("id"), Some("0"));
    assert_eq!(received.field("bytes"), Some(request_line.as_str()));
    let span = capture.span(received.parent.unwrap());
    assert_eq!(span.name, "request");
    assert_eq!(span.fields["direction"], "in");
    assert_eq!(span.fields["method"], "add");
    assert_eq!(capture.connection_of(received.parent), Some(server.clone()));

    // The response, both ways, with the request's method and a duration.
    for direction in ["out", "in"] {
        let response = capture.event(&[
            ("direction", direction),
            ("kind", "response"),
            ("method", "add"),
        ]);
        assert_eq!(response.level, Level::DEBUG);
        assert_eq!(response.field("id"), Some("0"));
        assert_eq!(response.field("bytes"), Some(response_line.as_str()));
        assert!(response.field("duration_us").is_some(), "{response:?}");
        assert_eq!(response.field("error_code"), None);
        let side = if direction == "out" { &server } else { &client };
        assert_eq!(capture.connection_of(response.parent).as_ref(), Some(side));
    }

    // An error answer is a warning, on both sides.
    for direction in ["out", "in"] {
        let response = capture.event(&[
            ("direction", direction),
            ("kind", "response"),
            ("method", "divide"),
        ]);
        assert_eq!(response.level, Level::WARN);
        assert_eq!(response.field("error_code"), Some("-32601"));
        assert_eq!(response.field("id"), Some("1"));
    }

    // The notification: no id, no span of its own.
    let notification_line = Lines::length(&lines.sent, r#""method":"note""#);
    for (direction, side) in [("out", &client), ("in", &server)] {
        let event = capture.event(&[
            ("direction", direction),
            ("kind", "notification"),
            ("method", "note"),
        ]);
        assert_eq!(event.level, Level::DEBUG);
        assert_eq!(event.field("id"), None);
        assert_eq!(event.field("bytes"), Some(notification_line.as_str()));
        assert_eq!(capture.span(event.parent.unwrap()).name, "connection");
        assert_eq!(capture.connection_of(event.parent).as_ref(), Some(side));
    }

    // The server has no handler for it: reported, at WARN.
    let unhandled = capture.event(&[(
        "message",
        r#"notification "note" not handled: no handler for notifications"#,
    )]);
    assert_eq!(unhandled.level, Level::WARN);
    assert_eq!(
        capture.connection_of(unhandled.parent),
        Some(server.clone())
    );

    // Both connections end cleanly.
    for side in [&client, &server] {
        let events = capture.0.events.lock().unwrap().clone();
        let closed = events.iter().filter(|e| {
            e.field("message") == Some("closed")
                && capture.connection_of(e.parent).as_ref() == Some(side)
        });
        assert_eq!(closed.count(), 1);
    }
}

/// Answers each request once the test opens the gate.
struct Gate(async_channel::Receiver<()>);

impl Handler for Gate {
    async fn request(&self, _: IncomingRequest, responder: Responder) {
        let _ = self.0.recv().await;
        responder.respond_ok(&());
    }
}

#[test]
fn a_refused_request_is_a_warning_on_both_sides() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let (open, gate) = async_channel::unbounded();
        let (client_end, server_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        let (client, client_driver) = Connection::new(
            client_end.reader,
            client_end.writer,
            (),
            ConnectionOptions::default(),
        );
        let (_server, server_driver) = Connection::new(
            server_end.reader,
            server_end.writer,
            Gate(gate),
            ConnectionOptions::default().with_max_in_flight_requests(1),
        );
        smol::block_on(async {
            let calls = async {
                // Polled in this order on one thread, so they go out in this order: the first
                // holds the server's only slot until the gate opens, the second is refused.
                let first = client.request::<(), _>("wait", &());
                let second = async {
                    let refused = client.request::<(), _>("wait", &()).await;
                    open.send(()).await.unwrap();
                    refused
                };
                let (first, second) = smol::future::zip(first, second).await;
                first.unwrap();
                second.unwrap_err();
                client.close();
            };
            let (drivers, ()) =
                smol::future::zip(smol::future::zip(client_driver, server_driver), calls).await;
            drivers.0.unwrap();
            drivers.1.unwrap();
        });
    });

    let refused = capture.event(&[(
        "message",
        "refused request 1: 1 requests are already in flight",
    )]);
    assert_eq!(refused.level, Level::WARN);
    // The server's answer, and the client's view of it: warnings with the error code.
    let answer = capture.event(&[("direction", "out"), ("kind", "response"), ("id", "1")]);
    assert_eq!(answer.level, Level::WARN);
    assert_eq!(answer.field("error_code"), Some("-32603"));
    let received = capture.event(&[("direction", "in"), ("kind", "response"), ("id", "1")]);
    assert_eq!(received.level, Level::WARN);
    assert_eq!(received.field("method"), Some("wait"));
    assert_eq!(received.field("error_code"), Some("-32603"));
    // The first request was answered normally.
    let answered = capture.event(&[("direction", "in"), ("kind", "response"), ("id", "0")]);
    assert_eq!(answered.level, Level::DEBUG);
    assert_eq!(answered.field("error_code"), None);
}
