//! The routing rules: where each message a hop receives goes next, on which connection, under
//! which method. Each connection has its own id space, so a forwarded request gets a new id
//! on the next hop and its answer comes back verbatim under the old one.

use std::sync::Arc;
#[cfg(feature = "unstable-protocol-v2")]
use std::sync::atomic::Ordering;

use acp_jsonrpc::{
    ConnectionHandle, ForwardedResult, Handler, IncomingNotification, IncomingRequest,
    RawNotification, RawRequest, RequestError, Responder, ResponseError,
};
use acp_types::ProtocolVersion;
use futures_lite::FutureExt;
use serde_json::value::RawValue;

use crate::conductor::chain::{Chain, Shared, describe};
use crate::conductor::handshake::Holdup;
use crate::proxy::envelope::{
    INITIALIZE, PROXY_INITIALIZE, PROXY_SUCCESSOR, open, open_forwarded, open_request, open_unread,
    wrap,
};
use crate::proxy::order::Order;
use crate::rules;

/// The handler of one of the conductor's connections: to the client (`hop` is `None`) or to
/// component `hop`.
pub(crate) struct HopDispatch {
    shared: Arc<Shared>,
    hop: Option<usize>,
    order: Arc<Order>,
    /// The hooks of the requests it relays, by destination (`relay.rs`).
    relays: relay::RelayHooksByHop,
}

mod relay;

/// Where a message goes, and as what (its method borrowed from the message: routing
/// allocates nothing).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Destination<'a> {
    /// `None` for the client, else the component.
    pub(crate) hop: Option<usize>,
    pub(crate) method: &'a str,
    /// Whether it goes wrapped in `proxy/successor` (to a proxy, from its successor).
    pub(crate) wrapped: bool,
}

/// The routing rule, on its own so that it can be tested without connections. `from` is the
/// receiving hop (`None`: the client), `is_proxy` whether each component is a proxy. A chain
/// whose last component is a proxy is a conductor in proxy mode: the client is then its
/// predecessor, whose `proxy/successor` messages come from the conductor's successor (they go
/// to the last proxy), and the last proxy's go back to the client, wrapped.
pub(crate) fn destination<'a>(
    from: Option<usize>,
    method: &'a str,
    inner: Option<&'a str>,
    is_proxy: &[bool],
) -> Result<Destination<'a>, ResponseError> {
    let last = is_proxy.len().saturating_sub(1);
    let proxy_mode = is_proxy.last() == Some(&true);
    let downstream = |hop: usize, method: &'a str| Destination {
        hop: Some(hop),
        method: if method == INITIALIZE && is_proxy.get(hop) == Some(&true) {
            PROXY_INITIALIZE
        } else {
            method
        },
        wrapped: false,
    };
    match from {
        None if method == PROXY_SUCCESSOR && proxy_mode => Ok(Destination {
            hop: Some(last),
            method: inner.unwrap_or_default(),
            wrapped: true,
        }),
        None if method == PROXY_SUCCESSOR => Err(rules::envelope_from_endpoint("the client")),
        None if method == INITIALIZE && proxy_mode => Err(rules::proxy_initialized_as_agent()),
        None => Ok(downstream(0, method)),
        Some(hop) if method == PROXY_SUCCESSOR => {
            if hop >= last && proxy_mode {
                return Ok(Destination {
                    hop: None,
                    method: inner.unwrap_or_default(),
                    wrapped: true,
                });
            }
            if hop >= last {
                return Err(rules::envelope_from_endpoint("the agent"));
            }
            let inner = inner.unwrap_or_default();
            Ok(downstream(hop + 1, inner))
        }
        Some(0) => Ok(Destination {
            hop: None,
            method,
            wrapped: false,
        }),
        Some(hop) => Ok(Destination {
            hop: Some(hop - 1),
            method,
            wrapped: true,
        }),
    }
}

impl HopDispatch {
    pub(crate) fn client(shared: Arc<Shared>) -> Self {
        HopDispatch {
            shared,
            hop: None,
            order: Arc::default(),
            relays: Default::default(),
        }
    }

    pub(crate) fn component(shared: Arc<Shared>, hop: usize) -> Self {
        HopDispatch {
            shared,
            hop: Some(hop),
            order: Arc::default(),
            relays: Default::default(),
        }
    }

