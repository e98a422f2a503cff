//! Messages as lines: encoding, decoding, and the resumable line reader.

mod common;

use std::time::Duration;

use acp_jsonrpc::memory;
use acp_jsonrpc::{
    ErrorCode, LineEvent, LineReader, Message, Notification, Problem, Request, RequestId, Response,
    ResponseError, write_message,
};
use common::run;
use futures_lite::AsyncWriteExt;
use serde_json::value::RawValue;
use smol::Timer;

fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

fn round_trip(message: &Message) -> String {
    let line = message.to_json();
    let decoded = Message::from_slice(line.as_bytes()).unwrap();
    assert_eq!(&decoded, message, "{line}");
    line
}

#[test]
fn every_message_kind_round_trips() {
    let lines: Vec<String> = [
        Message::Request(Request {
            id: 1.into(),
            method: "initialize".into(),
            params: Some(raw(r#"{"protocolVersion":1}"#)),
        }),
        Message::Request(Request {
            id: "abc".into(),
            method: "no/params".into(),
            params: None,
        }),
        Message::Request(Request {
            id: RequestId::null(),
            method: "null/id".into(),
            params: Some(raw("[1, 2 ,3]")),
        }),
        Message::Notification(Notification {
            method: "session/update".into(),
            params: Some(raw(r#"{"update":{"text":"hé \"quoted\""}}"#)),
        }),
        Message::Notification(Notification {
            method: "bare".into(),
            params: None,
        }),
        Message::Response(Response {
            id: 1.into(),
            result: Ok(raw("null")),
        }),
        Message::Response(Response {
            id: u64::MAX.into(),
            result: Ok(raw(r#"{"stopReason":"end_turn"}"#)),
        }),
        Message::Response(Response::error(
            "x",
            ResponseError::new(ErrorCode(-32000), "custom").with_data(&[1, 2]),
        )),
        Message::Response(Response::error(
            RequestId::null(),
            ResponseError::parse_error("bad"),
        )),
    ]
    .iter()
    .map(round_trip)
    .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn constructors_serialize_params() {
    let request = Request::new(3, "m", &serde_json::json!({"k": [true]})).unwrap();
    assert_eq!(request.params::<serde_json::Value>().unwrap()["k"][0], true);
    let notification = Notification::new("n", &"text").unwrap();
    assert_eq!(notification.params::<String>().unwrap(), "text");
    let response = Response::ok(3, &5).unwrap();
    assert_eq!(
        Message::from(response).to_json(),
        r#"{"jsonrpc":"2.0","id":3,"result":5}"#
    );
}

#[test]
fn raw_json_with_newlines_still_makes_one_line() {
    let pretty =
        serde_json::to_string_pretty(&serde_json::json!({"a": [1, {"b": "x\ny"}]})).unwrap();
    assert!(pretty.contains('\n'));
    let message = Message::Notification(Notification {
        method: "m".into(),
        params: Some(raw(&pretty)),
    });
    let mut out = Vec::new();
    message.encode(&mut out);
    assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 1);
    let Message::Notification(decoded) = Message::from_slice(&out[..out.len() - 1]).unwrap() else {
        panic!()
    };
    let value: serde_json::Value = decoded.params().unwrap();
    assert_eq!(value["a"][1]["b"], "x\ny");
}

#[test]
fn request_ids_keep_their_form() {
    for (line, id) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
            RequestId::from(1),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"1","method":"m"}"#,
            RequestId::from("1"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            RequestId::null(),
        ),
        (
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
            RequestId::from(u64::MAX),
        ),
        (
            r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"m"}"#,
            RequestId::from(i64::MIN),
        ),
    ] {
        let Message::Request(request) = Message::from_slice(line.as_bytes()).unwrap() else {
            panic!("{line}")
        };
        assert_eq!(request.id, id);
        assert_eq!(Message::Request(request).to_json(), line);
    }
    assert_ne!(RequestId::from(1), RequestId::from("1"));
    assert_ne!(RequestId::from(1), RequestId::null());
}

/// THE bug this crate exists to prevent: a read that loses a race must not
/// lose the part of the line it had already read.
#[test]
fn a_dropped_read_keeps_the_partial_line() {
    run(async {
        let (mut writer, reader) = memory::pipe(1024);
        let mut lines = LineReader::new(reader);
        writer
            .write_all(br#"{"jsonrpc":"2.0","method":"#)
            .await
            .unwrap();

        // The read consumes the first half, then loses a race to a timer and
        // is dropped.
        let raced = smol::future::or(
            async { Some(lines.read_line().await.unwrap().map(|_| ())) },
            async {
                Timer::after(Duration::from_millis(20)).await;
                None
            },
        )
        .await;
        assert_eq!(raced, None, "the line is not complete yet");
        assert_eq!(writer.buffered(), 0, "the first half was consumed");

        writer.write_all(b"\"session/update\"}\n").await.unwrap();
        let line = lines.read_line().await.unwrap();
        assert_eq!(
            line,
            Some(LineEvent::Line(
                br#"{"jsonrpc":"2.0","method":"session/update"}"#
            ))
        );
    });
}

#[test]
fn many_dropped_reads_in_a_row_lose_nothing() {
    run(async {
        let (mut writer, reader) = memory::pipe(1024);
        let mut lines = LineReader::new(reader);
        let message = br#"{"jsonrpc":"2.0","id":7,"result":{"text":"hello"}}"#;
        for &byte in message {
            writer.write_all(&[byte]).await.unwrap();
            let mut read = Box::pin(lines.read_line());
            assert!(common::stays_pending(&mut read, Duration::from_millis(1)).await);
        }
        writer.write_all(b"\r\n").await.unwrap();
        assert_eq!(
            lines.read_line().await.unwrap(),
            Some(LineEvent::Line(message))
        );
    });
}

#[test]
fn crlf_blank_lines_and_a_last_line_without_newline() {
    run(async {
        let input: &[u8] = b"\n\r\n  \t \r\none\r\ntwo\n\n\nthree\r";
        let mut lines = LineReader::new(input);
        let mut seen = Vec::new();
        while let Some(event) = lines.read_line().await.unwrap() {
            let LineEvent::Line(line) = event else {
                panic!()
            };
            seen.push(String::from_utf8(line.to_vec()).unwrap());
        }
        assert_eq!(seen, ["one", "two", "three"]);
    });
}

#[test]
fn over_long_lines_are_skipped_and_reported() {
    run(async {
        let mut input = Vec::new();
        input.extend_from_slice(b"short\n");
        input.extend(std::iter::repeat_n(b'x', 50));
        input.extend_from_slice(b"\nafter\n");
        input.extend(std::iter::repeat_n(b'y', 11));
        let mut lines = LineReader::with_max_line_length(&input[..], 10);
        assert_eq!(
            lines.read_line().await.unwrap(),
            Some(LineEvent::Line(b"short"))
        );
        assert_eq!(
            lines.read_line().await.unwrap(),
            Some(LineEvent::TooLong { length: 50 })
        );
        assert_eq!(
            lines.read_line().await.unwrap(),
            Some(LineEvent::Line(b"after"))
        );
        assert_eq!(
            lines.read_line().await.unwrap(),
            Some(LineEvent::TooLong { length: 11 })
        );
        assert_eq!(lines.read_line().await.unwrap(), None);
    });
}

#[test]
fn read_message_and_write_message() {
    run(async {
        let (mut writer, reader) = memory::pipe(4096);
        let message = Message::Notification(Notification::new("n", &1).unwrap());
        write_message(&mut writer, &message).await.unwrap();
        writer.write_all(b"not json\n").await.unwrap();
        drop(writer);
        let mut lines = LineReader::new(reader);
        assert_eq!(lines.read_message().await.unwrap(), Some(Ok(message)));
        assert!(matches!(
            lines.read_message().await.unwrap(),
            Some(Err(Problem::Malformed(_)))
        ));
        assert_eq!(lines.read_message().await.unwrap(), None);
    });
}

#[test]
fn read_message_skips_byte_order_marks() {
    run(async {
        let (mut writer, reader) = memory::pipe(4096);
        writer
            .write_all(b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\xef\xbb\xbf\r\n")
            .await
            .unwrap();
        writer
            .write_all(b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"r\"}")
            .await
            .unwrap();
        drop(writer);
        let mut lines = LineReader::new(reader);
        let message = lines.read_message().await.unwrap().unwrap().unwrap();
        assert!(matches!(message, Message::Notification(n) if n.method == "n"));
        // The line holding nothing but a mark is skipped like a blank one.
        let message = lines.read_message().await.unwrap().unwrap().unwrap();
        assert!(matches!(message, Message::Request(r) if r.method == "r"));
        assert_eq!(lines.read_message().await.unwrap(), None);
    });
}

#[test]
fn from_slice_alone_does_not_skip_byte_order_marks() {
    let line = b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"n\"}";
    assert!(Message::from_slice(line).is_err());
    let rest = acp_jsonrpc::strip_byte_order_mark(line).unwrap();
    assert!(matches!(
        Message::from_slice(rest),
        Ok(Message::Notification(_))
    ));
    assert_eq!(
        acp_jsonrpc::strip_byte_order_mark(b"{\"a\":\"\xef\xbb\xbf\"}"),
        None
    );
}
