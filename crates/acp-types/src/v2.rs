//! ACP protocol v2 (feature `unstable-protocol-v2`): every v2 message as a Rust type, generated
//! from the schema crate's `v2/schema.json` (or `v2/schema.unstable.json` with `unstable`), the
//! v2 method tables, and the version constants.
//!
//! v2 is a published draft; upstream gates it behind a feature of its own
//! (`unstable_protocol_v2`), apart from the v1 unstable methods, and so does this crate: the
//! `unstable` feature does not turn it on, it only picks the unstable v2 superset when both are
//! on. A connection speaks one version, picked by `initialize.protocolVersion`; the crate root
//! is v1, this module is v2, and a program serving both (acp-runtime's router) uses both.
//!
//! The same rules as v1 hold: every struct and enum is `#[non_exhaustive]` (build with `new`
//! and `with_…`, match with a wildcard arm), and every enum and tagged union has a catch-all.
//!
//! # Upserts
//!
//! v2's session updates are upserts: an omitted field leaves the stored value unchanged, `null`
//! clears it, a value replaces it. Every field of an upserted message (the schema's `x-state`
//! `upsert` actions: messages, tool calls, terminals, ...) is a [`Patch`](crate::Patch), which
//! keeps the three apart and writes back what it read:
//!
//! ```
//! use acp_types::Patch;
//! use acp_types::v2::{SessionUpdate, ToolCallStatus, UpdateSessionNotification};
//!
//! let json = r#"{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update",
//!     "toolCallId":"call_1","status":"completed","title":null}}"#;
//! let note: UpdateSessionNotification = serde_json::from_str(json).unwrap();
//! let SessionUpdate::ToolCallUpdate(update) = &note.update else { panic!() };
//! assert_eq!(update.status, Patch::Set(ToolCallStatus::Completed));
//! assert_eq!(update.title, Patch::Clear);
//! assert_eq!(update.kind, Patch::Unchanged);
//! assert_eq!(
//!     serde_json::to_value(&note).unwrap(),
//!     serde_json::from_str::<serde_json::Value>(json).unwrap(),
//! );
//! ```
//!
//! # Picking the version
//!
//! A v2 agent answers `initialize` with the highest version it supports at or below the
//! requested one, or with error `-32022` whose data is an
//! [`UnsupportedProtocolVersionErrorData`]:
//!
//! ```
//! use acp_types::v2::{ProtocolVersion, UnsupportedProtocolVersionErrorData};
//!
//! let data = UnsupportedProtocolVersionErrorData::new(
//!     ProtocolVersion(0),
//!     vec![ProtocolVersion::V1, ProtocolVersion::V2],
//! );
//! assert_eq!(
//!     serde_json::to_string(&data).unwrap(),
//!     r#"{"requested":0,"supported":[1,2]}"#
//! );
//! assert_eq!(acp_types::v2::UNSUPPORTED_PROTOCOL_VERSION, -32022);
//! ```

#[cfg_attr(not(feature = "unstable"), path = "generated/v2.rs")]
#[cfg_attr(feature = "unstable", path = "generated/v2_unstable.rs")]
mod generated;
// The conveniences every version has the types for (`ContentBlock::text`, ...), on v2's types:
// the file is the crate root's `helpers` too, on purpose (it names its parent's types).
#[allow(clippy::duplicate_mod)]
#[path = "helpers.rs"]
mod helpers;

pub use generated::*;

/// The JSON-RPC error code of an `initialize` whose version the agent cannot serve; its data is
/// an [`UnsupportedProtocolVersionErrorData`] (`{requested, supported}`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;

impl ProtocolVersion {
    /// Protocol version 1.
    pub const V1: ProtocolVersion = ProtocolVersion(1);
    /// Protocol version 2.
    pub const V2: ProtocolVersion = ProtocolVersion(2);
    /// The newest version these types speak.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2;
}

impl UnsupportedProtocolVersionErrorData {
    /// Reads the data of a `-32022` error; `None` when it is absent or not this shape.
    ///
    /// ```
    /// use acp_types::v2::{ProtocolVersion, UnsupportedProtocolVersionErrorData};
    ///
    /// let data = serde_json::json!({"requested": 3, "supported": [1, 2]});
    /// let data = UnsupportedProtocolVersionErrorData::from_error_data(Some(&data)).unwrap();
    /// assert_eq!(data.requested, ProtocolVersion(3));
    /// assert_eq!(data.supported, [ProtocolVersion::V1, ProtocolVersion::V2]);
    /// assert!(UnsupportedProtocolVersionErrorData::from_error_data(None).is_none());
    /// ```
    pub fn from_error_data(data: Option<&serde_json::Value>) -> Option<Self> {
        serde::Deserialize::deserialize(data?).ok()
    }
}
