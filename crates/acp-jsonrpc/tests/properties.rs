//! Property tests: any sequence of messages, cut into arbitrary chunks and
//! read with reads that keep getting dropped, comes back identical and in
//! order — on its own and through a connection that is busy sending at the
//! same time.

mod common;

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use acp_jsonrpc::memory;
use acp_jsonrpc::{
    Connection, ConnectionOptions, ErrorCode, LineEvent, LineReader, Message, Notification,
    Request, RequestId, Response, ResponseError,
};
use common::TestHandler;
use futures_io::{AsyncBufRead, AsyncRead};
use futures_lite::AsyncWriteExt;
use proptest::prelude::*;
use serde_json::value::RawValue;

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        Just(Value::from("quotes \" backslash \\ newline \n tab \t")),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_]{1,6}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Raw JSON as a peer might write it: compact, or with spaces and tabs
/// (never newlines: a line cannot contain one).
fn raw_json() -> impl Strategy<Value = Box<RawValue>> {
    (json_value(), any::<bool>()).prop_map(|(value, spaced)| {
        let text = if spaced {
            serde_json::to_string_pretty(&value)
                .unwrap()
                .replace('\n', " \t")
        } else {
            serde_json::to_string(&value).unwrap()
        };
        RawValue::from_string(text).unwrap()
    })
}

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::from),
        any::<u64>().prop_map(RequestId::from),
        "\\PC{0,10}".prop_map(RequestId::from),
        Just(RequestId::null()),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    let method = "[a-zA-Z/_$]{1,16}|\\PC{0,8}";
    prop_oneof![
        (request_id(), method, proptest::option::of(raw_json()))
            .prop_map(|(id, method, params)| { Message::Request(Request { id, method, params }) }),
        (method, proptest::option::of(raw_json()))
            .prop_map(|(method, params)| Message::Notification(Notification { method, params })),
        (request_id(), raw_json()).prop_map(|(id, result)| Message::Response(Response {
            id,
            result: Ok(result)
        })),
        (
            request_id(),
            any::<i32>(),
            "\\PC{0,10}",
            proptest::option::of(raw_json())
        )
            .prop_map(|(id, code, message, data)| Message::Response(Response {
                id,
                result: Err(ResponseError {
                    code: ErrorCode(code),
                    message,
                    data,
                }),
            })),
    ]
}

/// Serves the input in the given chunk sizes and says `Pending` (waking at
/// once) before every chunk.
struct Chunks {
    input: Vec<u8>,
    position: usize,
    sizes: Vec<usize>,
    next_size: usize,
    stalled: bool,
}

impl AsyncRead for Chunks {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        unreachable!("read through AsyncBufRead")
    }
}

impl AsyncBufRead for Chunks {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if !this.stalled {
            this.stalled = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let size = this.sizes[this.next_size % this.sizes.len()];
        let end = (this.position + size).min(this.input.len());
        Poll::Ready(Ok(&this.input[this.position..end]))
    }

    fn consume(self: Pin<&mut Self>, amount: usize) {
        let this = self.get_mut();
        this.position += amount;
        if amount > 0 {
            this.next_size += 1;
            this.stalled = false;
        }
    }
}

