//! An agent that plays scripted turns and records what the client answered: for testing
//! clients.

use std::collections::VecDeque;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_jsonrpc::ErrorCode;
use acp_runtime::agent::{Agent, ClientHandle, SessionClient, Turn};
use acp_runtime::{Error, Result};
use acp_types::*;

use crate::subagent_step::{self, SubagentStep};

/// One step of a scripted prompt turn. Build them with the constructors
/// ([`Step::message`], [`Step::tool_call`], [`Step::permission`], ...).
///
/// Steps run in order. A call to the client that fails (an error answer, a capability the
/// client did not advertise) is recorded as an [`AgentEvent`] and the turn goes on; a
/// notification that cannot be sent ends the turn with the error.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Step {
    /// Sends a `session/update`.
    Update(SessionUpdate),
    /// Sends a `session/update` under another session id (a subagent's, say, to interleave
    /// the traffic of several; [`Step::Subagent`] plays one child's whole).
    UpdateOn(SessionId, SessionUpdate),
    /// Asks permission, then plays the steps of the chosen branch; a `cancelled` outcome ends
    /// the turn with `cancelled`.
    Permission(PermissionStep),
    /// Reads a file through the client; a relative path is taken from the session's `cwd`.
    ReadFile {
        /// The file.
        path: String,
        /// 1-based first line.
        line: Option<u32>,
        /// How many lines.
        limit: Option<u32>,
    },
    /// Writes a file through the client; a relative path is taken from the session's `cwd`.
    WriteFile {
        /// The file.
        path: String,
        /// Its new content.
        content: String,
    },
    /// Runs a command in a client terminal: `terminal/create`, the tool call embedding the
    /// terminal if one is given, `terminal/wait_for_exit`, `terminal/output`,
    /// `terminal/release`.
    Terminal(TerminalStep),
    /// Waits.
    Sleep(Duration),
    /// Announces a subagent on the turn's session, plays its traffic on its own session id,
    /// then reports it idle (see [`SubagentStep`]).
    Subagent(SubagentStep),
    /// Waits until the client cancels the turn, then ends it with `cancelled`.
    WaitForCancel,
    /// Ends the turn with this stop reason (the turn ends with `end_turn` after its last step
    /// otherwise).
    End(StopReason),
    /// Ends the turn with a JSON-RPC error instead of a stop reason.
    Fail {
        /// The error code.
        code: i32,
        /// The error message.
        message: String,
    },
}

/// A permission request of a scripted turn, with what to do for each answer.
#[derive(Clone, Debug)]
pub struct PermissionStep {
    /// The tool call the permission is for.
    pub tool_call: ToolCallUpdate,
    /// The options offered.
    pub options: Vec<PermissionOption>,
    /// Played when an `allow_*` option is chosen.
    pub on_allow: Vec<Step>,
    /// Played when a `reject_*` option (or an unknown one) is chosen.
    pub on_reject: Vec<Step>,
}

impl PermissionStep {
    /// Sets the steps played when the user allows.
    pub fn on_allow(mut self, steps: impl IntoIterator<Item = Step>) -> PermissionStep {
        self.on_allow = steps.into_iter().collect();
        self
    }

    /// Sets the steps played when the user rejects.
    pub fn on_reject(mut self, steps: impl IntoIterator<Item = Step>) -> PermissionStep {
        self.on_reject = steps.into_iter().collect();
        self
    }

    /// Replaces the options offered.
    pub fn options(mut self, options: Vec<PermissionOption>) -> PermissionStep {
        self.options = options;
        self
    }
}

impl From<PermissionStep> for Step {
    fn from(step: PermissionStep) -> Step {
        Step::Permission(step)
    }
}

/// A command run in a client terminal by a scripted turn.
#[derive(Clone, Debug)]
pub struct TerminalStep {
    /// The command.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The output byte limit asked of the client.
    pub output_byte_limit: Option<u64>,
    /// A tool call sent right after `terminal/create`, with the terminal appended to its
    /// content.
    pub tool_call: Option<ToolCall>,
}

impl TerminalStep {
    /// Shows the terminal in this tool call (sent once the terminal exists).
    pub fn in_tool_call(mut self, call: ToolCall) -> TerminalStep {
        self.tool_call = Some(call);
        self
    }

    /// Asks the client to keep at most `bytes` of output.
    pub fn output_byte_limit(mut self, bytes: u64) -> TerminalStep {
        self.output_byte_limit = Some(bytes);
        self
    }
}

impl From<SubagentStep> for Step {
    fn from(step: SubagentStep) -> Step {
        Step::Subagent(step)
    }
}

impl From<TerminalStep> for Step {
    fn from(step: TerminalStep) -> Step {
        Step::Terminal(step)
    }
}

