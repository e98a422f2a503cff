//! The shape most `session/update`s have in a streaming turn, a text chunk, read without serde's
//! visitors:
//! `{"sessionId":…,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":…}}}`
//! (or `user_message_chunk`, `agent_thought_chunk`), members in any order, with any JSON
//! whitespace.
//!
//! Through the generated `Deserialize` impls such an update costs ~4.4 k instructions, a
//! struct visitor per layer with the 248-byte `SessionUpdate` moved through each layer's
//! `Result`, and its code is too large for the instruction cache next to the rest of the
//! turn. This reader builds the value in place.
//!
//! It only ever says yes or "not mine": any other member (`_meta`, `messageId`,
//! `annotations`, one a newer schema adds), a repeated member, another tag or content type, or a
//! value of another JSON type returns `None`, and the generic decode, which holds every rule
//! (unknown members, lenient fields, unknown tags, errors), decides. A property test checks that
//! whatever this reader returns is what the generic decode returns.

use crate::shape_reader::Reader;
use acp_types::{
    ContentBlock, ContentChunk, SessionId, SessionNotification, SessionUpdate, TextContent,
};

/// The update if `params` is exactly a plain text chunk; `None` for anything else.
pub(super) fn decode(params: &str) -> Option<Box<SessionNotification>> {
    let mut reader = Reader::new(params);
    let mut session_id = None;
    let mut update = None;
    reader.object(&["sessionId", "update"], |reader, key| match key {
        0 => reader.string().map(|value| session_id = Some(value)),
        _ => chunk(reader).map(|value| update = Some(value)),
    })?;
    reader.end()?;
    Some(Box::new(SessionNotification::new(
        SessionId(session_id?.into_owned()),
        update?,
    )))
}

const CHUNK_TAGS: [&str; 3] = [
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message_chunk",
];

/// The `update` member: a chunk tag and a text content block.
fn chunk(reader: &mut Reader<'_>) -> Option<SessionUpdate> {
    let mut tag = None;
    let mut text = None;
    reader.object(&["sessionUpdate", "content"], |reader, key| match key {
        0 => reader.literal(&CHUNK_TAGS).map(|value| tag = Some(value)),
        _ => reader.text_block().map(|value| text = Some(value)),
    })?;
    let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text?.into_owned())));
    Some(match tag? {
        0 => SessionUpdate::AgentMessageChunk(chunk),
        1 => SessionUpdate::AgentThoughtChunk(chunk),
        _ => SessionUpdate::UserMessageChunk(chunk),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn generic(params: &str) -> Option<SessionNotification> {
        serde_json::from_str(params).ok()
    }

    #[test]
    fn reads_the_streaming_shape_as_the_generic_decode_does() {
        for params in [
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello"}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":""}}}"#,
            r#" { "update" : { "content" : { "text" : "a\n\"b\" \u00e9" , "type" : "text" } , "sessionUpdate" : "agent_message_chunk" } , "sessionId" : "s\u0031" } "#,
            "{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"\u{e9}\u{1f980}\"}}}",
        ] {
            let fast = decode(params).unwrap_or_else(|| panic!("not read: {params}"));
            assert_eq!(Some(*fast), generic(params), "{params}");
        }
    }

    #[test]
    fn leaves_everything_else_to_the_generic_decode() {
        for params in [
            // Members the generic decode keeps, drops or reports.
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},"_meta":{}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":null}}}"#,
            // Repeated members, other tags and types, missing members.
            r#"{"sessionId":"s1","sessionId":"s2","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"plan","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"hologram","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","text":"x"}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"text":"x"}}}"#,
            r#"{"sessionId":"s1","update":{"content":{"type":"text","text":"x"}}}"#,
            r#"{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            // Names and tags spelled with escapes (the generic decode reads them).
            r#"{"s\u0065ssionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"t\u0065xt","text":"x"}}}"#,
            // Values of other types, and input that is not JSON.
            r#"{"sessionId":1,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":null}}}"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}} x"#,
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},}"#,
            r#"{}"#,
            "null",
            "",
        ] {
            assert_eq!(decode(params), None, "{params}");
        }
    }

    /// A member of the shape, or something near it.
    fn member(key: &'static str, value: BoxedStrategy<String>) -> BoxedStrategy<String> {
        let key = prop_oneof![
            12 => Just(format!("{key:?}")),
            1 => Just(r#""_meta""#.to_owned()),
            1 => Just(r#""messageId""#.to_owned()),
            1 => Just(r#""s\u0065ssionId""#.to_owned()),
        ];
        (key, ws(), ws(), value)
            .prop_map(|(key, a, b, value)| format!("{key}{a}:{b}{value}"))
            .boxed()
    }

    fn ws() -> impl Strategy<Value = String> {
        prop_oneof![8 => Just(String::new()), 1 => "[ \t\r\n]{1,2}"]
    }

    fn string(plain: &'static [&'static str]) -> BoxedStrategy<String> {
        prop_oneof![
            12 => proptest::sample::select(plain).prop_map(|s| format!("{s:?}")),
            2 => r#""([a-z \u{e9}]|\\[n"\\]|\\u00[2-7][0-9a-f]){0,6}""#,
            1 => Just("null".to_owned()),
            1 => Just("1".to_owned()),
            1 => Just("{}".to_owned()),
            1 => Just("\"a\u{1}\"".to_owned()),
        ]
        .boxed()
    }

    fn object(members: Vec<BoxedStrategy<String>>) -> BoxedStrategy<String> {
        let repeat = proptest::bool::weighted(0.1);
        (members, any::<bool>(), repeat, ws())
            .prop_map(|(mut members, reverse, repeat, w)| {
                if repeat {
                    members.push(members[0].clone());
                }
                if reverse {
                    members.reverse();
                }
                format!("{{{w}{}{w}}}", members.join(","))
            })
            .boxed()
    }

    fn params() -> BoxedStrategy<String> {
        let content = object(vec![
            member("type", string(&["text", "text", "text", "image"])),
            member("text", string(&["", "Hello", "two words"])),
        ]);
        let update = object(vec![
            member(
                "sessionUpdate",
                string(&[
                    "agent_message_chunk",
                    "agent_thought_chunk",
                    "user_message_chunk",
                    "plan",
                ]),
            ),
            member("content", content),
        ]);
        object(vec![
            member("sessionId", string(&["s1", "another session"])),
            member("update", update),
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Whatever the fast reader returns, the generic decode returns too; and it does read
        /// the plain shape (checked above) rather than always saying no.
        #[test]
        fn never_decides_differently(params in params()) {
            if let Some(fast) = decode(&params) {
                prop_assert_eq!(Some(*fast), generic(&params), "{}", params);
            }
        }
    }
}
