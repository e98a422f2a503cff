//! The forwarding scan against the validating decode: the same method, params and carried
//! message for every valid notification, and nothing accepted whose envelope the decode would
//! refuse (so every malformed envelope is still answered as before).

use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::{Message, Notification};

fn decoded(line: &[u8]) -> Option<Notification> {
    match Message::from_slice(line) {
        Ok(Message::Notification(notification)) => Some(notification),
        _ => None,
    }
}

fn params_text<'a>(found: &ForwardScan<'a>) -> Option<&'a str> {
    found
        .params
        .map(|params| std::str::from_utf8(params.as_bytes()).unwrap())
}

#[test]
fn reads_what_it_routes_on_and_skips_the_rest() {
    let line = br#" {"jsonrpc" : "2.0", "method":"proxy/successor","params":{"method":"session/update","_meta":{"k":"}\""},"params":{"t":"a\"]}"}} } "#;
    let known = KnownMethods::default();
    let found = notification(line, &known).unwrap();
    assert_eq!(found.method, "proxy/successor");
    let carried = found.params.and_then(carried_in).unwrap();
    assert_eq!(carried.method(), "session/update");
    assert_eq!(carried.params().unwrap().as_bytes(), br#"{"t":"a\"]}"}"#);
    // Params that are not valid JSON (a bad escape, a control character, invalid UTF-8,
    // a bare word) are found and left unread.
    let line =
        b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":\"\\x\x01\xff\",\"b\":tru}}";
    let found = notification(line, &known).unwrap();
    assert_eq!(found.params.unwrap().as_bytes(), &line[39..line.len() - 1]);
    assert!(decoded(line).is_none());
    assert_eq!(found.params.and_then(carried_in), None);
}

#[test]
fn declines_every_envelope_it_does_not_route_as_it_is() {
    let known = KnownMethods::default();
    for line in [
        r#"{"jsonrpc":"2.0","method":"m","id":1}"#,
        r#"{"jsonrpc":"2.0","method":"m","result":1}"#,
        r#"{"jsonrpc":"2.0","method":"m","error":{}}"#,
        r#"{"jsonrpc":"2.0","method":"m","extra":1}"#,
        r#"{"jsonrpc":"2.0","method":"m","method":"m"}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":1,"params":2}"#,
        r#"{"jsonrpc":"1.0","method":"m"}"#,
        r#"{"method":"m"}"#,
        r#"{"jsonrpc":"2.0","method":"a\/b"}"#,
        r#"{"jsonrpc":"2.0","method":1}"#,
        r#"{"jsonrpc":"2.0","me\u0074hod":"m"}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{"a":1]}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":[1}}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{"a":1}}}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{"a":1}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":}"#,
        r#"{"jsonrpc":"2.0","method":"m",}"#,
        r#"{"jsonrpc":"2.0","method":"m"} x"#,
        r#"[{"jsonrpc":"2.0","method":"m"}]"#,
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\u{1}\"}",
    ] {
        assert_eq!(notification(line.as_bytes(), &known), None, "{line}");
    }
    let deep = format!(
        r#"{{"jsonrpc":"2.0","method":"m","params":{}{}}}"#,
        "[".repeat(65),
        "]".repeat(65)
    );
    assert_eq!(notification(deep.as_bytes(), &known), None);
}

/// Edits for a mangling proptest: each inserts a byte, removes one or cuts the line, at an
/// index.
pub(super) fn edits() -> impl Strategy<Value = Vec<(prop::sample::Index, u8, u8)>> {
    prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..4)
}

/// `line` with `edits` made in order.
pub(super) fn mangled(line: String, edits: Vec<(prop::sample::Index, u8, u8)>) -> Vec<u8> {
    let mut line = line.into_bytes();
    for (at, byte, how) in edits {
        let at = at.index(line.len() + 1);
        match how {
            0 => line.insert(at, byte),
            1 if at < line.len() => {
                line.remove(at);
            }
            _ => line.truncate(at),
        }
    }
    line
}

/// `line` with `span`, a slice of it (the one a scan leaves unread), replaced by `null`: what
/// the validating decode must accept as an envelope.
pub(super) fn with_null_for(line: &[u8], span: &[u8]) -> Vec<u8> {
    let start = span.as_ptr() as usize - line.as_ptr() as usize;
    let mut stripped = line[..start].to_vec();
    stripped.extend_from_slice(b"null");
    stripped.extend_from_slice(&line[start + span.len()..]);
    stripped
}

