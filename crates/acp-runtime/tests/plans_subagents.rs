//! Plan operations and subagents (stable since schema 1.20.0), on the wire, both sides:
//! `plan_update` and `plan_removed` go only to a client that advertised `plan`, subagent
//! updates, session messages and tool call content of type `session` only to one that
//! advertised `subagents`. The agent's runtime refuses to send them otherwise (nothing
//! sent); the client's runtime reports an agent that sends them anyway, and still delivers
//! them. `SessionClient::set_plan` sends whichever form the client takes.

mod common;

use std::sync::{Arc, Mutex};

use acp_jsonrpc::{Observer, Problem};
use acp_runtime::agent::{Agent, AgentOptions, ClientHandle, Turn};
use acp_runtime::client::{self, AgentHandle, AutoAllow, ClientOptions};
use acp_runtime::{Error, Result};
use acp_types::*;
use common::{RawPeer, serve_agent, within};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// The agent side: a raw client, with and without `plan` and `subagents`.

/// On prompt, sends the updates its text names and then reports, as a message, what the
/// runtime said of each.
struct Planner;

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("valid")
}

fn entry(content: &str, status: PlanEntryStatus) -> PlanEntry {
    PlanEntry::new(content, PlanEntryPriority::High, status)
}

impl Planner {
    async fn send(turn: &Turn, what: &str) -> Result<()> {
        match what {
            "plan_update" => {
                turn.plan_update(PlanUpdate::new(PlanItems::new(
                    "p1",
                    vec![entry("Read", PlanEntryStatus::Pending)],
                )))
                .await
            }
            "plan_removed" => turn.plan_removed(PlanRemoved::new("p1")).await,
            "subagent_update" => {
                turn.subagent_update(
                    SubagentUpdate::new("child-1")
                        .with_title("Reader")
                        .with_state(RunningStateUpdate::new())
                        .clear_description(),
                )
                .await
            }
            "session_message" => {
                turn.session_message(from_json(json!({
                    "messageId": "m1", "senderSessionId": "child-1", "content": [{"type": "text", "text": "done"}]
                })))
                .await
            }
            "session_message_chunk" => {
                turn.session_message_chunk(SessionMessageChunk::new("m1", "more"))
                    .await
            }
            "tool_call_session" => {
                turn.tool_call(
                    ToolCall::new("t1", "Delegate").add_content(SessionReference::new("child-1")),
                )
                .await
            }
            "tool_call_update_session" => {
                turn.tool_call_update(
                    ToolCallUpdate::new("t1").add_content(SessionReference::new("child-1")),
                )
                .await
            }
            "set_plan" => {
                let items = |status| PlanItems::new("main", vec![entry("Read", status)]);
                turn.set_plan(items(PlanEntryStatus::InProgress)).await?;
                turn.set_plan(PlanMarkdown::new("review", "1. Check\n2. Ship").with_path("/tmp/plan.md"))
                    .await?;
                // Sent again: keeps its place before `review`.
                turn.set_plan(items(PlanEntryStatus::Completed)).await?;
                turn.remove_plan("review").await?;
                // Unknown: a client without `plan` is sent nothing.
                turn.remove_plan("never-sent").await
            }
            other => panic!("unknown step {other}"),
        }
    }
}

impl Agent for Planner {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new("s1"))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let asked = request.prompt[0].as_text().unwrap_or_default().to_owned();
        let report = match Self::send(&turn, &asked).await {
            Ok(()) => "sent".to_owned(),
            Err(Error::NotAdvertised { method, capability }) => {
                format!("refused: {method} needs {capability}")
            }
            Err(other) => format!("failed: {other}"),
        };
        turn.message(report).await?;
        Ok(StopReason::EndTurn.into())
    }
}