    fn connection<'a>(
        &'a self,
        chain: &'a Chain,
        hop: Option<usize>,
    ) -> Option<&'a ConnectionHandle> {
        match hop {
            None => self.shared.client.get(),
            Some(hop) => chain.hops.get(hop).map(|hop| &hop.rpc),
        }
    }

    /// The method that starts the chain: `proxy/initialize` in proxy mode.
    fn entry(&self) -> &'static str {
        if self.shared.proxy_mode {
            PROXY_INITIALIZE
        } else {
            INITIALIZE
        }
    }

    /// Whether a `proxy/successor` received on this connection is opened: from a component,
    /// or from the client of a conductor in proxy mode (its successor's messages).
    fn opens_envelopes(&self) -> bool {
        self.hop.is_some() || self.shared.proxy_mode
    }

    async fn chain_for(&self, method: &str) -> Result<Arc<Chain>, ResponseError> {
        if self.hop.is_none() {
            if method == self.entry() {
                let shared = &self.shared;
                return shared
                    .chain(|index| HopDispatch::component(shared.clone(), index))
                    .await
                    .map_err(failure);
            }
            if method == INITIALIZE {
                return Err(rules::proxy_initialized_as_agent());
            }
        }
        match self.shared.chain.get() {
            Some(Ok(chain)) => Ok(chain.clone()),
            Some(Err(error)) => Err(failure(error.clone())),
            None => Err(rules::not_initialized(format_args!(
                "expected `{}` before `{method}`",
                self.entry()
            ))),
        }
    }
}

/// The error for a request whose next hop went away: the component's failure.
async fn gone(
    shared: &Shared,
    chain: &Chain,
    hop: Option<usize>,
    error: RequestError,
) -> ResponseError {
    match (error, hop) {
        (RequestError::Response(error), _) => error,
        (RequestError::ConnectionClosed, Some(hop)) => {
            let name = chain.hops.get(hop).map_or("", |hop| hop.name.as_str());
            let description = match shared.failure() {
                Some(failure) => failure.to_owned(),
                None => {
                    shared
                        .describe_end(hop, name, "closed its output".to_owned())
                        .await
                }
            };
            failure(description)
        }
        (other, Some(hop)) => {
            let name = chain.hops.get(hop).map_or("", |hop| hop.name.as_str());
            failure(describe(hop, name, &other.to_string()))
        }
        (other, None) => ResponseError::internal_error(format_args!("the client: {other}")),
    }
}

/// `-32603` with the failure as its message, so that every client shows it.
fn failure(description: String) -> ResponseError {
    ResponseError::new(acp_jsonrpc::ErrorCode::INTERNAL_ERROR, description)
}

/// The version the conductor selected for the client's `initialize`, and its params with that
/// version: unchanged when it is the client's (so members it does not know survive), else
/// rewritten.
fn negotiated(
    params: Option<&RawValue>,
) -> Result<(ProtocolVersion, Option<Box<RawValue>>), ResponseError> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Requested {
        protocol_version: ProtocolVersion,
    }
    let raw = params.map_or("null", RawValue::get);
    let requested: Requested = serde_json::from_str(raw).map_err(|error| {
        ResponseError::invalid_params(format_args!("invalid params for `initialize`: {error}"))
    })?;
    let selected = rules::conductor_version(requested.protocol_version);
    if selected == requested.protocol_version {
        return Ok((selected, params.map(ToOwned::to_owned)));
    }
    let mut object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(raw).map_err(ResponseError::invalid_params)?;
    object.insert("protocolVersion".to_owned(), selected.0.into());
    serde_json::value::to_raw_value(&object)
        .map(|params| (selected, Some(params)))
        .map_err(ResponseError::internal_error)
}

/// The handshake slot of a message going to `to`, when it is an `initialize` (or
/// `proxy/initialize`) to a component, or to the conductor's successor through the client.
fn handshake_slot(to: &Destination) -> Option<Option<usize>> {
    let initialize = to.method == INITIALIZE || to.method == PROXY_INITIALIZE;
    match to.hop {
        Some(hop) if initialize && !to.wrapped => Some(Some(hop)),
        None if initialize && to.wrapped => Some(None),
        _ => None,
    }
}

