//! The demo agent: no language model, but every part of a real prompt turn. It streams a
//! thought and a plan (`plan_update` to a client that advertised `plan`, the old `plan` to
//! any other), announces a subagent to a client that advertised `subagents`, asks permission
//! for a tool call, reads and writes a file through the client, runs a command in a client
//! terminal, and answers in chunks, mentioning the client's system prompt (append or
//! override) when it was given one. Every tool call starts with a status; a file read or a
//! terminal the client refuses fails its tool call only, and the turn goes on.

use std::time::Duration;

use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, ClientHandle, Turn};
use acp_types::*;

#[derive(Default)]
pub struct DemoAgent;

/// Serves the demo agent on stdin and stdout; returns the process's exit status. A client
/// that goes away, even mid-turn (our writes meet a closed pipe), ends it quietly with 0, as
/// closing stdin does; any other failure is one plain line on stderr and 1.
#[allow(
    dead_code,
    reason = "not every file that includes this module serves on stdio"
)]
pub fn serve_stdio() -> i32 {
    exit_status(agent::serve_stdio(DemoAgent))
}

/// The process's exit status for how serving ended (see [`serve_stdio`]).
#[allow(dead_code, reason = "used by `serve_stdio` and the v2 demo's")]
pub fn exit_status(served: std::io::Result<()>) -> i32 {
    match served {
        Ok(()) => 0,
        Err(error) if client_went_away(&error) => 0,
        Err(error) => {
            eprintln!("acp-demo-agent: {error}");
            1
        }
    }
}

/// Whether `error` is, at its root, the client's end of the pipe closing.
#[allow(dead_code, reason = "used by `serve_stdio` only")]
fn client_went_away(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = cause {
        if let Some(io) = error.downcast_ref::<std::io::Error>()
            && matches!(io.kind(), BrokenPipe | ConnectionReset)
        {
            return true;
        }
        cause = error.source();
    }
    false
}

impl Agent for DemoAgent {
    async fn initialize(
        &self,
        _request: InitializeRequest,
        _client: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
        response.agent_info = Some(Implementation::new(
            "acp-demo-agent",
            env!("CARGO_PKG_VERSION"),
        ));
        response
            .agent_capabilities
            .prompt_capabilities
            .embedded_context = true;
        // Takes a client's system prompt in both modes (`{"mode": {"override": {}}}`).
        response
            .agent_capabilities
            .session_capabilities
            .system_prompt = Some(
            SessionSystemPromptCapabilities::new().with_mode(
                SessionSystemPromptModeCapabilities::new()
                    .with_override(SessionSystemPromptOverrideCapabilities::new()),
            ),
        );
        Ok(response)
    }

