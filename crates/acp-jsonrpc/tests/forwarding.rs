//! The forwarding path (`Handler::forward_notification`): a router connection that passes
//! every notification on to a second connection delivers byte-identical lines, in order,
//! whichever way each one went (forwarded as bytes, or through the handler when the next
//! hop's queue was full or the line was one only the full decode reads); and requests taken
//! with their params unread (`Handler::takes_unread`), their answers forwarded unread.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_jsonrpc::json::{carried_message, inner_message};
use acp_jsonrpc::memory::{self, PipeReader};
use acp_jsonrpc::{
    Connection, ConnectionHandle, ConnectionOptions, Handler, IncomingNotification, LineEvent,
    LineReader, RawNotification,
};
use futures_lite::AsyncWriteExt;
use proptest::prelude::*;
use serde_json::value::RawValue;

/// The router's line limit (the default is 64 MiB; the big case stays just under this).
const LINE_LIMIT: usize = 1 << 20;

/// The envelope a wrapping router puts around what it forwards.
const ENVELOPE: &str = "proxy/successor";

/// What a router does with each notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Sends it on as it is.
    Plain,
    /// Wraps it in [`ENVELOPE`], as a conductor sends a proxy what comes from its successor.
    Wrap,
    /// Sends on the message its params carry, when they carry one (as a pass-through proxy
    /// does with what comes from its successor), else the notification as it is.
    Unwrap,
    /// Sends it on under [`renamed`]'s method: the same text in a string of its own for
    /// `session/update`, another method for the rest.
    Rename,
}

/// The method [`Mode::Rename`] sends `method` under.
fn renamed(method: &str) -> String {
    if method == "session/update" {
        method.to_owned()
    } else {
        "renamed/é".to_owned()
    }
}

/// Forwards every notification to `next` as its [`Mode`] says, counting which path each took.
struct Router {
    next: ConnectionHandle,
    mode: Mode,
    as_bytes: Arc<AtomicUsize>,
    handled: Arc<AtomicUsize>,
}

impl Handler for Router {
    async fn notification(&self, notification: IncomingNotification) {
        self.handled.fetch_add(1, Ordering::Relaxed);
        let (method, params) = (notification.method(), notification.raw_params());
        let sent = match self.mode {
            Mode::Plain => self.next.notify_raw(method, params).await,
            Mode::Wrap => {
                let inner = inner_message(method, params);
                self.next.notify_raw(ENVELOPE, Some(&inner)).await
            }
            Mode::Unwrap => match params.and_then(carried_message) {
                Some((method, params)) => self.next.notify_raw(method, params).await,
                None => self.next.notify_raw(method, params).await,
            },
            Mode::Rename => self.next.notify_raw(&renamed(method), params).await,
        };
        sent.unwrap();
    }

    const FORWARDS: bool = true;

    fn forward_notification(&self, notification: &RawNotification<'_>) -> bool {
        let (method, params) = (notification.method(), notification.params());
        // The carried message, whether the scan found it on the way (params spelled
        // `{"method":…,"params":…}`) or walks the params when asked, is the one the validating
        // side reads.
        if let Some(text) = params.and_then(|p| std::str::from_utf8(p.as_bytes()).ok())
            && let Ok(raw) = RawValue::from_string(text.to_owned())
        {
            let found = notification.carried().map(|c| {
                (
                    c.method().to_owned(),
                    c.params().map(|p| p.as_bytes().to_vec()),
                )
            });
            let read = carried_message(&raw)
                .map(|(m, p)| (m.to_owned(), p.map(|p| p.get().as_bytes().to_vec())));
            assert_eq!(found, read, "{text}");
        }
        let queued = match self.mode {
            Mode::Plain => self.next.try_notify_raw(method, params),
            Mode::Wrap => self.next.try_notify_wrapped(ENVELOPE, method, params),
            Mode::Unwrap => match notification.carried() {
                Some(carried) => self.next.try_notify_raw(carried.method(), carried.params()),
                None => self.next.try_notify_raw(method, params),
            },
            Mode::Rename => self.next.try_notify_raw(&renamed(method), params),
        };
        if queued {
            self.as_bytes.fetch_add(1, Ordering::Relaxed);
        }
        queued
    }
}