impl HopDispatch {
    /// Forwards `request` and waits for the answer. The request is dropped as soon as its
    /// copy is queued on the next hop, so that a large message is not held twice while the
    /// next hop works on it (docs/limits.md).
    async fn forward_request(
        &self,
        request: IncomingRequest,
    ) -> Result<ForwardedResult, ResponseError> {
        let ticket = self.order.ticket();
        let _forwarding = self.shared.forwarding();
        let method = request.method();
        let starts_chain = self.hop.is_none() && method == self.entry();
        let chain = self.chain_for(method).await?;
        let envelope = match method {
            PROXY_SUCCESSOR if self.opens_envelopes() => Some(open_request(&request)?),
            _ => None,
        };
        let inner = envelope.as_ref().map(|(inner, _)| &**inner);
        let to = destination(self.hop, method, inner, &chain.is_proxy)?;
        // Unread unless the request starts the chain (`takes_unread`).
        let mut params = match &envelope {
            Some((_, params)) => *params,
            None => request.unchecked_params(),
        };
        let selected;
        if starts_chain {
            let version;
            (version, selected) = negotiated(request.raw_params())?;
            params = selected.as_deref().map(Into::into);
            // A v2 `initialize` is a v2 request: its id is not `null`.
            #[cfg(feature = "unstable-protocol-v2")]
            if version.0 >= 2 && request.id().is_null() {
                return Err(rules::null_request_id());
            }
            #[cfg(not(feature = "unstable-protocol-v2"))]
            let _ = version;
        }
        let Some(rpc) = self.connection(&chain, to.hop) else {
            return Err(ResponseError::internal_error("no connection to route to"));
        };
        let slot = handshake_slot(&to);
        ticket.turn().await;
        if let Some(slot) = slot {
            chain.handshake.sent(slot);
        }
        // The answer comes back unread (`ForwardedResult`): the peer that decodes it answers
        // for a malformed result (docs/limits.md, "What a router forwards unread").
        let sent = if to.wrapped {
            rpc.send_request_forwarded_wrapped(PROXY_SUCCESSOR, to.method, params)
                .await
        } else {
            rpc.send_request_forwarded(to.method, params).await
        };
        let next_hop = to.hop;
        drop(ticket);
        drop(envelope);
        drop(request);
        let answer = match sent {
            Ok(pending) if starts_chain => self.within_initialize_timeout(&chain, pending).await?,
            Ok(pending) => pending.await,
            Err(error) => Err(error),
        };
        match answer {
            Ok(result) => {
                if let Some(slot) = slot {
                    chain.handshake.answered(slot);
                }
                // The chain speaks what it answered, which may be lower than the client
                // asked (a v1-only proxy answers a v2 chain as v1); a refused (repeated)
                // `initialize` changes nothing.
                #[cfg(feature = "unstable-protocol-v2")]
                if starts_chain {
                    let answered = result.as_unchecked().as_bytes();
                    let answered = crate::proxy::context::answered_version(answered);
                    let v2 = answered.is_some_and(|version| version.0 >= 2);
                    self.shared.speaks_v2.store(v2, Ordering::Release);
                }
                Ok(result)
            }
            Err(error) => Err(gone(&self.shared, &chain, next_hop, error).await),
        }
    }

    /// The chain's answer to the client's `initialize`, or, past the initialize timeout, the
    /// failure that names the component holding it up (the chain then goes down with it).
    async fn within_initialize_timeout(
        &self,
        chain: &Chain,
        pending: acp_jsonrpc::RequestFuture<ForwardedResult>,
    ) -> Result<Result<ForwardedResult, RequestError>, ResponseError> {
        let timeout = self.shared.initialize_timeout;
        let answer = async { Some(pending.await) }
            .or(async {
                smol::Timer::after(timeout).await;
                None
            })
            .await;
        if let Some(answer) = answer {
            return Ok(answer);
        }
        let waited = format!("within {timeout:?} (the conductor's initialize timeout)");
        let description = match chain.handshake.holdup() {
            Holdup::Component(index) => {
                let hop = &chain.hops[index];
                let asked = if hop.is_proxy {
                    PROXY_INITIALIZE
                } else {
                    INITIALIZE
                };
                describe(
                    index,
                    &hop.name,
                    &format!("did not answer `{asked}` {waited}"),
                )
            }
            Holdup::Successor => format!(
                "the conductor's successor, reached through its client, did not answer `{INITIALIZE}` {waited}"
            ),
            Holdup::Unknown => format!("the chain did not answer `{INITIALIZE}` {waited}"),
        };
        self.shared.fail(description.clone());
        Err(failure(description))
    }

