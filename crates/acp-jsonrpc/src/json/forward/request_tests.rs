//! The request scan against the validating decode: the same id, method and params for every
//! valid request in the usual spelling, and nothing accepted whose envelope the decode would
//! refuse; and the decode's rule for a request whose params are not valid JSON (answered
//! `-32700` under its id, so that the answer finds its way back through the routers).

use proptest::prelude::*;

use super::tests::{edits, json_value, mangled, with_null_for};
use super::*;
use crate::{DecodeErrorKind, Message, Request, RequestId};

/// The request scan with methods remembered across calls, as a connection's driver keeps them
/// (one set per test thread, leaked: the remembered path is exercised as well as the first).
fn request(line: &[u8]) -> Option<ForwardRequest<'_>> {
    thread_local!(static KNOWN: &'static KnownMethods = Box::leak(Box::default()));
    KNOWN.with(|known| super::request(line, known))
}

fn decoded(line: &[u8]) -> Option<Request> {
    match Message::from_slice(line) {
        Ok(Message::Request(request)) => Some(request),
        _ => None,
    }
}

fn params_text<'a>(found: &ForwardRequest<'a>) -> &'a [u8] {
    found.scan.params.unwrap().as_bytes()
}

#[test]
fn reads_the_id_and_method_and_skips_the_params() {
    let line =
        br#"{"jsonrpc":"2.0","id":42,"method":"fs/read_text_file","params":{"path":"a\"}]\\"}}"#;
    let found = request(line).unwrap();
    assert_eq!((found.id, found.scan.method), (42, "fs/read_text_file"));
    assert_eq!(params_text(&found), br#"{"path":"a\"}]\\"}"#);
    assert_eq!(found.scan.inner, None);
    // A carried message is found on the way, its params unread.
    let line = br#"{"jsonrpc":"2.0","id":0,"method":"proxy/successor","params":{"method":"m","params":[1]}}"#;
    let found = request(line).unwrap();
    let inner = found.scan.inner.unwrap();
    assert_eq!(
        (inner.method(), inner.params().unwrap().as_bytes()),
        ("m", &b"[1]"[..])
    );
    // Params that are not valid JSON (a bad escape, a control character, invalid UTF-8, a
    // bare word) are found and left unread.
    let line = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\",\"params\":{\"a\":\"\\x\x01\xff\",\"b\":tru}}";
    let found = request(line).unwrap();
    assert_eq!(params_text(&found), b"{\"a\":\"\\x\x01\xff\",\"b\":tru}");
    assert!(decoded(line).is_none());
}

#[test]
fn declines_every_envelope_it_does_not_route_as_it_is() {
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{},"id":2}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{},"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}} "#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{]}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m\/n","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params" :{}}"#,
        r#"{"jsonrpc":"2.0","id":-1,"method":"m","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":01,"method":"m","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":"1","method":"m","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"m","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{}}"#,
        r#"{"id":1,"jsonrpc":"2.0","method":"m","params":{}}"#,
    ] {
        assert_eq!(request(line.as_bytes()), None, "{line}");
    }
    let control = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\x01\",\"params\":{}}";
    assert_eq!(request(control), None);
}

