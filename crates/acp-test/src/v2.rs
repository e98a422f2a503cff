//! The kit for protocol v2 (feature `unstable-protocol-v2`): a recorded in-memory pair of a v2
//! agent and this runtime's v2 client ([`connect`]), a [`ScriptedAgent`] that plays v2 turns
//! (to test clients), and a [`ScriptedClient`] that answers permission requests from a script
//! and rebuilds the conversation (to test agents). Transcripts, snapshots and the normalizer
//! are the kit's own; v2's random `messageId`s and `idempotencyKey`s are normalized too.
//!
//! ```
//! use acp_runtime::prelude::v2::*;
//! use acp_test::v2::{self, ScriptedAgent, ScriptedClient, Step};
//!
//! smol::block_on(async {
//!     let agent = ScriptedAgent::new().turn([Step::say("Hello"), Step::end(IdleStateUpdateKind::EndTurn)]);
//!     let client = ScriptedClient::new();
//!     let pair = v2::connect(agent, client.clone());
//!     pair.agent()
//!         .initialize(InitializeRequest::new(ProtocolVersion::V2, Implementation::new("test", "1")))
//!         .await
//!         .unwrap();
//!     let session = pair.agent().new_session(NewSessionRequest::new("/")).await.unwrap();
//!     let turn = pair.agent()
//!         .prompt(PromptRequest::new(session.session_id, vec![ContentBlock::from("Hi")]))
//!         .await
//!         .unwrap();
//!     assert_eq!(turn.finished().await.unwrap(), IdleStateUpdateKind::EndTurn);
//!     assert_eq!(client.said(), ["Hi", "Hello"]);
//!     let transcript = pair.finish().await;
//!     assert_eq!(transcript.entries()[0].method(), Some("initialize"));
//! });
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use acp_jsonrpc::memory;
use acp_runtime::Result;
use acp_runtime::acp_types::v2::*;
use acp_runtime::agent::{self, AgentOptions};
use acp_runtime::client::v2::{self as client_v2, Conversation};

use crate::normalize::Normalizer;
use crate::pair::{AgentSide, Pair};
use crate::transcript::Recorder;

impl AgentSide for client_v2::Agent {
    fn close(&self) {
        client_v2::Agent::close(self);
    }
}

/// Connects `client` to the v2 `agent` over an in-memory pipe, recording the traffic as the
/// agent's end sees it; the pair's normalizer numbers message ids and idempotency keys too.
pub fn connect<A: agent::v2::Agent, C: client_v2::Client>(
    agent: A,
    client: C,
) -> Pair<client_v2::Agent> {
    let (client_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let recorder = Recorder::agent_side();
    let options = AgentOptions::from(recorder.connection_options());
    let (_client, agent_driver) =
        agent::v2::serve(agent, agent_end.reader, agent_end.writer, options);
    let (handle, client_driver) = client_v2::connect(
        client,
        client_end.reader,
        client_end.writer,
        Default::default(),
    );
    Pair::in_memory(
        handle,
        recorder,
        Normalizer::new().message_ids(true),
        smol::spawn(client_driver),
        smol::spawn(agent_driver),
    )
}

/// One step of a [`ScriptedAgent`]'s turn.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Step {
    /// A chunk of the agent's reply (one message per turn, as `Turn::say` makes it).
    Say(String),
    /// A chunk of the agent's thought.
    Think(String),
    /// A tool call upsert.
    ToolCall(ToolCallUpdate),
    /// A plan upsert.
    Plan(PlanUpdate),
    /// A display terminal's upsert.
    Terminal(TerminalUpdate),
    /// Output of a display terminal, as bytes (sent base64-encoded).
    TerminalOutput(TerminalId, Vec<u8>),
    /// Any other update.
    Update(SessionUpdate),
    /// A permission request; the steps after it depend on the answer.
    Permission {
        /// The request's title.
        title: String,
        /// The options offered.
        options: Vec<PermissionOption>,
        /// Played when an option of kind `allow_*` is chosen.
        on_allow: Vec<Step>,
        /// Played otherwise (a reject option, or `cancelled`).
        on_reject: Vec<Step>,
    },
    /// Waits until the client cancels the turn.
    WaitForCancel,
    /// Ends the turn (the runtime turns a cancelled turn's end into `cancelled`).
    End(IdleStateUpdateKind),
    /// Fails the turn with this JSON-RPC error (the turn ends idle `error`).
    Fail(i32, String),
}