async fn serve(client_capabilities: Value) -> RawPeer {
    let mut peer = serve_agent(Planner, AgentOptions::default());
    peer.initialize(client_capabilities).await;
    peer.request(1, "session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await;
    peer
}

/// The `update`s the agent sent during one prompt turn, the final report included.
async fn turn_updates(peer: &mut RawPeer, id: i64, text: &str) -> Vec<Value> {
    peer.send(
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": text}]}}),
    )
    .await;
    let messages = peer.recv_until_response(id).await;
    messages
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect()
}

const GATED: &[&str] = &[
    "plan_update",
    "plan_removed",
    "subagent_update",
    "session_message",
    "session_message_chunk",
    "tool_call_session",
    "tool_call_update_session",
];

#[test]
fn agent_refuses_plan_and_subagent_updates_to_a_client_that_did_not_opt_in() {
    smol::block_on(within("session_update (plan, subagents)", async {
        let mut peer = serve(json!({})).await;
        let mut reports = Vec::new();
        for (id, what) in (2..).zip(GATED) {
            let updates = turn_updates(&mut peer, id, what).await;
            // Nothing went out but the report.
            assert_eq!(updates.len(), 1, "{what}: {updates:?}");
            reports.push(format!(
                "{what}: {}",
                updates[0]["content"]["text"].as_str().unwrap()
            ));
        }
        insta::assert_snapshot!(reports.join("\n"), @r"
        plan_update: refused: a `plan_update` update needs plan
        plan_removed: refused: a `plan_removed` update needs plan
        subagent_update: refused: a `subagent_update` update needs subagents
        session_message: refused: a `session_message` update needs subagents
        session_message_chunk: refused: a `session_message_chunk` update needs subagents
        tool_call_session: refused: tool call content of type `session` needs subagents
        tool_call_update_session: refused: tool call content of type `session` needs subagents
        ");
        // `plan` alone does not open the subagent updates, nor `subagents` the plan ones.
        let mut peer = serve(json!({"plan": {}})).await;
        assert_eq!(turn_updates(&mut peer, 2, "plan_update").await.len(), 2);
        assert_eq!(turn_updates(&mut peer, 3, "subagent_update").await.len(), 1);
        let mut peer = serve(json!({"subagents": {}})).await;
        assert_eq!(turn_updates(&mut peer, 2, "plan_removed").await.len(), 1);
        assert_eq!(turn_updates(&mut peer, 3, "session_message").await.len(), 2);
    }));
}

#[test]
fn agent_sends_plan_and_subagent_updates_to_a_client_that_opted_in() {
    smol::block_on(within("session_update (plan, subagents) allowed", async {
        let mut peer = serve(json!({"plan": {}, "subagents": {}})).await;
        let mut sent = Vec::new();
        for (id, what) in (2..).zip(GATED) {
            let mut updates = turn_updates(&mut peer, id, what).await;
            assert_eq!(updates.pop().unwrap()["content"]["text"], "sent", "{what}");
            sent.extend(updates);
        }
        insta::assert_json_snapshot!(sent, @r#"
        [
          {
            "plan": {
              "entries": [
                {
                  "content": "Read",
                  "priority": "high",
                  "status": "pending"
                }
              ],
              "planId": "p1",
              "type": "items"
            },
            "sessionUpdate": "plan_update"
          },
          {
            "planId": "p1",
            "sessionUpdate": "plan_removed"
          },
          {
            "description": null,
            "sessionId": "child-1",
            "sessionUpdate": "subagent_update",
            "state": {
              "state": "running"
            },
            "title": "Reader"
          },
          {
            "content": [
              {
                "text": "done",
                "type": "text"
              }
            ],
            "messageId": "m1",
            "senderSessionId": "child-1",
            "sessionUpdate": "session_message"
          },
          {
            "content": {
              "text": "more",
              "type": "text"
            },
            "messageId": "m1",
            "sessionUpdate": "session_message_chunk"
          },
          {
            "content": [
              {
                "sessionId": "child-1",
                "type": "session"
              }
            ],
            "sessionUpdate": "tool_call",
            "title": "Delegate",
            "toolCallId": "t1"
          },
          {
            "content": [
              {
                "sessionId": "child-1",
                "type": "session"
              }
            ],
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t1"
          }
        ]
        "#);
    }));
}

#[test]
fn set_plan_sends_plan_updates_to_a_client_with_plan() {
    smol::block_on(within("set_plan (plan)", async {
        let mut peer = serve(json!({"plan": {}})).await;
        let mut updates = turn_updates(&mut peer, 2, "set_plan").await;
        assert_eq!(updates.pop().unwrap()["content"]["text"], "sent");
        insta::assert_json_snapshot!(updates, @r#"
        [
          {
            "plan": {
              "entries": [
                {
                  "content": "Read",
                  "priority": "high",
                  "status": "in_progress"
                }
              ],
              "planId": "main",
              "type": "items"
            },
            "sessionUpdate": "plan_update"
          },
          {
            "plan": {
              "content": "1. Check\n2. Ship",
              "path": "/tmp/plan.md",
              "planId": "review",
              "type": "markdown"
            },
            "sessionUpdate": "plan_update"
          },
          {
            "plan": {
              "entries": [
                {
                  "content": "Read",
                  "priority": "high",
                  "status": "completed"
                }
              ],
              "planId": "main",
              "type": "items"
            },
            "sessionUpdate": "plan_update"
          },
          {
            "planId": "review",
            "sessionUpdate": "plan_removed"
          },
          {
            "planId": "never-sent",
            "sessionUpdate": "plan_removed"
          }
        ]
        "#);
    }));
}

#[test]
fn set_plan_sends_the_old_plan_update_to_any_other_client() {
    smol::block_on(within("set_plan (old plan)", async {
        let mut peer = serve(json!({})).await;
        let mut updates = turn_updates(&mut peer, 2, "set_plan").await;
        assert_eq!(updates.pop().unwrap()["content"]["text"], "sent");
        // Every plan sent so far, together; the markdown plan as one entry.
        insta::assert_json_snapshot!(updates, @r#"
        [
          {
            "entries": [
              {
                "content": "Read",
                "priority": "high",
                "status": "in_progress"
              }
            ],
            "sessionUpdate": "plan"
          },
          {
            "entries": [
              {
                "content": "Read",
                "priority": "high",
                "status": "in_progress"
              },
              {
                "content": "1. Check\n2. Ship",
                "priority": "medium",
                "status": "pending"
              }
            ],
            "sessionUpdate": "plan"
          },
          {
            "entries": [
              {
                "content": "Read",
                "priority": "high",
                "status": "completed"
              },
              {
                "content": "1. Check\n2. Ship",
                "priority": "medium",
                "status": "pending"
              }
            ],
            "sessionUpdate": "plan"
          },
          {
            "entries": [
              {
                "content": "Read",
                "priority": "high",
                "status": "completed"
              }
            ],
            "sessionUpdate": "plan"
          }
        ]
        "#);
    }));
}

// ---------------------------------------------------------------------------------------
// The client side: a runtime client against a raw agent that sends them anyway.

#[derive(Clone, Default)]
struct Problems(Arc<Mutex<Vec<String>>>);

impl Observer for Problems {
    fn problem(&self, problem: &Problem) {
        if let Problem::PeerBrokeRule { method, rule } = problem {
            self.0.lock().unwrap().push(format!("{method}: {rule}"));
        }
    }
}

async fn connected(options: ClientOptions) -> (AgentHandle, RawPeer, client::Session) {
    let (mut peer, endpoint) = RawPeer::new();
    let (agent, driver) = client::connect(AutoAllow, endpoint.reader, endpoint.writer, options);
    smol::spawn(driver).detach();
    let answer = async {
        let request = peer.recv().await;
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"],
            "result": {"protocolVersion": 1, "agentCapabilities": {}}}))
            .await;
        let request = peer.recv().await;
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}}))
            .await;
    };
    let opened = async {
        agent.initialize().await.unwrap();
        agent.new_session("/tmp").await.unwrap()
    };
    let (session, ()) = futures_lite::future::zip(opened, answer).await;
    (agent, peer, session)
}