#[test]
fn a_request_whose_params_are_not_json_is_answered_under_its_id() {
    for line in [
        &br#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":tru}}"#[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"m\",\"params\":\"\xff\"}",
        br#"{"jsonrpc":"2.0","id":7,"method":"m","params":[1} x"#,
    ] {
        let error = Message::from_slice(line).unwrap_err();
        assert!(
            matches!(
                error.kind(),
                DecodeErrorKind::InvalidJson | DecodeErrorKind::InvalidUtf8
            ),
            "{error:?}"
        );
        let reply = error.reply().unwrap();
        assert_eq!(reply.id, RequestId::from(7));
        assert_eq!(reply.result.as_ref().unwrap_err().code.0, -32700);
        assert_eq!(malformed_request_id(line), Some(7));
    }
    // Another spelling keeps the null id JSON-RPC prescribes for a line that is not JSON.
    let error =
        Message::from_slice(br#"{"id":7,"jsonrpc":"2.0","method":"m","params":tru}"#).unwrap_err();
    assert_eq!(error.reply().unwrap().id, RequestId::null());
}

/// A request line in the usual spelling, or respaced (which the scan leaves to the decode).
fn line() -> impl Strategy<Value = (String, i64, String, bool)> {
    let method = prop_oneof![
        Just("fs/read_text_file".to_owned()),
        Just("proxy/successor".to_owned()),
        "[a-z/_é]{0,20}",
    ];
    let params = prop_oneof![
        json_value(),
        (json_value(), "[a-z/]{0,8}").prop_map(|(params, method)| {
            serde_json::json!({"method": method, "params": params})
        }),
    ];
    (0..=i64::MAX, method, params, any::<bool>()).prop_map(|(id, method, params, spaced)| {
        let line = if spaced {
            let text = serde_json::to_string_pretty(&params)
                .unwrap()
                .replace('\n', " ");
            format!(r#"{{ "jsonrpc": "2.0", "id": {id}, "method": "{method}", "params": {text} }}"#)
        } else {
            let text = serde_json::to_string(&params).unwrap();
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{text}}}"#)
        };
        (line, id, method, spaced)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every valid request in the usual spelling is read as the validating decode reads it
    /// (the same id, method and params text, and the carried message `carried_message` finds);
    /// any other spelling is left to the decode.
    #[test]
    fn agrees_with_the_decode_on_valid_requests((line, id, method, spaced) in line()) {
        let expected = decoded(line.as_bytes()).unwrap();
        let found = request(line.as_bytes());
        if spaced {
            prop_assert_eq!(found, None);
            return Ok(());
        }
        let found = found.unwrap();
        prop_assert_eq!(found.id, id);
        prop_assert_eq!(RequestId::from(found.id), expected.id);
        prop_assert_eq!(found.scan.method, method.as_str());
        let params = expected.params.unwrap();
        prop_assert_eq!(params_text(&found), params.get().as_bytes());
        let carried = found.scan.inner.or_else(|| carried_in(found.scan.params.unwrap()));
        let expected_carried = carried_message(&params);
        prop_assert_eq!(
            carried.map(|carried| (carried.method(), carried.params().map(|p| p.as_bytes()))),
            expected_carried.map(|(method, params)| (method, params.map(|p| p.get().as_bytes())))
        );
        prop_assert_eq!(malformed_request_id(line.as_bytes()), Some(id));
    }

    /// Whatever the scan accepts, however mangled, has an envelope the decode accepts: with
    /// the params (the one span it leaves unread) replaced by `null`, the line decodes to a
    /// request with the same id and method. And a line it accepts that the decode refuses
    /// whole (its params are malformed) is answered under that id.
    #[test]
    fn accepts_no_malformed_envelope(
        (line, _, _, _) in line(),
        edits in edits(),
    ) {
        let line = mangled(line, edits);
        let Some(found) = request(&line) else {
            return Ok(());
        };
        let params = params_text(&found);
        let envelope = decoded(&with_null_for(&line, params));
        prop_assert!(envelope.is_some(), "{}", String::from_utf8_lossy(&line));
        let envelope = envelope.unwrap();
        prop_assert_eq!(&envelope.id, &RequestId::from(found.id));
        prop_assert_eq!(envelope.method.as_str(), found.scan.method);
        match Message::from_slice(&line) {
            Ok(Message::Request(whole)) => {
                prop_assert_eq!(whole.id, RequestId::from(found.id));
                let whole = whole.params.unwrap();
                prop_assert_eq!(whole.get().as_bytes(), params);
            }
            Ok(other) => prop_assert!(false, "{other:?}"),
            Err(error) => {
                let reply = error.reply().map(|reply| reply.id.clone());
                prop_assert_eq!(reply, Some(RequestId::from(found.id)));
            }
        }
    }
}
