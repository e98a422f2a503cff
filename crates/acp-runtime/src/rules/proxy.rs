//! The rules of proxy chains (feature `unstable-proxy-chains`): who may send
//! `proxy/successor`, how a proxy answers `proxy/initialize`, and the conductor's version.

use acp_jsonrpc::ResponseError;
use acp_types::ProtocolVersion;

use super::negotiate;

/// Proxy chains: only a proxy and its conductor exchange `proxy/successor`. The answer to
/// one from the client or the agent (`sender`).
pub(crate) fn envelope_from_endpoint(sender: &str) -> ResponseError {
    ResponseError::invalid_request(format_args!(
        "`proxy/successor` is exchanged only between a proxy and its conductor, not sent by {sender}"
    ))
}

/// Proxy chains: an envelope wraps one ordinary message, never another envelope.
pub(crate) fn nested_envelope() -> ResponseError {
    ResponseError::invalid_request("a `proxy/successor` envelope cannot wrap another one")
}

/// Proxy chains: a component initialized as a proxy gets `proxy/initialize`, the agent
/// `initialize`; the answer to the other one.
pub(crate) fn proxy_initialized_as_agent() -> ResponseError {
    ResponseError::invalid_request(
        "this component is a proxy: its conductor initializes it with `proxy/initialize`",
    )
}

/// Proxy chains: before answering `proxy/initialize`, a proxy forwards `initialize` to its
/// successor, and it answers with the successor's `protocolVersion` unchanged (it may lower
/// the version only in the `initialize` it forwards). `successor` is the version the
/// successor answered, `None` when no `initialize` went to it.
pub(crate) fn proxy_initialize_answer(
    successor: Option<ProtocolVersion>,
    answered: Option<ProtocolVersion>,
) -> Result<(), ResponseError> {
    match successor {
        None => Err(ResponseError::internal_error(
            "a proxy must forward `initialize` to its successor before answering `proxy/initialize`",
        )),
        Some(successor) if answered != Some(successor) => {
            Err(ResponseError::internal_error(format_args!(
                "a proxy must answer `proxy/initialize` with its successor's protocolVersion {}",
                successor.0
            )))
        }
        Some(_) => Ok(()),
    }
}

/// Proxy chains: the conductor's version for the chain, from the client's `initialize`: with
/// protocol v2 (feature `unstable-protocol-v2`), 2 for a request for 2 or more (the highest
/// version at or below it, as a router with both sides selects); otherwise the client's when
/// this runtime speaks it, else the latest (as a v1 agent negotiates). Each proxy then
/// negotiates its `proxy/initialize` as an agent of its version would: a v1-only proxy
/// answers a v2 chain as v1.
pub(crate) fn conductor_version(requested: ProtocolVersion) -> ProtocolVersion {
    #[cfg(feature = "unstable-protocol-v2")]
    if requested.0 >= 2 {
        return ProtocolVersion(2);
    }
    negotiate(requested)
}

/// Proxy chains with protocol v2: on a chain that speaks v2, a request id is never `null`,
/// on any of the conductor's connections (the conductor gives every forwarded request an id
/// of its own, so the next hop would not see it): the answer to one.
#[cfg(feature = "unstable-protocol-v2")]
pub(crate) fn null_request_id() -> ResponseError {
    ResponseError::null_request_id()
}
