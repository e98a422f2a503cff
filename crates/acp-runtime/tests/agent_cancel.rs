//! A cancelled prompt turn ends `cancelled` whatever order the client answers in, checked on
//! the wire with a scripted raw client. Editors differ: some answer the pending permission
//! request `cancelled` and then send `session/cancel`, some send only the answer, some send only
//! `session/cancel` and never answer, some answer late. Every transcript is pinned as an insta
//! snapshot, the session id replaced by `<session>`.

mod common;

use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, ClientHandle, Turn};
use acp_types::*;
use common::{RawPeer, serve_agent};
use serde_json::{Value, json};

/// An agent whose turns wait on one call to the client, then report what the call returned
/// and carry on as an agent that knows nothing of cancellation would (ending `end_turn`).
struct WaitingAgent;

impl Agent for WaitingAgent {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let text = request
            .prompt
            .first()
            .and_then(ContentBlock::as_text)
            .unwrap_or_default()
            .to_owned();
        let report = match text.as_str() {
            "permission" => permission(&turn).await?,
            "elicit" => {
                let schema = ElicitationSchema::new();
                let answer = turn.elicit_form("Which branch?", schema).await?;
                format!("elicitation: {}", action(&answer.kind))
            }
            "read" => {
                let read = turn.read_text_file("/project/notes.txt").await;
                format!("read failed as cancelled: {}", is_cancelled(read))
            }
            "terminal" => {
                let terminal = turn.create_terminal("sleep", ["600"]).await?;
                let waited = terminal.wait_for_exit().await;
                // Cleaning up still goes out after the cancellation.
                terminal.release().await?;
                format!("wait failed as cancelled: {}", is_cancelled(waited))
            }
            "after-cancel" => {
                turn.message("waiting").await?;
                turn.cancelled().await;
                let asked = permission(&turn).await?;
                let read = turn.read_text_file("/project/notes.txt").await;
                format!("{asked}; read failed as cancelled: {}", is_cancelled(read))
            }
            // The barrier: answered at once, with nothing before.
            _ => return Ok(StopReason::EndTurn.into()),
        };
        turn.message(format!("{report}; turn cancelled: {}", turn.is_cancelled()))
            .await?;
        Ok(StopReason::EndTurn.into())
    }
}

async fn permission(turn: &Turn) -> Result<String> {
    let options = vec![PermissionOption::new(
        "allow",
        "Allow",
        PermissionOptionKind::AllowOnce,
    )];
    let outcome = turn
        .request_permission(ToolCallUpdate::new("call_1"), options)
        .await?;
    Ok(match outcome {
        RequestPermissionOutcome::Cancelled => "permission: cancelled".to_owned(),
        RequestPermissionOutcome::Selected(selected) => {
            format!("permission: selected {}", selected.option_id)
        }
        other => format!("permission: {other:?}"),
    })
}

fn action(kind: &CreateElicitationResponseKind) -> &'static str {
    match kind {
        CreateElicitationResponseKind::Accept(_) => "accept",
        CreateElicitationResponseKind::Decline => "decline",
        CreateElicitationResponseKind::Cancel => "cancel",
        _ => "other",
    }
}

fn is_cancelled<T: std::fmt::Debug>(result: Result<T>) -> bool {
    result.expect_err("the call was cancelled").is_cancelled()
}

/// The raw client, recording every message both ways.
struct Wire {
    peer: RawPeer,
    session: String,
    log: Vec<String>,
    next_id: i64,
}

impl Wire {
    /// An initialized connection to [`WaitingAgent`] with one session.
    async fn start() -> Wire {
        let mut peer = serve_agent(WaitingAgent, agent::AgentOptions::default());
        let capabilities = json!({
            "fs": {"readTextFile": true},
            "terminal": true,
            "elicitation": {"form": {}},
        });
        peer.initialize(capabilities).await;
        let opened = peer
            .request(
                1,
                "session/new",
                json!({"cwd": "/project", "mcpServers": []}),
            )
            .await;
        let session = opened["result"]["sessionId"].as_str().unwrap().to_owned();
        Wire {
            peer,
            session,
            log: Vec::new(),
            next_id: 2,
        }
    }

    async fn send(&mut self, message: Value) {
        self.log.push(format!("client → agent  {message}"));
        self.peer.send(message).await;
    }

    async fn recv(&mut self) -> Value {
        let message = self.peer.recv().await;
        self.log.push(format!("agent → client  {message}"));
        message
    }