impl Step {
    /// [`Step::Say`].
    pub fn say(text: impl Into<String>) -> Step {
        Step::Say(text.into())
    }

    /// [`Step::Think`].
    pub fn think(text: impl Into<String>) -> Step {
        Step::Think(text.into())
    }

    /// [`Step::End`].
    pub fn end(reason: IdleStateUpdateKind) -> Step {
        Step::End(reason)
    }

    /// A permission request with the usual two options, `allow` and `reject`.
    pub fn permission(
        title: impl Into<String>,
        on_allow: impl IntoIterator<Item = Step>,
        on_reject: impl IntoIterator<Item = Step>,
    ) -> Step {
        Step::Permission {
            title: title.into(),
            options: vec![
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            ],
            on_allow: on_allow.into_iter().collect(),
            on_reject: on_reject.into_iter().collect(),
        }
    }
}

/// A v2 agent that plays scripted turns, one per prompt, in order; a prompt beyond the script
/// ends `end_turn` at once. Sessions are named `sess-1`, `sess-2`, ... Cheap to clone: clones
/// share the script and the record of prompts.
#[derive(Clone, Debug, Default)]
pub struct ScriptedAgent {
    turns: Arc<Mutex<VecDeque<Vec<Step>>>>,
    prompts: Arc<Mutex<Vec<PromptRequest>>>,
    sessions: Arc<Mutex<usize>>,
}

impl ScriptedAgent {
    /// An agent with no turns scripted.
    pub fn new() -> ScriptedAgent {
        ScriptedAgent::default()
    }

    /// Adds a turn, played for the next prompt not yet given a turn.
    pub fn turn(self, steps: impl IntoIterator<Item = Step>) -> ScriptedAgent {
        lock(&self.turns).push_back(steps.into_iter().collect());
        self
    }

    /// The prompts received, in order.
    pub fn prompts(&self) -> Vec<PromptRequest> {
        lock(&self.prompts).clone()
    }
}

impl agent::v2::Agent for ScriptedAgent {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &agent::v2::Client,
    ) -> Result<NewSessionResponse> {
        let mut count = lock(&self.sessions);
        *count += 1;
        Ok(NewSessionResponse::new(format!("sess-{count}")))
    }

    async fn prompt(
        &self,
        request: PromptRequest,
        turn: agent::v2::Turn,
    ) -> Result<IdleStateUpdateKind> {
        lock(&self.prompts).push(request);
        let steps = lock(&self.turns).pop_front().unwrap_or_default();
        play(&turn, steps).await
    }
}

/// Plays `steps` in `turn`; a permission's branch is played in place of the rest's head.
async fn play(turn: &agent::v2::Turn, steps: Vec<Step>) -> Result<IdleStateUpdateKind> {
    let mut steps: VecDeque<Step> = steps.into();
    while let Some(step) = steps.pop_front() {
        match step {
            Step::Say(text) => turn.say(text).await?,
            Step::Think(text) => turn.think(text).await?,
            Step::ToolCall(update) => turn.tool_call(update).await?,
            Step::Plan(plan) => turn.plan(plan).await?,
            Step::Terminal(update) => turn.terminal(update).await?,
            Step::TerminalOutput(id, bytes) => turn.terminal_output(&id, &bytes).await?,
            Step::Update(update) => turn.update(update).await?,
            Step::Permission {
                title,
                options,
                on_allow,
                on_reject,
            } => {
                let request = RequestPermissionRequest::new(
                    turn.session().id().clone(),
                    title,
                    options.clone(),
                );
                let outcome = turn.request_permission(request).await?;
                let allowed = matches!(&outcome, RequestPermissionOutcome::Selected(chosen)
                    if options.iter().any(|o| o.option_id == chosen.option_id
                        && matches!(o.kind, PermissionOptionKind::AllowOnce | PermissionOptionKind::AllowAlways)));
                let branch = if allowed { on_allow } else { on_reject };
                for step in branch.into_iter().rev() {
                    steps.push_front(step);
                }
            }
            Step::WaitForCancel => turn.cancelled().await,
            Step::End(reason) => return Ok(reason),
            Step::Fail(code, message) => {
                return Err(acp_runtime::Error::rpc(
                    acp_jsonrpc::ErrorCode(code),
                    message,
                ));
            }
        }
    }
    Ok(IdleStateUpdateKind::EndTurn)
}

