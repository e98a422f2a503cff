//! The durable-transport proposal's wire pieces inside JSON-RPC messages (upstream
//! agent-client-protocol PR #2208, opt-in while it is open; see `docs/remote.md`): the cursor
//! a server stamps into each message it sends (`_meta["acp/cursor"]`), the client's request
//! for it at `initialize`, and the retention the server advertises in its answer.
//!
//! Stamping edits the message's bytes in place of re-encoding it, so that everything but the
//! inserted member stays byte for byte what the agent wrote (key order, numbers, escapes).
//! Where the `_meta` goes (the proposal names the key, not the object holding it): a request's
//! or notification's `params`, a response's `result`, an error's `data`, when that is an
//! object (an error without `data` gets one). A message with none of these (a result that is
//! not an object, say) carries its cursor in the transport's framing only (the SSE `id:`).

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

/// The `_meta` key of a message's cursor.
pub(crate) const CURSOR_KEY: &str = "acp/cursor";

/// The `_meta` key of the turn state a server sends after a successful resumption.
pub(crate) const TURN_STATE_KEY: &str = "acp/turnState";

/// The notification that carries the turn state after a resumed SSE stream's replay (on
/// WebSocket it is in the answer to `stream/resume`). Not numbered, not kept: the stream's
/// cursors are unchanged by it.
pub(crate) const RESUMED: &str = "stream/resumed";

/// The `stream/resumed` notification: the cursor the replay ended at, and `turn_state`.
pub(crate) fn resumed(cursor: u64, turn_state: serde_json::Value) -> Vec<u8> {
    serde_json::json!({
        "jsonrpc": "2.0",
        "method": RESUMED,
        "params": {
            "cursor": cursor.to_string(),
            "_meta": { TURN_STATE_KEY: turn_state },
        },
    })
    .to_string()
    .into_bytes()
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// The members of one JSON object, unparsed.
type Members<'a> = HashMap<Cow<'a, str>, &'a RawValue>;

/// Where `inner` (borrowed from `outer`) starts in `outer`.
fn offset(outer: &str, inner: &RawValue) -> usize {
    inner.get().as_ptr() as usize - outer.as_ptr() as usize
}

/// Inserts `member` (`"key":value`) as the first member of the object starting at `at`.
fn insert_member(message: &str, at: usize, empty: bool, member: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + member.len() + 1);
    out.extend_from_slice(&message.as_bytes()[..=at]);
    out.extend_from_slice(member.as_bytes());
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(&message.as_bytes()[at + 1..]);
    out
}

/// Adds `_meta["acp/cursor"] = "<cursor>"` to `object` (a value borrowed from `message`).
/// `None`: not an object, or its `_meta` is not one, or it has the key already.
fn stamp_object(message: &str, object: &RawValue, cursor: &str) -> Option<Vec<u8>> {
    let members: Members<'_> = serde_json::from_str(object.get()).ok()?;
    let cursor_member = format!("\"{CURSOR_KEY}\":{}", serde_json::to_string(cursor).ok()?);
    match members.get("_meta") {
        Some(meta) => {
            let meta_members: Members<'_> = serde_json::from_str(meta.get()).ok()?;
            if meta_members.contains_key(CURSOR_KEY) {
                return None;
            }
            let at = offset(message, meta);
            Some(insert_member(
                message,
                at,
                meta_members.is_empty(),
                &cursor_member,
            ))
        }
        None => {
            let at = offset(message, object);
            let member = format!("\"_meta\":{{{cursor_member}}}");
            Some(insert_member(message, at, members.is_empty(), &member))
        }
    }
}

/// `message` (one JSON-RPC message, as the agent wrote it) with `cursor` in its
/// `_meta["acp/cursor"]`, or `None` when it has no object to carry it (see the module docs).
pub(crate) fn stamp(message: &[u8], cursor: &str) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(message).ok()?;
    let envelope: Envelope<'_> = serde_json::from_str(text).ok()?;
    if let Some(holder) = envelope.params.or(envelope.result) {
        return stamp_object(text, holder, cursor);
    }
    let error = envelope.error?;
    let members: Members<'_> = serde_json::from_str(error.get()).ok()?;
    match members.get("data") {
        Some(data) => stamp_object(text, data, cursor),
        None => {
            let at = offset(text, error);
            let member = format!(
                "\"data\":{{\"_meta\":{{\"{CURSOR_KEY}\":{}}}}}",
                serde_json::to_string(cursor).ok()?
            );
            Some(insert_member(text, at, members.is_empty(), &member))
        }
    }
}