    /// Forwards `notification`; it is dropped once its copy is queued on the next hop.
    async fn forward_notification(&self, notification: IncomingNotification) {
        let ticket = self.order.ticket();
        let _forwarding = self.shared.forwarding();
        let method = notification.method();
        let report = |reason: String| notification.report_unhandled(reason);
        let Some(Ok(chain)) = self.shared.chain.get() else {
            return report(format!("`{method}` before `initialize` is dropped"));
        };
        let envelope = match method {
            PROXY_SUCCESSOR if self.opens_envelopes() => match open(notification.raw_params()) {
                Ok(envelope) => Some(envelope),
                Err(error) => return report(error.message),
            },
            _ => None,
        };
        let inner = envelope.as_ref().map(|envelope| &*envelope.method);
        let to = match destination(self.hop, method, inner, &chain.is_proxy) {
            Ok(to) => to,
            Err(error) => return report(error.message),
        };
        let params = match &envelope {
            Some(envelope) => envelope.params,
            None => notification.raw_params(),
        };
        let Some(rpc) = self.connection(chain, to.hop) else {
            return report("no connection to route to".to_owned());
        };
        ticket.turn().await;
        // The copy for the next hop is made here; the message it came from is let go before
        // waiting for room on that hop.
        let queued = if to.wrapped {
            rpc.notify_raw(PROXY_SUCCESSOR, Some(&wrap(to.method, params)))
        } else {
            rpc.notify_raw(to.method, params)
        };
        let mut queued = std::pin::pin!(queued);
        // Most of the time there is room at once: nothing more to let go of or copy.
        if let Some(sent) = futures_lite::future::poll_once(queued.as_mut()).await {
            if let Err(error) = sent {
                report(format!("`{method}` could not be forwarded: {error}"));
            }
            return;
        }
        // Dropped before waiting for room (its bytes are queued): what a failure report
        // needs is kept apart.
        let from = notification.connection().clone();
        let method = method.to_owned();
        drop(envelope);
        drop(notification);
        if let Err(error) = queued.await {
            from.report(acp_jsonrpc::Problem::UnhandledNotification {
                reason: format!("`{method}` could not be forwarded: {error}"),
                method,
            });
        }
    }
}

impl HopDispatch {
    /// The forwarding path: queues `notification` on its next hop at once, as bytes, when
    /// nothing earlier from this connection waits to be forwarded and the next hop has room;
    /// anything else (an error to report, a full queue) goes the way of
    /// [`forward_notification`](Self::forward_notification), which the connection then calls.
    fn forward_now(&self, notification: &RawNotification<'_>) -> bool {
        if !self.order.is_idle() {
            return false;
        }
        let Some(Ok(chain)) = self.shared.chain.get() else {
            return false;
        };
        let method = notification.method();
        let (inner, params) = match method {
            PROXY_SUCCESSOR if self.opens_envelopes() => match open_forwarded(notification) {
                Some((inner, params)) => (Some(inner), params),
                None => return false,
            },
            _ => (None, notification.params()),
        };
        let Ok(to) = destination(self.hop, method, inner, &chain.is_proxy) else {
            return false;
        };
        let Some(rpc) = self.connection(chain, to.hop) else {
            return false;
        };
        if to.wrapped {
            rpc.try_notify_wrapped(PROXY_SUCCESSOR, to.method, params)
        } else {
            rpc.try_notify_raw(to.method, params)
        }
    }
}

