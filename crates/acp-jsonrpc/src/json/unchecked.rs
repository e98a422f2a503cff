//! JSON text a router copies without reading it: what the forwarding scan (`forward.rs`)
//! delimits and the writer (`raw.rs`) splices into an outgoing line, in a module of its own so
//! that neither of the two imports the other.

use serde_json::value::RawValue;

/// What comes between a notification's plain method and its params in the usual spelling,
/// the method's closing quote included: `…method","params":{…}`.
pub(crate) const METHOD_TO_PARAMS: &[u8] = br#"","params":"#;

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
#[derive(Debug, Clone, Copy)]
pub struct UncheckedJson<'a> {
    /// The text, or, when the scan found it as the params of a plain method in the usual
    /// spelling, that method, [`METHOD_TO_PARAMS`] and the text: one slice of the line, which
    /// a writer forwarding the same method copies whole (see [`after_method`](Self::after_method)).
    span: &'a [u8],
    /// Where the text starts in `span`: 0, or the method's length plus [`METHOD_TO_PARAMS`]'s.
    text_at: usize,
    /// Found on one line, so without a newline: a line written around it needs no search for
    /// one (a `RawValue` may hold one as whitespace).
    one_line: bool,
}

impl<'a> UncheckedJson<'a> {
    /// Text found on one line (so without a newline).
    pub(crate) fn on_line(text: &'a [u8]) -> Self {
        UncheckedJson {
            span: text,
            text_at: 0,
            one_line: true,
        }
    }

    /// The text at the end of `span`, which starts with a method of `method_length` bytes
    /// that needs no escape and is valid UTF-8, then [`METHOD_TO_PARAMS`] (the scan's word).
    pub(crate) fn on_line_after_method(span: &'a [u8], method_length: usize) -> Self {
        debug_assert_eq!(
            span.get(method_length..method_length + METHOD_TO_PARAMS.len()),
            Some(METHOD_TO_PARAMS)
        );
        UncheckedJson {
            span,
            text_at: method_length + METHOD_TO_PARAMS.len(),
            one_line: true,
        }
    }

    /// The text's bytes, exactly as they were on the line.
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        &self.span[self.text_at..]
    }

    /// Whether the text is `null`.
    #[inline]
    pub fn is_null(&self) -> bool {
        self.as_bytes() == b"null"
    }

    /// Whether the text is known to hold no newline (it was found on one line).
    pub(crate) fn is_one_line(&self) -> bool {
        self.one_line
    }

    /// `method","params":` and the text as one slice of the line, when the scan found the
    /// text right after that method (which then needs no escape): what a writer forwarding
    /// the same method writes after the opening quote, with one copy instead of an escape
    /// check and two. `None` for any other method (one a router renamed) or text.
    #[inline]
    pub(crate) fn after_method(&self, method: &str) -> Option<&'a [u8]> {
        let found = self
            .text_at
            .checked_sub(METHOD_TO_PARAMS.len())
            .map(|length| &self.span[..length])?;
        // The same bytes of the same line, or a copy of them (a method a hop remembered).
        (std::ptr::eq(found, method.as_bytes()) || same(found, method.as_bytes()))
            .then_some(self.span)
    }
}

/// Equal when the text is: where it was found is not part of it.
impl PartialEq for UncheckedJson<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes() && self.one_line == other.one_line
    }
}

impl Eq for UncheckedJson<'_> {}

impl<'a> From<&'a RawValue> for UncheckedJson<'a> {
    fn from(raw: &'a RawValue) -> Self {
        UncheckedJson {
            span: raw.get().as_bytes(),
            text_at: 0,
            one_line: false,
        }
    }
}

/// Whether two byte strings are equal: short ones (every method remembered) compared as two
/// overlapping words, inline, where the slice comparison calls `memcmp`.
#[inline(always)]
pub(super) fn same(known: &[u8], bytes: &[u8]) -> bool {
    if known.len() != bytes.len() {
        return false;
    }
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("eight"));
    let half = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("four"));
    match bytes.len() {
        0..4 => known == bytes,
        4..8 => {
            let last = bytes.len() - 4;
            half(known, 0) == half(bytes, 0) && half(known, last) == half(bytes, last)
        }
        8..=16 => {
            let last = bytes.len() - 8;
            word(known, 0) == word(bytes, 0) && word(known, last) == word(bytes, last)
        }
        _ => known == bytes,
    }
}
