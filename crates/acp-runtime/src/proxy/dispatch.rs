//! The proxy's side of its connection to the conductor: which neighbour each message came
//! from, its hook or the default forward, and the rules of `proxy/initialize`.

use std::borrow::Cow;
use std::sync::Arc;

use acp_jsonrpc::json::UncheckedJson;
use acp_jsonrpc::{
    ConnectionHandle, ForwardedResult, Handler, IncomingNotification, IncomingRequest,
    RawNotification, RawRequest, RelayHooks, RequestError, Responder, ResponseError,
};
use serde_json::value::RawValue;

use crate::proxy::context::{ProxyContext, ProxyState, answered_version};
use crate::proxy::envelope::{
    INITIALIZE, PROXY_INITIALIZE, PROXY_SUCCESSOR, open, open_forwarded, open_request, open_unread,
    wrap,
};
use crate::proxy::hooks::{From, Proxy};
use crate::proxy::order::{Order, Ticket};
use crate::rules;

pub(crate) struct ProxyDispatch {
    pub(crate) proxy: Proxy,
    pub(crate) state: Arc<ProxyState>,
    pub(crate) order: Arc<Order>,
    /// The hooks of the requests it relays ([`RelayBack`]).
    pub(crate) relays: Arc<dyn RelayHooks>,
}

/// Where a request read unread comes from and what it calls, with its params: the
/// `proxy/successor` envelope opened as the forwarding scan found it; `None` for
/// `initialize`, `proxy/initialize` and an envelope the scan did not open (validated whole).
fn routed_unread<'a>(
    request: &RawRequest<'a>,
) -> Option<(From, &'a str, Option<UncheckedJson<'a>>)> {
    match arrival(request.method()) {
        Arrival::Successor => {
            open_unread(request).map(|(method, params)| (From::Agent, method, params))
        }
        Arrival::Plain => Some((From::Client, request.method(), request.params())),
        Arrival::ProxyInitialize | Arrival::Initialize => None,
    }
}

/// Finishes what a relayed request's answer could not do by itself, as the forwarding task
/// would have: an answer the reply budget has no room for waits for room on a task of smol's
/// global executor (the proxy's own may be anyone's); a failure is answered at once.
pub(crate) struct RelayBack;

impl RelayHooks for RelayBack {
    fn finish(&self, mut responder: Responder, answer: Result<ForwardedResult, RequestError>) {
        match answer {
            Ok(result) => smol::spawn(async move {
                responder.reserve(result.len()).await;
                responder.respond_forwarded(&result);
            })
            .detach(),
            Err(error) => responder.respond_error(to_response(error)),
        }
    }
}

/// A message's method, params and sender once any envelope is opened, borrowed from the
/// message: only a hook, which takes its params, gets a copy. The params are a notification's
/// `RawValue`, a request's `UncheckedJson` (read or not).
struct Routed<'a, P> {
    from: From,
    method: Cow<'a, str>,
    params: Option<P>,
}

/// What a message's own method says of it: the one rule both the handler's way (`route`) and
/// the forwarding path route by.
enum Arrival {
    /// `proxy/successor`: from the agent's side, the message it carries to be opened.
    Successor,
    /// `proxy/initialize`: the client's `initialize`.
    ProxyInitialize,
    /// `initialize`, which a proxy is never sent.
    Initialize,
    /// Anything else: from the client's side, as it is.
    Plain,
}

fn arrival(method: &str) -> Arrival {
    match method {
        PROXY_SUCCESSOR => Arrival::Successor,
        PROXY_INITIALIZE => Arrival::ProxyInitialize,
        INITIALIZE => Arrival::Initialize,
        _ => Arrival::Plain,
    }
}

/// Where a message goes: `open` opens a `proxy/successor` envelope in its params.
fn route<'a, P>(
    method: &'a str,
    params: Option<P>,
    open: impl FnOnce() -> Result<(Cow<'a, str>, Option<P>), ResponseError>,
) -> Result<Routed<'a, P>, ResponseError> {
    match arrival(method) {
        Arrival::Successor => {
            let (method, params) = open()?;
            Ok(Routed {
                from: From::Agent,
                method,
                params,
            })
        }
        Arrival::ProxyInitialize => Ok(Routed {
            from: From::Client,
            method: Cow::Borrowed(INITIALIZE),
            params,
        }),
        Arrival::Initialize => Err(rules::proxy_initialized_as_agent()),
        Arrival::Plain => Ok(Routed {
            from: From::Client,
            method: Cow::Borrowed(method),
            params,
        }),
    }
}

fn to_response(error: RequestError) -> ResponseError {
    match error {
        RequestError::Response(error) => error,
        other => ResponseError::internal_error(format_args!("forwarding failed: {other}")),
    }
}

impl ProxyDispatch {
    fn context(&self, rpc: &ConnectionHandle) -> ProxyContext {
        ProxyContext {
            rpc: rpc.clone(),
            state: self.state.clone(),
        }
    }