/// Each message as a line, ended by `\n` or `\r\n`, with blank lines
/// sprinkled in.
fn frame(messages: &[Message], endings: &[(bool, bool)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (message, &(crlf, blank)) in messages.iter().zip(endings.iter().cycle()) {
        message.encode(&mut bytes);
        if crlf {
            bytes.pop();
            bytes.extend_from_slice(b"\r\n");
        }
        if blank {
            bytes.extend_from_slice(b"  \n");
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Every read is polled exactly once and dropped whenever it is not
    /// ready: each partial line must survive.
    #[test]
    fn messages_survive_any_chunking_and_dropped_reads(
        messages in prop::collection::vec(message(), 0..12),
        endings in prop::collection::vec((any::<bool>(), any::<bool>()), 1..4),
        sizes in prop::collection::vec(1usize..40, 1..8),
    ) {
        let input = frame(&messages, &endings);
        let reader = Chunks { input, position: 0, sizes, next_size: 0, stalled: false };
        let mut lines = LineReader::new(reader);
        let mut decoded = Vec::new();
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            let mut read = Box::pin(lines.read_message());
            match read.as_mut().poll(&mut cx) {
                Poll::Pending => continue, // dropped mid-line
                Poll::Ready(Ok(Some(message))) => decoded.push(message.unwrap()),
                Poll::Ready(Ok(None)) => break,
                Poll::Ready(Err(error)) => panic!("{error}"),
            }
        }
        prop_assert_eq!(decoded, messages);
    }
}

#[derive(Debug, Clone)]
enum Incoming {
    Note(u32),
    Echo(u32),
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// The peer's messages arrive in arbitrary chunks while our side sends
    /// its own notifications: notifications are handled in order, every
    /// request gets its one answer, and our notifications arrive in order.
    #[test]
    fn connection_keeps_order_under_interleaving(
        incoming in prop::collection::vec(
            prop_oneof![any::<u32>().prop_map(Incoming::Note), any::<u32>().prop_map(Incoming::Echo)],
            0..40,
        ),
        sizes in prop::collection::vec(1usize..64, 1..6),
        outgoing in 0usize..40,
    ) {
        let handler = TestHandler::default();
        let (ours, theirs) = memory::pair(128);
        let (handle, driver) =
            Connection::new(ours.reader, ours.writer, handler.clone(), ConnectionOptions::default());

        let mut input = String::new();
        for (index, message) in incoming.iter().enumerate() {
            match message {
                Incoming::Note(n) => input.push_str(&format!(
                    r#"{{"jsonrpc":"2.0","method":"note","params":{n}}}"#
                )),
                Incoming::Echo(n) => input.push_str(&format!(
                    r#"{{"jsonrpc":"2.0","id":{index},"method":"echo","params":{{"n":{n}}}}}"#
                )),
            }
            input.push('\n');
        }
        let requests = incoming.iter().filter(|m| matches!(m, Incoming::Echo(_))).count();

        let mut peer_writer = theirs.writer;
        let peer_sends = async move {
            let mut rest = input.as_bytes();
            let mut turn = 0;
            while !rest.is_empty() {
                let size = sizes[turn % sizes.len()].min(rest.len());
                peer_writer.write_all(&rest[..size]).await.unwrap();
                rest = &rest[size..];
                turn += 1;
                futures_lite::future::yield_now().await;
            }
            peer_writer
        };
        let we_send = async {
            for j in 0..outgoing {
                handle.notify("out", &j).await.unwrap();
                futures_lite::future::yield_now().await;
            }
        };
        let mut peer_reader = LineReader::new(theirs.reader);
        let peer_receives = async move {
            let mut responses = Vec::new();
            let mut notifications = Vec::new();
            while responses.len() < requests || notifications.len() < outgoing {
                let Some(LineEvent::Line(line)) = peer_reader.read_line().await.unwrap() else {
                    panic!("connection output ended early");
                };
                match Message::from_slice(line).unwrap() {
                    Message::Response(response) => responses.push(response),
                    Message::Notification(n) => notifications.push(n.params::<usize>().unwrap()),
                    Message::Request(r) => panic!("unexpected request {r:?}"),
                }
            }
            (responses, notifications)
        };
        let all = futures_lite::future::zip(
            futures_lite::future::zip(peer_sends, we_send),
            peer_receives,
        );
        let ((_peer_writer, ()), (responses, notifications)) = common::run(
            futures_lite::future::or(
                all,
                async {
                    driver.await.unwrap();
                    panic!("driver ended early")
                },
            ),
        );

        prop_assert_eq!(notifications, (0..outgoing).collect::<Vec<_>>());
        let mut expected_responses = Vec::new();
        let mut expected_log = Vec::new();
        for (index, message) in incoming.iter().enumerate() {
            match message {
                Incoming::Note(n) => expected_log.push(format!("note {n}")),
                Incoming::Echo(n) => expected_responses.push(format!(
                    r#"{{"jsonrpc":"2.0","id":{index},"result":{{"n":{n}}}}}"#
                )),
            }
        }
        let mut responses: Vec<String> =
            responses.into_iter().map(|r| Message::Response(r).to_json()).collect();
        responses.sort_by_key(|r| {
            serde_json::from_str::<serde_json::Value>(r).unwrap()["id"].as_u64().unwrap()
        });
        prop_assert_eq!(responses, expected_responses);
        prop_assert_eq!(handler.log(), expected_log);
    }
}

/// A message that does not survive its own encoding would break the
/// properties above for reasons unrelated to framing.
#[test]
fn generated_messages_round_trip() {
    let mut runner = proptest::test_runner::TestRunner::default();
    runner
        .run(&message(), |message| {
            let line = message.to_json();
            prop_assert_eq!(Message::from_slice(line.as_bytes()).unwrap(), message);
            Ok(())
        })
        .unwrap();
}
