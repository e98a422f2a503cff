//! The normalizer keeps references consistent while it replaces what varies.

use acp_test::{Direction, Entry, Normalizer, Transcript};
use serde_json::{Value, json};

const C2A: Direction = Direction::ClientToAgent;
const A2C: Direction = Direction::AgentToClient;

fn transcript(entries: Vec<(Direction, Value)>) -> Transcript {
    entries
        .into_iter()
        .map(|(dir, msg)| Entry::new(dir, msg))
        .collect()
}

#[test]
fn ids_are_numbered_per_direction_and_answers_keep_them() {
    let raw = transcript(vec![
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 17, "method": "session/prompt", "params": {"sessionId": "sess_a1b2c3"}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": "perm-9", "method": "session/request_permission", "params": {"sessionId": "sess_a1b2c3"}}),
        ),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 18, "method": "_ext/ping", "params": {}}),
        ),
        (
            C2A,
            json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 18}}),
        ),
        (C2A, json!({"jsonrpc": "2.0", "id": "perm-9", "result": {}})),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 18, "error": {"code": -32800, "message": "Request cancelled"}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 17, "result": {"stopReason": "end_turn"}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}),
        ),
    ]);
    let ids: Vec<String> = Normalizer::new()
        .normalize(&raw)
        .iter()
        .map(|e| {
            let id = e
                .msg
                .get("id")
                .or_else(|| e.msg.pointer("/params/requestId"));
            format!("{} {}", e.dir.as_str(), id.unwrap())
        })
        .collect();
    assert_eq!(
        ids,
        [
            r#"client->agent "<id:1>""#,
            r#"agent->client "<id:1>""#,
            r#"client->agent "<id:2>""#,
            r#"client->agent "<id:2>""#,
            r#"client->agent "<id:1>""#,
            r#"agent->client "<id:2>""#,
            r#"agent->client "<id:1>""#,
            "agent->client null",
        ]
    );
}

#[test]
fn sessions_terminals_and_tool_calls_map_consistently() {
    let raw = transcript(vec![
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"sessionId": "sess_9f8e7d"}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "sess_0a0b0c"}}),
        ),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"terminalId": "term-42"}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess_0a0b0c",
            "update": {"sessionUpdate": "tool_call", "toolCallId": "toolu_01XyZ",
                "content": [{"type": "terminal", "terminalId": "term-42"}]}}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32002,
            "message": "Unknown session `sess_9f8e7d` (not sess_9f8e7d0)", "data": {"sessionId": "sess_9f8e7d"}}}),
        ),
    ]);
    let normalized = Normalizer::new().normalize(&raw);
    let e = normalized.entries();
    assert_eq!(e[0].msg["result"]["sessionId"], "<session:1>");
    assert_eq!(e[1].msg["result"]["sessionId"], "<session:2>");
    assert_eq!(e[2].msg["result"]["terminalId"], "<terminal:1>");
    assert_eq!(e[3].msg["params"]["sessionId"], "<session:2>");
    assert_eq!(e[3].msg["params"]["update"]["toolCallId"], "<tool-call:1>");
    assert_eq!(
        e[3].msg["params"]["update"]["content"][0]["terminalId"],
        "<terminal:1>"
    );
    assert_eq!(
        e[4].msg["error"]["message"],
        "Unknown session `<session:1>` (not sess_9f8e7d0)"
    );

    let kept = Normalizer::new()
        .tool_call_ids(false)
        .session_ids(false)
        .normalize(&raw);
    assert_eq!(
        kept.entries()[3].msg["params"]["update"]["toolCallId"],
        "toolu_01XyZ"
    );
    assert_eq!(kept.entries()[3].msg["params"]["sessionId"], "sess_0a0b0c");
}

#[test]
fn a_subagents_sessions_map_like_any_other() {
    // The child session is announced by id, embedded in a tool call, and named as the
    // sender of a message: one placeholder everywhere.
    let update = |update: Value| {
        (
            A2C,
            json!({"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "sess_parent1", "update": update}}),
        )
    };
    let raw = transcript(vec![
        update(json!({"sessionUpdate": "subagent_update", "sessionId": "sess_child22"})),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Delegate",
            "content": [{"type": "session", "sessionId": "sess_child22"}]}),
        ),
        update(
            json!({"sessionUpdate": "session_message", "messageId": "m1",
            "senderSessionId": "sess_child22", "recipientSessionId": "sess_parent1"}),
        ),
    ]);
    let normalized = Normalizer::new().normalize(&raw);
    let updates: Vec<&Value> = normalized
        .entries()
        .iter()
        .map(|e| &e.msg["params"]["update"])
        .collect();
    assert_eq!(updates[0]["sessionId"], "<session:2>");
    assert_eq!(updates[1]["content"][0]["sessionId"], "<session:2>");
    assert_eq!(updates[2]["senderSessionId"], "<session:2>");
    assert_eq!(updates[2]["recipientSessionId"], "<session:1>");
}

#[test]
fn paths_timestamps_and_versions() {
    let raw = transcript(vec![
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": 1, "clientInfo": {"name": "zed", "version": "0.190.3"}}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "session_info_update", "updatedAt": "2025-06-01T08:30:00.123Z",
                "title": "Work in /tmp/acp-x1/src and /tmp/acp-x10",
                "uri": "file:///tmp/acp-x1/src/main.rs"}}}),
        ),
    ]);
    let normalized = Normalizer::new()
        .temp_dir("/tmp/acp-x1")
        .path("/tmp/acp-x1/src", "<src>")
        .normalize(&raw);
    let e = normalized.entries();
    assert_eq!(e[0].msg["params"]["clientInfo"]["version"], "<version>");
    assert_eq!(e[0].msg["params"]["clientInfo"]["name"], "zed");
    let update = &e[1].msg["params"]["update"];
    assert_eq!(update["updatedAt"], "<timestamp>");
    assert_eq!(update["title"], "Work in <src> and /tmp/acp-x10");
    assert_eq!(update["uri"], "file://<src>/main.rs");

    let raw_again = Normalizer::none().normalize(&raw);
    assert_eq!(raw_again, raw);
}

#[test]
fn normalizing_twice_changes_nothing() {
    let fixture = Transcript::load(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/transcripts/terminal.jsonl"),
    )
    .unwrap();
    let once = Normalizer::new().normalize(&fixture);
    assert_eq!(Normalizer::new().normalize(&once), once);
}

#[test]
fn json_lines_round_trip() {
    let raw = transcript(vec![
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        ),
        (A2C, Value::String("a stray log line".into())),
    ]);
    let text = raw.to_jsonl();
    assert_eq!(
        text,
        "{\"dir\":\"client->agent\",\"msg\":{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}}\n\
         {\"dir\":\"agent->client\",\"msg\":\"a stray log line\"}\n"
    );
    assert_eq!(Transcript::parse(&text).unwrap(), raw);
    let error = Transcript::parse("{\"dir\":\"sideways\",\"msg\":{}}").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("line 1: unknown variant `sideways`"),
        "{error}"
    );
}