    /// The answer to a request: its hook's, or the neighbour's it was forwarded to (its result
    /// unread: the peer that decodes it answers for it).
    async fn answer(
        &self,
        ticket: Ticket,
        rpc: &ConnectionHandle,
        routed: Routed<'_, UncheckedJson<'_>>,
    ) -> Result<ForwardedResult, ResponseError> {
        ticket.turn().await;
        if let Some(hook) = self.proxy.requests.get(&(routed.from, &*routed.method)) {
            drop(ticket);
            // A hooked request was validated with its line (`takes_unread` declines it): its
            // params are valid JSON, read once more here, on the hook's path only.
            let params = match routed.params {
                Some(params) => Some(
                    serde_json::from_slice::<Box<RawValue>>(params.as_bytes())
                        .map_err(ResponseError::invalid_params)?,
                ),
                None => None,
            };
            return hook(self.context(rpc), params)
                .await
                .map(ForwardedResult::from)
                .map_err(|error| error.to_response());
        }
        let pending = match routed.from {
            From::Client => {
                rpc.send_request_forwarded_wrapped(PROXY_SUCCESSOR, &routed.method, routed.params)
                    .await
            }
            From::Agent => {
                rpc.send_request_forwarded(&routed.method, routed.params)
                    .await
            }
        };
        drop(ticket);
        let result = pending.map_err(to_response)?.await.map_err(to_response)?;
        if routed.from == From::Client && routed.method == INITIALIZE {
            let answered = result.as_unchecked();
            self.state.note_successor_initialized(answered.as_bytes());
        }
        Ok(result)
    }
}

impl Handler for ProxyDispatch {
    async fn request(&self, request: IncomingRequest, mut responder: Responder) {
        let ticket = self.order.ticket();
        let routed = route(request.method(), request.unchecked_params(), || {
            open_request(&request)
        });
        let routed = match routed {
            Ok(routed) => routed,
            Err(error) => return responder.respond_error(error),
        };
        let initialize = request.method() == PROXY_INITIALIZE;
        let rpc = request.connection().clone();
        let mut answer = self.answer(ticket, &rpc, routed).await;
        if initialize && let Ok(result) = &answer {
            let successor = self.state.successor_version();
            let answered = answered_version(result.as_unchecked().as_bytes());
            if let Err(error) = rules::proxy_initialize_answer(successor, answered) {
                answer = Err(error);
            }
        }
        match answer {
            Ok(result) => {
                // Forwarded answers can be large: wait for room in the reply budget, as
                // the connection asks of handlers that may answer megabytes.
                responder.reserve(result.len()).await;
                responder.respond_forwarded(&result);
            }
            Err(error) => responder.respond_error(error),
        }
    }

    async fn notification(&self, notification: IncomingNotification) {
        let ticket = self.order.ticket();
        let params = notification.raw_params();
        let routed = route(notification.method(), params, || {
            open(params).map(|envelope| (envelope.method, envelope.params))
        });
        let routed = match routed {
            Ok(routed) => routed,
            Err(error) => return notification.report_unhandled(error.message),
        };
        ticket.turn().await;
        let rpc = notification.connection().clone();
        let sent = if let Some(hook) = self
            .proxy
            .notifications
            .get(&(routed.from, &*routed.method))
        {
            hook(self.context(&rpc), routed.params.map(ToOwned::to_owned)).await
        } else {
            let sent = match routed.from {
                From::Client => {
                    let envelope = wrap(&routed.method, routed.params);
                    rpc.notify_raw(PROXY_SUCCESSOR, Some(&envelope)).await
                }
                From::Agent => rpc.notify_raw(&routed.method, routed.params).await,
            };
            sent.map_err(crate::Error::from)
        };
        drop(ticket);
        if let Err(error) = sent {
            notification.report_unhandled(format_args!("`{}`: {error}", routed.method));
        }
    }

    const FORWARDS: bool = true;

    /// Every request no hook takes, but `proxy/initialize`, is forwarded with its params
    /// unread (the peer that decodes them answers for them); a hooked one is validated.
    fn takes_unread(&self, request: &RawRequest<'_>) -> bool {
        routed_unread(request)
            .is_some_and(|(from, method, _)| !self.proxy.requests.contains_key(&(from, method)))
    }

    /// A request no hook takes is relayed with no task when nothing earlier waits to be
    /// forwarded and there is room (its answer comes back from the driver); anything else goes
    /// the way of `request`.
    fn relay_request(
        &self,
        request: &RawRequest<'_>,
        responder: Responder,
    ) -> Result<(), Responder> {
        if !self.order.is_idle() {
            return Err(responder);
        }
        let Some((from, method, params)) = routed_unread(request) else {
            return Err(responder);
        };
        // No hook takes it: `takes_unread` took it.
        let rpc = request.connection();
        match from {
            From::Client => rpc.try_relay_request_wrapped(
                PROXY_SUCCESSOR,
                method,
                params,
                responder,
                &self.relays,
            ),
            From::Agent => rpc.try_relay_request(method, params, responder, &self.relays),
        }
    }

    /// The forwarding path: a notification no hook takes goes on to its neighbour at once,
    /// as bytes and unread, when nothing earlier waits to be forwarded and there is room;
    /// anything else (a hook, an envelope the scan could not open, a full queue) goes the way
    /// of `notification`, which validates it and reports what is wrong.
    fn forward_notification(&self, notification: &RawNotification<'_>) -> bool {
        if !self.order.is_idle() {
            return false;
        }
        let (from, method, params) = match arrival(notification.method()) {
            Arrival::Successor => match open_forwarded(notification) {
                Some((method, params)) => (From::Agent, method, params),
                None => return false,
            },
            Arrival::Plain => (From::Client, notification.method(), notification.params()),
            Arrival::ProxyInitialize | Arrival::Initialize => return false,
        };
        if self.proxy.notifications.contains_key(&(from, method)) {
            return false;
        }
        let rpc = notification.connection();
        match from {
            From::Client => rpc.try_notify_wrapped(PROXY_SUCCESSOR, method, params),
            From::Agent => rpc.try_notify_raw(method, params),
        }
    }
}