    /// Sends a prompt of one text block; returns its id.
    async fn prompt(&mut self, text: &str) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let params = json!({"sessionId": self.session, "prompt": [{"type": "text", "text": text}]});
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": params}),
        )
        .await;
        id
    }

    async fn cancel(&mut self) {
        let params = json!({"sessionId": self.session});
        self.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": params}))
            .await;
    }

    async fn answer(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
            .await;
    }

    /// Receives the agent's request for `method`.
    async fn expect_request(&mut self, method: &str) -> Value {
        let request = self.recv().await;
        assert_eq!(request["method"], method, "{request}");
        assert!(request.get("id").is_some(), "{request}");
        request
    }

    /// Receives until the response to `id`, which must be the only one: the stop reason.
    async fn stop_reason(&mut self, id: i64) -> Value {
        loop {
            let message = self.recv().await;
            if message.get("method").is_none() {
                assert_eq!(
                    message["id"], id,
                    "a response to nothing we asked: {message}"
                );
                assert!(message.get("error").is_none(), "{message}");
                return message["result"]["stopReason"].clone();
            }
        }
    }

    /// A request the agent answers at once, as a barrier: whatever the agent sent before its
    /// answer is seen first. Returns what came before the answer.
    async fn barrier(&mut self) -> Vec<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let params = json!({"sessionId": self.session, "prompt": [{"type": "text", "text": ""}]});
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": params}),
        )
        .await;
        let mut before = Vec::new();
        loop {
            let message = self.recv().await;
            if message.get("method").is_none() && message["id"] == id {
                assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
                return before;
            }
            before.push(message);
        }
    }

    fn transcript(&self) -> String {
        self.log.join("\n").replace(&self.session, "<session>")
    }
}

fn permission_cancelled() -> Value {
    json!({"outcome": {"outcome": "cancelled"}})
}

/// agent-shell: the permission request answered `cancelled`, then `session/cancel`.
#[test]
fn answer_cancelled_then_session_cancel_ends_cancelled() {
    smol::block_on(async {
        let mut wire = Wire::start().await;
        let prompt = wire.prompt("permission").await;
        let asked = wire.expect_request("session/request_permission").await;
        wire.answer(&asked, permission_cancelled()).await;
        wire.cancel().await;
        assert_eq!(wire.stop_reason(prompt).await, "cancelled");
        // The session takes prompts again, and nothing else was sent.
        assert_eq!(wire.barrier().await, Vec::<Value>::new());
        insta::assert_snapshot!(wire.transcript());
    });
}

/// CodeCompanion: only the `cancelled` answer, never `session/cancel`.
#[test]
fn answer_cancelled_alone_ends_cancelled() {
    smol::block_on(async {
        let mut wire = Wire::start().await;
        let prompt = wire.prompt("permission").await;
        let asked = wire.expect_request("session/request_permission").await;
        wire.answer(&asked, permission_cancelled()).await;
        assert_eq!(wire.stop_reason(prompt).await, "cancelled");
        assert_eq!(wire.barrier().await, Vec::<Value>::new());
        insta::assert_snapshot!(wire.transcript());
    });
}

/// avante, marimo: `session/cancel` and never an answer. The runtime resolves the request as
/// `cancelled` and sends `$/cancel_request` for it.
#[test]
fn session_cancel_without_an_answer_ends_cancelled() {
    smol::block_on(async {
        let mut wire = Wire::start().await;
        let prompt = wire.prompt("permission").await;
        let asked = wire.expect_request("session/request_permission").await;
        wire.cancel().await;
        let withdrawn = wire.recv().await;
        assert_eq!(
            withdrawn,
            json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": asked["id"]}})
        );
        assert_eq!(wire.stop_reason(prompt).await, "cancelled");
        assert_eq!(wire.barrier().await, Vec::<Value>::new());
        insta::assert_snapshot!(wire.transcript());
    });
}

/// `session/cancel`, then the answer, late: the turn ends `cancelled` all the same, and the
/// late answer is dropped without a word to the client.
#[test]
fn session_cancel_then_a_late_answer_ends_cancelled() {
    smol::block_on(async {
        let mut wire = Wire::start().await;
        let prompt = wire.prompt("permission").await;
        let asked = wire.expect_request("session/request_permission").await;
        wire.cancel().await;
        assert_eq!(wire.recv().await["method"], "$/cancel_request");
        assert_eq!(wire.stop_reason(prompt).await, "cancelled");
        // Even an answer that selects an option: the turn is over.
        wire.answer(
            &asked,
            json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
        )
        .await;
        assert_eq!(wire.barrier().await, Vec::<Value>::new());
        insta::assert_snapshot!(wire.transcript());
    });
}

