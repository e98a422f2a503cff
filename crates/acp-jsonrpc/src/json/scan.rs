//! The envelope of an ordinary message, read in one validating pass over the line. serde_json
//! reading a member as raw JSON walks it byte by byte (and allocates a stack for nesting), ~13
//! instructions per byte of params; this pass skips string contents sixteen bytes per step
//! (the escaper's search: the bytes that end a string's plain run are the bytes JSON escapes).
//!
//! It answers only what it is sure serde_json would answer the same: anything it does not
//! handle (an escape inside a key or inside `jsonrpc`/`method`, a repeated member, nesting
//! deeper than 64, invalid JSON) is `None`, and the caller reads the line with serde_json,
//! which then produces the exact error.

use super::read::skip_ws;
use super::write::next_escape;

/// The members a message may have, each as its raw JSON text, exactly as serde_json's
/// `RawValue` would hold it (no surrounding whitespace).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Members<'a> {
    pub(crate) jsonrpc: Option<&'a str>,
    pub(crate) id: Option<&'a str>,
    pub(crate) method: Option<&'a str>,
    pub(crate) params: Option<&'a str>,
    pub(crate) result: Option<&'a str>,
    pub(crate) error: Option<&'a str>,
}

/// Reads `text` as one JSON object (whitespace around it allowed, nothing else).
pub(crate) fn members(text: &str) -> Option<Members<'_>> {
    let bytes = text.as_bytes();
    let mut members = Members::default();
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(bytes, i + 1);
    if bytes.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            let key_start = i + 1;
            i = skip_string(bytes, i)?;
            let key = &bytes[key_start..i - 1];
            if key.contains(&b'\\') {
                return None;
            }
            i = skip_ws(bytes, i);
            if bytes.get(i) != Some(&b':') {
                return None;
            }
            let value_start = skip_ws(bytes, i + 1);
            i = skip_value(bytes, value_start)?;
            // In bounds and on character boundaries: both ends are ASCII delimiters.
            let value = text.get(value_start..i)?;
            let slot = match key {
                b"jsonrpc" => &mut members.jsonrpc,
                b"id" => &mut members.id,
                b"method" => &mut members.method,
                b"params" => &mut members.params,
                b"result" => &mut members.result,
                b"error" => &mut members.error,
                _ => &mut None,
            };
            if slot.replace(value).is_some() {
                return None;
            }
            i = skip_ws(bytes, i);
            match bytes.get(i) {
                Some(b',') => i = skip_ws(bytes, i + 1),
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_ws(bytes, i) == bytes.len()).then_some(members)
}

/// The text of a JSON string with no escapes in it, or `None` (an escaped one, or no string).
pub(crate) fn plain_string(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

/// Past the string that starts at `i` (which must be its opening quote).
#[inline(always)]
fn skip_string(bytes: &[u8], i: usize) -> Option<usize> {
    if bytes.get(i) != Some(&b'"') {
        return None;
    }
    let mut i = i + 1;
    loop {
        i = next_escape(bytes, i)?;
        match bytes[i] {
            b'"' => return Some(i + 1),
            b'\\' => {
                i += 1;
                match bytes.get(i)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 1,
                    b'u' => {
                        let hex = bytes.get(i + 1..i + 5)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        i += 5;
                    }
                    _ => return None,
                }
            }
            // A control character.
            _ => return None,
        }
    }
}

/// Past the number that starts at `i`, by JSON's grammar (which serde_json enforces).
fn skip_number(bytes: &[u8], mut i: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        let start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i > start).then_some(i)
    };
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match bytes.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(i)?,
        _ => return None,
    };
    if bytes.get(i) == Some(&b'.') {
        i = digits(i + 1)?;
    }
    if let Some(b'e' | b'E') = bytes.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = bytes.get(i) {
            i += 1;
        }
        i = digits(i)?;
    }
    // `01` is not a number; serde_json refuses it.
    match bytes.get(i) {
        Some(byte) if byte.is_ascii_digit() => None,
        _ => Some(i),
    }
}

/// Past the value that starts at `i`.
fn skip_value(bytes: &[u8], mut i: usize) -> Option<usize> {
    // One bit per open container: set for an object. Deeper than 64 is left to serde_json.
    let mut stack: u64 = 0;
    let mut depth = 0u32;
    loop {
        // A value starts at `i`.
        match bytes.get(i)? {
            b'"' => i = skip_string(bytes, i)?,
            b'-' | b'0'..=b'9' => i = skip_number(bytes, i)?,
            b't' => i = literal(bytes, i, b"true")?,
            b'f' => i = literal(bytes, i, b"false")?,
            b'n' => i = literal(bytes, i, b"null")?,
            open @ (b'{' | b'[') => {
                if depth == 64 {
                    return None;
                }
                let is_object = *open == b'{';
                stack = stack << 1 | u64::from(is_object);
                depth += 1;
                i = skip_ws(bytes, i + 1);
                let close = if is_object { b'}' } else { b']' };
                if bytes.get(i) == Some(&close) {
                    i += 1;
                    stack >>= 1;
                    depth -= 1;
                } else {
                    if is_object {
                        i = key(bytes, i)?;
                    }
                    continue;
                }
            }
            _ => return None,
        }
        // A value ended at `i`: close what it ends, or go on to the next member.
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = skip_ws(bytes, i);
            let in_object = stack & 1 == 1;
            match (bytes.get(i)?, in_object) {
                (b',', true) => {
                    i = key(bytes, skip_ws(bytes, i + 1))?;
                    break;
                }
                (b',', false) => {
                    i = skip_ws(bytes, i + 1);
                    break;
                }
                (b'}', true) | (b']', false) => {
                    i += 1;
                    stack >>= 1;
                    depth -= 1;
                }
                _ => return None,
            }
        }
    }
}