impl Step {
    /// A chunk of the agent's reply.
    pub fn message(content: impl Into<ContentBlock>) -> Step {
        Step::Update(SessionUpdate::agent_message_chunk(content))
    }

    /// A chunk of the agent's reasoning.
    pub fn thought(content: impl Into<ContentBlock>) -> Step {
        Step::Update(SessionUpdate::agent_thought_chunk(content))
    }

    /// A new tool call.
    pub fn tool_call(call: ToolCall) -> Step {
        Step::Update(SessionUpdate::ToolCall(call))
    }

    /// Progress of a tool call.
    pub fn tool_call_update(update: ToolCallUpdate) -> Step {
        Step::Update(SessionUpdate::ToolCallUpdate(update))
    }

    /// The plan (the complete list).
    pub fn plan(entries: Vec<PlanEntry>) -> Step {
        Step::Update(SessionUpdate::Plan(Plan::new(entries)))
    }

    /// Any session update.
    pub fn update(update: SessionUpdate) -> Step {
        Step::Update(update)
    }

    /// A `session/update` under `session_id` instead of the turn's session.
    pub fn update_on(session_id: impl Into<SessionId>, update: SessionUpdate) -> Step {
        Step::UpdateOn(session_id.into(), update)
    }

    /// Asks permission for the tool call `tool_call_id`, offering `allow` (allow once) and
    /// `reject` (reject once). Chain [`PermissionStep::on_allow`] /
    /// [`PermissionStep::on_reject`], then `.into()` a [`Step`].
    pub fn permission(tool_call_id: impl Into<ToolCallId>) -> PermissionStep {
        PermissionStep {
            tool_call: ToolCallUpdate::new(tool_call_id),
            options: vec![
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            ],
            on_allow: Vec::new(),
            on_reject: Vec::new(),
        }
    }

    /// Reads a whole file through the client.
    pub fn read_file(path: impl Into<String>) -> Step {
        Step::ReadFile {
            path: path.into(),
            line: None,
            limit: None,
        }
    }

    /// Writes a file through the client.
    pub fn write_file(path: impl Into<String>, content: impl Into<String>) -> Step {
        Step::WriteFile {
            path: path.into(),
            content: content.into(),
        }
    }

    /// Runs `command` with `args` in a client terminal. Chain
    /// [`TerminalStep::in_tool_call`] to show it, then `.into()` a [`Step`].
    pub fn terminal(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> TerminalStep {
        TerminalStep {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            output_byte_limit: None,
            tool_call: None,
        }
    }

    /// Waits `millis` milliseconds.
    pub fn sleep(millis: u64) -> Step {
        Step::Sleep(Duration::from_millis(millis))
    }

    /// Waits until the client cancels the turn.
    pub fn wait_for_cancel() -> Step {
        Step::WaitForCancel
    }

    /// Ends the turn with `reason`.
    pub fn end(reason: StopReason) -> Step {
        Step::End(reason)
    }

    /// Ends the turn with a JSON-RPC error.
    pub fn fail(code: i32, message: impl Into<String>) -> Step {
        Step::Fail {
            code,
            message: message.into(),
        }
    }
}

/// What happened during the scripted turns, as the [`ScriptedAgent`] saw it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A prompt arrived.
    Prompt(PromptRequest),
    /// The client answered a permission request.
    Permission {
        /// The tool call it was for.
        tool_call_id: ToolCallId,
        /// The answer (or the error).
        outcome: std::result::Result<RequestPermissionOutcome, String>,
    },
    /// A file read through the client.
    FileRead {
        /// The path asked for.
        path: String,
        /// The content (or the error).
        result: std::result::Result<String, String>,
    },
    /// A file written through the client.
    FileWritten {
        /// The path.
        path: String,
        /// Success (or the error).
        result: std::result::Result<(), String>,
    },
    /// A command run in a client terminal.
    Terminal {
        /// The command.
        command: String,
        /// Its output and exit status (or the error).
        result: std::result::Result<TerminalOutputResponse, String>,
    },
    /// The client cancelled a turn.
    Cancelled(SessionId),
}

struct Config {
    initialize: InitializeResponse,
    modes: Option<SessionModeState>,
    config_options: Option<Vec<SessionConfigOption>>,
    history: Vec<SessionUpdate>,
}

struct Inner {
    config: Mutex<Config>,
    turns: Mutex<VecDeque<Vec<Step>>>,
    next_session: AtomicUsize,
    events: Mutex<Vec<AgentEvent>>,
}

