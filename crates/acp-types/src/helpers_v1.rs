//! Hand-written conveniences on generated types that need protocol v1's shapes: the content
//! chunks and session updates, tool calls and their updates, config values and the prompt
//! answer (v2 names and shapes these differently: a chunk carries a message id, a tool call
//! location an `AbsolutePath`, ...). The ones every version has are in `helpers.rs`; v2 gets its
//! own when v2 is supported.

use crate::*;

impl From<&str> for ContentChunk {
    fn from(text: &str) -> Self {
        ContentChunk::new(ContentBlock::text(text))
    }
}

impl From<ContentBlock> for ContentChunk {
    fn from(content: ContentBlock) -> Self {
        ContentChunk::new(content)
    }
}

impl SessionUpdate {
    /// A chunk of the agent's reply.
    ///
    /// ```
    /// use acp_types::{SessionNotification, SessionUpdate};
    /// let note = SessionNotification::new("s1", SessionUpdate::agent_message_chunk("Hi"));
    /// assert_eq!(
    ///     serde_json::to_string(&note).unwrap(),
    ///     r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi"}}}"#
    /// );
    /// ```
    pub fn agent_message_chunk(content: impl Into<ContentBlock>) -> Self {
        SessionUpdate::AgentMessageChunk(ContentChunk::new(content))
    }

    /// A chunk of the agent's reasoning.
    pub fn agent_thought_chunk(content: impl Into<ContentBlock>) -> Self {
        SessionUpdate::AgentThoughtChunk(ContentChunk::new(content))
    }

    /// A chunk of the user's message (when replaying history).
    pub fn user_message_chunk(content: impl Into<ContentBlock>) -> Self {
        SessionUpdate::UserMessageChunk(ContentChunk::new(content))
    }
}

// The plain setters (`with_kind`, `with_status`, `with_raw_input`, ...) are generated; these
// add one item to a list instead of replacing it.
impl ToolCall {
    /// Adds a piece of content.
    ///
    /// ```
    /// use acp_types::{ContentBlock, SessionUpdate, ToolCall, ToolCallStatus, ToolKind};
    /// let call = ToolCall::new("call_1", "Reading main.rs")
    ///     .with_kind(ToolKind::Read)
    ///     .with_status(ToolCallStatus::InProgress)
    ///     .location("/src/main.rs")
    ///     .content(ContentBlock::text("fn main() {}"));
    /// let update = SessionUpdate::from(call);
    /// assert_eq!(
    ///     serde_json::to_string(&update).unwrap(),
    ///     r#"{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Reading main.rs","kind":"read","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"fn main() {}"}}],"locations":[{"path":"/src/main.rs"}]}"#
    /// );
    /// ```
    pub fn content(mut self, content: impl Into<ToolCallContent>) -> Self {
        self.content
            .get_or_insert_with(Vec::new)
            .push(content.into());
        self
    }

    /// Adds a file location the call touches.
    pub fn location(mut self, path: impl Into<String>) -> Self {
        self.locations
            .get_or_insert_with(Vec::new)
            .push(ToolCallLocation::new(path));
        self
    }
}

impl ToolCallUpdate {
    /// Adds a piece of content (replacing what the client shows once sent).
    ///
    /// ```
    /// use acp_types::{ContentBlock, SessionUpdate, ToolCallStatus, ToolCallUpdate};
    /// let update = ToolCallUpdate::new("call_1")
    ///     .with_status(ToolCallStatus::Completed)
    ///     .content(ContentBlock::text("done"));
    /// assert_eq!(
    ///     serde_json::to_string(&SessionUpdate::from(update)).unwrap(),
    ///     r#"{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"done"}}]}"#
    /// );
    /// ```
    pub fn content(mut self, content: impl Into<ToolCallContent>) -> Self {
        self.content
            .get_or_insert_with(Vec::new)
            .push(content.into());
        self
    }
}

// A config value is a value id (a string) or a boolean; these let
// `SetSessionConfigOptionRequest::new(session, option, value)` take either directly.

/// A value id.
///
/// ```
/// use acp_types::SetSessionConfigOptionRequest;
/// let request = SetSessionConfigOptionRequest::new("s1", "model", "fast");
/// assert_eq!(
///     serde_json::to_string(&request).unwrap(),
///     r#"{"sessionId":"s1","configId":"model","value":"fast"}"#
/// );
/// let request = SetSessionConfigOptionRequest::new("s1", "web_search", true);
/// assert_eq!(
///     serde_json::to_string(&request).unwrap(),
///     r#"{"sessionId":"s1","configId":"web_search","type":"boolean","value":true}"#
/// );
/// ```
impl From<&str> for SetSessionConfigOptionRequestKind {
    fn from(value: &str) -> Self {
        SetSessionConfigOptionRequestKind::ValueId(SetSessionConfigOptionRequestKindValueId::new(
            value,
        ))
    }
}

/// A value id.
impl From<String> for SetSessionConfigOptionRequestKind {
    fn from(value: String) -> Self {
        SetSessionConfigOptionRequestKind::ValueId(SetSessionConfigOptionRequestKindValueId::new(
            value,
        ))
    }
}

/// A value id.
impl From<SessionConfigValueId> for SetSessionConfigOptionRequestKind {
    fn from(value: SessionConfigValueId) -> Self {
        SetSessionConfigOptionRequestKind::ValueId(SetSessionConfigOptionRequestKindValueId::new(
            value,
        ))
    }
}

/// A boolean option's value.
impl From<bool> for SetSessionConfigOptionRequestKind {
    fn from(value: bool) -> Self {
        SetSessionConfigOptionRequestKind::Boolean(SetSessionConfigOptionRequestKindBoolean::new(
            value,
        ))
    }
}

impl PromptResponse {
    /// A response ending the turn for `reason`.
    pub fn stop(reason: StopReason) -> Self {
        PromptResponse::new(reason)
    }
}

impl From<StopReason> for PromptResponse {
    fn from(reason: StopReason) -> Self {
        PromptResponse::new(reason)
    }
}
