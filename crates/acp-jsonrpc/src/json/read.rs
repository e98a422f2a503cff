//! Reading: [`string_at`] and [`skip_whitespace`] (public, see the module above), and the
//! serde helpers that keep a present `null` member apart from an absent one.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::write::next_escape;

/// Reads the JSON string whose opening quote is at byte `at` of `text`.
///
/// Returns its value, borrowed from `text` when the string has no escapes, and the index just
/// past its closing quote. Returns `None` when there is no valid JSON string at `at`: no quote
/// there, no closing quote, a raw control character, or an escape serde_json rejects.
pub fn string_at(text: &str, at: usize) -> Option<(Cow<'_, str>, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let stop = next_escape(bytes, start)?;
    match bytes[stop] {
        b'"' => Some((Cow::Borrowed(&text[start..stop]), stop + 1)),
        b'\\' => unescape(text, at, stop),
        _ => None,
    }
}

/// The string at `at` whose first backslash is at `first`. The two-character escapes are
/// decoded here, copying the runs between them at once: serde_json grows its scratch buffer
/// while it unescapes, about five instructions per byte, and file contents and streamed text
/// are full of line feeds and quotes. A string with a `\u` escape is left to serde_json, whose
/// rules (surrogate pairs, and their errors) it then follows.
fn unescape(text: &str, at: usize, first: usize) -> Option<(Cow<'_, str>, usize)> {
    let bytes = text.as_bytes();
    // At most what is left of the text; trimmed below if that was far too much.
    let mut out = Vec::with_capacity(bytes.len() - at);
    out.extend_from_slice(&bytes[at + 1..first]);
    let mut backslash = first;
    loop {
        let decoded = match bytes.get(backslash + 1)? {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => return by_serde_json(text, at, backslash),
            _ => return None,
        };
        out.push(decoded);
        let run = backslash + 2;
        let stop = next_escape(bytes, run)?;
        out.extend_from_slice(&bytes[run..stop]);
        match bytes[stop] {
            b'"' => {
                if out.capacity() > 2 * out.len() + 64 {
                    out.shrink_to_fit();
                }
                // Runs of a `str` cut at ASCII bytes, and ASCII bytes: valid UTF-8.
                let value = String::from_utf8(out).ok()?;
                return Some((Cow::Owned(value), stop + 1));
            }
            b'\\' => backslash = stop,
            _ => return None,
        }
    }
}

/// The string at `at`, decoded by serde_json, once its end is found from `from` on.
fn by_serde_json(text: &str, at: usize, from: usize) -> Option<(Cow<'_, str>, usize)> {
    let bytes = text.as_bytes();
    let mut from = from;
    loop {
        let stop = next_escape(bytes, from)?;
        match bytes[stop] {
            b'"' => {
                let value = serde_json::from_str::<String>(&text[at..=stop]).ok()?;
                return Some((Cow::Owned(value), stop + 1));
            }
            // The escaped byte is never a quote that ends the string; `\u` goes on with hex
            // digits, which need no escaping, and serde_json checks them.
            b'\\' => from = stop + 2,
            _ => return None,
        }
    }
}

/// The index of the first byte at or after `at` that is not JSON whitespace (space, tab, line
/// feed, carriage return); `text.len()` if there is none (or `at` itself, past the end).
#[inline]
pub fn skip_whitespace(text: &str, at: usize) -> usize {
    skip_ws(text.as_bytes(), at)
}

/// [`skip_whitespace`] over bytes: the one whitespace skipper of the crate (the envelope scan,
/// the decoder's first look at a line that may not be UTF-8, and the public helper).
#[inline]
pub(crate) fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// For `deserialize_with` on an `Option<&RawValue>` member: `Some` whenever the member is
/// present, `null` included; a plain `Option` would turn `"id": null` into "no id".
pub(crate) fn present_borrowed<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// [`present_borrowed`] for an owned `Option<Box<RawValue>>` member.
pub(crate) fn present_owned<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_strings_are_borrowed() {
        let (value, end) = string_at(r#"x"abc"y"#, 1).unwrap();
        assert!(matches!(value, Cow::Borrowed("abc")));
        assert_eq!(end, 6);
    }

    #[test]
    fn escapes_are_decoded_as_serde_json_does() {
        let text = r#""a\"b\\c\u00e9\ud83d\ude00\n""#;
        let (value, end) = string_at(text, 0).unwrap();
        assert_eq!(value, "a\"b\\c\u{e9}\u{1f600}\n");
        assert_eq!(end, text.len());
    }

    #[test]
    fn long_text_with_many_escapes_is_decoded_and_not_over_allocated() {
        let line = "0123456789abcdefghijklmnopqrstuvwxyz \"quoted\" \\ tab\t é 🦀\n";
        let value = line.repeat(40);
        let json = serde_json::to_string(&value).unwrap();
        let (read, end) = string_at(&json, 0).unwrap();
        assert_eq!(read, value);
        assert_eq!(end, json.len());
        let padded = format!("{json}{}", " ".repeat(100_000));
        let (Cow::Owned(read), _) = string_at(&padded, 0).unwrap() else {
            panic!("escaped strings are owned")
        };
        assert!(read.capacity() < 2 * read.len() + 64, "{}", read.capacity());
    }

    #[test]
    fn invalid_strings_are_refused() {
        for text in [
            "abc",
            r#""abc"#,
            "\"a\u{1}b\"",
            r#""a\xb""#,
            r#""a\ud800""#,
            r#""\"#,
            r#""\""#,
            "",
        ] {
            assert_eq!(string_at(text, 0), None, "{text:?}");
        }
        assert_eq!(string_at("\"a\"", 7), None);
    }

    #[test]
    fn whitespace_is_skipped_up_to_the_end() {
        assert_eq!(skip_whitespace(" \t\r\n x", 0), 5);
        assert_eq!(skip_whitespace("  ", 0), 2);
        assert_eq!(skip_whitespace("x", 3), 3);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Whatever `string_at` reads, serde_json reads identically, and it reads every string
        /// serde_json reads.
        #[test]
        fn agrees_with_serde_json(
            text in r#""([a-z"\\/ \n\u{1}\u{e9}]|\\[nrtbfx"\\/u]|\\u[0-9a-fA-F]{4}|\\ud83d\\ude00){0,12}"?"#,
            trailing in "[ ,}]{0,2}",
        ) {
            let input = format!("{text}{trailing}");
            let mut stream = serde_json::Deserializer::from_str(&input).into_iter::<String>();
            let expected = stream.next().and_then(Result::ok);
            let read = string_at(&input, 0);
            prop_assert_eq!(read.as_ref().map(|(v, _)| v.as_ref()), expected.as_deref());
            if let Some((_, end)) = read {
                prop_assert_eq!(end, stream.byte_offset());
            }
        }
    }
}
