//! `RawValue`s made from JSON text this module already knows to be valid, without serde_json
//! reading it a second time (~13 instructions per byte): a scanned member borrowed, and the
//! `{"method":…,"params":…}` object that carries one message inside another's params.

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, Error, MapDeserializer, StringDeserializer};
use serde_json::value::RawValue;

use super::unchecked::UncheckedJson;
use super::write::write_str;

/// serde_json hands a raw value over as a one-member map under this key.
const MARKER: &str = "$serde_json::private::RawValue";

/// `json` (valid JSON) as a `RawValue`, the way serde_json's own deserializer hands one over,
/// without reading it again. `None` only if serde_json ever renames its marker.
pub(crate) fn borrowed_raw(json: &str) -> Option<&RawValue> {
    let member = std::iter::once((MARKER, BorrowedStrDeserializer::<Error>::new(json)));
    <&RawValue>::deserialize(MapDeserializer::<_, Error>::new(member)).ok()
}

/// `json` (valid JSON) as an owned `RawValue`, taking over its allocation. `None` only if
/// serde_json ever renames its marker.
fn boxed_raw(json: String) -> Option<Box<RawValue>> {
    let member = std::iter::once((MARKER, StringDeserializer::<Error>::new(json)));
    <Box<RawValue>>::deserialize(MapDeserializer::<_, Error>::new(member)).ok()
}

/// The object `{"method":…,"params":…}` (`params` left out when `None`): one message carried
/// inside another's params, as ACP's `proxy/successor` carries it. Byte for byte what
/// serde_json writes for such a struct, spliced: `params` is copied once and never re-read.
///
/// ```
/// use acp_jsonrpc::json::inner_message;
/// use serde_json::value::RawValue;
///
/// let params = RawValue::from_string(r#"{"sessionId":"s"}"#.to_owned()).unwrap();
/// let inner = inner_message("session/update", Some(&params));
/// assert_eq!(inner.get(), r#"{"method":"session/update","params":{"sessionId":"s"}}"#);
/// assert_eq!(inner_message("m", None).get(), r#"{"method":"m"}"#);
/// ```
pub fn inner_message(method: &str, params: Option<&RawValue>) -> Box<RawValue> {
    boxed_raw(spliced(method, params)).unwrap_or_else(|| {
        // Only if serde_json renamed its marker: the same text, read once more.
        RawValue::from_string(spliced(method, params))
            .unwrap_or_else(|_| unreachable!("spliced from a string and valid JSON"))
    })
}

fn spliced(method: &str, params: Option<&RawValue>) -> String {
    // One allocation of the exact size (unless the method needs escapes), which the boxed
    // `RawValue` then keeps without shrinking: `{"method":"…"` + `,"params":…` + `}`.
    let exact = 12 + method.len() + params.map_or(0, |params| 10 + params.get().len()) + 1;
    let mut text = Vec::with_capacity(exact);
    write_inner_message(&mut text, method, params.map(UncheckedJson::from));
    // ASCII punctuation around a string the writer escaped from a `&str` and params that are
    // a `&str`: always UTF-8.
    String::from_utf8(text)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// Appends `{"method":…,"params":…}` (`params` left out when `None`) to `out`: the one
/// place that spells a message carried inside another's params, for [`inner_message`] and
/// for the connection's wrapped notifications, which splice it straight into the outgoing
/// line.
pub(crate) fn write_inner_message(
    out: &mut Vec<u8>,
    method: &str,
    params: Option<UncheckedJson<'_>>,
) {
    out.extend_from_slice(br#"{"method":"#);
    write_str(out, method);
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        out.extend_from_slice(params.as_bytes());
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scanned_members_become_raw_values_without_a_second_read() {
        // Fails if serde_json renames its marker; decoding would then always take the slow way.
        assert_eq!(
            borrowed_raw(r#"[1, {"a": "\n"}]"#).map(RawValue::get),
            Some(r#"[1, {"a": "\n"}]"#)
        );
        assert!(boxed_raw("[1]".to_owned()).is_some());
    }

    #[test]
    fn inner_messages_are_what_serde_json_writes() {
        #[derive(serde::Serialize)]
        struct Inner<'a> {
            method: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a RawValue>,
        }
        let params = RawValue::from_string(r#"{"x":[1, 2],"t":"é\n"}"#.to_owned()).unwrap();
        for method in ["session/prompt", "a\"b\\c\u{1}é", ""] {
            for params in [None, Some(&*params)] {
                let expected = serde_json::to_string(&Inner { method, params }).unwrap();
                assert_eq!(inner_message(method, params).get(), expected);
            }
        }
    }
}