/// An [`Agent`] that plays scripted prompt turns: the agent half of a client test.
///
/// - `initialize` answers the configured response (default: no capability, agent info
///   `acp-test`).
/// - `session/new` answers ids `session-1`, `session-2`... with the configured modes and
///   config options; `session/load` (advertised by [`load_session`](Self::load_session))
///   replays the configured history first.
/// - Each `session/prompt` plays the next queued [`turn`](Self::turn); once they are used up,
///   a prompt ends at once with `end_turn`.
/// - `session/set_mode` and `session/set_config_option` are checked and recorded by the
///   runtime, as for any agent.
///
/// Clones share the script and the records.
///
/// ```
/// use acp_test::{ScriptedAgent, Step};
/// use acp_runtime::prelude::*;
///
/// let agent = ScriptedAgent::new().turn([
///     Step::thought("Looking at the file first."),
///     Step::tool_call(ToolCall::new("call_1", "Read notes.txt").with_kind(ToolKind::Read)),
///     Step::read_file("notes.txt"),
///     Step::permission("call_1")
///         .on_allow([Step::write_file("notes.txt", "three\n")])
///         .on_reject([Step::message("Fine, I will not touch it.")])
///         .into(),
///     Step::message("Done."),
/// ]);
/// # drop(agent);
/// ```
#[derive(Clone)]
pub struct ScriptedAgent {
    inner: Arc<Inner>,
}

impl Default for ScriptedAgent {
    fn default() -> Self {
        ScriptedAgent::new()
    }
}

