//! Every kind of generated value built the one way other crates can build it (`new` plus
//! `with_…` setters, since the types are `#[non_exhaustive]`), checked against its wire form
//! and decoded back. This file is a separate crate, so it compiles only if that way is complete:
//! no struct literal, and a wildcard arm wherever an enum is matched.

use acp_types::rpc::{Error, ErrorCode, RequestId};
use acp_types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt::Debug;

/// `value` encodes to `expected` and decodes back to itself.
fn wire<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: T, expected: Value) {
    let json = serde_json::to_value(&value).unwrap();
    assert_eq!(json, expected);
    let back: T = serde_json::from_value(json).unwrap();
    assert_eq!(back, value);
}

#[test]
fn structs_with_required_and_optional_fields() {
    let mut meta = Meta::new();
    meta.insert("trace".into(), json!("t1"));
    wire(
        InitializeRequest::new(ProtocolVersion::V1)
            .with_client_info(Implementation::new("editor", "1.0").with_title("Editor"))
            .with_meta(meta),
        json!({
            "protocolVersion": 1,
            "clientCapabilities": {
                "auth": {"terminal": false},
                "fs": {"readTextFile": false, "writeTextFile": false},
                "terminal": false,
            },
            "clientInfo": {"name": "editor", "version": "1.0", "title": "Editor"},
            "_meta": {"trace": "t1"},
        }),
    );
}

/// Fields whose schema default is the empty or false value start at it and are always sent
/// (which members exist depends on the schema: `unstable` adds some).
#[test]
fn fields_that_default_to_empty_or_false() {
    let auth = vec![AuthMethod::Agent(AuthMethodAgent::new("token", "Token"))];
    let response = InitializeResponse::new(ProtocolVersion::V1)
        .with_agent_capabilities(AgentCapabilities::new().with_load_session(true))
        .with_auth_methods(auth);
    let json = serde_json::to_value(&response).unwrap();
    assert_eq!(json["agentCapabilities"]["loadSession"], json!(true));
    assert_eq!(
        json["agentCapabilities"]["promptCapabilities"]["image"],
        json!(false)
    );
    assert_eq!(
        json["authMethods"],
        json!([{"id": "token", "name": "Token"}])
    );
    wire(response, json);
}

#[test]
fn patch_fields_set_and_clear() {
    wire(
        SessionInfoUpdate::new()
            .with_title("Refactor")
            .clear_updated_at(),
        json!({"title": "Refactor", "updatedAt": null}),
    );
}

#[test]
fn string_ids_compare_with_strings_both_ways() {
    let option = PermissionOptionId::new("allow");
    assert!(option == "allow");
    assert!(option == *"allow");
    assert!("allow" == option);
    assert!(*"allow" == option);
    assert!(option != "reject");
    let outcome = RequestPermissionOutcome::selected("allow");
    assert!(matches!(&outcome, RequestPermissionOutcome::Selected(s) if s.option_id == "allow"));
    // Equality with the id type itself is unchanged.
    assert_eq!(SessionId::new("s1"), SessionId::from("s1"));
}

#[test]
fn a_whole_tool_call_becomes_an_update_with_every_field() {
    let call = ToolCall::new("call_1", "Edit main.rs")
        .with_kind(ToolKind::Edit)
        .with_status(ToolCallStatus::Pending)
        .add_location("/src/main.rs")
        .add_content(ContentBlock::text("diff"));
    let update = ToolCallUpdate::from(&call);
    wire(
        update.clone(),
        json!({
            "toolCallId": "call_1",
            "title": "Edit main.rs",
            "kind": "edit",
            "status": "pending",
            "locations": [{"path": "/src/main.rs"}],
            "content": [{"type": "content", "content": {"type": "text", "text": "diff"}}],
        }),
    );
    assert_eq!(ToolCallUpdate::from(call), update);
}

#[test]
fn tool_calls_through_generated_and_hand_written_setters() {
    let call = ToolCall::new("call_1", "Edit main.rs")
        .with_kind(ToolKind::Edit)
        .with_status(ToolCallStatus::Pending)
        .with_raw_input(json!({"path": "/src/main.rs"}))
        .add_location("/src/main.rs")
        .add_content(ToolCallContent::Terminal(EmbeddedTerminal::new("term_1")));
    wire(
        SessionUpdate::from(call),
        json!({
            "sessionUpdate": "tool_call",
            "toolCallId": "call_1",
            "title": "Edit main.rs",
            "kind": "edit",
            "status": "pending",
            "rawInput": {"path": "/src/main.rs"},
            "locations": [{"path": "/src/main.rs"}],
            "content": [{"type": "terminal", "terminalId": "term_1"}],
        }),
    );
    wire(
        SessionUpdate::from(
            ToolCallUpdate::new("call_1")
                .with_status(ToolCallStatus::Completed)
                .with_title("Edited main.rs")
                .with_raw_output(json!({"ok": true})),
        ),
        json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "status": "completed",
            "title": "Edited main.rs",
            "rawOutput": {"ok": true},
        }),
    );
}

#[test]
fn tagged_and_untagged_unions() {
    let env = vec![EnvVariable::new("HOME", "/home/me")];
    let stdio = McpServerStdio::new("fs", "/bin/mcp-fs", vec!["--ro".to_owned()], env);
    wire(
        NewSessionRequest::new("/work", vec![McpServer::Stdio(stdio)]),
        json!({
            "cwd": "/work",
            "mcpServers": [{
                "name": "fs",
                "command": "/bin/mcp-fs",
                "args": ["--ro"],
                "env": [{"name": "HOME", "value": "/home/me"}],
            }],
        }),
    );
    wire(RequestId::from(7), json!(7));
    wire(RequestId::from("r1".to_owned()), json!("r1"));
}

#[test]
fn config_values_have_a_short_spelling() {
    wire(
        SetSessionConfigOptionRequest::new("s1", "model", "fast"),
        json!({"sessionId": "s1", "configId": "model", "value": "fast"}),
    );
    wire(
        SetSessionConfigOptionRequest::new("s1", "model", String::from("slow")),
        json!({"sessionId": "s1", "configId": "model", "value": "slow"}),
    );
    wire(
        SetSessionConfigOptionRequest::new("s1", "search", false),
        json!({"sessionId": "s1", "configId": "search", "type": "boolean", "value": false}),
    );
}

#[test]
fn rpc_envelope_types() {
    let mut error = Error::new(ErrorCode::ResourceNotFound, "no such session");
    error.data = Some(json!({"sessionId": "s9"}));
    wire(
        error,
        json!({"code": -32002, "message": "no such session", "data": {"sessionId": "s9"}}),
    );
}

#[test]
fn enums_match_with_a_wildcard_arm() {
    fn describe(update: &SessionUpdate) -> &'static str {
        match update {
            SessionUpdate::AgentMessageChunk(_) => "message",
            SessionUpdate::ToolCall(call) if call.kind == Some(ToolKind::Read) => "read",
            _ => "other",
        }
    }
    fn mark(status: &PlanEntryStatus) -> &'static str {
        match status {
            PlanEntryStatus::Completed => "[x]",
            _ => "[ ]",
        }
    }
    assert_eq!(
        describe(&SessionUpdate::agent_message_chunk("hi")),
        "message"
    );
    assert_eq!(
        describe(&ToolCall::new("c", "Read").with_kind(ToolKind::Read).into()),
        "read"
    );
    assert_eq!(mark(&PlanEntryStatus::from("someday")), "[ ]");
}
