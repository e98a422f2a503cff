//! Every error case, with the exact bytes answered (insta snapshots): what
//! the connection says back to malformed input, failing handlers, unknown
//! methods and bad params — and that notifications and responses, however
//! malformed, get nothing. One test per row of the table "What the
//! connection answers by itself" in `docs/jsonrpc.md`.

mod common;

use std::time::Duration;

use acp_jsonrpc::{
    ConnectionOptions, DecodeErrorKind, Handler, IncomingRequest, Problem, RequestError, Responder,
};
use common::{Recorder, TestHandler, connect, run};

/// Sends each line to a fresh connection and snapshots what came back.
fn answers(name: &str, line: &[u8]) -> (String, Vec<Problem>) {
    run(async {
        let recorder = Recorder::default();
        let options = ConnectionOptions::default().with_observer(recorder.clone());
        let (_handle, mut peer, _driver) = connect(TestHandler::default(), options);
        let replies = peer.replies_to(line).await;
        let shown = if replies.is_empty() {
            "(no reply)".to_owned()
        } else {
            replies.join("\n")
        };
        let input = show(line);
        insta::assert_snapshot!(name, format!("in:  {input}\nout: {shown}"));
        (shown, recorder.problems())
    })
}

/// Printable ASCII as is, any other byte as `\xNN`.
fn show(line: &[u8]) -> String {
    line.iter()
        .map(|&b| match b {
            0x20..0x7f => char::from(b).to_string(),
            _ => format!("\\x{b:02x}"),
        })
        .collect()
}

fn malformed_kind(problems: &[Problem]) -> DecodeErrorKind {
    match problems {
        [Problem::Malformed(error)] => error.kind(),
        other => panic!("expected one Malformed problem, got {other:?}"),
    }
}

#[test]
fn params_that_are_not_json_are_a_parse_error_under_the_request_id() {
    let (_, problems) = answers(
        "invalid_params_json",
        br#"{"jsonrpc":"2.0","id":4,"method":"m","params":{"a":tru}}"#,
    );
    assert_eq!(malformed_kind(&problems), DecodeErrorKind::InvalidJson);
}

#[test]
fn invalid_json_is_a_parse_error_with_null_id() {
    let (_, problems) = answers("invalid_json", br#"{"jsonrpc":"2.0","id":1,"method":"#);
    assert_eq!(malformed_kind(&problems), DecodeErrorKind::InvalidJson);
}

/// A line that starts as a request (`{"jsonrpc":"2.0","id":N,"method":"`) is answered under
/// its id: params a router forwarded unread reach the end peer this way, and its answer must
/// find its way back (docs/limits.md, "What a router forwards unread").
#[test]
fn invalid_utf8_is_a_parse_error() {
    let (_, problems) = answers(
        "invalid_utf8",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}",
    );
    assert_eq!(malformed_kind(&problems), DecodeErrorKind::InvalidUtf8);
}

#[test]
fn log_lines_are_reported_and_skipped() {
    for (name, line) in [
        ("log_line", &b"Starting agent v1.2 on stdout..."[..]),
        ("log_line_bracketed", &b"[INFO] ready"[..]),
        ("binary_garbage", &b"\x00\xff\x13"[..]),
    ] {
        let (shown, problems) = answers(name, line);
        assert_eq!(shown, "(no reply)");
        assert_eq!(malformed_kind(&problems), DecodeErrorKind::NotJson);
    }
}

