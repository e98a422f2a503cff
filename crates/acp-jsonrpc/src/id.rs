//! Request ids, kept exactly as the peer wrote them.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// The id of a JSON-RPC request: an integer, a string or `null`.
///
/// An id is echoed back byte for byte: a peer that sends `"1"` gets `"1"`,
/// one that sends `1` gets `1`, and a number that does not fit an `i64`
/// (`18446744073709551615`, `1.5`, `-0`) keeps its exact text instead of
/// being rounded through a float.
///
/// Ids compare by that exact form, so `RequestId::from(1)` and
/// `RequestId::from("1")` are different ids, as JSON-RPC requires.
///
/// ```
/// use acp_jsonrpc::RequestId;
///
/// assert_eq!(RequestId::from(7).to_string(), "7");
/// assert_eq!(RequestId::from("7").to_string(), "\"7\"");
/// assert_eq!(RequestId::null().to_string(), "null");
/// assert_ne!(RequestId::from(7), RequestId::from("7"));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RequestId(IdRepr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum IdRepr {
    Integer(i64),
    /// Any other JSON number, as the exact text the peer sent.
    OtherNumber(Box<str>),
    String(String),
    Null,
}

impl RequestId {
    /// The `null` id. JSON-RPC uses it for error responses to requests whose
    /// id could not be read.
    pub const fn null() -> Self {
        RequestId(IdRepr::Null)
    }

    /// Whether this is the `null` id.
    pub fn is_null(&self) -> bool {
        matches!(self.0, IdRepr::Null)
    }

    /// The id as an integer, when it is a JSON integer that fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self.0 {
            IdRepr::Integer(n) => Some(n),
            _ => None,
        }
    }

    /// The id as a string, when it is a JSON string.
    pub fn as_str(&self) -> Option<&str> {
        match &self.0 {
            IdRepr::String(s) => Some(s),
            _ => None,
        }
    }

    /// Reads an id from the exact JSON text of a value, or `None` when the
    /// value is not a string, a number or `null`.
    pub(crate) fn from_json_text(text: &str) -> Option<Self> {
        let repr = match text.as_bytes().first()? {
            b'"' => IdRepr::String(serde_json::from_str(text).ok()?),
            b'n' if text == "null" => IdRepr::Null,
            b'-' | b'0'..=b'9' => {
                // Only text that formatting the integer gives back verbatim
                // (not `-0`, which must be echoed as `-0`).
                let digits = text.strip_prefix('-').unwrap_or(text);
                let canonical = digits == "0" && text == "0" || !digits.starts_with('0');
                match text.parse::<i64>() {
                    Ok(n) if canonical => IdRepr::Integer(n),
                    _ => {
                        // Callers pass text serde_json already accepted as a
                        // value; checking again keeps this function honest on
                        // its own.
                        serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
                        IdRepr::OtherNumber(text.into())
                    }
                }
            }
            _ => return None,
        };
        Some(RequestId(repr))
    }

    /// Appends the id's JSON text to `out`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match &self.0 {
            IdRepr::Integer(n) => {
                let mut digits = [0; 20];
                out.extend_from_slice(format_i64(*n, &mut digits));
            }
            IdRepr::OtherNumber(text) => out.extend_from_slice(text.as_bytes()),
            IdRepr::String(s) => crate::json::write_str(out, s),
            IdRepr::Null => out.extend_from_slice(b"null"),
        }
    }
}

/// Formats an integer without going through `fmt` machinery, which is
/// measurably slower on the per-message path.
fn format_i64(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let negative = n < 0;
    let mut magnitude = n.unsigned_abs();
    let mut start = buf.len();
    loop {
        start -= 1;
        buf[start] = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if negative {
        // i64::MIN has 19 digits, so the sign always fits in the 20th byte.
        start -= 1;
        buf[start] = b'-';
    }
    &buf[start..]
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId(IdRepr::Integer(n))
    }
}

impl From<i32> for RequestId {
    fn from(n: i32) -> Self {
        RequestId(IdRepr::Integer(n.into()))
    }
}

impl From<u32> for RequestId {
    fn from(n: u32) -> Self {
        RequestId(IdRepr::Integer(n.into()))
    }
}

impl From<u64> for RequestId {
    fn from(n: u64) -> Self {
        match i64::try_from(n) {
            Ok(n) => RequestId(IdRepr::Integer(n)),
            Err(_) => RequestId(IdRepr::OtherNumber(n.to_string().into())),
        }
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId(IdRepr::String(s))
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId(IdRepr::String(s.to_owned()))
    }
}

/// Shows the id as JSON: `1`, `"abc"`, `null`.
impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = Vec::new();
        self.write_json(&mut text);
        f.write_str(&String::from_utf8_lossy(&text))
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({self})")
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            IdRepr::Integer(n) => serializer.serialize_i64(*n),
            IdRepr::OtherNumber(text) => RawValue::from_string(text.to_string())
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
            IdRepr::String(s) => serializer.serialize_str(s),
            IdRepr::Null => serializer.serialize_unit(),
        }
    }
}

/// Deserializes through the raw JSON text so that large numbers stay exact;
/// works with every `serde_json` deserializer.
impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        RequestId::from_json_text(raw.get()).ok_or_else(|| {
            serde::de::Error::custom(format_args!(
                "invalid request id {}: expected a string, a number or null",
                raw.get()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_formatting_matches_display() {
        for n in [0, 1, -1, 9, 10, -10, 1234567890, i64::MAX, i64::MIN] {
            let mut buf = [0; 20];
            assert_eq!(format_i64(n, &mut buf), n.to_string().as_bytes());
        }
    }

    #[test]
    fn text_forms_are_kept() {
        for text in [
            "0",
            "-0",
            "1",
            "-17",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "123456789012345678901234567890",
            "1.5",
            "1e3",
            "1.0",
            "\"1\"",
            "\"\"",
            "\"a\\u0062c\"",
            "null",
        ] {
            let id = RequestId::from_json_text(text).unwrap();
            let mut out = Vec::new();
            id.write_json(&mut out);
            let round = RequestId::from_json_text(std::str::from_utf8(&out).unwrap()).unwrap();
            assert_eq!(round, id, "{text}");
            if !text.contains('\\') {
                assert_eq!(out, text.as_bytes());
            }
        }
        for text in ["true", "{}", "[]", "nul", "-", "01", ""] {
            assert!(RequestId::from_json_text(text).is_none(), "{text}");
        }
    }

    #[test]
    fn serde_round_trip() {
        for id in [
            RequestId::from(3),
            RequestId::from("x"),
            RequestId::null(),
            RequestId::from(u64::MAX),
        ] {
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, id.to_string());
            assert_eq!(serde_json::from_str::<RequestId>(&json).unwrap(), id);
            let value = serde_json::to_value(&id).unwrap();
            assert_eq!(serde_json::from_value::<RequestId>(value).unwrap(), id);
        }
        assert!(serde_json::from_str::<RequestId>("true").is_err());
    }
}
