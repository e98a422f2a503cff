//! Version selection, once per connection, from `initialize.protocolVersion`: the one rule
//! that both the v1 agent (which answers it) and the version router (which picks the side that
//! answers it) follow.
//!
//! - v1 ([`negotiate`]): the requested version when this runtime speaks it, else its latest.
//! - v2 ([`select`]): the highest configured version at or below the requested one, else
//!   `-32022` with data `{requested, supported}`. A router with a v1 side takes every request
//!   below 2 to it (v1's own rule then answers), so only a v2-only router refuses.
//! - A repeated `initialize`, whatever version it names, is `-32600` ([`repeated_initialize`]).

#[cfg(feature = "unstable-protocol-v2")]
use acp_jsonrpc::ErrorCode;
use acp_jsonrpc::ResponseError;
use acp_types::ProtocolVersion;

/// Protocol versions this runtime speaks, oldest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[u16] = &[1];

/// The version a v1 agent answers: the client's when this runtime speaks it, else the latest.
pub(crate) fn negotiate(requested: ProtocolVersion) -> ProtocolVersion {
    if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested.0) {
        requested
    } else {
        ProtocolVersion(
            *SUPPORTED_PROTOCOL_VERSIONS
                .last()
                .expect("at least one version"),
        )
    }
}

/// The protocol a connection is served with.
#[cfg(feature = "unstable-protocol-v2")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ServedVersion {
    /// Version 1, answered by the v1 agent with [`negotiate`].
    V1,
    /// Version 2.
    V2,
}

#[cfg(feature = "unstable-protocol-v2")]
/// Picks the side for an `initialize` requesting `requested`, given which sides are
/// configured: v2 for 2 and above when there is a v2 side (the highest version at or below the
/// request), v1 for everything else when there is a v1 side; otherwise the `-32022` answer.
pub(crate) fn select(requested: u16, v1: bool, v2: bool) -> Result<ServedVersion, ResponseError> {
    match () {
        () if v2 && requested >= 2 => Ok(ServedVersion::V2),
        () if v1 => Ok(ServedVersion::V1),
        () => {
            let supported: Vec<u16> = [(v1, 1), (v2, 2)]
                .into_iter()
                .filter_map(|(on, version)| on.then_some(version))
                .collect();
            Err(unsupported(requested, &supported))
        }
    }
}

#[cfg(feature = "unstable-protocol-v2")]
/// `-32022` with its data `{requested, supported}`.
pub(crate) fn unsupported(requested: u16, supported: &[u16]) -> ResponseError {
    ResponseError::new(
        ErrorCode(acp_types::v2::UNSUPPORTED_PROTOCOL_VERSION),
        "Unsupported protocol version",
    )
    .with_data(&serde_json::json!({ "requested": requested, "supported": supported }))
}

/// The answer to an `initialize` after the first on a connection: `-32600`, whatever version
/// it names. The version is fixed once per connection; a second `initialize` is out of place
/// in the connection's state, not a version the agent lacks. (The SDKs disagree for a lower
/// version on a v2 connection: Rust answers `-32022`, TypeScript `-32600`. `-32022`'s
/// `supported` would tell the client that the agent cannot serve the version it asked for,
/// which a router with a v1 side can, on a new connection; and our v1 side has always answered
/// a repeated `initialize` with `-32600`. One answer for both versions.)
pub(crate) fn repeated_initialize() -> ResponseError {
    super::not_initialized("`initialize` was already called")
}
