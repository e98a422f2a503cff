//! Tests of the refused-POST scan: answers told from requests, ids kept within `MAX_ID`, and an
//! answer's id found wherever it stands in a generated body, however the body is cut.

use super::{AnswerScan, MAX_ID, answer_id};
use proptest::prelude::*;

#[test]
fn answers_are_told_from_requests() {
    let cases: &[(&str, Option<&str>)] = &[
        (r#"{"jsonrpc":"2.0","id":5,"result":{"outcome":"#, Some("5")),
        (
            r#"{"jsonrpc":"2.0","id":"a\"b","error":{"#,
            Some(r#""a\"b""#),
        ),
        (r#" { "id" : 7 , "result" : null } "#, Some("7")),
        (
            r#"{"result":{"a":[1,{"b":"}"}]},"jsonrpc":"2.0","id":3}"#,
            Some("3"),
        ),
        // Decided once the id after the result is complete: what follows is not read.
        (r#"{"result":"x\\","id":3,"#, Some("3")),
        (r#"{"error":{},"id":"x y" "#, Some(r#""x y""#)),
        (r#"{"result":1,"id":[1,"]"]}"#, Some(r#"[1,"]"]"#)),
        (r#"{"result":1,"id":3"#, None),
        (r#"{"result":{"a":[1,2"#, None),
        (r#"{"jsonrpc":"2.0","id":5,"method":"x","params":{"#, None),
        (r#"{"jsonrpc":"2.0","id":5,"params":{},"result":1}"#, None),
        (r#"{"jsonrpc":"2.0","id":5"#, None),
        (r#"{"jsonrpc":"2.0","id":5}"#, None),
        (r#"{"id":5,,"result":1}"#, None),
        (r#"{"id":,"result":1}"#, None),
        (r#"[{"id":5,"result":1}]"#, None),
        ("not json", None),
        ("", None),
    ];
    for (text, want) in cases {
        assert_eq!(answer_id(text.as_bytes()).as_deref(), *want, "{text}");
    }
}

#[test]
fn a_long_id_names_nothing() {
    let long = format!(r#"{{"result":1,"id":"{}"}}"#, "x".repeat(MAX_ID));
    assert_eq!(answer_id(long.as_bytes()), None);
    let fits = format!(r#"{{"result":1,"id":"{}"}}"#, "x".repeat(MAX_ID - 2));
    assert!(answer_id(fits.as_bytes()).is_some());
}

/// A JSON value whose text has every byte the scan must step over: brackets and quotes inside
/// strings, escapes, nesting, whitespace.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        (-1000i64..1000).prop_map(|n| n.to_string()),
        "[a-z{}\\[\\],:\" \\\\]{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(("[a-z\"}]{0,4}", inner), 0..5).prop_map(|m| {
                let members: Vec<String> = m
                    .into_iter()
                    .map(|(k, v)| format!("{}:{v}", serde_json::to_string(&k).unwrap()))
                    .collect();
                format!("{{ {} }}", members.join(" , "))
            }),
        ]
    })
}

/// An id as the agent makes them: a number or a string (with escapes).
fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..u64::MAX).prop_map(|n| n.to_string()),
        "[a-z0-9\"\\\\ -]{0,16}".prop_map(|s| serde_json::to_string(&s).unwrap()),
    ]
}

fn chunked(body: &[u8], cuts: Vec<usize>) -> AnswerScan {
    let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut scan = AnswerScan::new();
    let mut at = 0;
    for cut in cuts {
        scan.feed(&body[at..cut]);
        at = cut;
    }
    scan.feed(&body[at..]);
    scan
}

proptest! {
    /// An answer's id is found wherever it is among the members (before or after a result of
    /// any size and shape), however the body is cut into pieces.
    #[test]
    fn the_id_is_found_anywhere_in_any_chunking(
        id in id(),
        result in value(),
        others in prop::collection::vec(("[a-z]{1,9}", value()), 0..4),
        at in 0usize..8,
        error in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let name = if error { "error" } else { "result" };
        let mut members: Vec<String> = others
            .into_iter()
            .filter(|(k, _)| !matches!(k.as_str(), "id" | "method" | "params" | "result" | "error"))
            .map(|(k, v)| format!("\"{k}\" : {v}"))
            .collect();
        members.insert(0, format!("\"{name}\":{result}"));
        members.insert(at % (members.len() + 1), format!("\"id\":{id}"));
        let body = format!(" {{{}}}\n", members.join(","));
        let scan = chunked(body.as_bytes(), cuts);
        prop_assert_eq!(scan.answer_id(), Some(id.as_str()), "{}", body);
    }

    /// A request names nothing, whatever follows its method.
    #[test]
    fn a_request_names_nothing(id in id(), params in value(), result in value(),
                               cuts in prop::collection::vec(any::<usize>(), 0..12)) {
        let body = format!(r#"{{"id":{id},"method":"x","params":{params},"result":{result}}}"#);
        let scan = chunked(body.as_bytes(), cuts);
        prop_assert_eq!(scan.answer_id(), None);
    }

    /// Any bytes at all, in any pieces: the same decision as all at once, and no panic.
    #[test]
    fn chunking_never_changes_the_decision(body in prop::collection::vec(any::<u8>(), 0..200),
                                           cuts in prop::collection::vec(any::<usize>(), 0..12)) {
        let whole = answer_id(&body);
        let scan = chunked(&body, cuts);
        prop_assert_eq!(scan.answer_id(), whole.as_deref());
    }
}
