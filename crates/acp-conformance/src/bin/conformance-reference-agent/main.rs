//! A correct ACP agent built on `acp_runtime::agent`, for the conformance checker's own tests:
//! every check passes against it. No language model: a turn thinks aloud, reads `notes.txt`
//! through the client, runs a command in a client terminal, asks permission to write a
//! summary, writes it, and answers, using each client capability only when it is advertised.
//! Sessions remember their history in memory, so `session/load` can replay it; they offer two
//! modes and a model selector. It advertises `session/list`, `session/resume` (no replay),
//! `session/close`, `session/delete` and `logout`.
//!
//! With the feature `unstable-protocol-v2` and `--router`, it serves v1 and v2 through
//! acp-runtime's version router: a client asking for version 2 or above gets the v2 side
//! (`v2.rs`). Without `--router` it is the v1 agent alone (through the router, a v1
//! `initialize` asking for a version above 2 reaches the v2 side, which refuses its v1 params:
//! `init.version.future` fails, see docs/conformance.md).

#![forbid(unsafe_code)]

#[cfg(feature = "unstable-protocol-v2")]
mod v2;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, ClientHandle, SessionClient, Turn};
use acp_types::*;

#[derive(Default)]
struct ReferenceAgent {
    /// Each session's history (for replay).
    sessions: Mutex<HashMap<SessionId, Stored>>,
}

#[derive(Clone, Default)]
struct Stored {
    history: Vec<SessionUpdate>,
}

fn modes() -> SessionModeState {
    SessionModeState::new(
        "ask",
        vec![
            SessionMode::new("ask", "Ask before changes"),
            SessionMode::new("code", "Change files freely"),
        ],
    )
}

fn config_options() -> Vec<SessionConfigOption> {
    let mut model = SessionConfigOption::new(
        "model",
        "Model",
        SessionConfigSelect::new(
            "quick",
            vec![
                SessionConfigSelectOption::new("quick", "Quick"),
                SessionConfigSelectOption::new("thorough", "Thorough"),
            ],
        ),
    );
    model.category = Some(SessionConfigOptionCategory::Model);
    vec![model]
}

impl ReferenceAgent {
    fn record(&self, session: &SessionId, update: SessionUpdate) {
        if let Some(stored) = self.sessions.lock().unwrap().get_mut(session) {
            stored.history.push(update);
        }
    }
}

impl Agent for ReferenceAgent {
    async fn initialize(
        &self,
        _request: InitializeRequest,
        _client: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
        response.agent_info = Some(Implementation::new(
            "conformance-reference-agent",
            env!("CARGO_PKG_VERSION"),
        ));
        let caps = &mut response.agent_capabilities;
        caps.load_session = true;
        caps.prompt_capabilities.image = true;
        caps.prompt_capabilities.audio = true;
        caps.prompt_capabilities.embedded_context = true;
        let sessions = &mut caps.session_capabilities;
        sessions.list = Some(Default::default());
        sessions.resume = Some(Default::default());
        sessions.close = Some(Default::default());
        sessions.delete = Some(Default::default());
        caps.auth.logout = Some(Default::default());
        Ok(response)
    }

    async fn new_session(
        &self,
        _request: NewSessionRequest,
        _client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        let id = agent::new_session_id();
        self.sessions
            .lock()
            .unwrap()
            .insert(id.clone(), Stored::default());
        let mut response = NewSessionResponse::new(id);
        response.modes = Some(modes());
        response.config_options = Some(config_options());
        Ok(response)
    }

    async fn load_session(
        &self,
        request: LoadSessionRequest,
        session: SessionClient,
    ) -> Result<LoadSessionResponse> {
        let stored = self
            .sessions
            .lock()
            .unwrap()
            .get(&request.session_id)
            .cloned();
        let Some(stored) = stored else {
            return Err(acp_runtime::Error::rpc(
                acp_runtime::codes::RESOURCE_NOT_FOUND,
                format!("no stored session `{}`", request.session_id),
            ));
        };
        session.replay(stored.history).await?;
        Ok(LoadSessionResponse::new()
            .with_modes(modes())
            .with_config_options(config_options()))
    }

    async fn resume_session(
        &self,
        request: ResumeSessionRequest,
        _session: SessionClient,
    ) -> Result<ResumeSessionResponse> {
        if !self
            .sessions
            .lock()
            .unwrap()
            .contains_key(&request.session_id)
        {
            return Err(acp_runtime::Error::rpc(
                acp_runtime::codes::RESOURCE_NOT_FOUND,
                format!("no stored session `{}`", request.session_id),
            ));
        }
        // No replay: the history stays where it is.
        let mut response = ResumeSessionResponse::new();
        response.modes = Some(modes());
        response.config_options = Some(config_options());
        Ok(response)
    }

