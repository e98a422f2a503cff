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

mod helpers;
mod methods;
pub mod support;

#[cfg_attr(not(feature = "unstable"), path = "generated/stable.rs")]
#[cfg_attr(feature = "unstable", path = "generated/unstable.rs")]
mod generated;

pub use generated::*;
pub use methods::*;
pub use support::{Meta, Patch, de};
