//! The reducer of a v2 session's updates: [`Conversation`] applies the upserts and chunks as
//! they come and keeps whole messages, tool calls, plans and terminals, and the session's state.

use std::collections::HashMap;

use acp_types::Patch;
use acp_types::v2::*;
use base64::Engine as _;

/// Who wrote a [`Message`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Author {
    /// The user (`user_message`, `user_message_chunk`).
    User,
    /// The agent's reply (`agent_message`, `agent_message_chunk`).
    Agent,
    /// The agent's reasoning (`agent_thought`, `agent_thought_chunk`).
    Thought,
}

/// A whole message: the content of its full updates and chunks, applied in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// The agent-made id.
    pub id: MessageId,
    /// Who wrote it.
    pub author: Author,
    /// Its content now.
    pub content: Vec<ContentBlock>,
}

/// A whole tool call: every field as its upserts left it (`None`: never set, or cleared).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The id.
    pub id: ToolCallId,
    /// The tool's name.
    pub name: Option<String>,
    /// What the user sees.
    pub title: Option<String>,
    /// What kind of work it does.
    pub kind: Option<ToolKind>,
    /// Where it is.
    pub status: Option<ToolCallStatus>,
    /// Its content: the last full `content`, then the chunks since.
    pub content: Vec<ToolCallContent>,
    /// The files it touches.
    pub locations: Option<Vec<ToolCallLocation>>,
    /// The tool's input.
    pub raw_input: Option<serde_json::Value>,
    /// The tool's output.
    pub raw_output: Option<serde_json::Value>,
}

/// A display terminal of the agent: its output bytes (decoded from base64, kept whole so that a
/// character split between chunks is joined) and how it ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Terminal {
    /// The id.
    pub id: TerminalId,
    /// The command it runs.
    pub command: Option<String>,
    /// Everything it printed, as bytes.
    pub output: Vec<u8>,
    /// How it exited, once it has.
    pub exit_status: Option<TerminalExitStatus>,
}

impl Terminal {
    /// The output as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }
}

/// The session's foreground state, from `state_update`.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    /// Ready for a prompt; with why the last work stopped, when it did.
    Idle(Option<IdleStateUpdateKind>),
    /// Working.
    Running,
    /// Waiting on the user (a permission request).
    RequiresAction,
}

/// What one update changed, for a client that redraws only that.
#[derive(Clone, Debug, PartialEq)]
pub enum Changed {
    /// The message at this index of [`Conversation::messages`].
    Message(usize),
    /// The tool call at this index of [`Conversation::tool_calls`].
    ToolCall(usize),
    /// The terminal at this index of [`Conversation::terminals`].
    Terminal(usize),
    /// The plan with this id (removed when it is no longer in [`Conversation::plans`]).
    Plan(PlanId),
    /// The state.
    State,
    /// Something this reducer does not keep (usage, commands, notices, ...), or an update it
    /// could not apply (a `terminal_output_chunk` that is not base64, with the reason).
    Other(Option<String>),
}

/// A v2 session's conversation, rebuilt from its `session/update`s.
///
/// ```
/// use acp_runtime::client::v2::{Conversation, Author};
/// use acp_runtime::prelude::v2::*;
///
/// let mut chat = Conversation::default();
/// let id = MessageId::new("m1");
/// chat.apply(&SessionUpdate::AgentMessageChunk(ContentChunk::new(id.clone(), ContentBlock::from("Hel"))));
/// chat.apply(&SessionUpdate::AgentMessageChunk(ContentChunk::new(id.clone(), ContentBlock::from("lo"))));
/// let message = &chat.messages()[0];
/// assert_eq!(message.author, Author::Agent);
/// assert_eq!(message.content.len(), 2);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    messages: Vec<Message>,
    message_index: HashMap<MessageId, usize>,
    tool_calls: Vec<ToolCall>,
    tool_index: HashMap<ToolCallId, usize>,
    terminals: Vec<Terminal>,
    terminal_index: HashMap<TerminalId, usize>,
    plans: Vec<(PlanId, PlanUpdateContent)>,
    state: Option<State>,
}

impl Conversation {
    /// The messages, in order of first appearance.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The tool calls, in order of first appearance.
    pub fn tool_calls(&self) -> &[ToolCall] {
        &self.tool_calls
    }

    /// The terminals, in order of first appearance.
    pub fn terminals(&self) -> &[Terminal] {
        &self.terminals
    }

    /// The plans, by id in order of first appearance.
    pub fn plans(&self) -> &[(PlanId, PlanUpdateContent)] {
        &self.plans
    }

    /// The state, once a `state_update` came.
    pub fn state(&self) -> Option<&State> {
        self.state.as_ref()
    }

