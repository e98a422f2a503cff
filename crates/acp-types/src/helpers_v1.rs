//! Hand-written conveniences on generated types that need protocol v1's shapes: the content
//! chunks and session updates, tool calls and their updates, config values and the prompt
//! answer (v2 names and shapes these differently: a chunk carries a message id, a tool call
//! location an `AbsolutePath`, ...). The ones every version has are in `helpers.rs`; v2's own
//! are in `v2.rs`.

use crate::*;

impl ProtocolVersion {
    /// Protocol version 1.
    pub const V1: ProtocolVersion = ProtocolVersion(1);
    /// The newest version the v1 types speak (v2 is `acp_types::v2`, feature
    /// `unstable-protocol-v2`).
    pub const LATEST: ProtocolVersion = ProtocolVersion::V1;
}

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

// The plain setters (`with_kind`, `with_status`, `with_content`, ...) are generated and replace
// a field; these add one item to a list, and say so in their names.
impl ToolCall {
    /// Adds a piece of content to the call's list (the generated
    /// [`with_content`](Self::with_content) replaces the list).
    ///
    /// ```
    /// use acp_types::{ContentBlock, SessionUpdate, ToolCall, ToolCallStatus, ToolKind};
    /// let call = ToolCall::new("call_1", "Reading main.rs")
    ///     .with_kind(ToolKind::Read)
    ///     .with_status(ToolCallStatus::InProgress)
    ///     .add_location("/src/main.rs")
    ///     .add_content(ContentBlock::text("fn main() {}"));
    /// let update = SessionUpdate::from(call);
    /// assert_eq!(
    ///     serde_json::to_string(&update).unwrap(),
    ///     r#"{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Reading main.rs","kind":"read","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"fn main() {}"}}],"locations":[{"path":"/src/main.rs"}]}"#
    /// );
    /// ```
    pub fn add_content(mut self, content: impl Into<ToolCallContent>) -> Self {
        self.content
            .get_or_insert_with(Vec::new)
            .push(content.into());
        self
    }

    /// Adds a file location the call touches to the call's list (the generated
    /// [`with_locations`](Self::with_locations) replaces the list).
    pub fn add_location(mut self, path: impl Into<String>) -> Self {
        self.locations
            .get_or_insert_with(Vec::new)
            .push(ToolCallLocation::new(path));
        self
    }
}

impl ToolCallUpdate {
    /// Adds a piece of content to the update's list (the client replaces what it shows with
    /// the list once the update is sent; the generated [`with_content`](Self::with_content)
    /// replaces the list here).
    ///
    /// ```
    /// use acp_types::{ContentBlock, SessionUpdate, ToolCallStatus, ToolCallUpdate};
    /// let update = ToolCallUpdate::new("call_1")
    ///     .with_status(ToolCallStatus::Completed)
    ///     .add_content(ContentBlock::text("done"));
    /// assert_eq!(
    ///     serde_json::to_string(&SessionUpdate::from(update)).unwrap(),
    ///     r#"{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"done"}}]}"#
    /// );
    /// ```
    pub fn add_content(mut self, content: impl Into<ToolCallContent>) -> Self {
        self.content
            .get_or_insert_with(Vec::new)
            .push(content.into());
        self
    }

    /// Adds a file location the call touches to the update's list.
    pub fn add_location(mut self, path: impl Into<String>) -> Self {
        self.locations
            .get_or_insert_with(Vec::new)
            .push(ToolCallLocation::new(path));
        self
    }
}

/// The whole call as an update: its title, kind, status, content, locations and raw input and
/// output, for a request that shows the call (`session/request_permission`) to a client that
/// may not have kept it.
///
/// ```
/// use acp_types::{ToolCall, ToolCallUpdate, ToolKind};
/// let call = ToolCall::new("call_1", "Edit main.rs").with_kind(ToolKind::Edit);
/// let update = ToolCallUpdate::from(&call);
/// assert_eq!(update.title.as_deref(), Some("Edit main.rs"));
/// assert_eq!(
///     serde_json::to_string(&update).unwrap(),
///     r#"{"toolCallId":"call_1","kind":"edit","title":"Edit main.rs"}"#
/// );
/// ```
impl From<ToolCall> for ToolCallUpdate {
    fn from(call: ToolCall) -> Self {
        let mut update = ToolCallUpdate::new(call.tool_call_id);
        update.title = Some(call.title);
        update.name = call.name;
        update.kind = call.kind;
        update.status = call.status;
        update.content = call.content;
        update.locations = call.locations;
        update.raw_input = call.raw_input;
        update.raw_output = call.raw_output;
        update.meta = call.meta;
        update
    }
}

/// A copy of the whole call as an update (see `From<ToolCall>`).
impl From<&ToolCall> for ToolCallUpdate {
    fn from(call: &ToolCall) -> Self {
        call.clone().into()
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