pub(super) fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        Just(Value::from("quotes \" backslash \\ ] } [ { \u{1} é 😀")),
    ];
    leaf.prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("method|params|_meta|[a-z\"\\\\{}]{1,4}", inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A notification line as a peer may spell it: members in any order, spaced or not.
fn line() -> impl Strategy<Value = (String, String, Option<Value>)> {
    let method = prop_oneof![
        Just("session/update".to_owned()),
        Just("proxy/successor".to_owned()),
        "[a-z/_]{1,12}",
        "\\PC{1,8}",
    ];
    (
        method,
        prop::option::of(json_value()),
        any::<bool>(),
        0..6usize,
    )
        .prop_map(|(method, params, spaced, order)| {
            let gap = if spaced { " \t" } else { "" };
            let mut members = vec![
                format!(r#""jsonrpc"{gap}:{gap}"2.0""#),
                format!(
                    r#""method":{gap}{}"#,
                    serde_json::to_string(&method).unwrap()
                ),
            ];
            if let Some(params) = &params {
                let text = if spaced {
                    serde_json::to_string_pretty(params)
                        .unwrap()
                        .replace('\n', " ")
                } else {
                    serde_json::to_string(params).unwrap()
                };
                members.push(format!(r#""params":{gap}{text}"#));
            }
            let len = members.len();
            members.rotate_left(order % len);
            let line = format!("{gap}{{{}}}{gap}", members.join(&format!(",{gap}")));
            (line, method, params)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every valid notification is read as the validating decode reads it.
    #[test]
    fn agrees_with_the_decode_on_valid_notifications((line, method, params) in line()) {
        let expected = decoded(line.as_bytes()).unwrap();
        let known = KnownMethods::default();
        let found = notification(line.as_bytes(), &known);
        // The second time, its methods are remembered: the same result.
        prop_assert_eq!(notification(line.as_bytes(), &known), found);
        if method.contains(['"', '\\']) || method.chars().any(|c| c < ' ') {
            // Escaped in the line: left to the decode.
            prop_assert_eq!(found, None);
            return Ok(());
        }
        let found = found.unwrap();
        prop_assert_eq!(found.method, expected.method.as_str());
        prop_assert_eq!(params_text(&found), expected.params.as_deref().map(|p| p.get()));
        // The carried message: what serde_json reads of the params' `method` and `params`.
        // (Not offered when a key is escaped in the line: it might spell `method`.)
        let carried = match &params {
            Some(Value::Object(map)) if map.keys().any(|key| key.contains(['"', '\\'])) => None,
            Some(Value::Object(map)) => match map.get("method") {
                Some(Value::String(inner)) if !inner.contains(['"', '\\']) && !inner.chars().any(|c| c < ' ') => Some(inner.clone()),
                _ => None,
            },
            _ => None,
        };
        prop_assert_eq!(found.params.and_then(carried_in).map(|c| c.method().to_owned()), carried.clone());
        // What the usual spelling finds on the way is what the walk finds.
        if found.inner.is_some() {
            prop_assert_eq!(found.inner, found.params.and_then(carried_in));
        }
        if let (Some(inner), Some(Value::Object(map))) = (found.params.and_then(carried_in), &params) {
            let inner_params = inner.params().map(|p| serde_json::from_slice::<Value>(p.as_bytes()).unwrap());
            // Both read back the same way (floats need not survive a round trip exactly).
            let written = map.get("params").map(|p| serde_json::from_str::<Value>(&p.to_string()).unwrap());
            prop_assert_eq!(inner_params, written);
        }
    }

    /// Whatever the scan accepts, however mangled, has an envelope the decode accepts: with
    /// the params (the one span it leaves unread) replaced by `null`, the line decodes to a
    /// notification of the same method. So a malformed envelope is always declined, and then
    /// decoded and answered as before.
    #[test]
    fn accepts_no_malformed_envelope(
        (line, _, _) in line(),
        edits in edits(),
    ) {
        let line = mangled(line, edits);
        let known = KnownMethods::default();
        let Some(found) = notification(&line, &known) else {
            return Ok(());
        };
        let stripped = match found.params {
            Some(params) => with_null_for(&line, params.as_bytes()),
            None => line.clone(),
        };
        let envelope = decoded(&stripped);
        prop_assert!(envelope.is_some(), "{}", String::from_utf8_lossy(&line));
        let envelope = envelope.unwrap();
        prop_assert_eq!(envelope.method.as_str(), found.method);
        // Valid params are exactly what the decode reads.
        if let Some(whole) = decoded(&line) {
            prop_assert_eq!(params_text(&found), whole.params.as_deref().map(|p| p.get()));
        }
    }
}

/// What serde_json reads of a carried message (as `proxy/successor`'s handler reads one).
#[derive(serde::Deserialize)]
struct Carried<'a> {
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Of any valid JSON (spaced or not), `carried_message` reads what serde_json reads, or
    /// declines it: never another method or other params.
    #[test]
    fn carried_message_reads_what_serde_json_reads(
        value in json_value(),
        method in prop::option::of(prop_oneof![Just("session/prompt".to_owned()), "\\PC{0,8}"]),
        spaced in any::<bool>(),
    ) {
        let mut value = value;
        if let (Value::Object(map), Some(method)) = (&mut value, method) {
            map.insert("method".to_owned(), Value::from(method));
        }
        let text = if spaced {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        let raw = RawValue::from_string(text).unwrap();
        let by_serde = serde_json::from_str::<Carried<'_>>(raw.get()).ok();
        let Some((method, params)) = carried_message(&raw) else {
            // Declined: left to serde_json only where an escape or the shape makes it unsure.
            if let (Some(read), Value::Object(map)) = (&by_serde, &value) {
                prop_assert!(
                    read.method.contains(['"', '\\']) || read.method.chars().any(|c| c < ' ')
                        || map.keys().any(|key| key.contains(['"', '\\']) || key.chars().any(|c| c < ' ')),
                    "declined {}", raw.get()
                );
            }
            return Ok(());
        };
        let read = by_serde.expect("serde_json reads what carried_message reads");
        prop_assert_eq!(method, &*read.method);
        let params = params.filter(|params| params.get() != "null");
        prop_assert_eq!(params.map(RawValue::get), read.params.map(RawValue::get));
    }
}

/// The container skip as a byte walk, the way the scan did it before its 64-byte blocks: the
/// reference `blocks::skip_container` must agree with on any bytes.
fn skip_container_bytewise(bytes: &[u8], mut i: usize) -> Option<usize> {
    let mut stack: u64 = 0;
    let mut depth = 0u32;
    loop {
        match *bytes.get(i)? {
            b'"' => {
                i = skip_string(bytes, i)?;
                continue;
            }
            open @ (b'{' | b'[') => {
                if depth == 64 {
                    return None;
                }
                stack = stack << 1 | u64::from(open == b'{');
                depth += 1;
            }
            close @ (b'}' | b']') => {
                if (stack & 1 == 1) != (close == b'}') {
                    return None;
                }
                stack >>= 1;
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
}

#[test]
fn blocks_agree_with_the_byte_walk_at_block_edges() {
    // A string, an escape and a bracket on either side of each 64-byte edge.
    for pad in 0..140 {
        for tail in [
            r#""a\"}" ]}"#,
            r#""\\" ]}"#,
            r#""\\\"]" ]}"#,
            r#"] }"#,
            r#""}""#,
            r#"\"]}"#,
        ] {
            let text = format!(r#"{{"k":["{}",{tail}"#, "x".repeat(pad));
            for cut in [text.len(), text.len().saturating_sub(1)] {
                let bytes = &text.as_bytes()[..cut];
                assert_eq!(
                    blocks::skip_container(bytes, 0),
                    skip_container_bytewise(bytes, 0),
                    "{text:?} cut at {cut}"
                );
            }
        }
    }
    let deep = format!("{}{}", "[".repeat(64), "]".repeat(64));
    assert_eq!(blocks::skip_container(deep.as_bytes(), 0), Some(128));
    let deeper = format!("{}{}", "[".repeat(65), "]".repeat(65));
    assert_eq!(blocks::skip_container(deeper.as_bytes(), 0), None);
}

#[test]
fn backslash_runs_inside_strings_agree_with_the_byte_walk_across_block_edges() {
    // Runs of 1 to 5 backslashes inside a string, then a quote (escaped or closing) or a
    // bracket, at every offset around the first two block edges; after a closing quote the
    // next bracket ends the container.
    for pad in 0..140 {
        for run in 1..=5 {
            for after in [r#"" ]"#, r#"] "]"#, r#"x" ]"#, r#""]" ]"#] {
                let text = format!(r#"["{}{}{after}"#, "x".repeat(pad), "\\".repeat(run));
                for cut in [text.len(), text.len() - 1] {
                    let bytes = &text.as_bytes()[..cut];
                    assert_eq!(
                        blocks::skip_container(bytes, 0),
                        skip_container_bytewise(bytes, 0),
                        "{text:?} cut at {cut}"
                    );
                }
            }
        }
    }
}

#[test]
fn long_strings_agree_with_the_byte_walk() {
    // A string over many blocks (the whole blocks of it without a quote are skipped by a test
    // for quotes alone) of lines that end in a run of 1 to 4 backslashes and `n`; a run and a
    // quote, a bracket, an `n` or a backslash at every offset of its first blocks, so that the
    // runs cross block edges at every lane; the container ending in a whole or a partial last
    // block, or cut inside the string.
    for run in 1..=4 {
        let body = format!("{}{}n", "x".repeat(64), "\\".repeat(run)).repeat(16);
        for pad in 0..200 {
            for after in ["\"", "}", "n", "\\"] {
                let text = format!(
                    r#"{{"k":"{}{}{after}{body}"}},"id":1}}"#,
                    "x".repeat(pad),
                    "\\".repeat(run)
                );
                let end = text.len() - ",\"id\":1}".len();
                for cut in [text.len(), end, end - 1, end - 3] {
                    let bytes = &text.as_bytes()[..cut];
                    assert_eq!(
                        blocks::skip_container(bytes, 0),
                        skip_container_bytewise(bytes, 0),
                        "{text:?} cut at {cut}"
                    );
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Long strings, mostly text with backslashes and a rare quote or bracket, across many
    /// blocks: the blocks end the container where the byte walk does.
    #[test]
    fn blocks_agree_with_the_byte_walk_on_long_strings(
        text in prop::collection::vec(
            prop_oneof![
                64 => Just(b'x'),
                8 => Just(b'\\'),
                1 => Just(b'"'),
                1 => Just(b'}'),
                1 => any::<u8>(),
            ],
            0..1200,
        ),
        lead in 0..80usize,
    ) {
        let mut bytes = vec![b'x'; lead];
        bytes.extend_from_slice(br#"{"k":""#);
        bytes.extend_from_slice(&text);
        bytes.extend_from_slice(br#""},"id":1}"#);
        prop_assert_eq!(
            blocks::skip_container(&bytes, lead),
            skip_container_bytewise(&bytes, lead)
        );
    }

    /// On any bytes (mostly the ones the scan looks at, across block edges), the 64-byte
    /// blocks end a container where the byte walk does, or refuse it as it does.
    #[test]
    fn blocks_agree_with_the_byte_walk(
        body in prop::collection::vec(
            prop_oneof![
                8 => Just(b'x'),
                2 => Just(b'"'),
                2 => Just(b'\\'),
                1 => Just(b'{'),
                1 => Just(b'}'),
                1 => Just(b'['),
                1 => Just(b']'),
                1 => any::<u8>(),
            ],
            0..300,
        ),
        open in prop_oneof![Just(b'{'), Just(b'[')],
        lead in 0..80usize,
    ) {
        // What precedes the container is not looked at: it may be anything.
        let mut bytes = vec![b'"'; lead];
        bytes.push(open);
        bytes.extend_from_slice(&body);
        prop_assert_eq!(
            blocks::skip_container(&bytes, lead),
            skip_container_bytewise(&bytes, lead)
        );
    }

    /// Valid JSON (escaped strings, unicode, nesting) of any size, followed by more: the
    /// blocks end each container exactly where serde_json's text of it ends.
    #[test]
    fn blocks_end_valid_containers_where_they_end(
        items in prop::collection::vec(json_value(), 0..8),
        pad in 0..70usize,
    ) {
        let value = Value::Array(
            std::iter::once(Value::from("y".repeat(pad))).chain(items).collect(),
        );
        let text = serde_json::to_string(&value).unwrap();
        let line = format!("{text},\"id\":1}}");
        prop_assert_eq!(blocks::skip_container(line.as_bytes(), 0), Some(text.len()));
    }
}