#[test]
fn batch_is_refused() {
    let (_, problems) = answers("batch", br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    assert_eq!(malformed_kind(&problems), DecodeErrorKind::Batch);
}

#[test]
fn non_object_is_an_invalid_request() {
    let (_, problems) = answers("not_an_object", b"42");
    assert_eq!(malformed_kind(&problems), DecodeErrorKind::NotAnObject);
}

#[test]
fn missing_or_wrong_version_on_a_request_echoes_its_id() {
    answers("missing_version", br#"{"id":1,"method":"ping"}"#);
    answers(
        "wrong_version",
        br#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#,
    );
    answers(
        "version_not_a_string",
        br#"{"jsonrpc":2.0,"id":2,"method":"ping"}"#,
    );
}

/// Sends `line`, expects the `-32600` answer the snapshot shows (with or
/// without the id) and an `InvalidRequest` report.
fn refused(name: &str, line: &[u8]) {
    let (shown, problems) = answers(name, line);
    assert!(shown.contains(r#""code":-32600"#), "{name}: {shown}");
    assert_eq!(
        malformed_kind(&problems),
        DecodeErrorKind::InvalidRequest,
        "{name}"
    );
}

/// Sends `line`, expects no answer and a report of `kind`.
fn unanswered(name: &str, line: &[u8], kind: DecodeErrorKind) {
    let (shown, problems) = answers(name, line);
    assert_eq!(shown, "(no reply)", "{name}");
    assert_eq!(malformed_kind(&problems), kind, "{name}");
}

#[test]
fn invalid_requests_with_a_method_echo_the_id_when_readable() {
    refused(
        "method_not_a_string",
        br#"{"jsonrpc":"2.0","id":4,"method":5}"#,
    );
    // The JSON-RPC 2.0 specification's own example.
    refused(
        "method_not_a_string_without_id",
        br#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#,
    );
    refused(
        "method_with_result",
        br#"{"jsonrpc":"2.0","id":4,"method":"ping","result":1}"#,
    );
    refused(
        "id_is_an_object",
        br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
    );
}

#[test]
fn repeated_members_are_refused_in_requests_only() {
    refused(
        "duplicate_member",
        br#"{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}"#,
    );
    refused(
        "duplicate_member_single_id",
        br#"{"jsonrpc":"2.0","id":5,"method":"ping","params":1,"params":2}"#,
    );
    unanswered(
        "duplicate_member_in_notification",
        br#"{"jsonrpc":"2.0","method":"note","params":1,"params":2}"#,
        DecodeErrorKind::InvalidNotification,
    );
    unanswered(
        "duplicate_member_in_response",
        br#"{"jsonrpc":"2.0","id":5,"result":1,"result":2}"#,
        DecodeErrorKind::InvalidResponse,
    );
}

/// Neither a request (no `method`) nor a response (no `result`, no
/// `error`): answered, with id `null`, only when a string or number id says
/// that someone may be waiting.
#[test]
fn objects_without_method_result_or_error_are_answered_only_with_a_usable_id() {
    refused("missing_method", br#"{"jsonrpc":"2.0","id":3}"#);
    // What `acp-conformance`'s `rpc.invalid_request` check sends.
    refused(
        "missing_method_with_params",
        br#"{"jsonrpc":"2.0","id":"conformance-invalid","params":{}}"#,
    );
    unanswered("empty_object", b"{}", DecodeErrorKind::InvalidResponse);
    unanswered(
        "unknown_members_only",
        br#"{"foo":"boo"}"#,
        DecodeErrorKind::InvalidResponse,
    );
    unanswered(
        "null_id_only",
        br#"{"jsonrpc":"2.0","id":null}"#,
        DecodeErrorKind::InvalidResponse,
    );
}

/// Anything with `result` or `error` and no `method` is a response: an
/// answer to it could start two peers answering each other's answers.
#[test]
fn malformed_responses_are_reported_never_answered() {
    for (name, line) in [
        (
            "response_with_result_and_error",
            &br#"{"jsonrpc":"2.0","id":9,"result":1,"error":{"code":1,"message":"x"}}"#[..],
        ),
        (
            "error_without_id",
            br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}"#,
        ),
        ("result_without_id", br#"{"jsonrpc":"2.0","result":{}}"#),
        (
            "response_with_invalid_id",
            br#"{"jsonrpc":"2.0","id":[9],"error":{"code":1,"message":"x"}}"#,
        ),
        (
            "response_with_bad_error_object",
            br#"{"jsonrpc":"2.0","id":9,"error":{"code":"x"}}"#,
        ),
        (
            "response_with_wrong_version",
            br#"{"jsonrpc":"1.0","id":9,"result":1}"#,
        ),
        (
            "response_with_null_id_and_both",
            br#"{"jsonrpc":"2.0","id":null,"result":1,"error":{"code":1,"message":"x"}}"#,
        ),
    ] {
        unanswered(name, line, DecodeErrorKind::InvalidResponse);
    }
}

#[test]
fn malformed_response_fails_our_request_and_is_not_answered() {
    run(async {
        let recorder = Recorder::default();
        let options = ConnectionOptions::default().with_observer(recorder.clone());
        let (handle, mut peer, _driver) = connect(TestHandler::default(), options);
        let call = smol::spawn(handle.request::<String, _>("x", &()));
        let id = peer.recv_json().await["id"].clone();
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":"bad"}}}}"#);
        assert!(peer.replies_to(line.as_bytes()).await.is_empty());
        assert!(matches!(
            call.await,
            Err(RequestError::MalformedResponse(_))
        ));
        assert_eq!(
            malformed_kind(&recorder.problems()),
            DecodeErrorKind::InvalidResponse
        );
    });
}

/// A stray UTF-8 byte-order mark at the start of a line is skipped and
/// reported; the rest of the line is handled as if it were absent.
#[test]
fn byte_order_mark_is_skipped_and_reported() {
    for (name, line) in [
        (
            "byte_order_mark",
            &b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"[..],
        ),
        (
            "byte_order_mark_after_whitespace",
            b" \t\xef\xbb\xbf\xef\xbb\xbf {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r",
        ),
    ] {
        let (shown, problems) = answers(name, line);
        assert!(shown.ends_with(r#""result":"pong"}"#), "{name}: {shown}");
        assert_eq!(problems, [Problem::ByteOrderMark], "{name}");
    }
    let (shown, problems) = answers("byte_order_mark_only", b"\xef\xbb\xbf");
    assert_eq!(shown, "(no reply)");
    assert_eq!(problems, [Problem::ByteOrderMark]);
    // Whatever follows the mark gets the answer it would get without it.
    let (_, problems) = answers(
        "byte_order_mark_before_invalid_json",
        b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":",
    );
    assert!(
        matches!(&problems[..], [Problem::ByteOrderMark, Problem::Malformed(error)] if error.kind() == DecodeErrorKind::InvalidJson),
        "{problems:?}"
    );
    let (shown, _) = answers(
        "byte_order_mark_before_notification",
        b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"no/such\"}",
    );
    assert_eq!(shown, "(no reply)");
}

#[test]
fn malformed_notification_is_never_answered() {
    let (shown, problems) = answers(
        "notification_wrong_version",
        br#"{"jsonrpc":"1.0","method":"note"}"#,
    );
    assert_eq!(shown, "(no reply)");
    assert_eq!(
        malformed_kind(&problems),
        DecodeErrorKind::InvalidNotification
    );
}

#[test]
fn unknown_method_names_the_method() {
    answers(
        "unknown_method",
        br#"{"jsonrpc":"2.0","id":7,"method":"no/such"}"#,
    );
}

#[test]
fn undecodable_params_carry_the_decode_error() {
    answers(
        "invalid_params",
        br#"{"jsonrpc":"2.0","id":8,"method":"add","params":{"a":"x","b":1}}"#,
    );
    answers(
        "missing_params",
        br#"{"jsonrpc":"2.0","id":9,"method":"add"}"#,
    );
}

#[test]
fn handler_error_is_sent_as_is() {
    answers(
        "handler_error",
        br#"{"jsonrpc":"2.0","id":10,"method":"fail"}"#,
    );
}

#[test]
fn panicking_handler_answers_internal_error_and_connection_survives() {
    let (_, problems) = answers(
        "handler_panicked",
        br#"{"jsonrpc":"2.0","id":11,"method":"panic"}"#,
    );
    assert!(
        matches!(&problems[..], [Problem::RequestHandlerPanicked { message, .. }] if message == "boom"),
        "{problems:?}"
    );
}

#[test]
fn dropped_responder_answers_internal_error() {
    answers(
        "responder_dropped",
        br#"{"jsonrpc":"2.0","id":12,"method":"drop"}"#,
    );
}

#[test]
fn notifications_are_never_answered() {
    for (name, line) in [
        (
            "unknown_notification",
            &br#"{"jsonrpc":"2.0","method":"no/such"}"#[..],
        ),
        (
            "notification_bad_params",
            &br#"{"jsonrpc":"2.0","method":"typed_note","params":{"a":true}}"#[..],
        ),
        (
            "notification_panics",
            &br#"{"jsonrpc":"2.0","method":"panic_note"}"#[..],
        ),
    ] {
        let (shown, problems) = answers(name, line);
        assert_eq!(shown, "(no reply)", "{name}");
        assert_eq!(problems.len(), 1, "{name}: {problems:?}");
    }
}

#[test]
fn over_long_line_is_skipped_without_answer_and_connection_continues() {
    run(async {
        let recorder = Recorder::default();
        let options = ConnectionOptions::default()
            .with_max_line_length(100)
            .with_observer(recorder.clone());
        let (_handle, mut peer, _driver) = connect(TestHandler::default(), options);
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"echo","params":"{}"}}"#,
            "x".repeat(500)
        );
        assert!(peer.replies_to(long.as_bytes()).await.is_empty());
        assert_eq!(
            recorder.problems(),
            vec![Problem::LineTooLong { length: long.len() }]
        );
        // A line right at the limit still goes through.
        let frame = r#"{"jsonrpc":"2.0","id":2,"method":"echo","params":""}"#;
        let fits = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"echo","params":"{}"}}"#,
            "y".repeat(100 - frame.len())
        );
        assert_eq!(fits.len(), 100);
        let replies = peer.replies_to(fits.as_bytes()).await;
        assert_eq!(replies.len(), 1);
        assert!(replies[0].contains("yyyy"));
    });
}

/// A handler whose "hold" requests wait for the test to let them go.
struct Holding {
    release: async_channel::Receiver<()>,
}

impl Handler for Holding {
    async fn request(&self, request: IncomingRequest, responder: Responder) {
        match request.method() {
            "hold" => {
                let _ = self.release.recv().await;
                responder.respond_ok("released");
            }
            "ping" => responder.respond_ok("pong"),
            _ => responder.respond_error(request.method_not_found()),
        }
    }
}

#[test]
fn duplicate_in_flight_id_is_refused() {
    run(async {
        let (release, released) = async_channel::unbounded();
        let recorder = Recorder::default();
        let options = ConnectionOptions::default().with_observer(recorder.clone());
        let (_handle, mut peer, _driver) = connect(Holding { release: released }, options);
        peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hold"}"#)
            .await;
        let replies = peer
            .replies_to(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .await;
        insta::assert_snapshot!("duplicate_in_flight_id", replies.join("\n"));
        assert!(matches!(
            &recorder.problems()[..],
            [Problem::DuplicateRequestId(_)]
        ));
        release.send(()).await.unwrap();
        assert_eq!(
            peer.recv().await.unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"result":"released"}"#
        );
        // Once answered, the id is free again.
        let replies = peer
            .replies_to(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .await;
        assert_eq!(replies, [r#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#]);
    });
}

#[test]
fn cancel_request_cancels_the_handler_with_request_cancelled() {
    run(async {
        let handler = TestHandler::default();
        let (_handle, mut peer, _driver) = connect(handler, ConnectionOptions::default());
        peer.send(r#"{"jsonrpc":"2.0","id":"slow","method":"forever"}"#)
            .await;
        // The request is in flight: nothing answers it for a while.
        let mut next = Box::pin(peer.recv());
        assert!(common::stays_pending(&mut next, Duration::from_millis(50)).await);
        drop(next);
        let replies = peer
            .replies_to(
                br#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"slow"}}"#,
            )
            .await;
        insta::assert_snapshot!("request_cancelled", replies.join("\n"));
    });
}

#[test]
fn cancel_request_for_unknown_or_bad_ids_is_harmless() {
    let (shown, problems) = answers(
        "cancel_unknown_id",
        br#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":404}}"#,
    );
    assert_eq!(shown, "(no reply)");
    assert!(problems.is_empty());
    let (shown, problems) = answers(
        "cancel_without_id",
        br#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{}}"#,
    );
    assert_eq!(shown, "(no reply)");
    assert!(matches!(&problems[..], [Problem::InvalidCancelRequest(_)]));
}

#[test]
fn unknown_response_ids_are_reported_not_fatal() {
    let (shown, problems) = answers(
        "unknown_response_id",
        br#"{"jsonrpc":"2.0","id":999,"result":{}}"#,
    );
    assert_eq!(shown, "(no reply)");
    assert!(matches!(&problems[..], [Problem::UnknownResponse(r)] if r.id == 999.into()));
    let (shown, problems) = answers(
        "peer_reports_error_with_null_id",
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
    );
    assert_eq!(shown, "(no reply)");
    assert!(matches!(&problems[..], [Problem::UnknownResponse(r)] if r.id.is_null()));
}

#[test]
fn request_beyond_the_in_flight_limit_is_refused() {
    run(async {
        let recorder = Recorder::default();
        let options = ConnectionOptions::default()
            .with_max_in_flight_requests(1)
            .with_observer(recorder.clone());
        let (_handle, mut peer, _driver) = connect(TestHandler::default(), options);
        peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"forever"}"#)
            .await;
        peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
            .await;
        insta::assert_snapshot!("too_many_requests", peer.recv().await.unwrap());
        assert_eq!(
            recorder.problems(),
            [Problem::TooManyRequests {
                id: 2.into(),
                limit: 1
            }]
        );
    });
}

/// A request with id `null` is handled by default (v1 allows it) and answered with id `null`;
/// on a connection that refuses them (ACP v2) it is answered `-32600` and never handled.
#[test]
fn null_request_ids_are_refused_only_when_switched_on() {
    run(async {
        let line = br#"{"jsonrpc":"2.0","id":null,"method":"add","params":{"a":1,"b":2}}"#;
        for refused in [false, true] {
            let recorder = Recorder::default();
            let options = ConnectionOptions::default()
                .with_observer(recorder.clone())
                .with_null_request_ids_refused(refused);
            let (_handle, mut peer, _driver) = connect(TestHandler::default(), options);
            let replies = peer.replies_to(line).await;
            let name = match refused {
                true => "null_request_id_refused",
                false => "null_request_id_handled",
            };
            insta::assert_snapshot!(name, replies.join("\n"));
            let problems = recorder.problems();
            match refused {
                true => assert_eq!(
                    problems,
                    [Problem::NullRequestId {
                        method: "add".into()
                    }]
                ),
                false => assert!(problems.is_empty(), "{problems:?}"),
            }
        }
    });
}

/// A response whose result is not valid JSON (as a router may forward one unread) fails our
/// request with `MalformedResponse` and is not answered: responses never are, and the id is
/// read from the usual start of a response (`{"jsonrpc":"2.0","id":N,"result":`).
#[test]
fn a_result_that_is_not_json_fails_our_request_and_is_not_answered() {
    run(async {
        let (handle, mut peer, _driver) = connect(TestHandler::default(), Default::default());
        for result in [&b"{\"a\":tru}"[..], b"\"\xff\"", b"[01]"] {
            let call = smol::spawn(handle.request::<serde_json::Value, _>("x", &()));
            let id = peer.recv_json().await["id"].clone();
            let mut line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#).into_bytes();
            line.extend_from_slice(result);
            line.push(b'}');
            assert!(peer.replies_to(&line).await.is_empty());
            assert!(matches!(
                call.await,
                Err(RequestError::MalformedResponse(_))
            ));
        }
    });
}
