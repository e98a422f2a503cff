//! The demo agent's protocol v2 side (feature `unstable-protocol-v2`), served beside the v1
//! demo agent through the version router: the same turn in v2's vocabulary. v2 has no client
//! file system or terminals, so the agent reads `notes.txt` itself and runs `ls -1` in a
//! display terminal of its own (`terminal_update`, `terminal_output_chunk`); it streams a
//! thought and a plan, asks permission before the command, and answers in chunks.

use acp_runtime::Result;
use acp_runtime::acp_types::v2::*;
use acp_runtime::agent::v2::{self, History, Turn};

/// Serves the demo agent on stdin and stdout through the version router: v1 and v2, each
/// with its demo; the exit status as [`demo_agent::serve_stdio`](crate::demo_agent::serve_stdio)
/// gives it.
#[allow(
    dead_code,
    reason = "not every file that includes this module serves on stdio"
)]
pub fn serve_stdio() -> i32 {
    let served = acp_runtime::router::router()
        .with_v1(crate::demo_agent::DemoAgent)
        .with_v2(DemoAgentV2::default())
        .serve_stdio();
    crate::demo_agent::exit_status(served)
}

/// The v2 demo agent; its history serves `session/resume` with `replayFrom`.
#[derive(Default)]
pub struct DemoAgentV2 {
    history: History,
}

impl v2::Agent for DemoAgentV2 {
    fn history(&self) -> Option<&History> {
        Some(&self.history)
    }

    async fn initialize(&self, _: InitializeRequest, _: &v2::Client) -> Result<InitializeResponse> {
        let info = Implementation::new("acp-demo-agent", env!("CARGO_PKG_VERSION"));
        let capabilities = AgentCapabilities::new().with_session(SessionCapabilities::new());
        Ok(InitializeResponse::new(ProtocolVersion::V2, info).with_capabilities(capabilities))
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

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<IdleStateUpdateKind> {
        let asked: String = request
            .prompt
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        turn.think(format!(
            "The user asked: {asked:?}. I will look at the project first."
        ))
        .await?;
        let plan = |done: usize| {
            let entries = ["Read notes.txt", "List the directory"]
                .iter()
                .enumerate()
                .map(|(i, step)| {
                    let status = if i < done {
                        PlanEntryStatus::Completed
                    } else {
                        PlanEntryStatus::Pending
                    };
                    PlanEntry::new(*step, PlanEntryPriority::Medium, status)
                })
                .collect::<Vec<_>>();
            PlanUpdate::new(PlanItems::new("demo", entries))
        };
        turn.plan(plan(0)).await?;

        // 1. Read the notes, agent-side (v2 clients offer no file system).
        let notes_path = turn.cwd().join("notes.txt");
        turn.tool_call(
            ToolCallUpdate::new("read_notes")
                .with_title("Read notes.txt")
                .with_kind(ToolKind::Read)
                .with_status(ToolCallStatus::InProgress),
        )
        .await?;
        let notes = std::fs::read_to_string(&notes_path);
        let status = if notes.is_ok() {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        };
        turn.tool_call(ToolCallUpdate::new("read_notes").with_status(status))
            .await?;
        turn.plan(plan(1)).await?;

        // 2. Ask, then run `ls -1` in a display terminal the agent owns.
        turn.tool_call(
            ToolCallUpdate::new("list_dir")
                .with_title("ls -1")
                .with_kind(ToolKind::Execute)
                .with_status(ToolCallStatus::Pending),
        )
        .await?;
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        let ask = RequestPermissionRequest::new(turn.session().id().clone(), "Run ls -1?", options);
        let outcome = turn.request_permission(ask).await?;
        if turn.is_cancelled() {
            return Ok(IdleStateUpdateKind::Cancelled);
        }
        let allowed =
            matches!(&outcome, RequestPermissionOutcome::Selected(s) if s.option_id.0 == "allow");
        let listed = if allowed {
            list_dir(&turn).await?
        } else {
            None
        };
        let status = if listed.is_some() {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        };
        turn.tool_call(ToolCallUpdate::new("list_dir").with_status(status))
            .await?;
        turn.plan(plan(2)).await?;

        let read = match &notes {
            Ok(notes) => format!("notes.txt has {} lines", notes.lines().count()),
            Err(error) => format!("I could not read notes.txt: {error}"),
        };
        let listed = match listed {
            Some(entries) => format!("the directory has {entries} entries"),
            None => "I did not list the directory".to_owned(),
        };
        for word in format!("Done. {read}, and {listed}.").split_inclusive(' ') {
            turn.say(word).await?;
        }
        Ok(IdleStateUpdateKind::EndTurn)
    }
}

/// Runs `ls -1` in the session's directory, shown in display terminal `ls`: the number of
/// entries, or `None` when it could not run.
async fn list_dir(turn: &Turn) -> Result<Option<usize>> {
    let terminal = TerminalId::new("ls");
    let cwd = turn.cwd().display().to_string();
    turn.terminal(
        TerminalUpdate::new(terminal.clone())
            .with_command("ls -1")
            .with_cwd(cwd),
    )
    .await?;
    turn.tool_call(
        ToolCallUpdate::new("list_dir").with_content(vec![ToolCallContent::from(
            EmbeddedTerminal::new(terminal.clone()),
        )]),
    )
    .await?;
    let output = std::process::Command::new("ls")
        .arg("-1")
        .current_dir(turn.cwd())
        .output();
    let Ok(output) = output else {
        return Ok(None);
    };
    turn.terminal_output(&terminal, &output.stdout).await?;
    let code = i64::from(output.status.code().unwrap_or(-1));
    turn.terminal(
        TerminalUpdate::new(terminal)
            .with_exit_status(TerminalExitStatus::new().with_exit_code(code)),
    )
    .await?;
    Ok(output.status.success().then(|| {
        output
            .stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
    }))
}
