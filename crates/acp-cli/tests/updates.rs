//! How `acp` shows each update kind of schema 1.20 (plan operations, subagents, session
//! messages, the agent's commands, notices, usage, session info and config options; with the `unstable` feature prompt suggestions, cursors and
//! the turn's token usage): acp-test's scripted agent, served in this process, plays a turn
//! of them; the text rendering is pinned with insta and `--json` must give back each update
//! as the agent sent it.
#![cfg(unix)]

mod common;

use std::process::Output;

use acp_test::{ScriptedAgent, Step};
use common::server::acp_against;
use common::{scratch, succeeded, text};
use serde_json::{Value, json};

/// The scripted agent's session id (its first).
const SESSION: &str = "session-1";

/// A turn of these updates, each given as its wire JSON.
fn scripted(updates: &[Value]) -> ScriptedAgent {
    let steps: Vec<Step> = updates
        .iter()
        .map(|u| Step::update(serde_json::from_value(u.clone()).expect("a valid update")))
        .collect();
    ScriptedAgent::new().turn(steps)
}

/// The updates of a `--json` run (one line each, the session's id beside the update), without
/// the turn's end.
fn json_updates(out: &Output) -> Vec<Value> {
    let stdout = succeeded(out);
    stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| v.get("stopReason").is_none())
        .map(|v| {
            assert_eq!(v["sessionId"], SESSION, "{v}");
            v["update"].clone()
        })
        .collect()
}

fn command(n: usize) -> Value {
    json!({
        "name": format!("command-{n:02}"),
        "description": format!("What command {n} does, told at a length no terminal line holds: {}", "and more ".repeat(8)),
    })
}

/// Plans (the old `plan`, item and markdown `plan_update`, `plan_removed`), a subagent in
/// each state, the tool call that started it (session content), messages between the
/// sessions (upserts and chunks), and the agent's commands (a long list, then the same).
fn stable_updates() -> Vec<Value> {
    let commands: Vec<Value> = (1..=23).map(command).collect();
    vec![
        json!({"sessionUpdate": "plan", "entries": [
            {"content": "Read the notes", "priority": "high", "status": "completed"},
            {"content": "Summarize them", "priority": "medium", "status": "in_progress"},
        ]}),
        json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p1", "entries": [
            {"content": "Ask a subagent", "priority": "high", "status": "in_progress"},
            {"content": "Write summary.txt", "priority": "low", "status": "pending"},
        ]}}),
        json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p2",
            "path": "PLAN.md", "content": "# Plan\n1. read\n2. write"}}),
        json!({"sessionUpdate": "subagent_update", "sessionId": "child-1", "title": "Research",
            "description": "Reads the docs", "state": {"state": "running"}}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "spawn", "title": "Start a subagent",
            "kind": "other", "status": "in_progress",
            "content": [{"type": "session", "sessionId": "child-1"}]}),
        json!({"sessionUpdate": "session_message", "messageId": "m1", "senderSessionId": SESSION,
            "recipientSessionId": "child-1",
            "content": [{"type": "text", "text": "Find the limits."}]}),
        json!({"sessionUpdate": "session_message", "messageId": "m2", "senderSessionId": "child-1",
            "recipientSessionId": SESSION}),
        json!({"sessionUpdate": "session_message_chunk", "messageId": "m2",
            "content": {"type": "text", "text": "Found "}}),
        json!({"sessionUpdate": "session_message_chunk", "messageId": "m2",
            "content": {"type": "text", "text": "three."}}),
        json!({"sessionUpdate": "subagent_update", "sessionId": "child-1",
            "state": {"state": "requires_action"}}),
        json!({"sessionUpdate": "subagent_update", "sessionId": "child-1", "description": null,
            "state": {"state": "idle", "stopReason": "end_turn"}}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "spawn", "status": "completed"}),
        json!({"sessionUpdate": "plan_removed", "planId": "p2"}),
        json!({"sessionUpdate": "available_commands_update", "availableCommands": commands}),
        json!({"sessionUpdate": "available_commands_update", "availableCommands": commands}),
        json!({"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "help", "description": "Show help"}]}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}}),
    ]
}