    async fn new_session(
        &self,
        _request: NewSessionRequest,
        _client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let asked: String = request
            .prompt
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        turn.thought(format!(
            "The user asked: {asked:?}. I will look at the project first."
        ))
        .await?;

        // One plan, by id: `plan_update` to a client that advertised `plan`, else the old
        // `plan` update (the runtime's `set_plan` decides).
        let plan = |done: usize| {
            let entries = ["Read notes.txt", "Check the directory", "Write summary.txt"]
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
            PlanItems::new("demo", entries)
        };
        turn.set_plan(plan(0)).await?;

        let workdir = turn.cwd().display().to_string();
        let client_caps = turn.client().capabilities().unwrap_or_default();

        // A client that understands subagents is shown the (pretend) child that reads the
        // notes, running now and idle once the file is read.
        let subagent = format!("{}-reader", turn.id());
        let subagents = client_caps.subagents.is_some();
        if subagents {
            turn.subagent_update(
                SubagentUpdate::new(subagent.as_str())
                    .with_title("Notes reader")
                    .with_description("Reads notes.txt for the summary")
                    .with_state(RunningStateUpdate::new()),
            )
            .await?;
        }

        // 1. Read a file through the client. A client without file access is told so in
        // the answer, instead of being told of an empty file.
        let notes_path = format!("{workdir}/notes.txt");
        let notes = if client_caps.fs.read_text_file {
            turn.tool_call(
                ToolCall::new("read_notes", "Read notes.txt")
                    .with_kind(ToolKind::Read)
                    .with_status(ToolCallStatus::InProgress)
                    .add_location(&notes_path),
            )
            .await?;
            let notes = turn.read_text_file(&notes_path).await;
            turn.tool_call_update(finished("read_notes", notes.as_ref().err()))
                .await?;
            notes.map_err(|error| format!("reading it failed: {error}"))
        } else {
            Err("this client offers no file reading (fs.readTextFile)".to_owned())
        };
        if subagents {
            turn.subagent_update(
                SubagentUpdate::new(subagent.as_str())
                    .with_state(IdleStateUpdate::new(IdleStateUpdateKind::EndTurn)),
            )
            .await?;
        }
        turn.set_plan(plan(1)).await?;

        // 2. Run a command in a client terminal, shown live in the tool call. A client that
        // refuses the terminal (or a command that fails) fails this tool call only, as a
        // failed file read does: the turn goes on.
        if client_caps.terminal {
            turn.tool_call(
                ToolCall::new("list_dir", "ls -1")
                    .with_kind(ToolKind::Execute)
                    .with_status(ToolCallStatus::InProgress),
            )
            .await?;
            let listed = list_dir(&turn).await;
            let mut update = finished("list_dir", listed.as_ref().err());
            update.raw_output = listed.ok();
            turn.tool_call_update(update).await?;
        }
        turn.set_plan(plan(2)).await?;

        // 3. Ask before writing, showing the change, then write through the client.
        let summary_path = format!("{workdir}/summary.txt");
        let mut wrote = false;
        if client_caps.fs.write_text_file {
            let summary = match &notes {
                Ok(notes) => format!(
                    "{} lines of notes; the user asked {asked:?}\n",
                    notes.lines().count()
                ),
                Err(_) => format!("notes.txt could not be read; the user asked {asked:?}\n"),
            };
            // What the file holds now, for the diff; a file that cannot be read (most often:
            // it does not exist yet) is shown as new.
            let previous = if client_caps.fs.read_text_file {
                turn.read_text_file(&summary_path).await.ok()
            } else {
                None
            };
            let mut diff = Diff::new(&summary_path, summary.as_str());
            diff.old_text = previous;

            let title = "Write summary.txt";
            let call = ToolCall::new("write_summary", title)
                .with_kind(ToolKind::Edit)
                .with_status(ToolCallStatus::Pending)
                .add_location(&summary_path);
            turn.tool_call(call).await?;
            let options = vec![
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            ];
            // The request carries what a client shows the user: the title, and the change.
            let mut asked_for = ToolCallUpdate::new("write_summary")
                .with_title(title)
                .add_content(diff.clone());
            asked_for.kind = Some(ToolKind::Edit);
            asked_for.locations = Some(vec![ToolCallLocation::new(&summary_path)]);
            let outcome = turn.request_permission(asked_for, options).await?;
            // Cancelled by `session/cancel`, or by the client answering `cancelled`, in either
            // order (the runtime marks the turn for both).
            if turn.is_cancelled() {
                return Ok(StopReason::Cancelled.into());
            }
            let allowed =
                matches!(&outcome, RequestPermissionOutcome::Selected(s) if s.option_id == "allow");
            if allowed {
                turn.write_text_file(&summary_path, summary).await?;
                wrote = true;
                turn.tool_call_update(
                    ToolCallUpdate::new("write_summary")
                        .with_status(ToolCallStatus::Completed)
                        .add_content(diff),
                )
                .await?;
            } else {
                turn.tool_call_update(
                    ToolCallUpdate::new("write_summary").with_status(ToolCallStatus::Failed),
                )
                .await?;
            }
        }
        turn.set_plan(plan(3)).await?;

        let outcome = if wrote {
            "and I wrote summary.txt"
        } else {
            "and I did not write summary.txt"
        };
        // The system prompt the client gave (checked by the runtime against the modes
        // advertised above): a real agent would put it into its model's instructions.
        let session = turn.snapshot();
        let instructions = match session.as_ref().and_then(|s| s.system_prompt()) {
            Some(prompt) => {
                let text: String = prompt
                    .content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect();
                let how = match prompt.mode {
                    SystemPromptMode::Override => "instead of my own instructions",
                    _ => "after my own instructions",
                };
                format!(" Your system prompt, {how}: {text:?}.")
            }
            None => String::new(),
        };
        let read = match &notes {
            Ok(notes) => format!("notes.txt has {} lines", notes.lines().count()),
            Err(why) => format!("I could not read notes.txt: {why}"),
        };
        for word in format!("Done. {read}, {outcome}.{instructions}").split_inclusive(' ') {
            turn.message(word).await?;
        }
        Ok(turn.stop_reason(StopReason::EndTurn).into())
    }
}

/// The update that ends a tool call: completed, or failed with why as its content.
fn finished(id: &str, error: Option<&acp_runtime::Error>) -> ToolCallUpdate {
    match error {
        None => ToolCallUpdate::new(id).with_status(ToolCallStatus::Completed),
        Some(error) => ToolCallUpdate::new(id)
            .with_status(ToolCallStatus::Failed)
            .add_content(ContentBlock::from(error.to_string())),
    }
}

/// Runs `ls -1` in a client terminal embedded in the `list_dir` tool call, and releases it;
/// the tool call's raw output (the exit status).
async fn list_dir(turn: &Turn) -> Result<serde_json::Value> {
    let terminal = turn.create_terminal("ls", ["-1"]).await?;
    turn.tool_call_update(
        ToolCallUpdate::new("list_dir").add_content(terminal.tool_call_content()),
    )
    .await?;
    let result = terminal.run_with_timeout(Duration::from_secs(10)).await;
    terminal.release().await?;
    Ok(serde_json::json!({ "exitStatus": result?.exit_status }))
}
