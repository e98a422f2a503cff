//! Every message of the [Agent Client Protocol](https://agentclientprotocol.com) (ACP) v1 as a
//! Rust type whose JSON is exactly the wire format.
//!
//! The types are generated from the published ACP JSON schema by `cargo xtask codegen`; the
//! small hand-written part is the method traits below, [`Patch`], and the decoding rules in
//! [`de`]. The crate does no I/O: pair it with `acp-jsonrpc` or `acp-runtime`, or with your own
//! transport.
//!
//! # Forward compatibility
//!
//! Peers speaking a newer protocol send values this version does not know. They decode instead of
//! failing, and encode back unchanged:
//!
//! - string enums ([`ToolKind`], [`StopReason`], ...) get an `Unknown(String)` variant (or the
//!   schema's own `Other` for enums the schema declares open);
//! - tagged unions ([`SessionUpdate`], [`ContentBlock`], ...) get an `Unknown(serde_json::Value)`
//!   variant holding the whole object; a *known* tag with a bad payload is still an error;
//! - unknown object members are ignored; fields the schema marks lenient drop bad values and
//!   report them to [`de::collect_dropped`].
//!
//! ```
//! use acp_types::{SessionNotification, SessionUpdate, ContentBlock};
//!
//! let json = r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk",
//!               "content":{"type":"text","text":"Hello"}}}"#;
//! let note: SessionNotification = serde_json::from_str(json).unwrap();
//! let SessionUpdate::AgentMessageChunk(chunk) = &note.update else { panic!() };
//! assert!(matches!(&chunk.content, ContentBlock::Text(t) if t.text == "Hello"));
//!
//! let newer = r#"{"sessionId":"s1","update":{"sessionUpdate":"hologram","depth":3}}"#;
//! let note: SessionNotification = serde_json::from_str(newer).unwrap();
//! assert!(matches!(note.update, SessionUpdate::Unknown(_)));
//! assert_eq!(
//!     serde_json::to_value(&note).unwrap(),
//!     serde_json::from_str::<serde_json::Value>(newer).unwrap(),
//! );
//! ```
//!
//! # Building and matching values
//!
//! Every generated struct and enum is `#[non_exhaustive]`, so that a field or variant a newer
//! schema adds (or the `unstable` feature, which another crate in the same build may turn on)
//! breaks no code. Two rules follow:
//!
//! - **construct** with `new(required fields…)` and a `with_<field>(value)` setter per optional
//!   field (struct literals and `..Default::default()` do not compile outside this crate);
//! - **match** enums with a wildcard arm (`_ =>`); variant data stays matchable as usual, and
//!   struct fields stay public to read and assign.
//!
//! ```
//! use acp_types::{
//!     SessionUpdate, SetSessionConfigOptionRequest, ToolCall, ToolCallStatus, ToolKind,
//! };
//!
//! let call = ToolCall::new("call_1", "Reading main.rs")
//!     .with_kind(ToolKind::Read)
//!     .with_status(ToolCallStatus::InProgress)
//!     .with_raw_input(serde_json::json!({ "path": "main.rs" }));
//!
//! let status = match &call.status {
//!     Some(ToolCallStatus::Completed) => "done",
//!     Some(ToolCallStatus::Failed) => "failed",
//!     Some(_) => "running",
//!     None => "unknown",
//! };
//! assert_eq!(status, "running");
//! assert!(matches!(SessionUpdate::from(call), SessionUpdate::ToolCall(_)));
//!
//! // A config value is a value id or a boolean.
//! let request = SetSessionConfigOptionRequest::new("s1", "model", "fast");
//! assert_eq!(
//!     serde_json::to_string(&request).unwrap(),
//!     r#"{"sessionId":"s1","configId":"model","value":"fast"}"#
//! );
//! ```
//!
//! # Names
//!
//! The JSON-RPC envelope types the schema defines (`Error`, `ErrorCode`, `RequestId`) live in
//! [`rpc`], so that `use acp_types::*` next to `acp_jsonrpc` or `acp_runtime` brings in no name
//! twice. The schema's `Terminal` content (a terminal embedded in a tool call by its id) is
//! [`EmbeddedTerminal`].
//!
//! # Methods
//!
//! Each params type implements [`Method`] and either [`Request`] (with its response type) or
//! [`Notification`], plus [`ClientToAgent`] and/or [`AgentToClient`] for the direction it
//! travels. [`ClientRequest`], [`AgentRequest`], [`ClientNotification`] and
//! [`AgentNotification`] decode an incoming `(method, params)` pair.
//!
//! ```
//! use acp_types::{ClientRequest, Method, PromptRequest, Request};
//!
//! assert_eq!(PromptRequest::METHOD, "session/prompt");
//! let params = serde_json::value::RawValue::from_string(
//!     r#"{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}"#.to_owned(),
//! ).unwrap();
//! let request = ClientRequest::decode("session/prompt", Some(&params)).unwrap();
//! assert!(matches!(request, ClientRequest::SessionPrompt(_)));
//! ```
//!
//! # Features
//!
//! - `unstable`: the types of the schema's unstable superset (`schema.unstable.json`) instead of
//!   the stable schema.
//! - `models`: the `models` module, the seed-era model selection (`session/set_model`,
//!   `models` in session answers) that agents still send, typed from the `2025-10` schema pin.
//! - `unstable-protocol-v2`: the `v2` module, protocol v2 (a published draft) beside v1; with
//!   `unstable` too, v2's unstable superset. `unstable` alone does not turn it on.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod helpers;
mod helpers_v1;
mod methods;
pub mod support;