fn gated_updates() -> Vec<Value> {
    vec![
        json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p1", "content": "1. Read"}}),
        json!({"sessionUpdate": "plan_removed", "planId": "p1"}),
        json!({"sessionUpdate": "subagent_update", "sessionId": "child-1", "state": {"state": "idle"}}),
        json!({"sessionUpdate": "session_message", "messageId": "m1", "content": [{"type": "text", "text": "hi"}]}),
        json!({"sessionUpdate": "session_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "!"}}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Delegate",
            "content": [{"type": "session", "sessionId": "child-1"}]}),
    ]
}

/// Sends every gated update to `session` and reads them back as the application sees them.
async fn deliver(peer: &mut RawPeer, session: &client::Session) -> Vec<String> {
    for update in gated_updates() {
        peer.send(json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s1", "update": update}}))
            .await;
    }
    let mut kinds = Vec::new();
    for _ in gated_updates() {
        let update = session.next_update().await.unwrap().unwrap();
        kinds.push(match update {
            SessionUpdate::PlanUpdate(u) => format!(
                "PlanUpdate({})",
                matches!(u.plan, PlanUpdateContent::Markdown(_))
            ),
            SessionUpdate::PlanRemoved(r) => format!("PlanRemoved({})", r.plan_id),
            SessionUpdate::SubagentUpdate(u) => format!("SubagentUpdate({})", u.session_id),
            SessionUpdate::SessionMessage(m) => format!("SessionMessage({})", m.message_id),
            SessionUpdate::SessionMessageChunk(c) => {
                format!("SessionMessageChunk({})", c.message_id)
            }
            SessionUpdate::ToolCall(call) => format!(
                "ToolCall(session content: {})",
                matches!(call.content.as_deref(), Some([ToolCallContent::Session(_)]))
            ),
            other => panic!("not typed: {other:?}"),
        });
    }
    kinds
}

#[test]
fn client_reports_plan_and_subagent_updates_it_did_not_opt_into_and_still_delivers_them() {
    smol::block_on(within(
        "session_update on receipt (plan, subagents)",
        async {
            let problems = Problems::default();
            let options = ClientOptions::default().with_observer(problems.clone());
            let (_agent, mut peer, session) = connected(options).await;
            let kinds = deliver(&mut peer, &session).await;
            assert_eq!(
                kinds,
                [
                    "PlanUpdate(true)",
                    "PlanRemoved(p1)",
                    "SubagentUpdate(child-1)",
                    "SessionMessage(m1)",
                    "SessionMessageChunk(m1)",
                    "ToolCall(session content: true)",
                ]
            );
            insta::assert_snapshot!(problems.0.lock().unwrap().join("\n"), @r"
        session/update: a `plan_update` update needs `plan`, which was not advertised
        session/update: a `plan_removed` update needs `plan`, which was not advertised
        session/update: a `subagent_update` update needs `subagents`, which was not advertised
        session/update: a `session_message` update needs `subagents`, which was not advertised
        session/update: a `session_message_chunk` update needs `subagents`, which was not advertised
        session/update: tool call content of type `session` needs `subagents`, which was not advertised
        ");
        },
    ));
}

#[test]
fn client_that_opted_in_takes_plan_and_subagent_updates_without_a_report() {
    smol::block_on(within("session_update on receipt, opted in", async {
        let problems = Problems::default();
        let options = ClientOptions::default()
            .with_plans()
            .with_subagents()
            .with_observer(problems.clone());
        let (agent, mut peer, session) = connected(options).await;
        assert_eq!(deliver(&mut peer, &session).await.len(), 6);
        assert!(problems.0.lock().unwrap().is_empty());
        // The tool call is tracked like any other.
        assert!(session.tool_call(&ToolCallId::new("t1")).is_some());
        drop(agent);
    }));
}

#[test]
fn client_advertises_plan_and_subagents_and_the_builders_merge() {
    smol::block_on(within("initialize advertises plan and subagents", async {
        let (mut peer, endpoint) = RawPeer::new();
        let mut extra = ClientCapabilities::default();
        extra.terminal = true;
        // Set before or after the other builders, they stay.
        let options = ClientOptions::default()
            .with_plans()
            .with_capabilities(extra)
            .with_subagents();
        let (agent, driver) = client::connect(AutoAllow, endpoint.reader, endpoint.writer, options);
        smol::spawn(driver).detach();
        let answer = async {
            let request = peer.recv().await;
            peer.send(json!({"jsonrpc": "2.0", "id": request["id"],
                "result": {"protocolVersion": 1, "agentCapabilities": {}}}))
                .await;
            request
        };
        let (_, request) = futures_lite::future::zip(agent.initialize(), answer).await;
        insta::assert_json_snapshot!(request["params"]["clientCapabilities"], @r#"
        {
          "auth": {
            "terminal": false
          },
          "fs": {
            "readTextFile": false,
            "writeTextFile": false
          },
          "plan": {},
          "subagents": {},
          "terminal": true
        }
        "#);
    }));
}
