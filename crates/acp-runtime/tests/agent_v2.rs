//! The v2 agent side (feature `unstable-protocol-v2`) over real pipes, line by line, with the
//! exact lines pinned (insta; agent-made message ids shown as `msg-1`, `msg-2`, ... in order
//! of first appearance): acceptance and the `user_message` echo, the `state_update` machine,
//! prompts held during a turn, idempotent retries, cancel and close ending `idle cancelled`,
//! resume with replay, entity cancels, `null` ids.
#![cfg(feature = "unstable-protocol-v2")]

mod common;

use acp_runtime::Result;
use acp_runtime::acp_types::v2 as wire;
use acp_runtime::agent::v2::{self, History, Turn};
use acp_runtime::prelude::AgentOptions;
use common::pipes::PipePeer;
use futures_lite::future;

/// A scripted agent: the prompt's first text says what the turn does.
#[derive(Default)]
struct Scripted {
    history: Option<History>,
}

impl v2::Agent for Scripted {
    fn history(&self) -> Option<&History> {
        self.history.as_ref()
    }

    async fn new_session(
        &self,
        _: wire::NewSessionRequest,
        _: &v2::Client,
    ) -> Result<wire::NewSessionResponse> {
        Ok(wire::NewSessionResponse::new("s1"))
    }

    async fn prompt(
        &self,
        request: wire::PromptRequest,
        turn: Turn,
    ) -> Result<wire::IdleStateUpdateKind> {
        let text = match request.prompt.first() {
            Some(wire::ContentBlock::Text(text)) => text.text.clone(),
            _ => String::new(),
        };
        match text.as_str() {
            "hello" => {
                turn.think("greeting").await?;
                turn.say("hi ").await?;
                turn.say("there").await?;
                turn.tool_call(
                    wire::ToolCallUpdate::new("call-1")
                        .with_title("Look")
                        .with_status(wire::ToolCallStatus::Completed),
                )
                .await?;
                Ok(wire::IdleStateUpdateKind::EndTurn)
            }
            "ask" => {
                let request = wire::RequestPermissionRequest::new(
                    turn.session().id().clone(),
                    "Run it?",
                    vec![wire::PermissionOption::new(
                        "ok",
                        "Allow",
                        wire::PermissionOptionKind::AllowOnce,
                    )],
                );
                let outcome = turn.request_permission(request).await?;
                let said = match outcome {
                    wire::RequestPermissionOutcome::Selected(_) => "allowed",
                    _ => "not allowed",
                };
                turn.say(said).await?;
                Ok(wire::IdleStateUpdateKind::EndTurn)
            }
            "wait" => {
                turn.cancelled().await;
                turn.say("stopping").await?;
                // Whatever it returns, a cancelled turn ends `cancelled`.
                Ok(wire::IdleStateUpdateKind::EndTurn)
            }
            "fail" => Err(acp_runtime::Error::internal("the model is down")),
            _ => Ok(wire::IdleStateUpdateKind::MaxTokens),
        }
    }
}

/// One client connection to a v2 agent served over real pipes.
fn connect(agent: Scripted) -> PipePeer {
    PipePeer::new(move |reader, writer| {
        let (_client, driver) = v2::serve(agent, reader, writer, AgentOptions::default());
        let _ = future::block_on(driver);
    })
}

/// An initialized peer with session `s1`.
fn ready(agent: Scripted) -> PipePeer {
    let mut peer = connect(agent);
    peer.send(INIT);
    peer.read();
    peer.send(NEW);
    peer.read();
    peer
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ed","version":"1"},"capabilities":{}}}"#;
const NEW: &str = r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/work"}}"#;

fn prompt(id: u32, text: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s1","prompt":[{{"type":"text","text":"{text}"}}]}}}}"#
    )
}

fn keyed_prompt(id: u32, text: &str, key: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s1","prompt":[{{"type":"text","text":"{text}"}}],"idempotencyKey":"{key}"}}}}"#
    )
}

const CANCEL: &str = r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#;

#[test]
fn initialize_answers_version_2_with_info_and_capabilities() {
    let mut peer = connect(Scripted::default());
    peer.send(INIT);
    let answer = peer.read().replace(env!("CARGO_PKG_VERSION"), "[version]");
    insta::assert_snapshot!(answer);
}

