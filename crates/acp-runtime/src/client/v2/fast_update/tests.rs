//! The fast reader of v2 updates against the generic decode: the shapes it takes, what it
//! leaves, and (proptest) that it never decides differently, update by update and over whole
//! streams folded into a [`Conversation`].

use super::*;
use crate::client::v2::Conversation;
use proptest::prelude::*;

fn generic(params: &str) -> Option<UpdateSessionNotification> {
    serde_json::from_str(params).ok()
}

#[test]
fn reads_the_streaming_shapes_as_the_generic_decode_does() {
    for params in [
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"Hello"}}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_thought_chunk","messageId":"m1","content":{"type":"text","text":"hm"}}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"user_message_chunk","messageId":"m\u0031","content":{"type":"text","text":""}}}"#,
        r#" { "update" : { "content" : { "text" : "a\n\"b\" \u00e9" , "type" : "text" } , "messageId":"m", "sessionUpdate" : "agent_message_chunk" } , "sessionId" : "s\u0031" } "#,
        "{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"\u{e9}\",\"content\":{\"type\":\"text\",\"text\":\"\u{e9}\u{1f980}\"}}}",
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"running"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"requires_action"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle"}}"#,
        r#"{"sessionId":"s1","update":{"state":"idle","stopReason":"end_turn","sessionUpdate":"state_update"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","stopReason":"cancelled","state":"idle"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"max_tokens"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"max_turn_requests"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"refusal"}}"#,
    ] {
        let fast = decode(params).unwrap_or_else(|| panic!("not read: {params}"));
        assert_eq!(Some(fast), generic(params), "{params}");
    }
}

/// What our own v2 agent writes (the generated `Serialize`) is what the reader takes, so that
/// the fast path is the one a turn between our peers runs.
#[test]
fn reads_what_the_generated_serialize_writes() {
    let chunk = ContentChunk::new("m1", ContentBlock::from("Hello \"you\"\n"));
    for update in [
        SessionUpdate::AgentMessageChunk(chunk.clone()),
        SessionUpdate::AgentThoughtChunk(chunk.clone()),
        SessionUpdate::UserMessageChunk(chunk),
        SessionUpdate::StateUpdate(StateUpdate::Running(RunningStateUpdate::new())),
        SessionUpdate::StateUpdate(StateUpdate::RequiresAction(RequiresActionStateUpdate::new())),
        SessionUpdate::StateUpdate(StateUpdate::Idle(IdleStateUpdate::new(
            IdleStateUpdateKind::EndTurn,
        ))),
        SessionUpdate::StateUpdate(StateUpdate::Idle(IdleStateUpdate::new(
            IdleStateUpdateKindNone::new(),
        ))),
    ] {
        let notification = UpdateSessionNotification::new("s1", update);
        let params = serde_json::to_string(&notification).unwrap();
        assert_eq!(decode(&params), Some(notification), "{params}");
    }
}

#[test]
fn leaves_everything_else_to_the_generic_decode() {
    for params in [
        // Members the generic decode keeps, drops or reports.
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"x"}},"_meta":{}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"x"},"_meta":null}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"x","annotations":null}}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"running","background":[]}}"#,
        // A chunk without its messageId (v1's shape), members of the other shape.
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1","state":"idle","content":{"type":"text","text":"x"}}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","messageId":"m1"}}"#,
        // States and stop reasons it does not build, or that do not go together.
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"unknown"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"_paused"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"running","stopReason":"end_turn"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"error"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":null}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"_mine"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update"}}"#,
        // Repeated members, other tags and types, missing members.
        r#"{"sessionId":"s1","sessionId":"s2","update":{"sessionUpdate":"state_update","state":"idle"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","state":"running"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message","messageId":"m1","content":{"type":"text","text":"x"}}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"hologram","messageId":"m1"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"image","text":"x"}}}"#,
        r#"{"sessionId":"s1","update":{"messageId":"m1","content":{"type":"text","text":"x"}}}"#,
        r#"{"update":{"sessionUpdate":"state_update","state":"idle"}}"#,
        // Names and tags spelled with escapes (the generic decode reads them).
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_upd\u0061te","state":"idle"}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","st\u0061te":"idle"}}"#,
        // Values of other types, and input that is not JSON.
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":1,"content":{"type":"text","text":"x"}}}"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle"}} x"#,
        r#"{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle",}}"#,
        r#"{}"#,
        "null",
        "",
    ] {
        assert_eq!(decode(params), None, "{params}");
    }
}

fn ws() -> impl Strategy<Value = String> {
    prop_oneof![8 => Just(String::new()), 1 => "[ \t\r\n]{1,2}"]
}

