//! The reference agent's protocol v2 side (feature `unstable-protocol-v2`), built on
//! `acp_runtime::agent::v2` and served beside the v1 side through the version router: every
//! `v2.*` check passes against it.
//!
//! A turn thinks aloud, upserts a tool call `pending`, asks permission to run it, then upserts
//! it through `in_progress` to `completed` (each update naming only what changed), shows a
//! display terminal whose output `✓ checked` is sent in two chunks split inside the `✓`, and
//! answers. The history is
//! retained for `session/resume` with `replayFrom`.

use acp_runtime::Result;
use acp_runtime::agent::v2::{self, History, Turn};
use acp_types::v2::{
    IdleStateUpdateKind, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    TerminalId, TerminalUpdate, ToolCallStatus, ToolCallUpdate, ToolKind,
};

/// The v2 agent.
#[derive(Default)]
pub struct ReferenceAgentV2 {
    history: History,
}

impl v2::Agent for ReferenceAgentV2 {
    fn history(&self) -> Option<&History> {
        Some(&self.history)
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &v2::Client,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(
            acp_runtime::agent::new_session_id().0,
        ))
    }

    async fn prompt(&self, _: PromptRequest, turn: Turn) -> Result<IdleStateUpdateKind> {
        turn.think("Checking the project.").await?;
        turn.tool_call(
            ToolCallUpdate::new("check-1")
                .with_title("Check the project")
                .with_kind(ToolKind::Execute)
                .with_status(ToolCallStatus::Pending),
        )
        .await?;
        let options = vec![PermissionOption::new(
            "allow",
            "Allow",
            PermissionOptionKind::AllowOnce,
        )];
        let ask =
            RequestPermissionRequest::new(turn.session().id().clone(), "Run the check?", options);
        // A cancelled turn resolves the request `cancelled` and ends `idle` `cancelled`.
        if !matches!(
            turn.request_permission(ask).await?,
            RequestPermissionOutcome::Selected(_)
        ) {
            turn.tool_call(ToolCallUpdate::new("check-1").with_status(ToolCallStatus::Failed))
                .await?;
            return Ok(IdleStateUpdateKind::Cancelled);
        }
        turn.tool_call(ToolCallUpdate::new("check-1").with_status(ToolCallStatus::InProgress))
            .await?;
        let terminal = TerminalId::new("check");
        turn.terminal(TerminalUpdate::new(terminal.clone()).with_command("check"))
            .await?;
        // The split falls inside the three bytes of `✓`: each chunk is its own base64.
        let output = "✓ checked\n".as_bytes();
        turn.terminal_output(&terminal, &output[..1]).await?;
        turn.terminal_output(&terminal, &output[1..]).await?;
        turn.tool_call(ToolCallUpdate::new("check-1").with_status(ToolCallStatus::Completed))
            .await?;
        turn.say("All checked.").await?;
        Ok(IdleStateUpdateKind::EndTurn)
    }
}