    /// Applies one update: an upsert replaces what it sets, clears what it sends as `null` and
    /// leaves what it omits; a chunk appends.
    pub fn apply(&mut self, update: &SessionUpdate) -> Changed {
        match update {
            SessionUpdate::UserMessage(m) => self.message(&m.message_id, Author::User, &m.content),
            SessionUpdate::AgentMessage(m) => {
                self.message(&m.message_id, Author::Agent, &m.content)
            }
            SessionUpdate::AgentThought(m) => {
                self.message(&m.message_id, Author::Thought, &m.content)
            }
            SessionUpdate::UserMessageChunk(c) => self.chunk(c, Author::User),
            SessionUpdate::AgentMessageChunk(c) => self.chunk(c, Author::Agent),
            SessionUpdate::AgentThoughtChunk(c) => self.chunk(c, Author::Thought),
            SessionUpdate::ToolCallUpdate(update) => self.tool_call(update),
            SessionUpdate::ToolCallContentChunk(chunk) => {
                let index = self.tool_index(&chunk.tool_call_id);
                self.tool_calls[index].content.push(chunk.content.clone());
                Changed::ToolCall(index)
            }
            SessionUpdate::TerminalUpdate(update) => self.terminal(update),
            SessionUpdate::TerminalOutputChunk(chunk) => {
                match base64::engine::general_purpose::STANDARD.decode(&chunk.data) {
                    Ok(bytes) => {
                        let index = self.terminal_index(&chunk.terminal_id);
                        self.terminals[index].output.extend_from_slice(&bytes);
                        Changed::Terminal(index)
                    }
                    Err(error) => Changed::Other(Some(format!(
                        "terminal_output_chunk for `{}` is not base64: {error}",
                        chunk.terminal_id
                    ))),
                }
            }
            SessionUpdate::PlanUpdate(update) => {
                let Some(id) = plan_id(&update.plan) else {
                    return Changed::Other(Some("a plan_update of an unknown type".into()));
                };
                match self.plans.iter_mut().find(|(known, _)| *known == id) {
                    Some((_, plan)) => *plan = update.plan.clone(),
                    None => self.plans.push((id.clone(), update.plan.clone())),
                }
                Changed::Plan(id)
            }
            SessionUpdate::PlanRemoved(removed) => {
                self.plans.retain(|(id, _)| *id != removed.plan_id);
                Changed::Plan(removed.plan_id.clone())
            }
            SessionUpdate::StateUpdate(state) => {
                self.state = Some(match state {
                    StateUpdate::Idle(idle) => State::Idle(Some(idle.kind.clone())),
                    StateUpdate::RequiresAction(_) => State::RequiresAction,
                    // An unknown state is never taken for idle: work may be going on.
                    _ => State::Running,
                });
                Changed::State
            }
            _ => Changed::Other(None),
        }
    }

    fn message_index(&mut self, id: &MessageId, author: Author) -> usize {
        if let Some(&index) = self.message_index.get(id) {
            return index;
        }
        self.messages.push(Message {
            id: id.clone(),
            author,
            content: Vec::new(),
        });
        self.message_index
            .insert(id.clone(), self.messages.len() - 1);
        self.messages.len() - 1
    }

    fn message(
        &mut self,
        id: &MessageId,
        author: Author,
        content: &Patch<Vec<ContentBlock>>,
    ) -> Changed {
        let index = self.message_index(id, author);
        let message = &mut self.messages[index];
        match content {
            Patch::Unchanged => {}
            Patch::Clear => message.content.clear(),
            Patch::Set(content) => message.content = content.clone(),
        }
        Changed::Message(index)
    }

    fn chunk(&mut self, chunk: &ContentChunk, author: Author) -> Changed {
        let index = self.message_index(&chunk.message_id, author);
        self.messages[index].content.push(chunk.content.clone());
        Changed::Message(index)
    }

    fn tool_index(&mut self, id: &ToolCallId) -> usize {
        if let Some(&index) = self.tool_index.get(id) {
            return index;
        }
        self.tool_calls.push(ToolCall {
            id: id.clone(),
            name: None,
            title: None,
            kind: None,
            status: None,
            content: Vec::new(),
            locations: None,
            raw_input: None,
            raw_output: None,
        });
        self.tool_index
            .insert(id.clone(), self.tool_calls.len() - 1);
        self.tool_calls.len() - 1
    }

    fn tool_call(&mut self, update: &ToolCallUpdate) -> Changed {
        let index = self.tool_index(&update.tool_call_id);
        let call = &mut self.tool_calls[index];
        update.name.clone().apply_to(&mut call.name);
        update.title.clone().apply_to(&mut call.title);
        update.kind.clone().apply_to(&mut call.kind);
        update.status.clone().apply_to(&mut call.status);
        update.locations.clone().apply_to(&mut call.locations);
        update.raw_input.clone().apply_to(&mut call.raw_input);
        update.raw_output.clone().apply_to(&mut call.raw_output);
        match &update.content {
            Patch::Unchanged => {}
            Patch::Clear => call.content.clear(),
            Patch::Set(content) => call.content = content.clone(),
        }
        Changed::ToolCall(index)
    }

    fn terminal_index(&mut self, id: &TerminalId) -> usize {
        if let Some(&index) = self.terminal_index.get(id) {
            return index;
        }
        self.terminals.push(Terminal {
            id: id.clone(),
            command: None,
            output: Vec::new(),
            exit_status: None,
        });
        self.terminal_index
            .insert(id.clone(), self.terminals.len() - 1);
        self.terminals.len() - 1
    }

    fn terminal(&mut self, update: &TerminalUpdate) -> Changed {
        let index = self.terminal_index(&update.terminal_id);
        let terminal = &mut self.terminals[index];
        update.command.clone().apply_to(&mut terminal.command);
        update
            .exit_status
            .clone()
            .apply_to(&mut terminal.exit_status);
        match &update.output {
            Patch::Unchanged => {}
            Patch::Clear => terminal.output.clear(),
            // A snapshot replaces the output (replay sends snapshots instead of every chunk).
            Patch::Set(output) => {
                match base64::engine::general_purpose::STANDARD.decode(&output.data) {
                    Ok(bytes) => terminal.output = bytes,
                    Err(error) => {
                        return Changed::Other(Some(format!(
                            "terminal_update output for `{}` is not base64: {error}",
                            update.terminal_id
                        )));
                    }
                }
            }
        }
        Changed::Terminal(index)
    }
}

fn plan_id(plan: &PlanUpdateContent) -> Option<PlanId> {
    match plan {
        PlanUpdateContent::Items(items) => Some(items.plan_id.clone()),
        PlanUpdateContent::Markdown(markdown) => Some(markdown.plan_id.clone()),
        _ => None,
    }
}