/// A member of the shapes, or something near it: an unknown or escaped name now and then.
fn member(key: &'static str, value: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let key = prop_oneof![
        60 => Just(format!("{key:?}")),
        1 => Just(r#""_meta""#.to_owned()),
        1 => Just(r#""annotations""#.to_owned()),
        1 => Just(r#""m\u0065ssageId""#.to_owned()),
    ];
    (key, ws(), ws(), value)
        .prop_map(|(key, a, b, value)| format!("{key}{a}:{b}{value}"))
        .boxed()
}

/// A string among `plain`, or text with escapes and non-ASCII, or a value of another type.
fn string(plain: &'static [&'static str]) -> BoxedStrategy<String> {
    prop_oneof![
        40 => proptest::sample::select(plain).prop_map(|s| format!("{s:?}")),
        6 => r#""([a-z \u{e9}\u{1f980}]|\\[n"\\/t]|\\u00[2-7][0-9a-f]|\\ud83e\\udd80){0,6}""#,
        1 => Just("null".to_owned()),
        1 => Just("1".to_owned()),
        1 => Just("{}".to_owned()),
        1 => Just("\"a\u{1}\"".to_owned()),
    ]
    .boxed()
}

/// An object of `members` (any may be left out), in either order, now and then one repeated.
fn object(members: Vec<BoxedStrategy<String>>) -> BoxedStrategy<String> {
    let keep = vec![0.98; members.len()];
    object_keeping(members, keep)
}

/// [`object`], keeping each member with its own probability.
fn object_keeping(members: Vec<BoxedStrategy<String>>, keep: Vec<f64>) -> BoxedStrategy<String> {
    let keep: Vec<_> = keep.into_iter().map(proptest::bool::weighted).collect();
    (
        members,
        keep,
        any::<bool>(),
        proptest::bool::weighted(0.03),
        ws(),
    )
        .prop_map(|(members, keep, reverse, repeat, w)| {
            let mut members: Vec<String> = members
                .into_iter()
                .zip(keep)
                .filter_map(|(member, keep)| keep.then_some(member))
                .collect();
            if repeat && !members.is_empty() {
                members.push(members[0].clone());
            }
            if reverse {
                members.reverse();
            }
            format!("{{{w}{}{w}}}", members.join(","))
        })
        .boxed()
}

fn chunk_update() -> BoxedStrategy<String> {
    let content = object(vec![
        member("type", string(&["text", "text", "text", "image"])),
        member(
            "text",
            string(&["", "Hello", "two words", "\u{e9}t\u{e9} \u{1f980}"]),
        ),
    ]);
    object(vec![
        member(
            "sessionUpdate",
            string(&[
                "agent_message_chunk",
                "agent_message_chunk",
                "agent_thought_chunk",
                "user_message_chunk",
                "agent_message",
            ]),
        ),
        member("messageId", string(&["m1", "m2", "m3"])),
        member("content", content),
    ])
}

fn state_update() -> BoxedStrategy<String> {
    object_keeping(
        vec![
            member("sessionUpdate", string(&["state_update"])),
            member(
                "state",
                string(&["running", "requires_action", "idle", "idle", "unknown"]),
            ),
            member(
                "stopReason",
                string(&["end_turn", "cancelled", "refusal", "error", "none", "_mine"]),
            ),
        ],
        vec![0.98, 0.98, 0.4],
    )
}

fn params() -> BoxedStrategy<String> {
    let update = prop_oneof![3 => chunk_update(), 1 => state_update()];
    object(vec![
        member("sessionId", string(&["s1", "another session"])),
        member("update", update.boxed()),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Whatever the fast reader returns, the generic decode returns too; and it does read the
    /// plain shapes (checked above) rather than always saying no.
    #[test]
    fn never_decides_differently(params in params()) {
        if let Some(fast) = decode(&params) {
            prop_assert_eq!(Some(fast), generic(&params), "{}", params);
        }
    }

    /// A stream of updates, each decoded the way the client does (the fast reader, else the
    /// generic decode), leaves the same [`Conversation`] as the generic decode alone.
    #[test]
    fn a_stream_leaves_the_same_conversation(stream in proptest::collection::vec(params(), 0..24)) {
        let mut fast = Conversation::default();
        let mut full = Conversation::default();
        for params in &stream {
            if let Some(update) = decode(params).or_else(|| generic(params)) {
                fast.apply(&update.update);
            }
            if let Some(update) = generic(params) {
                full.apply(&update.update);
            }
        }
        prop_assert_eq!(fast.messages(), full.messages());
        prop_assert_eq!(fast.state(), full.state());
    }
}

/// The generators above do reach the fast reader: a good share of what they make is read by it,
/// so the two properties compare real decodes, not only the generic one with itself.
#[test]
fn the_generated_updates_often_take_the_fast_path() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = params();
    let fast = (0..1000)
        .filter(|_| decode(&strategy.new_tree(&mut runner).unwrap().current()).is_some())
        .count();
    assert!(
        fast > 100,
        "only {fast} of 1000 generated updates were read fast"
    );
}