    async fn delete_session(
        &self,
        request: DeleteSessionRequest,
        _session: SessionClient,
    ) -> Result<DeleteSessionResponse> {
        // Deleting a session that never existed succeeds too.
        self.sessions.lock().unwrap().remove(&request.session_id);
        Ok(DeleteSessionResponse::new())
    }

    async fn logout(
        &self,
        _request: LogoutRequest,
        _client: &ClientHandle,
    ) -> Result<LogoutResponse> {
        Ok(LogoutResponse::new())
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let id = turn.id().clone();
        for block in &request.prompt {
            self.record(&id, SessionUpdate::user_message_chunk(block.clone()));
        }
        let asked: String = request
            .prompt
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        turn.thought(format!("The user asked {asked:?}.")).await?;
        let cancelled = || turn.is_cancelled();
        let workdir = turn.cwd().display().to_string();
        let caps = turn.client().capabilities().unwrap_or_default();

        let mut notes = String::new();
        if caps.fs.read_text_file && !cancelled() {
            let path = format!("{workdir}/notes.txt");
            turn.tool_call(
                ToolCall::new("read_notes", "Read notes.txt")
                    .with_kind(ToolKind::Read)
                    .add_location(&path),
            )
            .await?;
            let read = turn.read_text_file(&path).await;
            let status = if read.is_ok() {
                ToolCallStatus::Completed
            } else {
                ToolCallStatus::Failed
            };
            notes = read.unwrap_or_default();
            turn.tool_call_update(ToolCallUpdate::new("read_notes").with_status(status))
                .await?;
        }
        if caps.terminal && !cancelled() {
            let terminal = turn.create_terminal("ls", ["-1"]).await?;
            turn.tool_call(
                ToolCall::new("list", "ls -1")
                    .with_kind(ToolKind::Execute)
                    .with_status(ToolCallStatus::InProgress)
                    .add_content(terminal.tool_call_content()),
            )
            .await?;
            let ran = terminal.run_with_timeout(Duration::from_secs(10)).await;
            terminal.release().await?;
            let status = if ran.is_ok() {
                ToolCallStatus::Completed
            } else {
                ToolCallStatus::Failed
            };
            turn.tool_call_update(ToolCallUpdate::new("list").with_status(status))
                .await?;
        }
        if caps.fs.write_text_file && !cancelled() {
            let path = format!("{workdir}/summary.txt");
            turn.tool_call(
                ToolCall::new("write_summary", "Write summary.txt")
                    .with_kind(ToolKind::Edit)
                    .with_status(ToolCallStatus::Pending)
                    .add_location(&path),
            )
            .await?;
            let outcome = turn
                .request_permission(
                    ToolCallUpdate::new("write_summary"),
                    vec![
                        PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                        PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                    ],
                )
                .await?;
            let allowed =
                matches!(&outcome, RequestPermissionOutcome::Selected(s) if s.option_id == "allow");
            if allowed && !cancelled() {
                let summary = format!("{} lines of notes\n", notes.lines().count());
                turn.write_text_file(&path, summary).await?;
            }
            let status = if allowed && !cancelled() {
                ToolCallStatus::Completed
            } else {
                ToolCallStatus::Failed
            };
            turn.tool_call_update(ToolCallUpdate::new("write_summary").with_status(status))
                .await?;
        }
        if cancelled() {
            return Ok(StopReason::Cancelled.into());
        }
        let answer = format!("Hello! notes.txt has {} lines.", notes.lines().count());
        turn.message(answer.as_str()).await?;
        self.record(&id, SessionUpdate::agent_message_chunk(answer.as_str()));
        Ok(StopReason::EndTurn.into())
    }
}

fn main() -> std::io::Result<()> {
    // A system prompt in `append` mode only: the runtime answers any other mode -32602.
    let options = agent::AgentOptions::default().with_system_prompt();
    #[cfg(feature = "unstable-protocol-v2")]
    if std::env::args().nth(1).as_deref() == Some("--router") {
        return acp_runtime::router::router()
            .with_v1(ReferenceAgent::default())
            .with_v1_options(options)
            .with_v2(v2::ReferenceAgentV2::default())
            .serve_stdio();
    }
    agent::serve_stdio_with(ReferenceAgent::default(), options)
}
