//! Hand-written conveniences on generated types: the short expressions for the messages every
//! agent and client writes. These are the ones every generated protocol version has the types
//! for (xtask's `every_pinned_schema_generates_compiling_code` compiles them against the v2
//! schema too, and `acp_types::v2` includes this file as its own child); those that need v1's
//! shapes, and v1's version constants, are in `helpers_v1.rs`.

use super::*;

impl ContentBlock {
    /// A plain text block.
    ///
    /// ```
    /// let block = acp_types::ContentBlock::text("Hello");
    /// assert_eq!(serde_json::to_string(&block).unwrap(), r#"{"type":"text","text":"Hello"}"#);
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(text) => Some(&text.text),
            _ => None,
        }
    }
}

impl From<&str> for ContentBlock {
    fn from(text: &str) -> Self {
        ContentBlock::text(text)
    }
}

impl From<String> for ContentBlock {
    fn from(text: String) -> Self {
        ContentBlock::text(text)
    }
}

impl From<ContentBlock> for ToolCallContent {
    fn from(content: ContentBlock) -> Self {
        ToolCallContent::Content(Content::new(content))
    }
}

impl RequestPermissionOutcome {
    /// The user picked `option`.
    pub fn selected(option: impl Into<PermissionOptionId>) -> Self {
        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option))
    }
}
