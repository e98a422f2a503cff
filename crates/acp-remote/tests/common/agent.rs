//! A small agent for the remote tests, independent of the runtime's demo agent: a turn that
//! streams a thought, reads `notes.txt` through the client, asks permission, writes
//! `summary.txt` through the client and answers in chunks; a prompt of "wait" waits for the
//! client's cancellation instead. The extension request `_test/pad` is answered with a
//! result of about `{"bytes": N}` bytes, for the tests of what answers a peer does not read
//! cost.

use std::collections::HashMap;
use std::sync::Mutex;

use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, ClientHandle, Turn};
use acp_types::*;

/// The name it answers `initialize` with (set through `AgentOptions::with_info`, so that the
/// test does not depend on the `initialize` method's signature).
pub const NAME: &str = "acp-remote-test-agent";

#[derive(Default)]
pub struct TestAgent {
    cwds: Mutex<HashMap<SessionId, String>>,
}

impl Agent for TestAgent {
    async fn new_session(
        &self,
        request: NewSessionRequest,
        _client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        let id = agent::new_session_id();
        self.cwds.lock().unwrap().insert(id.clone(), request.cwd);
        Ok(NewSessionResponse::new(id))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let asked: String = request
            .prompt
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        if asked == "wait" {
            turn.message("waiting").await?;
            turn.cancelled().await;
            return Ok(StopReason::Cancelled.into());
        }
        let cwd = self
            .cwds
            .lock()
            .unwrap()
            .get(&request.session_id)
            .cloned()
            .unwrap_or_default();
        turn.thought(format!("The user asked {asked:?}")).await?;
        let notes = turn.read_text_file(format!("{cwd}/notes.txt")).await?;
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        let outcome = turn
            .request_permission(ToolCallUpdate::new("write_summary"), options)
            .await?;
        let allowed =
            matches!(&outcome, RequestPermissionOutcome::Selected(s) if s.option_id == "allow");
        if allowed {
            let summary = format!("{} lines of notes\n", notes.lines().count());
            turn.write_text_file(format!("{cwd}/summary.txt"), summary)
                .await?;
        }
        for chunk in ["Done", ": ", &notes.lines().count().to_string(), " lines."] {
            turn.message(chunk.to_owned()).await?;
        }
        Ok(StopReason::EndTurn.into())
    }

    async fn ext_method(
        &self,
        call: ExtensionCall,
        _client: &ClientHandle,
    ) -> Result<Box<serde_json::value::RawValue>> {
        if call.method != "_test/pad" {
            return Err(acp_runtime::Error::method_not_found(&call.method));
        }
        let asked: serde_json::Value = serde_json::from_str(call.params.get()).unwrap_or_default();
        let bytes = asked["bytes"].as_u64().unwrap_or(0).min(1 << 20) as usize;
        let result = format!(r#"{{"pad":"{}"}}"#, "a".repeat(bytes));
        Ok(serde_json::value::RawValue::from_string(result).expect("valid JSON"))
    }
}
