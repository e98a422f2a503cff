//! The client's answer to `fs/read_text_file`, `{"content": …}`, read without serde's
//! visitors.
//!
//! Reading files is what coding agents ask their client for most, and file contents are full of
//! line feeds, tabs and quotes: serde_json unescapes them at about five instructions per byte,
//! growing its scratch buffer as it goes, then copies the result once more. This reader takes
//! the one member through [`acp_jsonrpc::json::string_at`], which unescapes into one
//! allocation of the right size. Anything else (`_meta`, a member a newer schema adds, a `null`
//! result, an error) goes to the generic decode, which holds every rule; a property test checks
//! that the two agree.

use acp_jsonrpc::RequestError;
use acp_types::{ReadTextFileResponse, decode_response};
use serde_json::value::RawValue;

use crate::shape_reader::Reader;

/// Decodes the result of `fs/read_text_file` into its content.
#[expect(
    clippy::boxed_local,
    reason = "the decoder signature `request_with` takes"
)]
pub(super) fn decode(result: Box<RawValue>) -> Result<String, RequestError> {
    match read(result.get()) {
        Some(content) => Ok(content),
        None => decode_response::<ReadTextFileResponse>(result.get())
            .map(|response| response.content)
            .map_err(RequestError::Decode),
    }
}

/// The content if `result` is exactly `{"content": "…"}`.
fn read(result: &str) -> Option<String> {
    let mut reader = Reader::new(result);
    let mut content = None;
    reader.object(&["content"], |reader, _| {
        reader.string().map(|value| content = Some(value))
    })?;
    reader.end()?;
    content.map(|content| content.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn generic(result: &str) -> Option<String> {
        decode_response::<ReadTextFileResponse>(result)
            .ok()
            .map(|response| response.content)
    }

    #[test]
    fn reads_the_plain_answer_as_the_generic_decode_does() {
        for result in [
            r#"{"content":""}"#,
            r#"{"content":"fn main() {\n\t\"quoted\" \\ é\n}\n"}"#,
            r#" { "content" : "a\u00e9\ud83e\udd80" } "#,
        ] {
            assert_eq!(read(result), generic(result), "{result}");
            assert!(read(result).is_some(), "{result}");
        }
    }

    #[test]
    fn leaves_everything_else_to_the_generic_decode() {
        for result in [
            r#"{"content":"x","_meta":{}}"#,
            r#"{"content":"x","content":"y"}"#,
            r#"{"c\u006fntent":"x"}"#,
            r#"{"content":null}"#,
            r#"{"content":"x"} x"#,
            r#"{}"#,
            "null",
        ] {
            assert_eq!(read(result), None, "{result}");
        }
        let decoded =
            decode(RawValue::from_string(r#"{"content":"x","_meta":{"k":1}}"#.into()).unwrap());
        assert_eq!(decoded.unwrap(), "x");
        assert!(decode(RawValue::from_string("3".into()).unwrap()).is_err());
    }

    proptest! {
        /// Whatever the fast reader returns, the generic decode returns too.
        #[test]
        fn never_decides_differently(
            key in prop_oneof![8 => Just("content"), 1 => Just("_meta"), 1 => Just("c\\u006fntent")],
            text in r#"([a-z"\\/ \n\t\u{1}\u{e9}]|\\[nrtbfx"\\/u]|\\u00[0-7][0-9a-f]){0,16}"#,
            extra in prop_oneof![6 => Just(""), 1 => Just(r#","_meta":{}"#), 1 => Just(r#","content":"y""#)],
            space in "[ \n]{0,1}",
        ) {
            let result = format!("{{{space}\"{key}\"{space}:{space}\"{text}\"{extra}{space}}}");
            if let Some(fast) = read(&result) {
                prop_assert_eq!(Some(fast), generic(&result), "{}", result);
            }
        }
    }
}