impl Handler for HopDispatch {
    async fn request(&self, request: IncomingRequest, mut responder: Responder) {
        #[cfg(feature = "unstable-protocol-v2")]
        if request.id().is_null() && self.shared.speaks_v2.load(Ordering::Acquire) {
            return responder.respond_error(rules::null_request_id());
        }
        match self.forward_request(request).await {
            Ok(result) => {
                // Answers pass through whole: wait for room in the reply budget first.
                responder.reserve(result.len()).await;
                responder.respond_forwarded(&result);
            }
            Err(error) => responder.respond_error(error),
        }
    }

    async fn notification(&self, notification: IncomingNotification) {
        self.forward_notification(notification).await;
    }

    const FORWARDS: bool = true;

    fn forward_notification(&self, notification: &RawNotification<'_>) -> bool {
        self.forward_now(notification)
    }

    /// Every request is forwarded with its params unread (the peer that decodes them answers
    /// for them), but those the conductor reads: the client's `initialize` (its version is
    /// negotiated) and any `initialize` or `proxy/initialize` on its way to a component.
    fn takes_unread(&self, request: &RawRequest<'_>) -> bool {
        let handshake = |method: &str| method == INITIALIZE || method == PROXY_INITIALIZE;
        match request.method() {
            PROXY_SUCCESSOR if self.opens_envelopes() => {
                open_unread(request).is_some_and(|(inner, _)| !handshake(inner))
            }
            method => !handshake(method),
        }
    }

    /// Relays every request it takes unread at once, with no task, when nothing earlier
    /// waits to be forwarded (`relay.rs`).
    fn relay_request(
        &self,
        request: &RawRequest<'_>,
        responder: Responder,
    ) -> Result<(), Responder> {
        self.relay_now(request, responder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(hop: Option<usize>, method: &str, wrapped: bool) -> Destination<'_> {
        Destination {
            hop,
            method,
            wrapped,
        }
    }

    #[test]
    fn the_routing_table() {
        let chain = [true, true, false];
        let route = |from, method, inner| destination(from, method, inner, &chain);
        assert_eq!(
            route(None, "initialize", None),
            Ok(to(Some(0), "proxy/initialize", false))
        );
        assert_eq!(
            route(None, "session/prompt", None),
            Ok(to(Some(0), "session/prompt", false))
        );
        assert_eq!(
            route(Some(0), "proxy/successor", Some("initialize")),
            Ok(to(Some(1), "proxy/initialize", false))
        );
        assert_eq!(
            route(Some(1), "proxy/successor", Some("initialize")),
            Ok(to(Some(2), "initialize", false))
        );
        assert_eq!(
            route(Some(2), "session/update", None),
            Ok(to(Some(1), "session/update", true))
        );
        assert_eq!(
            route(Some(0), "session/update", None),
            Ok(to(None, "session/update", false))
        );
        assert_eq!(
            route(None, "proxy/successor", None).unwrap_err().code.0,
            -32600
        );
        assert_eq!(
            route(Some(2), "proxy/successor", Some("x"))
                .unwrap_err()
                .code
                .0,
            -32600
        );
        let direct = destination(None, "initialize", None, &[false]);
        assert_eq!(direct, Ok(to(Some(0), "initialize", false)));
    }

    #[test]
    fn the_routing_table_in_proxy_mode() {
        let chain = [true, true];
        let route = |from, method, inner| destination(from, method, inner, &chain);
        assert_eq!(
            route(None, "proxy/initialize", None),
            Ok(to(Some(0), "proxy/initialize", false))
        );
        assert_eq!(route(None, "initialize", None).unwrap_err().code.0, -32600);
        assert_eq!(
            route(Some(0), "proxy/successor", Some("initialize")),
            Ok(to(Some(1), "proxy/initialize", false))
        );
        // The last proxy's successor is the conductor's: through the client, still wrapped
        // (the conductor's own conductor picks `proxy/initialize` or `initialize`).
        assert_eq!(
            route(Some(1), "proxy/successor", Some("initialize")),
            Ok(to(None, "initialize", true))
        );
        assert_eq!(
            route(None, "proxy/successor", Some("session/update")),
            Ok(to(Some(1), "session/update", true))
        );
        assert_eq!(
            route(Some(1), "session/update", None),
            Ok(to(Some(0), "session/update", true))
        );
        assert_eq!(
            route(Some(0), "session/update", None),
            Ok(to(None, "session/update", false))
        );
    }
}