#[test]
fn plans_subagents_messages_and_commands_are_rendered() {
    let out = acp_against(scripted(&stable_updates()), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    insta::assert_snapshot!(stdout);
}

/// `--json`: every update, whatever its kind, is one line equal to what the agent sent.
#[test]
fn json_carries_every_new_update_as_sent() {
    let updates = stable_updates();
    let out = acp_against(scripted(&updates), &["--json"]);
    assert_eq!(json_updates(&out), updates);
}

/// Notices of each severity, the context window, the session's title and config options.
fn session_state_updates() -> Vec<Value> {
    vec![
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Working."}}),
        json!({"sessionUpdate": "notice", "severity": "warning", "title": "Rate limited",
            "description": "Retrying in 5 s.\nThe provider asked to slow down."}),
        json!({"sessionUpdate": "notice", "severity": "info", "title": "Indexed 120 files"}),
        json!({"sessionUpdate": "notice", "severity": "error", "title": "Provider unreachable"}),
        json!({"sessionUpdate": "usage_update", "used": 53000, "size": 200000,
            "cost": {"amount": 0.42, "currency": "USD"}}),
        json!({"sessionUpdate": "session_info_update", "title": "Summarize the notes",
            "updatedAt": "2026-11-28T15:00:00Z"}),
        json!({"sessionUpdate": "session_info_update", "title": null}),
        json!({"sessionUpdate": "config_option_update", "configOptions": [
            {"id": "model", "name": "Model", "type": "select", "category": "model",
             "currentValue": "sonnet", "options": [
                {"value": "opus", "name": "Claude Opus"}, {"value": "sonnet", "name": "Claude Sonnet"}]},
            {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": false}]}),
    ]
}

#[test]
fn notices_usage_session_info_and_config_options_are_in_plain_words() {
    let out = acp_against(scripted(&session_state_updates()), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn json_carries_notices_usage_session_info_and_config_options_as_sent() {
    let updates = session_state_updates();
    let out = acp_against(scripted(&updates), &["--json"]);
    assert_eq!(json_updates(&out), updates);
}

/// acp advertises `plan` and `subagents`, so that agents send the new forms.
#[test]
fn plan_and_subagents_are_advertised() {
    let dir = scratch("caps");
    let trace = dir.join("wire.jsonl");
    let out = acp_against(
        ScriptedAgent::new(),
        &["--json", "--trace", trace.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first = std::fs::read_to_string(&trace).unwrap();
    let first: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let caps = &first["msg"]["params"]["clientCapabilities"];
    assert_eq!(first["msg"]["method"], "initialize");
    assert_eq!(caps["plan"], json!({}), "{caps}");
    assert_eq!(caps["subagents"], json!({}), "{caps}");
    if cfg!(feature = "unstable") {
        assert_eq!(caps["session"]["promptSuggestions"], json!({}), "{caps}");
        assert_eq!(caps["session"]["cursors"], json!({}), "{caps}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "unstable")]
mod unstable {
    use super::*;
    use acp_runtime::agent::{Agent, ClientHandle, Turn};
    use acp_types::*;

    /// The scripted agent, whose turns end with a token usage.
    #[derive(Clone)]
    struct WithUsage(ScriptedAgent);

    impl Agent for WithUsage {
        async fn initialize(
            &self,
            request: InitializeRequest,
            client: &ClientHandle,
        ) -> acp_runtime::Result<InitializeResponse> {
            self.0.initialize(request, client).await
        }

        async fn new_session(
            &self,
            request: NewSessionRequest,
            client: &ClientHandle,
        ) -> acp_runtime::Result<NewSessionResponse> {
            self.0.new_session(request, client).await
        }

        async fn prompt(
            &self,
            request: PromptRequest,
            turn: Turn,
        ) -> acp_runtime::Result<PromptResponse> {
            let mut response = self.0.prompt(request, turn).await?;
            response.usage = Some(
                serde_json::from_value(json!({"totalTokens": 1250, "inputTokens": 1000,
                    "outputTokens": 200, "thoughtTokens": 50, "cachedReadTokens": 800}))
                .unwrap(),
            );
            Ok(response)
        }
    }

    /// Prompt suggestions (replaced, then cleared) and cursors (anchored once, then only
    /// their capabilities).
    fn unstable_updates() -> Vec<Value> {
        vec![
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Here."}}),
            json!({"sessionUpdate": "cursor_update", "cursorId": "c1",
                "anchor": {"type": "agent_message", "messageId": "msg-7", "position": "after"},
                "capabilities": {"fork": {}}}),
            json!({"sessionUpdate": "cursor_update", "cursorId": "c2",
                "anchor": {"type": "tool_call", "toolCallId": "spawn", "position": "before"}}),
            json!({"sessionUpdate": "cursor_update", "cursorId": "c1", "capabilities": null}),
            json!({"sessionUpdate": "prompt_suggestions_update", "suggestions": [
                {"prompt": [{"type": "text", "text": "Write the summary"}]},
                {"prompt": [{"type": "text", "text": "Explain step 2"}, {"type": "text", "text": "briefly"}]},
            ]}),
            json!({"sessionUpdate": "prompt_suggestions_update", "suggestions": []}),
        ]
    }

    #[test]
    fn suggestions_cursors_and_usage_are_rendered() {
        let out = acp_against(WithUsage(scripted(&unstable_updates())), &[]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        insta::assert_snapshot!(stdout);
    }

    #[test]
    fn json_carries_suggestions_cursors_and_usage() {
        let updates = unstable_updates();
        let out = acp_against(WithUsage(scripted(&updates)), &["--json"]);
        assert_eq!(json_updates(&out), updates);
        let end: Value = serde_json::from_str(text(&out.stdout).lines().last().unwrap()).unwrap();
        assert_eq!(
            end,
            json!({"stopReason": "end_turn", "usage": {"totalTokens": 1250, "inputTokens": 1000,
                "outputTokens": 200, "thoughtTokens": 50, "cachedReadTokens": 800}})
        );
    }
}
