//! The response scan against the validating decode: the same id and result for every valid
//! response in the usual spelling, and nothing accepted whose envelope the decode would refuse;
//! and the decode's rule for a response whose result is not valid JSON (no answer, the
//! waiting request failed by its id).

use proptest::prelude::*;
use serde_json::Value;

use super::tests::{edits, json_value, mangled, with_null_for};
use super::*;
use crate::{DecodeErrorKind, Message, RequestId, Response};

fn decoded(line: &[u8]) -> Option<Response> {
    match Message::from_slice(line) {
        Ok(Message::Response(response)) => Some(response),
        _ => None,
    }
}

fn result_text<'a>(found: &ForwardResponse<'a>) -> &'a [u8] {
    found.result.as_bytes()
}

#[test]
fn reads_the_id_and_skips_the_result() {
    let line = br#"{"jsonrpc":"2.0","id":42,"result":{"content":"a\"}]\\","n":[1,{}]}}"#;
    let found = response(line).unwrap();
    assert_eq!(found.id, 42);
    assert_eq!(result_text(&found), &line[34..line.len() - 1]);
    assert_eq!(
        response(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":null} \r")
            .unwrap()
            .id,
        0
    );
    // A result that is not valid JSON (a bad escape, a control character, invalid UTF-8, a
    // bare word) is found and left unread.
    let line = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"a\":\"\\x\x01\xff\",\"b\":tru}}";
    let found = response(line).unwrap();
    assert_eq!(result_text(&found), &line[33..line.len() - 1]);
    assert!(decoded(line).is_none());
    let max = format!(r#"{{"jsonrpc":"2.0","id":{},"result":1}}"#, i64::MAX);
    assert_eq!(response(max.as_bytes()).unwrap().id, i64::MAX);
}

#[test]
fn declines_every_envelope_it_does_not_route_as_it_is() {
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,"error":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,"result":2}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":-1,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":-0,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":01,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1.0,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1e0,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":"1","result":1}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1 ,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":1]}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":[1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1} x"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"a}"#,
        r#"{"jsonrpc":"2.0","id":1,"result" :1}"#,
        r#"{"jsonrpc":"1.0","id":1,"result":1}"#,
        r#"{"id":1,"jsonrpc":"2.0","result":1}"#,
        r#" {"jsonrpc":"2.0","id":1,"result":1}"#,
    ] {
        assert_eq!(response(line.as_bytes()), None, "{line}");
    }
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
        "[".repeat(65),
        "]".repeat(65)
    );
    assert_eq!(response(deep.as_bytes()), None);
}

#[test]
fn a_response_whose_result_is_not_json_is_not_answered_and_fails_its_request() {
    for line in [
        &br#"{"jsonrpc":"2.0","id":7,"result":{"a":tru}}"#[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"\xff\"}",
        br#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}} x"#,
    ] {
        let error = Message::from_slice(line).unwrap_err();
        assert!(
            matches!(
                error.kind(),
                DecodeErrorKind::InvalidJson | DecodeErrorKind::InvalidUtf8
            ),
            "{error:?}"
        );
        assert_eq!(error.reply(), None);
        assert_eq!(error.response_id(), Some(&RequestId::from(7)));
    }
    // A request is still answered with -32700, under its id (request_tests.rs).
    let error =
        Message::from_slice(br#"{"jsonrpc":"2.0","id":7,"method":"m","params":tru}"#).unwrap_err();
    assert_eq!(error.reply().unwrap().id, RequestId::from(7));
    assert_eq!(error.response_id(), None);
}

/// A response line in the usual spelling, or respaced (which the scan leaves to the decode).
fn line() -> impl Strategy<Value = (String, i64, Value, bool)> {
    (0..=i64::MAX, json_value(), any::<bool>()).prop_map(|(id, result, spaced)| {
        let line = if spaced {
            let text = serde_json::to_string_pretty(&result)
                .unwrap()
                .replace('\n', " ");
            format!(r#"{{ "jsonrpc": "2.0", "id": {id}, "result": {text} }}"#)
        } else {
            let text = serde_json::to_string(&result).unwrap();
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{text}}}"#)
        };
        (line, id, result, spaced)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every valid response in the usual spelling is read as the validating decode reads it
    /// (the same id, the same result text); any other spelling is left to the decode.
    #[test]
    fn agrees_with_the_decode_on_valid_responses((line, id, _result, spaced) in line()) {
        let expected = decoded(line.as_bytes()).unwrap();
        let found = response(line.as_bytes());
        if spaced {
            prop_assert_eq!(found, None);
            return Ok(());
        }
        let found = found.unwrap();
        prop_assert_eq!(found.id, id);
        prop_assert_eq!(RequestId::from(found.id), expected.id);
        let result = expected.result.unwrap();
        prop_assert_eq!(result_text(&found), result.get().as_bytes());
        prop_assert_eq!(malformed_response_id(line.as_bytes()), Some(id));
    }

    /// Whatever the scan accepts, however mangled, has an envelope the decode accepts: with
    /// the result (the one span it leaves unread) replaced by `null`, the line decodes to a
    /// response to the same id. And a line it accepts that the decode refuses whole (its
    /// result is malformed) fails that id's request, unanswered.
    #[test]
    fn accepts_no_malformed_envelope(
        (line, _, _, _) in line(),
        edits in edits(),
    ) {
        let line = mangled(line, edits);
        let Some(found) = response(&line) else {
            return Ok(());
        };
        let envelope = decoded(&with_null_for(&line, found.result.as_bytes()));
        prop_assert!(envelope.is_some(), "{}", String::from_utf8_lossy(&line));
        let envelope = envelope.unwrap();
        prop_assert_eq!(&envelope.id, &RequestId::from(found.id));
        match Message::from_slice(&line) {
            Ok(Message::Response(whole)) => {
                prop_assert_eq!(whole.id, RequestId::from(found.id));
                let result = whole.result.unwrap();
                prop_assert_eq!(result.get().as_bytes(), result_text(&found));
            }
            Ok(other) => prop_assert!(false, "{other:?}"),
            Err(error) => {
                prop_assert_eq!(error.reply(), None);
                prop_assert_eq!(error.response_id(), Some(&RequestId::from(found.id)));
            }
        }
    }
}