/// Past `"key" :` and the whitespace after it.
#[inline(always)]
fn key(bytes: &[u8], i: usize) -> Option<usize> {
    let i = skip_ws(bytes, skip_string(bytes, i)?);
    (bytes.get(i) == Some(&b':')).then(|| skip_ws(bytes, i + 1))
}

fn literal(bytes: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    let end = i + word.len();
    (bytes.get(i..end) == Some(word)).then_some(end)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::Deserialize;
    use serde_json::value::RawValue;

    use super::*;

    /// What serde_json reads, with the same restrictions as the scan.
    fn serde_members(text: &str) -> Option<Members<'_>> {
        #[derive(Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow)]
            jsonrpc: Option<&'a RawValue>,
            #[serde(borrow)]
            id: Option<&'a RawValue>,
            #[serde(borrow)]
            method: Option<&'a RawValue>,
            #[serde(borrow)]
            params: Option<&'a RawValue>,
            #[serde(borrow)]
            result: Option<&'a RawValue>,
            #[serde(borrow)]
            error: Option<&'a RawValue>,
        }
        // `Option<&RawValue>` reads `null` as absent; the scan keeps it.
        let envelope: Envelope<'_> = serde_json::from_str(text).ok()?;
        fn get(raw: Option<&RawValue>) -> Option<&str> {
            raw.map(RawValue::get)
        }
        Some(Members {
            jsonrpc: get(envelope.jsonrpc),
            id: get(envelope.id),
            method: get(envelope.method),
            params: get(envelope.params),
            result: get(envelope.result),
            error: get(envelope.error),
        })
    }

    /// Whatever the scan reads, serde_json reads the same (it may read `null` as absent).
    fn agree(text: &str) {
        let Some(scanned) = members(text) else {
            return;
        };
        let read = serde_members(text)
            .unwrap_or_else(|| panic!("scan accepted what serde_json refuses: {text}"));
        fn nulls_absent(raw: Option<&str>) -> Option<&str> {
            raw.filter(|raw| *raw != "null")
        }
        assert_eq!(nulls_absent(scanned.jsonrpc), read.jsonrpc, "{text}");
        assert_eq!(nulls_absent(scanned.id), read.id, "{text}");
        assert_eq!(nulls_absent(scanned.method), read.method, "{text}");
        assert_eq!(nulls_absent(scanned.params), read.params, "{text}");
        assert_eq!(nulls_absent(scanned.result), read.result, "{text}");
        assert_eq!(nulls_absent(scanned.error), read.error, "{text}");
    }

    #[test]
    fn reads_ordinary_messages() {
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x\n\"y\u00e9"}}}}"#;
        let members = members(line).unwrap();
        assert_eq!(members.jsonrpc, Some(r#""2.0""#));
        assert_eq!(members.method, Some(r#""session/update""#));
        assert!(members.params.unwrap().ends_with(r#"\u00e9"}}}"#));
        assert_eq!(members.id, None);
        let members =
            self::members(r#" { "id" : null , "result" : [ 1 , -2.5e+3 , true , { } , [ ] ] } "#)
                .unwrap();
        assert_eq!(members.id, Some("null"));
        assert_eq!(members.result, Some("[ 1 , -2.5e+3 , true , { } , [ ] ]"));
        for text in [line, r#"{}"#, r#"{"x":{"y":[{"z":null}]},"id":1}"#] {
            agree(text);
        }
    }

    #[test]
    fn leaves_the_unusual_to_serde_json() {
        for text in [
            r#"{"id":1,"id":2}"#,
            r#"{"\u0069d":1}"#,
            r#"{"id":01}"#,
            r#"{"id":1.}"#,
            r#"{"id":-}"#,
            r#"{"id":1e}"#,
            r#"{"id":"a\x"}"#,
            "{\"id\":\"a\u{1}\"}",
            r#"{"id":tru}"#,
            r#"{"id":[1,]}"#,
            r#"{"id":{"a":1,}}"#,
            r#"{"id":{"a" 1}}"#,
            r#"{"id":1,}"#,
            r#"{"id":1} x"#,
            r#"{"id":[1}"#,
            r#"{"id":{"a":1]}"#,
            r#"{"id":"\u12g4"}"#,
        ] {
            assert_eq!(members(text), None, "{text}");
        }
        let deep = format!("{{\"params\":{}{}}}", "[".repeat(65), "]".repeat(65));
        assert_eq!(members(&deep), None);
        let deep = format!("{{\"params\":{}{}}}", "[".repeat(64), "]".repeat(64));
        assert!(members(&deep).is_some());
    }

    fn json() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|n| serde_json::to_string(&n).unwrap()),
            any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
            "[ -~]{0,12}".prop_map(|s| format!("\"{s}\"")),
            "[0-9eE+.-]{1,6}",
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(("[a-z]{0,3}|id|params", inner), 0..6).prop_map(|v| {
                    let members: Vec<String> = v
                        .into_iter()
                        .map(|(k, v)| format!("\"{k}\" : {v}"))
                        .collect();
                    format!("{{ {} }}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn agrees_with_serde_json(
            members in prop::collection::vec(("jsonrpc|id|method|params|result|error|[a-z]{1,3}", json()), 0..5),
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            let members: Vec<String> = members.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let mut text = format!("{{{}}}", members.join(","));
            if truncate {
                let at = cut.index(text.len() + 1);
                if text.is_char_boundary(at) {
                    text.truncate(at);
                }
            }
            agree(&text);
        }
    }
}