/// One notification as a peer may write it, and the line the router must write for it.
#[derive(Debug, Clone)]
struct Case {
    input: String,
    expected: String,
}

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
        Just(Value::from(
            "quotes \" backslash \\ newline \n tab \t \u{1} é 😀"
        )),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_\"\\\\]{1,6}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn case() -> impl Strategy<Value = Case> {
    let method = prop_oneof![
        Just("session/update".to_owned()),
        "[a-z/_]{1,12}",
        "\\PC{0,8}",
        Just("quote\"back\\slash\u{7}".to_owned()),
    ];
    // How the peer spells it: compact, spaced params, the members in another order, an
    // escaped solidus in the method (which only the full decode reads), or params carrying a
    // message (`{"method":…,"params":…}`, which the scan reads on the way).
    let params = prop_oneof![
        3 => prop::option::of(json_value()),
        1 => (prop_oneof![3 => "[a-z/_]{1,12}", 1 => "\\PC{0,8}"], json_value())
            .prop_map(|(method, params)| Some(serde_json::json!({"method": method, "params": params}))),
    ];
    (method, params, 0..4u8).prop_map(move |(method, params, spelling)| {
        let quoted = serde_json::to_string(&method).unwrap();
        let compact = params.as_ref().map(|p| serde_json::to_string(p).unwrap());
        let raw = match (spelling, &params) {
            (1, Some(p)) => Some(
                serde_json::to_string_pretty(p)
                    .unwrap()
                    .replace('\n', " \t"),
            ),
            _ => compact.clone(),
        };
        let members = |method: &str| match &raw {
            Some(raw) => format!(r#""method":{method},"params":{raw}"#),
            None => format!(r#""method":{method}"#),
        };
        let input = match spelling {
            2 => format!(r#"{{{},"jsonrpc":"2.0"}}"#, members(&quoted)),
            3 => format!(
                r#"{{"jsonrpc":"2.0",{}}}"#,
                members(&quoted.replace('/', "\\/"))
            ),
            _ => format!(r#"{{"jsonrpc":"2.0",{}}}"#, members(&quoted)),
        };
        let params = raw.map(|raw| RawValue::from_string(raw).unwrap());
        let expected = plain_line(&method, params.as_deref());
        Case { input, expected }
    })
}

/// The line this crate writes for `method` with `params`.
fn plain_line(method: &str, params: Option<&RawValue>) -> String {
    let quoted = serde_json::to_string(method).unwrap();
    match params {
        Some(params) => format!(
            r#"{{"jsonrpc":"2.0","method":{quoted},"params":{}}}"#,
            params.get()
        ),
        None => format!(r#"{{"jsonrpc":"2.0","method":{quoted}}}"#),
    }
}

/// Sends `cases` through a router (its next hop's queue `capacity` messages deep) and
/// returns the lines that came out, and how many went each way.
fn route(cases: &[Case], mode: Mode, capacity: usize) -> (Vec<String>, usize, usize) {
    let (source, router_in) = memory::pair(4096);
    let (router_out, sink) = memory::pair(4096);
    let options = ConnectionOptions::default()
        .with_outgoing_capacity(capacity)
        .with_max_line_length(LINE_LIMIT);
    let (next, next_driver) =
        Connection::new(router_out.reader, router_out.writer, (), options.clone());
    let as_bytes = Arc::new(AtomicUsize::new(0));
    let handled = Arc::new(AtomicUsize::new(0));
    let router = Router {
        next: next.clone(),
        mode,
        as_bytes: as_bytes.clone(),
        handled: handled.clone(),
    };
    let (_router, router_driver) =
        Connection::new(router_in.reader, router_in.writer, router, options);
    let mut input = String::new();
    for case in cases {
        input.push_str(&case.input);
        input.push('\n');
    }
    let mut writer = source.writer;
    let send = async move {
        writer.write_all(input.as_bytes()).await.unwrap();
        drop(writer);
    };
    let receive = read_lines(sink.reader, cases.len());
    let lines = common::run(async {
        let routing = async {
            let (routed, ()) = futures_lite::future::zip(router_driver, send).await;
            routed.unwrap();
            // Everything routed is queued on the next hop: let it finish writing.
            next.close();
        };
        let ((lines, ()), written) =
            futures_lite::future::zip(futures_lite::future::zip(receive, routing), next_driver)
                .await;
        written.unwrap();
        lines
    });
    let (as_bytes, handled) = (
        as_bytes.load(Ordering::Relaxed),
        handled.load(Ordering::Relaxed),
    );
    (lines, as_bytes, handled)
}

async fn read_lines(reader: PipeReader, count: usize) -> Vec<String> {
    let mut reader = LineReader::with_max_line_length(reader, usize::MAX);
    let mut lines = Vec::new();
    while let Some(event) = reader.read_line().await.unwrap() {
        match event {
            LineEvent::Line(line) => lines.push(String::from_utf8(line.to_vec()).unwrap()),
            LineEvent::TooLong { .. } => unreachable!("no limit"),
        }
    }
    assert_eq!(lines.len(), count, "every line once");
    lines
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn forwarded_lines_are_byte_identical_and_in_order(
        mode in prop_oneof![Just(Mode::Plain), Just(Mode::Wrap), Just(Mode::Unwrap), Just(Mode::Rename)],
        cases in prop::collection::vec(case(), 1..60),
        capacity in prop_oneof![Just(1usize), Just(4), Just(1024)],
    ) {
        let cases: Vec<Case> = cases.into_iter().map(|case| expect(case, mode)).collect();
        let (lines, as_bytes, handled) = route(&cases, mode, capacity);
        let expected: Vec<&str> = cases.iter().map(|case| case.expected.as_str()).collect();
        prop_assert_eq!(lines, expected);
        prop_assert_eq!(as_bytes + handled, cases.len());
    }
}

/// A case whose expected line is the one sent as it is: the line expected when the router
/// forwards it in `mode`.
fn expect(case: Case, mode: Mode) -> Case {
    let unwrapped: serde_json::Value = serde_json::from_str(&case.expected).unwrap();
    let method = unwrapped["method"].as_str().unwrap();
    let at = case.expected.find(r#","params":"#);
    let params = at.map(|at| {
        let raw = &case.expected[at + r#","params":"#.len()..case.expected.len() - 1];
        RawValue::from_string(raw.to_owned()).unwrap()
    });
    let expected = match mode {
        Mode::Plain => return case,
        Mode::Wrap => {
            let inner = inner_message(method, params.as_deref());
            format!(
                r#"{{"jsonrpc":"2.0","method":"{ENVELOPE}","params":{}}}"#,
                inner.get()
            )
        }
        Mode::Unwrap => match params.as_deref().and_then(carried_message) {
            Some((method, params)) => plain_line(method, params),
            None => return case,
        },
        Mode::Rename => plain_line(&renamed(method), params.as_deref()),
    };
    Case {
        input: case.input,
        expected,
    }
}

/// Most notifications take the forwarding path when the next hop has room; plain ones are
/// never copied through a handler.
#[test]
fn plain_notifications_go_as_bytes() {
    let cases: Vec<Case> = (0..200)
        .map(|n| {
            let line = format!(r#"{{"jsonrpc":"2.0","method":"tick","params":{{"n":{n}}}}}"#);
            Case {
                input: line.clone(),
                expected: line,
            }
        })
        .collect();
    let (lines, as_bytes, handled) = route(&cases, Mode::Plain, 1024);
    assert_eq!(lines.len(), 200);
    assert_eq!((as_bytes, handled), (200, 0));
}

/// Lines near the connection's line limit go through whole, either way.
#[test]
fn big_lines_near_the_limit_go_through_whole() {
    let limit = LINE_LIMIT;
    let text = format!("{}\\\"é\\n", "x".repeat(limit - 256));
    let cases: Vec<Case> = (0..3)
        .map(|n| {
            let line =
                format!(r#"{{"jsonrpc":"2.0","method":"big","params":{{"n":{n},"t":"{text}"}}}}"#);
            assert!(line.len() < limit);
            Case {
                input: line.clone(),
                expected: line,
            }
        })
        .collect();
    for capacity in [1, 1024] {
        let (lines, as_bytes, handled) = route(&cases, Mode::Plain, capacity);
        assert!(lines == cases.iter().map(|c| c.expected.clone()).collect::<Vec<_>>());
        assert_eq!(as_bytes + handled, 3);
    }
}

/// The forwarding path reads a notification's envelope, not its params: params that are not
/// valid JSON go on byte-identical, for the peer that decodes them to answer, while a line
/// whose envelope is malformed is still decoded here and answered exactly as before (the
/// error the decode prescribes), and nothing of it is forwarded.
#[test]
fn malformed_params_go_on_unread_and_malformed_envelopes_are_answered_here() {
    let forwarded = [
        r#"{"jsonrpc":"2.0","method":"m","params":{"a":tru,"b":"\x"}}"#,
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[\"\u{1}\",01]}",
    ];
    let answered = [
        r#"{"jsonrpc":"2.0","method":"m","params":{"a":1}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{"a":1}}}"#,
        r#"{"jsonrpc":"2.0","method":"m","id":3,"params":{"a":tru}}"#,
        r#"{"jsonrpc":"2.0","method":7,"id":"x"}"#,
        r#"[{"jsonrpc":"2.0","method":"m"}]"#,
    ];
    let (source, router_in) = memory::pair(4096);
    let (router_out, sink) = memory::pair(4096);
    let options = ConnectionOptions::default();
    let (next, next_driver) =
        Connection::new(router_out.reader, router_out.writer, (), options.clone());
    let as_bytes = Arc::new(AtomicUsize::new(0));
    let router = Router {
        next: next.clone(),
        mode: Mode::Plain,
        as_bytes: as_bytes.clone(),
        handled: Arc::new(AtomicUsize::new(0)),
    };
    let (_router, router_driver) =
        Connection::new(router_in.reader, router_in.writer, router, options);
    let mut input = Vec::new();
    for line in answered.iter().chain(&forwarded) {
        input.extend_from_slice(line.as_bytes());
        input.push(b'\n');
    }
    // Invalid UTF-8 inside the params: forwarded too.
    let not_utf8 = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"\xff\"}";
    input.extend_from_slice(not_utf8);
    input.push(b'\n');
    let mut writer = source.writer;
    let send = async move {
        writer.write_all(&input).await.unwrap();
        drop(writer);
    };
    let (lines, answers) = common::run(async {
        let routing = async {
            let (routed, ()) = futures_lite::future::zip(router_driver, send).await;
            routed.unwrap();
            next.close();
        };
        let receive = async {
            let mut reader = LineReader::new(sink.reader);
            let mut lines = Vec::new();
            while let Some(LineEvent::Line(line)) = reader.read_line().await.unwrap() {
                lines.push(line.to_vec());
            }
            lines
        };
        let answers = async {
            let mut reader = LineReader::new(source.reader);
            let mut lines = Vec::new();
            while let Some(LineEvent::Line(line)) = reader.read_line().await.unwrap() {
                lines.push(String::from_utf8(line.to_vec()).unwrap());
            }
            lines
        };
        let (((lines, answers), ()), written) = futures_lite::future::zip(
            futures_lite::future::zip(futures_lite::future::zip(receive, answers), routing),
            next_driver,
        )
        .await;
        written.unwrap();
        (lines, answers)
    });
    let mut expected_lines: Vec<Vec<u8>> =
        forwarded.iter().map(|l| l.as_bytes().to_vec()).collect();
    expected_lines.push(not_utf8.to_vec());
    assert_eq!(lines, expected_lines);
    assert_eq!(as_bytes.load(Ordering::Relaxed), 3);
    // The answers are the ones the decode prescribes for those lines, in order.
    let expected_answers: Vec<String> = answered
        .iter()
        .filter_map(|line| {
            let error = acp_jsonrpc::Message::from_slice(line.as_bytes()).unwrap_err();
            let reply = acp_jsonrpc::Message::Response(error.reply()?.clone());
            let mut out = Vec::new();
            reply.encode(&mut out);
            out.pop();
            Some(String::from_utf8(out).unwrap())
        })
        .collect();
    assert_eq!(expected_answers.len(), answered.len());
    assert_eq!(answers, expected_answers);
}

/// A router's end that forwards answers: `ping` answered, nothing else handled.
struct ForwardingEnd;

impl Handler for ForwardingEnd {
    async fn request(
        &self,
        request: acp_jsonrpc::IncomingRequest,
        responder: acp_jsonrpc::Responder,
    ) {
        let _ = request;
        responder.respond_ok(&());
    }

    const FORWARDS: bool = true;

    fn forward_notification(&self, _: &RawNotification<'_>) -> bool {
        false
    }
}

/// On a connection whose handler forwards, the answer to `send_request_forwarded` comes with
/// its result unread, byte-identical whatever it holds (invalid JSON, invalid UTF-8); a
/// request the router reads itself on the same connection still gets its result checked.
/// (Splicing it into the router's own answer: acp-runtime's `proxy_chain` tests.)
#[test]
fn forwarded_results_come_unread_and_read_ones_checked() {
    common::run(async {
        let (handle, mut peer, _driver) = common::connect(ForwardingEnd, Default::default());
        let results: [&[u8]; 4] = [
            b"{\"a\":tru,\"b\":\"\\x\"}",
            b"\"\xff\"",
            b"[01,]",
            br#"{"content":"line\nnext","n":[1,{}]}"#,
        ];
        for result in results {
            let pending = handle.send_request_forwarded("x", None).await.unwrap();
            let id = peer.recv_json().await["id"].clone();
            let mut line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#).into_bytes();
            line.extend_from_slice(result);
            line.extend_from_slice(b"}\n");
            peer.send_bytes(&line).await;
            let forwarded = pending.await.unwrap();
            assert_eq!(forwarded.as_unchecked().as_bytes(), result);
            assert_eq!(forwarded.len(), result.len());
        }
        let read = smol::spawn(handle.request_raw("y", None));
        let id = peer.recv_json().await["id"].clone();
        peer.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"a":tru}}}}"#
        ))
        .await;
        assert!(matches!(
            read.await,
            Err(acp_jsonrpc::RequestError::MalformedResponse(_))
        ));
    });
}

/// A router's end that takes every request but `read` unread, and answers with what it got:
/// whether the params came unread, their bytes, whether `raw_params` saw them, and the
/// request as a plain message (`into_request`: its params, or the error code they get).
struct UnreadEnd;

impl Handler for UnreadEnd {
    async fn request(
        &self,
        request: acp_jsonrpc::IncomingRequest,
        responder: acp_jsonrpc::Responder,
    ) {
        let bytes = request
            .unchecked_params()
            .map(|params| params.as_bytes().to_vec());
        let carried = request.carried().map(|carried| carried.method().to_owned());
        let (unread, raw) = (request.is_unread(), request.raw_params().is_some());
        // What a plain message of it holds: the params, or the error they are answered with.
        let plain = match request.into_request() {
            Ok(plain) => serde_json::json!(plain.params.map(|params| params.get().to_owned())),
            Err(error) => serde_json::json!(error.code.0),
        };
        responder.respond_ok(&serde_json::json!({
            "unread": unread,
            "bytes": bytes,
            "raw": raw,
            "carried": carried,
            "plain": plain,
        }));
    }

    const FORWARDS: bool = true;

    fn takes_unread(&self, request: &acp_jsonrpc::RawRequest<'_>) -> bool {
        request.method() != "read"
    }
}

/// On a connection whose handler takes requests unread, a request in the usual spelling
/// reaches it with its params byte-identical and unread, whatever they hold (invalid JSON,
/// invalid UTF-8), and gets one answer; one it declines, or in another spelling, is
/// validated whole as on any connection, and answered `-32700` under its id if its params
/// are not JSON.
#[test]
fn requests_taken_unread_keep_their_params_unread_and_declined_ones_are_checked() {
    common::run(async {
        let (_handle, mut peer, _driver) = common::connect(UnreadEnd, Default::default());
        let params: [&[u8]; 3] = [
            b"{\"a\":tru,\"b\":\"\\x\"}",
            b"\"\xff\"",
            br#"{"method":"inner","params":{"n":[1,{}]}}"#,
        ];
        for (id, params) in params.into_iter().enumerate() {
            let mut line =
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x","params":"#).into_bytes();
            line.extend_from_slice(params);
            line.extend_from_slice(b"}\n");
            peer.send_bytes(&line).await;
            let answer = peer.recv_json().await;
            assert_eq!(answer["id"], id, "{answer}");
            assert_eq!(answer["result"]["unread"], true, "{answer}");
            assert_eq!(answer["result"]["raw"], false, "{answer}");
            assert_eq!(
                answer["result"]["bytes"],
                serde_json::json!(params),
                "{answer}"
            );
            // As a plain message: invalid params are the parse error they are answered with,
            // never dropped; valid ones are the same text.
            let plain = match std::str::from_utf8(params) {
                Ok(text) if serde_json::from_str::<serde_json::Value>(text).is_ok() => {
                    serde_json::json!(text)
                }
                _ => serde_json::json!(-32700),
            };
            assert_eq!(answer["result"]["plain"], plain, "{answer}");
        }
        // The last one carried a message, found without reading its params.
        peer.send(
            r#"{"jsonrpc":"2.0","id":3,"method":"x","params":{"method":"inner","params":tru}}"#,
        )
        .await;
        let answer = peer.recv_json().await;
        assert_eq!(answer["result"]["carried"], "inner", "{answer}");
        // Declined: validated, and answered by the decode under its id.
        peer.send(r#"{"jsonrpc":"2.0","id":7,"method":"read","params":{"a":tru}}"#)
            .await;
        let answer = peer.recv_json().await;
        assert_eq!(
            (&answer["id"], &answer["error"]["code"]),
            (&7.into(), &(-32700).into())
        );
        // Another spelling: read whole, `raw_params` sees the params.
        peer.send(r#"{"jsonrpc":"2.0","id":"s","method":"x","params":{"method":"inner"}}"#)
            .await;
        let answer = peer.recv_json().await;
        assert_eq!(answer["result"]["unread"], false, "{answer}");
        assert_eq!(answer["result"]["raw"], true, "{answer}");
        assert_eq!(answer["result"]["carried"], "inner", "{answer}");
    });
}

/// A request forwarded wrapped goes out as one spliced line: the params as they were, inside
/// `{"method":…,"params":…}`.
#[test]
fn a_wrapped_forwarded_request_is_spliced() {
    common::run(async {
        let (handle, mut peer, _driver) = common::connect(ForwardingEnd, Default::default());
        let pending = smol::spawn(async move {
            let params = RawValue::from_string(r#"{"n": [1, {}]}"#.to_owned()).unwrap();
            let params = Some((&*params).into());
            let sent = handle.send_request_forwarded_wrapped(ENVELOPE, "inner", params);
            sent.await.unwrap().await
        });
        let line = peer.recv().await.unwrap();
        let id = serde_json::from_str::<serde_json::Value>(&line).unwrap()["id"].clone();
        assert_eq!(
            line,
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"proxy/successor","params":{{"method":"inner","params":{{"n": [1, {{}}]}}}}}}"#
            )
        );
        peer.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":[]}}"#))
            .await;
        assert_eq!(pending.await.unwrap().as_unchecked().as_bytes(), b"[]");
    });
}
