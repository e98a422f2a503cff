//! The envelope of a message for layers that only watch or route the traffic: the `id`, the
//! `method`, the `params`, and whether there is a `result` or an `error`, read by the same
//! one-pass scan that decodes incoming messages, with nothing decoded or copied.

use serde_json::value::RawValue;

use super::raw::borrowed_raw;
use super::scan::{members, plain_string};

/// The envelope of one JSON-RPC message, read without decoding it: what a layer that only
/// watches the traffic (counting requests and their answers, say) needs of each line.
///
/// ```
/// use acp_jsonrpc::json::envelope;
///
/// let line = r#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"prompt":[]}}"#;
/// let seen = envelope(line).unwrap();
/// assert_eq!((seen.id, seen.method), (Some("7"), Some("session/prompt")));
/// assert!(!seen.has_result);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Envelope<'a> {
    /// The `id` member as its raw JSON text (`7`, `"a"`, `null`), exactly as serde_json's
    /// `RawValue` would hold it.
    pub id: Option<&'a str>,
    /// The `method` member's value.
    pub method: Option<&'a str>,
    /// The `params` member as its raw JSON text (`null` included); [`Envelope::raw_params`]
    /// lends it as a `RawValue`, for a router to pass on without reading it again.
    pub params: Option<&'a str>,
    /// Whether the message has a `result` member.
    pub has_result: bool,
    /// Whether the message has an `error` member.
    pub has_error: bool,
}

impl<'a> Envelope<'a> {
    /// The `params` member as a `RawValue`, borrowed from the line: the scan validated it, so
    /// it is not read again. `None` when absent.
    pub fn raw_params(&self) -> Option<&'a RawValue> {
        self.params.and_then(borrowed_raw)
    }
}

/// Reads the envelope of `line` (one JSON object, whitespace around it allowed) in one
/// validating pass that skips string contents sixteen bytes per step and borrows everything.
///
/// Returns `None` for anything it does not read exactly as serde_json would: invalid JSON, a
/// repeated member, an escape inside a key or inside `method`, nesting deeper than 64. A
/// caller that must not miss such a line reads it with serde_json then; they are rare.
pub fn envelope(line: &str) -> Option<Envelope<'_>> {
    let members = members(line)?;
    let method = match members.method {
        None => None,
        Some(raw) => Some(plain_string(raw)?),
    };
    Some(Envelope {
        id: members.id,
        method,
        params: members.params,
        has_result: members.result.is_some(),
        has_error: members.error.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_is_what_serde_json_reads() {
        #[derive(serde::Deserialize)]
        struct Peek<'a> {
            #[serde(borrow, default)]
            id: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow, default)]
            method: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            params: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow, default)]
            result: Option<&'a serde_json::value::RawValue>,
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"a":"}\""}}"#,
            r#" { "id" : "p" , "result" : {} } "#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"x":[1,2,{"y":"z"}]}}"#,
            r#"{"id":7,"error":{"code":-1,"message":"m"}}"#,
        ] {
            let seen = envelope(line).unwrap();
            let peek: Peek = serde_json::from_str(line).unwrap();
            assert_eq!(seen.id, peek.id.map(|r| r.get()), "{line}");
            assert_eq!(seen.method, peek.method.as_deref(), "{line}");
            assert_eq!(
                seen.raw_params().map(RawValue::get),
                peek.params.map(RawValue::get),
                "{line}"
            );
            assert_eq!(seen.has_result, peek.result.is_some(), "{line}");
        }
        // A null member is there all the same (serde's `Option` reads it as none).
        let nulls = envelope(r#"{"id":null,"result":null}"#).unwrap();
        assert_eq!((nulls.id, nulls.has_result), (Some("null"), true));
        assert!(envelope(r#"{"id":7,"error":{}}"#).unwrap().has_error);
        for unsure in [
            r#"{"id":1,"method":"session\/prompt"}"#,
            r#"{"id":1,"id":2}"#,
            r#"{"id":1,"method":"x""#,
            "[]",
        ] {
            assert_eq!(envelope(unsure), None, "{unsure}");
        }
    }
}