#[cfg_attr(not(feature = "unstable"), path = "generated/stable.rs")]
#[cfg_attr(feature = "unstable", path = "generated/unstable.rs")]
mod generated;

/// The seed-era model selection (feature `models`), generated from the `2025-10` schema pin
/// (`@agentclientprotocol/sdk` 0.4.9): `session/set_model` ([`SetSessionModelRequest`](models::SetSessionModelRequest)) and the
/// `models` member of `session/new` and `session/load` answers
/// ([`SessionModels`](models::SessionModels), a [`SessionModelState`](models::SessionModelState)).
///
/// The current schema has neither: an agent offers its models as a config option of category
/// [`SessionConfigOptionCategory::Model`], set with `session/set_config_option`. Several agents
/// still send `models`; read it from a whole answer with [`SessionModels`](models::SessionModels):
///
/// ```
/// use acp_types::models::{SessionModels, SetSessionModelRequest};
/// use acp_types::{Method, NewSessionResponse};
///
/// let answer = r#"{"sessionId":"s1","models":{"currentModelId":"fast",
///     "availableModels":[{"modelId":"fast","name":"Fast"},{"modelId":"deep","name":"Deep"}]}}"#;
/// let response: NewSessionResponse = serde_json::from_str(answer).unwrap();
/// let models = serde_json::from_str::<SessionModels>(answer).unwrap().models.unwrap();
/// assert_eq!(response.session_id.as_str(), "s1");
/// assert_eq!(models.current_model_id.as_str(), "fast");
/// assert_eq!(models.available_models.len(), 2);
///
/// let request = SetSessionModelRequest::new("deep", "s1");
/// assert_eq!(SetSessionModelRequest::METHOD, "session/set_model");
/// assert_eq!(
///     serde_json::to_string(&request).unwrap(),
///     r#"{"modelId":"deep","sessionId":"s1"}"#
/// );
/// ```
#[cfg(feature = "models")]
#[path = "generated/models.rs"]
pub mod models;

#[cfg(feature = "unstable-protocol-v2")]
pub mod v2;

/// The schema these types were generated from: `"stable"`, or `"unstable"` with the
/// `unstable` feature. The wire form of a value can differ between the two (the unstable
/// schema has more fields with defaults), so tests that pin wire formats name their snapshots
/// by it.
///
/// ```
/// assert!(["stable", "unstable"].contains(&acp_types::SCHEMA));
/// ```
pub const SCHEMA: &str = if cfg!(feature = "unstable") {
    "unstable"
} else {
    "stable"
};

pub use generated::*;
pub use methods::*;
pub use support::{Meta, Patch, de};