#[test]
fn a_prompt_is_accepted_echoed_and_framed_by_running_and_idle() {
    let mut peer = ready(Scripted::default());
    peer.send(&prompt(3, "hello"));
    let lines = peer.read_until(r#""state":"idle""#);
    insta::assert_snapshot!(lines.join("\n"));
    // The answer names the echoed user message; the agent's chunks share one other id.
    assert!(
        lines[0].contains(r#""id":3,"result":{"messageId":"msg-1"}"#),
        "{lines:?}"
    );
    assert!(lines[1].contains(r#""sessionUpdate":"user_message","messageId":"msg-1""#));
}

#[test]
fn a_prompt_during_a_turn_waits_for_it_and_requires_action_is_reported() {
    let mut peer = ready(Scripted::default());
    peer.send(&prompt(3, "ask"));
    let mut lines = peer.read_until(r#""state":"requires_action""#);
    // Sent while the first turn waits on the client: held, not answered yet.
    peer.send(&prompt(4, "other"));
    let asked = lines
        .iter()
        .find(|line| line.contains("session/request_permission"))
        .expect("a permission request")
        .clone();
    let asked: serde_json::Value = serde_json::from_str(&asked).unwrap();
    peer.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"outcome":{{"outcome":"selected","optionId":"ok"}}}}}}"#,
        asked["id"]
    ));
    lines.extend(peer.read_until(r#""stopReason":"end_turn""#));
    lines.extend(peer.read_until(r#""stopReason":"max_tokens""#));
    insta::assert_snapshot!(lines.join("\n"));
    let first_idle = lines.iter().position(|l| l.contains("end_turn")).unwrap();
    let second_answer = lines.iter().position(|l| l.contains(r#""id":4,"#)).unwrap();
    assert!(first_idle < second_answer, "{lines:#?}");
}

#[test]
fn a_retry_with_the_same_idempotency_key_gets_the_first_answer_and_runs_nothing() {
    let mut peer = ready(Scripted::default());
    peer.send(&keyed_prompt(3, "other", "k1"));
    let mut lines = peer.read_until(r#""state":"idle""#);
    peer.send(&keyed_prompt(4, "other", "k1"));
    peer.send(&keyed_prompt(5, "other", "k2"));
    lines.extend(peer.read_until(r#""state":"idle""#));
    insta::assert_snapshot!(lines.join("\n"));
    assert!(
        lines
            .iter()
            .any(|l| l.contains(r#""id":4,"result":{"messageId":"msg-1"}"#))
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains("user_message")).count(),
        2
    );
}

#[test]
fn cancel_ends_the_turn_idle_cancelled_and_withdraws_the_held_prompts() {
    let mut peer = ready(Scripted::default());
    peer.send(&prompt(3, "wait"));
    let mut lines = peer.read_until(r#""state":"running""#);
    peer.send(&prompt(4, "hello"));
    peer.send(CANCEL);
    // The withdrawn prompt's -32800 and the turn's end, in either order.
    let ended = |lines: &[String]| {
        lines
            .iter()
            .any(|l| l.contains(r#""stopReason":"cancelled""#))
    };
    let withdrawn = |lines: &[String]| lines.iter().any(|l| l.contains(r#""id":4"#));
    while !(ended(&lines) && withdrawn(&lines)) {
        lines.push(peer.read());
    }
    lines.sort_by_key(|line| line.contains(r#""id":4"#));
    insta::assert_snapshot!(lines.join("\n"));
    assert!(
        lines
            .iter()
            .any(|l| l.contains(r#""id":4,"error":{"code":-32800"#)),
        "{lines:#?}"
    );
}

#[test]
fn close_cancels_the_turn_answers_after_idle_and_forgets_the_session() {
    let mut peer = ready(Scripted::default());
    peer.send(&prompt(3, "wait"));
    let mut lines = peer.read_until(r#""state":"running""#);
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"session/close","params":{"sessionId":"s1"}}"#);
    lines.extend(peer.read_until(r#""id":4"#));
    peer.send(&prompt(5, "hello"));
    lines.push(peer.read());
    insta::assert_snapshot!(lines.join("\n"));
    let idle = lines
        .iter()
        .position(|l| l.contains(r#""stopReason":"cancelled""#))
        .unwrap();
    let closed = lines.iter().position(|l| l.contains(r#""id":4"#)).unwrap();
    assert!(idle < closed, "{lines:#?}");
}

#[test]
fn a_failed_turn_ends_idle_with_the_error() {
    let mut peer = ready(Scripted::default());
    peer.send(&prompt(3, "fail"));
    let lines = peer.read_until(r#""state":"idle""#);
    insta::assert_snapshot!(lines.last().unwrap());
}

#[test]
fn resume_with_replay_from_start_replays_the_history_then_replay_complete_then_answers() {
    let history = History::default();
    let mut first = ready(Scripted {
        history: Some(history.clone()),
    });
    first.send(&prompt(3, "hello"));
    let live = first.read_until(r#""state":"idle""#);
    drop(first);
    // Another connection of the same agent.
    let mut second = connect(Scripted {
        history: Some(history),
    });
    second.send(INIT);
    second.read();
    second.send(r#"{"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"s1","cwd":"/work","replayFrom":{"type":"start"}}}"#);
    let replayed = second.read_until(r#""id":2"#);
    insta::assert_snapshot!(replayed.join("\n"));
    // Every update but the state changes, in the order sent.
    let updates = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.contains("session/update") && !l.contains("state_update"))
            .filter(|l| !l.contains("replay_complete"))
            .cloned()
            .collect()
    };
    assert_eq!(updates(&live).len(), 5);
    assert_eq!(updates(&replayed).len(), 5);
    // The current state comes after the replay and before the answer.
    assert!(replayed[replayed.len() - 2].contains(r#""state_update","state":"idle"}"#));
    // A second replay is the same: the first one's replay_complete was not recorded.
    second.send(r#"{"jsonrpc":"2.0","id":5,"method":"session/resume","params":{"sessionId":"s1","cwd":"/work","replayFrom":{"type":"start"}}}"#);
    let again = second.read_until(r#""id":5"#);
    assert_eq!(updates(&again), updates(&replayed));
    let completes = again
        .iter()
        .filter(|l| l.contains("replay_complete"))
        .count();
    assert_eq!(completes, 1, "{again:#?}");
    // Without replayFrom: no replay, no replay_complete; the current state all the same.
    second.send(r#"{"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"s1","cwd":"/work"}}"#);
    assert_eq!(
        second.read(),
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle"}}}"#
    );
    assert_eq!(second.read(), r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
    // An unknown session: -32002.
    second.send(r#"{"jsonrpc":"2.0","id":4,"method":"session/resume","params":{"sessionId":"nope","cwd":"/work"}}"#);
    insta::assert_snapshot!("resume_unknown", second.read());
}

#[test]
fn entity_cancels_bad_ids_and_wrong_versions_get_precise_errors() {
    let mut peer = connect(Scripted::default());
    let mut lines = Vec::new();
    // Version 1 straight to a v2-only agent: -32022 with its data, and the connection stays.
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"info":{"name":"ed","version":"1"},"capabilities":{}}}"#);
    lines.push(peer.read());
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}"#);
    lines.push(peer.read());
    peer.send(INIT);
    peer.read();
    peer.send(NEW);
    peer.read();
    for line in [
        r#"{"jsonrpc":"2.0","id":3,"method":"tool_call/cancel","params":{"sessionId":"s1","toolCallId":"call-9"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"terminal/cancel","params":{"sessionId":"s1","terminalId":"t-9"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tool_call/cancel","params":{"sessionId":"s9","toolCallId":"call-9"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"session/list","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"session/load","params":{"sessionId":"s1","cwd":"/w","mcpServers":[]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"relative"}}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"s1","prompt":[],"idempotencyKey":""}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"session/list","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":10,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"see"},{"type":"image","data":"AA==","mimeType":"image/png"}]}}"#,
    ] {
        peer.send(line);
        lines.push(peer.read());
    }
    insta::assert_snapshot!(lines.join("\n"));
}
