//! Protocol v2 on the wire (feature `unstable-protocol-v2`): examples of the messages v2
//! changed, from upstream's migration guide and the schema's descriptions, decode to the
//! values pinned here and encode back byte for byte; the upserts keep absent, `null` and a
//! value apart.
#![cfg(feature = "unstable-protocol-v2")]

use acp_types::Patch;
use acp_types::v2::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The snapshot's name: the unstable v2 superset has more fields, so its values print
/// differently.
fn snapshot(name: &str) -> String {
    match cfg!(feature = "unstable") {
        true => format!("{name}_unstable"),
        false => name.to_owned(),
    }
}

/// Decodes `json` as `T`, checks that it encodes back to the same JSON value, and returns it.
fn round_trip<T: DeserializeOwned + Serialize + std::fmt::Debug>(json: &str) -> T {
    let value: T = serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"));
    let back = serde_json::to_value(&value).unwrap();
    let sent: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(back, sent, "{value:?} does not encode back");
    value
}

#[test]
fn initialize_carries_info_and_object_capabilities() {
    let request: InitializeRequest = round_trip(
        r#"{"protocolVersion":2,"info":{"name":"my-client","title":"My Client","version":"1.0.0"},
            "capabilities":{}}"#,
    );
    assert_eq!(request.protocol_version, ProtocolVersion::V2);
    insta::assert_debug_snapshot!(snapshot("initialize_request"), request);

    let response: InitializeResponse = round_trip(
        r#"{"protocolVersion":2,"info":{"name":"my-agent","title":"My Agent","version":"0.3.0"},
            "capabilities":{"session":{"prompt":{"image":{},"embeddedContext":{}},
            "mcp":{"stdio":{},"http":{}},"delete":{},"additionalDirectories":{}}},
            "authMethods":[]}"#,
    );
    insta::assert_debug_snapshot!(snapshot("initialize_response"), response);
}

#[test]
fn a_prompt_with_an_idempotency_key_is_accepted_with_a_message_id() {
    let request: PromptRequest = round_trip(
        r#"{"sessionId":"sess_abc123","prompt":[{"type":"text","text":"Can you analyze this code?"}],
            "idempotencyKey":"5d1c1f0e-retry-1"}"#,
    );
    assert_eq!(
        request.idempotency_key.as_ref().map(|k| k.0.as_str()),
        Some("5d1c1f0e-retry-1")
    );
    insta::assert_debug_snapshot!(snapshot("prompt_request"), request);
    let response: PromptResponse = round_trip(r#"{"messageId":"msg_user_8f7a1"}"#);
    assert_eq!(response.message_id.0, "msg_user_8f7a1");
}

#[test]
fn state_updates_end_the_turn() {
    let idle: UpdateSessionNotification = round_trip(
        r#"{"sessionId":"sess_abc123","update":{"sessionUpdate":"state_update","state":"idle",
            "stopReason":"end_turn"}}"#,
    );
    let running: UpdateSessionNotification = round_trip(
        r#"{"sessionId":"sess_abc123","update":{"sessionUpdate":"state_update","state":"running"}}"#,
    );
    let waiting: UpdateSessionNotification = round_trip(
        r#"{"sessionId":"sess_abc123","update":{"sessionUpdate":"state_update",
            "state":"requires_action"}}"#,
    );
    insta::assert_debug_snapshot!(snapshot("state_updates"), [idle, running, waiting]);
}

#[test]
fn upserts_keep_absent_null_and_value_apart() {
    let tool_call: UpdateSessionNotification = round_trip(
        r#"{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_001",
            "title":null,"kind":"read","content":null,"rawInput":null}}"#,
    );
    let SessionUpdate::ToolCallUpdate(update) = &tool_call.update else {
        panic!("{tool_call:?}")
    };
    assert_eq!(update.title, Patch::Clear);
    assert_eq!(update.kind, Patch::Set(ToolKind::Read));
    assert_eq!(update.status, Patch::Unchanged);
    assert_eq!(update.content, Patch::Clear);
    assert_eq!(update.raw_input, Patch::Clear);
    assert_eq!(update.raw_output, Patch::Unchanged);

    let message: UpdateSessionNotification = round_trip(
        r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message","messageId":"m1",
            "content":null}}"#,
    );
    let terminal: UpdateSessionNotification = round_trip(
        r#"{"sessionId":"s1","update":{"sessionUpdate":"terminal_update","terminalId":"term_001",
            "command":"cargo test","cwd":"/workspace/project",
            "output":{"data":"cnVubmluZyAxMjMgdGVzdHMNCg=="},
            "exitStatus":{"exitCode":0}}}"#,
    );
    let chunk: UpdateSessionNotification = round_trip(
        r#"{"sessionId":"s1","update":{"sessionUpdate":"terminal_output_chunk",
            "terminalId":"term_001","data":"8J+Y"}}"#,
    );
    insta::assert_debug_snapshot!(snapshot("upserts"), [tool_call, message, terminal, chunk]);
}

#[test]
fn an_unsupported_version_is_answered_with_typed_data() {
    let data: UnsupportedProtocolVersionErrorData =
        round_trip(r#"{"requested":3,"supported":[1,2]}"#);
    assert_eq!(data.supported, [ProtocolVersion::V1, ProtocolVersion::V2]);
    let error: rpc::Error = round_trip(
        r#"{"code":-32022,"message":"Unsupported protocol version",
            "data":{"requested":3,"supported":[1,2]}}"#,
    );
    assert_eq!(error.code.code(), UNSUPPORTED_PROTOCOL_VERSION);
    assert!(matches!(
        error.data,
        Some(ErrorData::UnsupportedProtocolVersion(ref d)) if *d == data
    ));
}

#[test]
fn the_method_tables_name_v2_s_methods() {
    let names: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
    for added in [
        "auth/login",
        "auth/logout",
        "tool_call/cancel",
        "terminal/cancel",
    ] {
        assert!(names.contains(&added), "{added}: {names:?}");
    }
    for gone in [
        "authenticate",
        "session/load",
        "session/set_mode",
        "fs/read_text_file",
        "terminal/create",
    ] {
        assert!(!names.contains(&gone), "{gone}");
    }
    let params =
        serde_json::value::RawValue::from_string(r#"{"methodId":"agent-login"}"#.into()).unwrap();
    assert!(matches!(
        ClientRequest::decode("auth/login", Some(&params)),
        Ok(ClientRequest::AuthLogin(_))
    ));
}