/// How a [`ScriptedClient`] answers a permission request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum PermissionAnswer {
    /// The first option of kind `allow_once` or `allow_always`.
    Allow,
    /// The first option of kind `reject_once` or `reject_always`.
    Reject,
    /// This option id.
    Select(PermissionOptionId),
    /// `cancelled`.
    Cancel,
}

/// A v2 client that answers permission requests from a script (then [`PermissionAnswer::Allow`]
/// once the script is used up), records the requests, and rebuilds the conversation from the
/// updates ([`Conversation`]). Cheap to clone: clones share the script and the records.
#[derive(Clone, Debug, Default)]
pub struct ScriptedClient {
    answers: Arc<Mutex<VecDeque<PermissionAnswer>>>,
    requests: Arc<Mutex<Vec<RequestPermissionRequest>>>,
    chat: Arc<Mutex<Conversation>>,
}

impl ScriptedClient {
    /// A client that allows every request.
    pub fn new() -> ScriptedClient {
        ScriptedClient::default()
    }

    /// Adds the answer to the next permission request not yet given one.
    pub fn answer(self, answer: PermissionAnswer) -> ScriptedClient {
        lock(&self.answers).push_back(answer);
        self
    }

    /// The permission requests received, in order.
    pub fn permission_requests(&self) -> Vec<RequestPermissionRequest> {
        lock(&self.requests).clone()
    }

    /// The conversation rebuilt from the updates so far.
    pub fn conversation(&self) -> Conversation {
        lock(&self.chat).clone()
    }

    /// The text of each message so far (user's and agent's, thoughts excluded), in order.
    pub fn said(&self) -> Vec<String> {
        lock(&self.chat)
            .messages()
            .iter()
            .filter(|m| m.author != client_v2::Author::Thought)
            .map(|m| {
                m.content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text(text) => Some(text.text.as_str()),
                        _ => None,
                    })
                    .collect()
            })
            .collect()
    }
}

impl client_v2::Client for ScriptedClient {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        let answer = lock(&self.answers)
            .pop_front()
            .unwrap_or(PermissionAnswer::Allow);
        lock(&self.requests).push(request.clone());
        let first_of = |kinds: &[PermissionOptionKind]| {
            request
                .options
                .iter()
                .find(|o| kinds.contains(&o.kind))
                .map(|o| o.option_id.clone())
        };
        let chosen = match answer {
            PermissionAnswer::Allow => first_of(&[
                PermissionOptionKind::AllowOnce,
                PermissionOptionKind::AllowAlways,
            ]),
            PermissionAnswer::Reject => first_of(&[
                PermissionOptionKind::RejectOnce,
                PermissionOptionKind::RejectAlways,
            ]),
            PermissionAnswer::Select(id) => Some(id),
            PermissionAnswer::Cancel => None,
        };
        let outcome = match chosen {
            Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
            None => RequestPermissionOutcome::Cancelled(CancelledPermissionOutcome::new()),
        };
        Ok(RequestPermissionResponse::new(outcome))
    }

    async fn session_update(&self, notification: UpdateSessionNotification) {
        lock(&self.chat).apply(&notification.update);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