/// `session/cancel` and an answer selecting an option in one write: both are in by the time
/// the agent's code resumes, and the cancellation wins the tie, so the agent reads `cancelled`
/// (an answer that came with or after `session/cancel` is not acted on). The request was
/// answered, so nothing is withdrawn.
#[test]
fn an_answer_arriving_with_session_cancel_reads_cancelled() {
    smol::block_on(async {
        let mut wire = Wire::start().await;
        let prompt = wire.prompt("permission").await;
        let asked = wire.expect_request("session/request_permission").await;
        let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel",
            "params": {"sessionId": wire.session}});
        let answer = json!({"jsonrpc": "2.0", "id": asked["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}});
        wire.peer.send_text(&format!("{cancel}\n{answer}\n")).await;
        let report = wire.recv().await;
        assert_eq!(
            report["params"]["update"]["content"]["text"],
            "permission: cancelled; turn cancelled: true"
        );
        assert_eq!(wire.stop_reason(prompt).await, "cancelled");
        assert_eq!(wire.barrier().await, Vec::<Value>::new());
    });
}

/// A pending elicitation resolves `cancel` at `session/cancel`, withdrawn with
/// `$/cancel_request`; a `cancel` action alone does not cancel the turn (it is the form's).
#[test]
fn session_cancel_resolves_a_pending_elicitation() {
    smol::block_on(async {
        let mut wire = Wire::start().await;
        let prompt = wire.prompt("elicit").await;
        let asked = wire.expect_request("elicitation/create").await;
        wire.cancel().await;
        let withdrawn = wire.recv().await;
        assert_eq!(withdrawn["method"], "$/cancel_request");
        assert_eq!(withdrawn["params"]["requestId"], asked["id"]);
        let report = wire.recv().await;
        assert_eq!(
            report["params"]["update"]["content"]["text"],
            "elicitation: cancel; turn cancelled: true"
        );
        assert_eq!(wire.stop_reason(prompt).await, "cancelled");

        let prompt = wire.prompt("elicit").await;
        let asked = wire.expect_request("elicitation/create").await;
        wire.answer(&asked, json!({"action": "cancel"})).await;
        assert_eq!(wire.stop_reason(prompt).await, "end_turn");
    });
}

/// A pending file read fails as cancelled at `session/cancel`.
#[test]
fn session_cancel_resolves_a_pending_file_read() {
    smol::block_on(async {
        let mut wire = Wire::start().await;
        let prompt = wire.prompt("read").await;
        let asked = wire.expect_request("fs/read_text_file").await;
        wire.cancel().await;
        let withdrawn = wire.recv().await;
        assert_eq!(withdrawn["params"]["requestId"], asked["id"]);
        let report = wire.recv().await;
        assert_eq!(
            report["params"]["update"]["content"]["text"],
            "read failed as cancelled: true; turn cancelled: true"
        );
        assert_eq!(wire.stop_reason(prompt).await, "cancelled");
    });
}

/// A pending `terminal/wait_for_exit` fails as cancelled; the release that follows goes out.
#[test]
fn session_cancel_resolves_a_terminal_wait_and_the_release_goes_out() {
    smol::block_on(async {
        let mut wire = Wire::start().await;
        let prompt = wire.prompt("terminal").await;
        let create = wire.expect_request("terminal/create").await;
        wire.answer(&create, json!({"terminalId": "term_1"})).await;
        let wait = wire.expect_request("terminal/wait_for_exit").await;
        wire.cancel().await;
        let withdrawn = wire.recv().await;
        assert_eq!(withdrawn["params"]["requestId"], wait["id"]);
        let release = wire.expect_request("terminal/release").await;
        assert_eq!(release["params"]["terminalId"], "term_1");
        wire.answer(&release, json!({})).await;
        let report = wire.recv().await;
        assert_eq!(
            report["params"]["update"]["content"]["text"],
            "wait failed as cancelled: true; turn cancelled: true"
        );
        assert_eq!(wire.stop_reason(prompt).await, "cancelled");
    });
}

/// Calls a cancelled turn makes afterwards resolve at once and send nothing.
#[test]
fn calls_after_the_cancellation_send_nothing() {
    smol::block_on(async {
        let mut wire = Wire::start().await;
        let prompt = wire.prompt("after-cancel").await;
        assert_eq!(wire.recv().await["method"], "session/update");
        wire.cancel().await;
        let report = wire.recv().await;
        assert_eq!(
            report["params"]["update"]["content"]["text"],
            "permission: cancelled; read failed as cancelled: true; turn cancelled: true"
        );
        assert_eq!(wire.stop_reason(prompt).await, "cancelled");
    });
}
