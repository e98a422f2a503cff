//! JSON text a router copies without reading it: what the forwarding scan (`forward.rs`)
//! delimits and the writer (`raw.rs`) splices into an outgoing line, in a module of its own so
//! that neither of the two imports the other.

use serde_json::value::RawValue;

/// JSON text that a non-validating scan delimited: a router copies it as it is and never
/// reads it, so it may be anything the sender wrote between the brackets, valid or not
/// (the peer that decodes it answers what is wrong with it). Made from a [`RawValue`] too, for
/// text that is known to be valid.
///
/// ```
/// use acp_jsonrpc::json::UncheckedJson;
/// use serde_json::value::RawValue;
///
/// let params = RawValue::from_string(r#"{"n":1}"#.to_owned()).unwrap();
/// let unchecked = UncheckedJson::from(&*params);
/// assert_eq!(unchecked.as_bytes(), br#"{"n":1}"#);
/// assert!(!unchecked.is_null());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UncheckedJson<'a> {
    text: &'a [u8],
    /// Found on one line, so without a newline: a line written around it needs no search for
    /// one (a `RawValue` may hold one as whitespace).
    one_line: bool,
}

impl<'a> UncheckedJson<'a> {
    /// Text found on one line (so without a newline).
    pub(crate) fn on_line(text: &'a [u8]) -> Self {
        UncheckedJson {
            text,
            one_line: true,
        }
    }

    /// The text's bytes, exactly as they were on the line.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.text
    }

    /// Whether the text is `null`.
    pub fn is_null(&self) -> bool {
        self.text == b"null"
    }

    /// Whether the text is known to hold no newline (it was found on one line).
    pub(crate) fn is_one_line(&self) -> bool {
        self.one_line
    }
}

impl<'a> From<&'a RawValue> for UncheckedJson<'a> {
    fn from(raw: &'a RawValue) -> Self {
        UncheckedJson {
            text: raw.get().as_bytes(),
            one_line: false,
        }
    }
}