/// The cursor a server stamped into `message` (`_meta["acp/cursor"]` where [`stamp`] puts
/// it), if it is one of ours: an event id, as a decimal string.
pub(crate) fn read_cursor(message: &[u8]) -> Option<u64> {
    #[derive(Deserialize)]
    struct Holder<'a> {
        #[serde(borrow, rename = "_meta", default)]
        meta: Option<&'a RawValue>,
        #[serde(borrow, default)]
        data: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "acp/cursor")]
        cursor: Option<String>,
    }
    let envelope: Envelope<'_> = serde_json::from_slice(message).ok()?;
    let holder = envelope.params.or(envelope.result).or(envelope.error)?;
    let holder: Holder<'_> = serde_json::from_str(holder.get()).ok()?;
    let meta = match (holder.meta, holder.data) {
        (Some(meta), _) => meta,
        (None, Some(data)) => serde_json::from_str::<Holder<'_>>(data.get()).ok()?.meta?,
        (None, None) => return None,
    };
    let cursor = serde_json::from_str::<Meta>(meta.get()).ok()?.cursor?;
    if cursor.is_empty() || !cursor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    cursor.parse().ok()
}

/// Whether an `initialize` request asks for the durable transport: its
/// `params.clientCapabilities.transport.resumable` is present and not `false`/`null`.
pub(crate) fn asks_for_resumable(initialize: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(initialize) else {
        return false;
    };
    value
        .pointer("/params/clientCapabilities/transport/resumable")
        .is_some_and(|v| !v.is_null() && *v != serde_json::Value::Bool(false))
}

/// An `initialize` request with `params.clientCapabilities.transport.resumable` set to `{}`
/// (what [`asks_for_resumable`] looks for); a message that is not such a request is
/// returned unchanged.
pub(crate) fn ask_for_resumable(initialize: &[u8]) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(initialize) else {
        return initialize.to_vec();
    };
    let Some(params) = value.get_mut("params").and_then(|p| p.as_object_mut()) else {
        return initialize.to_vec();
    };
    let capabilities = params
        .entry("clientCapabilities")
        .or_insert_with(|| serde_json::json!({}));
    let Some(capabilities) = capabilities.as_object_mut() else {
        return initialize.to_vec();
    };
    let transport = capabilities
        .entry("transport")
        .or_insert_with(|| serde_json::json!({}));
    let Some(transport) = transport.as_object_mut() else {
        return initialize.to_vec();
    };
    transport.insert("resumable".into(), serde_json::json!({}));
    serde_json::to_vec(&value).unwrap_or_else(|_| initialize.to_vec())
}

/// Whether an `initialize` answer advertises the durable transport
/// (`result.agentCapabilities.transport.resumable`, as [`advertise`] puts it).
pub(crate) fn advertises_resumable(answer: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(answer).is_ok_and(|value| {
        value
            .pointer("/result/agentCapabilities/transport/resumable")
            .is_some_and(serde_json::Value::is_object)
    })
}

/// What a server keeps for resumptions, as advertised at `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retention {
    pub(crate) messages: usize,
    pub(crate) seconds: u64,
}

