//! Subagents in a scripted turn ([`Step::Subagent`](crate::Step::Subagent)): a child session
//! announced on the session playing the step, its traffic sent under the child's own session
//! id, and its end, the way the big agents send it (schema 1.20; for example
//! claude-agent-acp 0.101: `subagent_update` `running` with a title on the parent, then
//! `agent_message_chunk`, `session_message` and `config_option_update` on the child, then
//! `subagent_update` `idle`). Children may start children of their own, to any depth.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use acp_runtime::Result;
use acp_runtime::agent::SessionClient;
use acp_types::*;

/// One step of a subagent's traffic.
#[derive(Clone, Debug)]
#[non_exhaustive]
// A script is built once and read once: an update kept inline reads better than a box.
#[allow(clippy::large_enum_variant)]
pub enum ChildStep {
    /// A `session/update` on the child's session id.
    Update(SessionUpdate),
    /// The parent's message to the child: a `session_message` on the child's session id,
    /// sent by the parent, with this text.
    FromParent(String),
    /// A subagent of this child.
    Subagent(SubagentStep),
    /// Waits.
    Sleep(Duration),
}

impl ChildStep {
    /// A chunk of the child's reply.
    pub fn message(content: impl Into<ContentBlock>) -> ChildStep {
        ChildStep::Update(SessionUpdate::agent_message_chunk(content))
    }
}

impl From<SubagentStep> for ChildStep {
    fn from(step: SubagentStep) -> ChildStep {
        ChildStep::Subagent(step)
    }
}

/// A subagent of a scripted turn: announced `running` (with its title) on the session that
/// plays the step, its [`ChildStep`]s played on its own session id, then reported `idle`
/// (`end_turn`; [`left_running`](Self::left_running) leaves it running).
///
/// ```
/// use acp_test::{ChildStep, ScriptedAgent, Step, SubagentStep};
///
/// let agent = ScriptedAgent::new().turn([
///     Step::message("Delegating."),
///     SubagentStep::new("child-1")
///         .title("Research")
///         .then([
///             ChildStep::message("Reading the docs."),
///             SubagentStep::claude_like("grandchild-1", "Search", "Found it.").into(),
///         ])
///         .into(),
///     Step::message("Done."),
/// ]);
/// # drop(agent);
/// ```
#[derive(Clone, Debug)]
pub struct SubagentStep {
    /// The child's session id.
    pub session_id: SessionId,
    /// Its title, sent with the announcement.
    pub title: Option<String>,
    /// Its traffic.
    pub steps: Vec<ChildStep>,
    /// Whether it is reported `idle` at its end (the default), or left `running`.
    pub idle_at_end: bool,
}

impl SubagentStep {
    /// A child without a title or traffic yet.
    pub fn new(session_id: impl Into<SessionId>) -> SubagentStep {
        SubagentStep {
            session_id: session_id.into(),
            title: None,
            steps: Vec::new(),
            idle_at_end: true,
        }
    }

    /// Leaves the child `running` at its end: no `idle` state is sent (a child that works on
    /// in the background, or one cut off).
    pub fn left_running(mut self) -> SubagentStep {
        self.idle_at_end = false;
        self
    }

    /// The title the announcement carries.
    pub fn title(mut self, title: impl Into<String>) -> SubagentStep {
        self.title = Some(title.into());
        self
    }

    /// Appends traffic of the child.
    pub fn then(mut self, steps: impl IntoIterator<Item = ChildStep>) -> SubagentStep {
        self.steps.extend(steps);
        self
    }

    /// A child whose traffic is what claude-agent-acp 0.101 sends for one: a reply chunk of
    /// `text`, the parent's prompt to it (a `session_message` from the parent) and its
    /// config options (a `model` select), each on the child's own session id.
    pub fn claude_like(
        session_id: impl Into<SessionId>,
        title: impl Into<String>,
        text: impl Into<String>,
    ) -> SubagentStep {
        let title = title.into();
        let options = serde_json::json!([{
            "id": "model", "name": "Model", "category": "model", "type": "select",
            "currentValue": "default",
            "options": [{"value": "default", "name": "Default"}],
        }]);
        let options: Vec<SessionConfigOption> =
            serde_json::from_value(options).expect("a valid config option");
        SubagentStep::new(session_id).title(title.clone()).then([
            ChildStep::message(text.into()),
            ChildStep::FromParent(title),
            ChildStep::Update(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
                options,
            ))),
        ])
    }
}

/// Plays `step` as a subagent of `parent`.
pub(crate) fn play(
    parent: SessionClient,
    step: SubagentStep,
) -> Pin<Box<dyn Future<Output = Result<()>> + Send>> {
    Box::pin(async move {
        let mut announce = SubagentUpdate::new(step.session_id.clone())
            .with_state(StateUpdate::Running(RunningStateUpdate::new()));
        if let Some(title) = &step.title {
            announce = announce.with_title(title.clone());
        }
        parent.subagent_update(announce).await?;
        let child = parent.client().session(step.session_id.clone());
        for (n, item) in step.steps.into_iter().enumerate() {
            match item {
                ChildStep::Update(update) => child.update(update).await?,
                ChildStep::FromParent(text) => {
                    let message = SessionMessage::new(format!("{}-message-{n}", child.id()))
                        .with_sender_session_id(parent.id().clone())
                        .with_recipient_session_id(child.id().clone())
                        .with_content(vec![ContentBlock::text(text)]);
                    child.session_message(message).await?;
                }
                ChildStep::Subagent(grandchild) => play(child.clone(), grandchild).await?,
                ChildStep::Sleep(duration) => {
                    smol::Timer::after(duration).await;
                }
            }
        }
        if !step.idle_at_end {
            return Ok(());
        }
        let idle = StateUpdate::Idle(IdleStateUpdate::new(IdleStateUpdateKind::EndTurn));
        parent
            .subagent_update(SubagentUpdate::new(step.session_id).with_state(idle))
            .await
    })
}
