//! Messages from newer peers decode instead of failing, and encode back unchanged; messages
//! that are wrong for a tag this version knows are still errors.

use acp_types::*;
use serde_json::{Value, json};

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(json: Value) -> T {
    let decoded: T = serde_json::from_value(json.clone()).expect("decodes");
    assert_eq!(
        serde_json::to_value(&decoded).unwrap(),
        json,
        "encodes back unchanged"
    );
    decoded
}

#[test]
fn unknown_session_update_is_kept_whole() {
    let update = json!({"sessionUpdate": "hologram", "depth": 3, "frames": [1, 2]});
    assert!(matches!(
        round_trip::<SessionUpdate>(update),
        SessionUpdate::Unknown(_)
    ));
}

#[test]
fn unknown_content_block_and_tool_call_content_are_kept() {
    let block = json!({"type": "video", "uri": "file:///a.mp4"});
    assert!(matches!(
        round_trip::<ContentBlock>(block),
        ContentBlock::Unknown(_)
    ));
    let content = json!({"type": "chart", "series": []});
    assert!(matches!(
        round_trip::<ToolCallContent>(content),
        ToolCallContent::Unknown(_)
    ));
}

#[test]
fn unknown_permission_outcome_is_kept() {
    let outcome = json!({"outcome": "deferred", "until": "later"});
    assert!(matches!(
        round_trip::<RequestPermissionOutcome>(outcome),
        RequestPermissionOutcome::Unknown(_)
    ));
}

#[test]
fn unknown_enum_values_are_kept() {
    assert_eq!(
        round_trip::<ToolKind>(json!("teleport")),
        ToolKind::Unknown("teleport".into())
    );
    assert_eq!(
        round_trip::<StopReason>(json!("nap")),
        StopReason::Unknown("nap".into())
    );
    assert_eq!(
        round_trip::<ToolCallStatus>(json!("paused")),
        ToolCallStatus::Unknown("paused".into())
    );
    assert_eq!(
        round_trip::<PermissionOptionKind>(json!("ask_later")),
        PermissionOptionKind::Unknown("ask_later".into())
    );
    assert_eq!(
        round_trip::<PlanEntryStatus>(json!("blocked")),
        PlanEntryStatus::Unknown("blocked".into())
    );
    // Open in the schema itself: the schema's own catch-all name.
    assert_eq!(
        round_trip::<SessionConfigOptionCategory>(json!("_vendor_thing")),
        SessionConfigOptionCategory::Other("_vendor_thing".into())
    );
    // `other` is a real ToolKind; unknown values do not collide with it.
    assert_eq!(round_trip::<ToolKind>(json!("other")), ToolKind::Other);
}

#[test]
fn error_codes_are_an_open_enum() {
    use acp_types::rpc::ErrorCode;
    assert_eq!(
        round_trip::<ErrorCode>(json!(-32000)),
        ErrorCode::AuthenticationRequired
    );
    assert_eq!(
        round_trip::<ErrorCode>(json!(-32002)),
        ErrorCode::ResourceNotFound
    );
    assert_eq!(
        round_trip::<ErrorCode>(json!(-32800)),
        ErrorCode::RequestCancelled
    );
    assert_eq!(
        round_trip::<ErrorCode>(json!(-31999)),
        ErrorCode::Other(-31999)
    );
}

#[test]
fn known_tag_with_bad_payload_is_an_error() {
    let error = serde_json::from_value::<SessionUpdate>(
        json!({"sessionUpdate": "agent_message_chunk", "content": 5}),
    )
    .unwrap_err();
    assert!(error.to_string().contains("invalid type"), "{error}");
    let error = serde_json::from_value::<ContentBlock>(json!({"type": "text"})).unwrap_err();
    assert!(
        error.to_string().contains("missing field `text`"),
        "{error}"
    );
}

#[test]
fn tag_may_come_anywhere_in_the_object() {
    let update: SessionUpdate = serde_json::from_str(
        r#"{"content":{"text":"hi","type":"text"},"sessionUpdate":"agent_message_chunk"}"#,
    )
    .unwrap();
    let SessionUpdate::AgentMessageChunk(chunk) = update else {
        panic!("wrong variant")
    };
    assert_eq!(chunk.content, ContentBlock::Text(TextContent::new("hi")));
}