/// The agent's `initialize` answer with `result.agentCapabilities.transport.resumable` set to
/// `retention` (the proposal's `capabilities.transport.resumable`, in the object ACP's
/// `initialize` result names capabilities with). An answer that is not a successful one, or
/// not JSON, is returned unchanged.
pub(crate) fn advertise(answer: &[u8], retention: Retention) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(answer) else {
        return answer.to_vec();
    };
    let Some(result) = value.get_mut("result").and_then(|r| r.as_object_mut()) else {
        return answer.to_vec();
    };
    let capabilities = result
        .entry("agentCapabilities")
        .or_insert_with(|| serde_json::json!({}));
    let Some(capabilities) = capabilities.as_object_mut() else {
        return answer.to_vec();
    };
    let transport = capabilities
        .entry("transport")
        .or_insert_with(|| serde_json::json!({}));
    let Some(transport) = transport.as_object_mut() else {
        return answer.to_vec();
    };
    transport.insert(
        "resumable".into(),
        serde_json::json!({
            "retentionMessages": retention.messages,
            "retentionSeconds": retention.seconds,
        }),
    );
    serde_json::to_vec(&value).unwrap_or_else(|_| answer.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stamped(message: &str) -> String {
        String::from_utf8(stamp(message.as_bytes(), "7").unwrap()).unwrap()
    }

    #[test]
    fn the_cursor_goes_into_the_meta_of_params_result_or_error_data() {
        insta::assert_snapshot!(
            stamped(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}"#),
            @r#"{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"acp/cursor":"7"},"sessionId":"s","update":{}}}"#
        );
        insta::assert_snapshot!(
            stamped(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            @r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"acp/cursor":"7"}}}"#
        );
        insta::assert_snapshot!(
            stamped(r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"x":1},"stopReason":"end_turn"}}"#),
            @r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"acp/cursor":"7","x":1},"stopReason":"end_turn"}}"#
        );
        insta::assert_snapshot!(
            stamped(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#),
            @r#"{"jsonrpc":"2.0","id":1,"error":{"data":{"_meta":{"acp/cursor":"7"}},"code":-32601,"message":"no"}}"#
        );
        insta::assert_snapshot!(
            stamped(r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no","data":{"a":"é\u0041"}}}"#),
            @r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no","data":{"_meta":{"acp/cursor":"7"},"a":"é\u0041"}}}"#
        );
        assert_eq!(
            stamp(br#"{"jsonrpc":"2.0","id":1,"result":null}"#, "7"),
            None
        );
        assert_eq!(
            stamp(br#"{"jsonrpc":"2.0","id":1,"result":{"_meta":[]}}"#, "7"),
            None
        );
        assert_eq!(stamp(b"not json", "7"), None);
    }

    #[test]
    fn cursors_are_read_back_from_where_they_were_stamped() {
        for message in [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no","data":{"a":1}}}"#,
        ] {
            assert_eq!(
                read_cursor(&stamp(message.as_bytes(), "7").unwrap()),
                Some(7)
            );
        }
        assert_eq!(
            read_cursor(br#"{"jsonrpc":"2.0","id":1,"result":null}"#),
            None
        );
        assert_eq!(
            read_cursor(br#"{"id":1,"result":{"_meta":{"acp/cursor":"x7"}}}"#),
            None
        );
    }

    #[test]
    fn initialize_asks_and_the_answer_advertises() {
        assert!(asks_for_resumable(
            br#"{"method":"initialize","params":{"clientCapabilities":{"transport":{"resumable":{}}}}}"#
        ));
        assert!(!asks_for_resumable(
            br#"{"method":"initialize","params":{"clientCapabilities":{"transport":{"resumable":false}}}}"#
        ));
        assert!(!asks_for_resumable(
            br#"{"method":"initialize","params":{}}"#
        ));
        let answer = advertise(
            br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#,
            Retention { messages: 4096, seconds: 300 },
        );
        assert!(advertises_resumable(&answer));
        insta::assert_snapshot!(String::from_utf8(answer).unwrap(), @r#"{"id":0,"jsonrpc":"2.0","result":{"agentCapabilities":{"loadSession":true,"transport":{"resumable":{"retentionMessages":4096,"retentionSeconds":300}}},"protocolVersion":1}}"#);
        let refused = br#"{"jsonrpc":"2.0","id":0,"error":{"code":1,"message":"no"}}"#;
        assert!(!advertises_resumable(refused));
        assert_eq!(
            advertise(
                refused,
                Retention {
                    messages: 1,
                    seconds: 1
                }
            ),
            refused
        );
    }

    proptest! {
        /// A stamped message is the same message plus the cursor, nothing else changed.
        #[test]
        fn stamping_adds_the_cursor_and_nothing_else(
            meta in proptest::option::of(proptest::collection::btree_map("[a-z]{1,4}", 0i64..9, 0..3)),
            rest in proptest::collection::btree_map("[a-z]{1,4}", "[ -~]{0,6}", 0..4),
            cursor in 0u64..u64::MAX,
        ) {
            let mut params = serde_json::Map::new();
            for (k, v) in &rest {
                params.insert(k.clone(), v.clone().into());
            }
            if let Some(meta) = &meta {
                params.insert("_meta".into(), serde_json::to_value(meta).unwrap());
            }
            let message = serde_json::json!({"jsonrpc":"2.0","method":"m","params":params});
            let bytes = serde_json::to_vec(&message).unwrap();
            let out = stamp(&bytes, &cursor.to_string()).unwrap();
            let mut parsed: serde_json::Value = serde_json::from_slice(&out).unwrap();
            let meta_out = parsed["params"]["_meta"].as_object_mut().unwrap();
            prop_assert_eq!(meta_out.remove(CURSOR_KEY), Some(cursor.to_string().into()));
            if meta_out.is_empty() && meta.is_none() {
                parsed["params"].as_object_mut().unwrap().remove("_meta");
            }
            prop_assert_eq!(parsed, message);
        }
    }
}
