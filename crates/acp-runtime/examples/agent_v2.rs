//! A protocol v2 agent beside a v1 one on stdio, through the version router: a client asking
//! for version 2 gets the v2 side (a thought, a tool call that asks permission, the reply in
//! chunks, `idle`), any other the v1 side (the same turn in v1's vocabulary). Prompts that say
//! `wait` run until cancelled.
//!
//! With `ACP_EXAMPLE_HISTORY=FILE` the v2 side's history outlives the process: it is read from
//! FILE (JSON lines, `{"session": ID, "update": UPDATE}`) at start and written back when the
//! client leaves, so a later process resumes those sessions with replay (the official SDK's
//! `v2_session_coordination` example needs that; interop/v2-routing.sh).
//!
//! ```text
//! cargo run -p acp-rs-runtime --features unstable-protocol-v2 --example agent_v2
//! ```

use acp_runtime::acp_types::v2 as wire;
use acp_runtime::agent::v2::{self, History, Turn};
use acp_runtime::prelude::*;
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex};

/// The v2 side, retaining history for `session/resume` with `replayFrom`.
#[derive(Default)]
struct V2Agent {
    history: History,
    /// The sessions this process opened or read from the history file, to write them back.
    sessions: Arc<Mutex<Vec<wire::SessionId>>>,
}

impl v2::Agent for V2Agent {
    fn history(&self) -> Option<&History> {
        Some(&self.history)
    }

    async fn initialize(
        &self,
        _: wire::InitializeRequest,
        _: &v2::Client,
    ) -> Result<wire::InitializeResponse> {
        let info = wire::Implementation::new("acp-rs-example-agent-v2", env!("CARGO_PKG_VERSION"));
        let capabilities =
            wire::AgentCapabilities::new().with_session(wire::SessionCapabilities::new());
        Ok(
            wire::InitializeResponse::new(wire::ProtocolVersion::V2, info)
                .with_capabilities(capabilities),
        )
    }

    async fn new_session(
        &self,
        _: wire::NewSessionRequest,
        _: &v2::Client,
    ) -> Result<wire::NewSessionResponse> {
        let id = wire::SessionId::new(agent::new_session_id().0);
        self.sessions.lock().unwrap().push(id.clone());
        Ok(wire::NewSessionResponse::new(id))
    }

    async fn prompt(
        &self,
        request: wire::PromptRequest,
        turn: Turn,
    ) -> Result<wire::IdleStateUpdateKind> {
        let asked: String = request
            .prompt
            .iter()
            .filter_map(|block| match block {
                wire::ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        if asked.contains("wait") {
            turn.cancelled().await;
            return Ok(wire::IdleStateUpdateKind::Cancelled);
        }
        turn.think(format!("The user asked {asked:?}.")).await?;
        let call = wire::ToolCallId::new("look-1");
        turn.tool_call(
            wire::ToolCallUpdate::new(call.clone())
                .with_title("Look around")
                .with_kind(wire::ToolKind::Read)
                .with_status(wire::ToolCallStatus::Pending),
        )
        .await?;
        let options = vec![
            wire::PermissionOption::new("allow", "Allow", wire::PermissionOptionKind::AllowOnce),
            wire::PermissionOption::new("reject", "Reject", wire::PermissionOptionKind::RejectOnce),
        ];
        let ask = wire::RequestPermissionRequest::new(
            turn.session().id().clone(),
            "Look around the project?",
            options,
        );
        let allowed = matches!(
            turn.request_permission(ask).await?,
            wire::RequestPermissionOutcome::Selected(ref chosen) if chosen.option_id.0 == "allow"
        );
        let status = if allowed {
            wire::ToolCallStatus::Completed
        } else {
            wire::ToolCallStatus::Failed
        };
        turn.tool_call(wire::ToolCallUpdate::new(call).with_status(status))
            .await?;
        for word in [
            "I ",
            "looked ",
            if allowed { "around." } else { "nowhere." },
        ] {
            turn.say(word).await?;
        }
        Ok(wire::IdleStateUpdateKind::EndTurn)
    }
}

/// The v1 side: the same turn without the tool call.
struct V1Agent;

impl Agent for V1Agent {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, _: PromptRequest, turn: Turn1) -> Result<PromptResponse> {
        turn.message("I speak v1 too.").await?;
        Ok(StopReason::EndTurn.into())
    }
}

type Turn1 = acp_runtime::agent::Turn;

fn main() -> std::io::Result<()> {
    let v2 = V2Agent::default();
    let (history, sessions) = (v2.history.clone(), v2.sessions.clone());
    let file = std::env::var_os("ACP_EXAMPLE_HISTORY").map(std::path::PathBuf::from);
    if let Some(file) = &file {
        load_history(file, &history, &sessions)?;
    }
    let served = acp_runtime::router::router()
        .with_v1(V1Agent)
        .with_v2(v2)
        .serve_stdio();
    if let Some(file) = &file {
        save_history(file, &history, &sessions.lock().unwrap())?;
    }
    // A client that leaves while we still write ends the conversation: the runtime returns Ok.
    served
}

/// One line of the history file.
#[derive(serde::Serialize, serde::Deserialize)]
struct Recorded {
    session: wire::SessionId,
    update: Box<RawValue>,
}

/// Records every line of `file` (if it exists) into `history`.
fn load_history(
    file: &std::path::Path,
    history: &History,
    sessions: &Mutex<Vec<wire::SessionId>>,
) -> std::io::Result<()> {
    let text = match std::fs::read_to_string(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        read => read?,
    };
    let mut sessions = sessions.lock().unwrap();
    for line in text.lines() {
        let recorded: Recorded = serde_json::from_str(line)?;
        if !sessions.contains(&recorded.session) {
            sessions.push(recorded.session.clone());
        }
        history.record(&recorded.session, recorded.update);
    }
    Ok(())
}

/// Writes the retained history of `sessions` to `file`, replacing it.
fn save_history(
    file: &std::path::Path,
    history: &History,
    sessions: &[wire::SessionId],
) -> std::io::Result<()> {
    let mut out = String::new();
    for session in sessions {
        for update in history
            .retained(session)
            .map(|r| r.updates)
            .unwrap_or_default()
        {
            let line = Recorded {
                session: session.clone(),
                update,
            };
            out.push_str(&serde_json::to_string(&line)?);
            out.push('\n');
        }
    }
    std::fs::write(file, out)
}