#[test]
fn missing_tag_is_an_error_naming_the_tag() {
    let error =
        serde_json::from_value::<SessionUpdate>(json!({"content": {"type": "text", "text": "x"}}))
            .unwrap_err();
    assert_eq!(
        error.to_string(),
        "missing field `sessionUpdate` in SessionUpdate"
    );
}

#[test]
fn untagged_arms_are_the_default() {
    let stdio = json!({"name": "fs", "command": "/bin/mcp", "args": [], "env": []});
    assert!(matches!(
        round_trip::<McpServer>(stdio),
        McpServer::Stdio(_)
    ));
    // A newer transport is not mistaken for stdio.
    let future = json!({"type": "websocket", "name": "x", "url": "ws://x"});
    assert!(matches!(
        round_trip::<McpServer>(future),
        McpServer::Unknown(_)
    ));
    // The default arm's own name as a tag means that arm.
    let explicit: McpServer = serde_json::from_value(
        json!({"type": "stdio", "name": "fs", "command": "c", "args": [], "env": []}),
    )
    .unwrap();
    assert!(matches!(explicit, McpServer::Stdio(_)));
    let agent = json!({"id": "oauth", "name": "Log in"});
    assert!(matches!(
        round_trip::<AuthMethod>(agent),
        AuthMethod::Agent(_)
    ));
}

#[test]
fn unknown_members_are_ignored_and_unknown_methods_refused() {
    let chunk: ContentChunk = serde_json::from_value(
        json!({"content": {"type": "text", "text": "x"}, "futureMember": true}),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(&chunk).unwrap(),
        json!({"content": {"type": "text", "text": "x"}})
    );
    assert_eq!(
        ClientRequest::decode("session/teleport", None).unwrap_err(),
        DecodeError::UnknownMethod("session/teleport".into())
    );
    let call = ClientRequest::decode("_vendor/ping", None).unwrap();
    assert!(matches!(call, ClientRequest::Extension(ref c) if c.method == "_vendor/ping"));
}

#[test]
fn lenient_fields_drop_bad_values_and_say_so() {
    let (update, dropped) = de::collect_dropped(|| {
        serde_json::from_value::<ToolCallUpdate>(json!({
            "toolCallId": "t1",
            "status": 17,
            "content": [{"type": "diff", "path": "/a", "newText": "x"}, {"type": "diff"}],
        }))
    });
    let update = update.unwrap();
    assert_eq!(update.status, None);
    assert_eq!(update.content.unwrap().len(), 1);
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    let values: Vec<&Value> = dropped.iter().map(|d| &d.value).collect();
    assert!(
        values.contains(&&json!(17)) && values.contains(&&json!({"type": "diff"})),
        "{values:?}"
    );
}

#[test]
fn absent_and_null_are_distinct_where_null_clears() {
    let unchanged: SessionInfoUpdate = serde_json::from_value(json!({})).unwrap();
    let cleared: SessionInfoUpdate = serde_json::from_value(json!({"title": null})).unwrap();
    let set: SessionInfoUpdate = serde_json::from_value(json!({"title": "T"})).unwrap();
    assert_eq!(unchanged.title, Patch::Unchanged);
    assert_eq!(cleared.title, Patch::Clear);
    assert_eq!(set.title, Patch::Set("T".into()));
    assert_eq!(
        serde_json::to_value(&cleared).unwrap(),
        json!({"title": null})
    );
    assert_eq!(serde_json::to_value(&unchanged).unwrap(), json!({}));
}

#[test]
fn meta_is_kept_verbatim() {
    let meta = json!({"zed.dev/trace": {"id": [1, 2, {"x": null}]}, "b": "c"});
    let block = json!({"type": "text", "text": "x", "_meta": meta});
    let decoded: ContentBlock = round_trip(block);
    let ContentBlock::Text(text) = decoded else {
        panic!()
    };
    assert_eq!(Value::Object(*text.meta.unwrap()), meta);
}