impl ScriptedAgent {
    /// An agent without capabilities and without turns.
    pub fn new() -> ScriptedAgent {
        let mut initialize = InitializeResponse::new(ProtocolVersion::LATEST);
        initialize.agent_info = Some(Implementation::new("acp-test", env!("CARGO_PKG_VERSION")));
        ScriptedAgent {
            inner: Arc::new(Inner {
                config: Mutex::new(Config {
                    initialize,
                    modes: None,
                    config_options: None,
                    history: Vec::new(),
                }),
                turns: Mutex::new(VecDeque::new()),
                next_session: AtomicUsize::new(0),
                events: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Answers `initialize` with `response` (the runtime fills in the negotiated version).
    pub fn initialize_response(self, response: InitializeResponse) -> ScriptedAgent {
        self.inner.config.lock().unwrap().initialize = response;
        self
    }

    /// Changes the `initialize` answer in place, e.g. to add capabilities.
    pub fn on_initialize(self, change: impl FnOnce(&mut InitializeResponse)) -> ScriptedAgent {
        change(&mut self.inner.config.lock().unwrap().initialize);
        self
    }

    /// Advertises `loadSession` and replays `history` on every `session/load`.
    pub fn load_session(self, history: impl IntoIterator<Item = SessionUpdate>) -> ScriptedAgent {
        {
            let mut config = self.inner.config.lock().unwrap();
            config.initialize.agent_capabilities.load_session = true;
            config.history = history.into_iter().collect();
        }
        self
    }

    /// The modes every new or loaded session advertises.
    pub fn modes(self, modes: SessionModeState) -> ScriptedAgent {
        self.inner.config.lock().unwrap().modes = Some(modes);
        self
    }

    /// The config options every new or loaded session advertises.
    pub fn config_options(self, options: Vec<SessionConfigOption>) -> ScriptedAgent {
        self.inner.config.lock().unwrap().config_options = Some(options);
        self
    }

    /// Queues the steps of the next prompt turn.
    pub fn turn(self, steps: impl IntoIterator<Item = Step>) -> ScriptedAgent {
        self.inner
            .turns
            .lock()
            .unwrap()
            .push_back(steps.into_iter().collect());
        self
    }

    /// What happened so far, in order.
    pub fn events(&self) -> Vec<AgentEvent> {
        self.inner.events.lock().unwrap().clone()
    }

    fn record(&self, event: AgentEvent) {
        self.inner.events.lock().unwrap().push(event);
    }

    fn next_session_id(&self) -> SessionId {
        let n = self.inner.next_session.fetch_add(1, Ordering::Relaxed) + 1;
        SessionId::new(format!("session-{n}"))
    }

    /// A relative path of a script step, resolved against the session's directory.
    fn resolve(turn: &Turn, path: &str) -> String {
        if Path::new(path).is_absolute() {
            path.to_owned()
        } else {
            turn.cwd().join(path).display().to_string()
        }
    }

    async fn play(&self, steps: Vec<Step>, turn: &Turn) -> Result<StopReason> {
        let mut queue: VecDeque<Step> = steps.into();
        while let Some(step) = queue.pop_front() {
            match step {
                Step::Update(update) => turn.update(update).await?,
                Step::UpdateOn(session, update) => {
                    turn.client().session(session).update(update).await?
                }
                Step::Permission(step) => {
                    let tool_call_id = step.tool_call.tool_call_id.clone();
                    let outcome = turn
                        .request_permission(step.tool_call, step.options.clone())
                        .await;
                    self.record(AgentEvent::Permission {
                        tool_call_id,
                        outcome: outcome
                            .as_ref()
                            .map(Clone::clone)
                            .map_err(|e| e.to_string()),
                    });
                    let branch = match outcome {
                        Ok(RequestPermissionOutcome::Cancelled) => {
                            return Ok(StopReason::Cancelled);
                        }
                        Ok(RequestPermissionOutcome::Selected(selected)) => {
                            let allowed = step.options.iter().any(|o| {
                                o.option_id == selected.option_id
                                    && matches!(
                                        o.kind,
                                        PermissionOptionKind::AllowOnce
                                            | PermissionOptionKind::AllowAlways
                                    )
                            });
                            if allowed {
                                step.on_allow
                            } else {
                                step.on_reject
                            }
                        }
                        _ => step.on_reject,
                    };
                    for step in branch.into_iter().rev() {
                        queue.push_front(step);
                    }
                }
                Step::ReadFile { path, line, limit } => {
                    let path = Self::resolve(turn, &path);
                    let mut request = ReadTextFileRequest::new(turn.id().clone(), path.clone());
                    request.line = line;
                    request.limit = limit;
                    let result = turn.read_text_file_with(request).await;
                    self.record(AgentEvent::FileRead {
                        path,
                        result: result.map_err(|e| e.to_string()),
                    });
                }
                Step::WriteFile { path, content } => {
                    let path = Self::resolve(turn, &path);
                    let result = turn.write_text_file(path.clone(), content).await;
                    self.record(AgentEvent::FileWritten {
                        path,
                        result: result.map_err(|e| e.to_string()),
                    });
                }
                Step::Terminal(step) => {
                    let command = step.command.clone();
                    let result = run_terminal(turn.session(), step).await;
                    if let Err(Error::ConnectionClosed) = result {
                        return Err(Error::ConnectionClosed);
                    }
                    self.record(AgentEvent::Terminal {
                        command,
                        result: result.map_err(|e| e.to_string()),
                    });
                }
                Step::Sleep(duration) => {
                    smol::Timer::after(duration).await;
                }
                Step::Subagent(step) => subagent_step::play(turn.session().clone(), step).await?,
                Step::WaitForCancel => {
                    turn.cancelled().await;
                    return Ok(StopReason::Cancelled);
                }
                Step::End(reason) => return Ok(reason),
                Step::Fail { code, message } => return Err(Error::rpc(ErrorCode(code), message)),
            }
        }
        Ok(StopReason::EndTurn)
    }
}

async fn run_terminal(
    session: &SessionClient,
    step: TerminalStep,
) -> Result<TerminalOutputResponse> {
    let mut request = CreateTerminalRequest::new(session.id().clone(), step.command);
    request.args = Some(step.args);
    request.output_byte_limit = step.output_byte_limit;
    let terminal = session.create_terminal_with(request).await?;
    if let Some(call) = step.tool_call {
        session
            .tool_call(call.add_content(terminal.tool_call_content()))
            .await?;
    }
    terminal.wait_for_exit().await?;
    let output = terminal.output().await?;
    terminal.release().await?;
    Ok(output)
}

impl Agent for ScriptedAgent {
    async fn initialize(
        &self,
        _request: InitializeRequest,
        _client: &ClientHandle,
    ) -> Result<InitializeResponse> {
        Ok(self.inner.config.lock().unwrap().initialize.clone())
    }

    async fn new_session(
        &self,
        _request: NewSessionRequest,
        _client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        let id = self.next_session_id();
        let config = self.inner.config.lock().unwrap();
        let mut response = NewSessionResponse::new(id);
        response.modes = config.modes.clone();
        response.config_options = config.config_options.clone();
        Ok(response)
    }

    async fn load_session(
        &self,
        _request: LoadSessionRequest,
        session: SessionClient,
    ) -> Result<LoadSessionResponse> {
        let (history, modes, config_options) = {
            let config = self.inner.config.lock().unwrap();
            (
                config.history.clone(),
                config.modes.clone(),
                config.config_options.clone(),
            )
        };
        session.replay(history).await?;
        let mut response = LoadSessionResponse::new();
        response.modes = modes;
        response.config_options = config_options;
        Ok(response)
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        self.record(AgentEvent::Prompt(request));
        let steps = self.inner.turns.lock().unwrap().pop_front();
        let stop = self.play(steps.unwrap_or_default(), &turn).await;
        if turn.is_cancelled() {
            self.record(AgentEvent::Cancelled(turn.id().clone()));
        }
        Ok(PromptResponse::new(stop?))
    }
}

impl fmt::Debug for ScriptedAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedAgent")
            .field("queued_turns", &self.inner.turns.lock().unwrap().len())
            .field("events", &self.inner.events.lock().unwrap().len())
            .finish()
    }
}
