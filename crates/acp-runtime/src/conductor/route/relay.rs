//! Requests the conductor relays with no task (acp-jsonrpc's `ConnectionHandle::try_relay_request`):
//! every request it would forward unread and at once, when nothing earlier from the same
//! connection waits to be forwarded. The answer goes back from the driver of the connection it
//! comes on; what cannot (no room in the reply budget, the next hop gone) is finished on the
//! conductor's executor, as the forwarding task would have finished it.

use std::sync::{Arc, OnceLock};

use acp_jsonrpc::{ForwardedResult, RawRequest, RelayHooks, RequestError, Responder};

use super::{HopDispatch, destination, gone, handshake_slot};
use crate::conductor::chain::{Chain, Shared};
use crate::proxy::envelope::{PROXY_SUCCESSOR, open_unread};

/// The hooks of the relays towards one destination (`None`: the client, else a component).
pub(super) struct RelayBack {
    shared: Arc<Shared>,
    chain: Arc<Chain>,
    hop: Option<usize>,
}

impl RelayHooks for RelayBack {
    fn finish(&self, mut responder: Responder, answer: Result<ForwardedResult, RequestError>) {
        let shared = self.shared.clone();
        let chain = self.chain.clone();
        let hop = self.hop;
        let finish = async move {
            match answer {
                Ok(result) => {
                    responder.reserve(result.len()).await;
                    responder.respond_forwarded(&result);
                }
                Err(error) => responder.respond_error(gone(&shared, &chain, hop, error).await),
            }
        };
        self.shared.executor.spawn(finish).detach();
    }

    fn ended(&self) {
        self.shared.forwarded();
    }
}

/// The relay hooks of one connection, one per destination, made with the chain.
pub(super) type RelayHooksByHop = OnceLock<Vec<Arc<dyn RelayHooks>>>;

impl HopDispatch {
    /// Relays `request` to its next hop now, when nothing earlier waits to be forwarded, the
    /// chain is up and the request is neither part of the handshake nor refused by the
    /// routing rule; else gives the responder back, for the forwarding task.
    pub(super) fn relay_now(
        &self,
        request: &RawRequest<'_>,
        responder: Responder,
    ) -> Result<(), Responder> {
        if !self.order.is_idle() {
            return Err(responder);
        }
        let Some(Ok(chain)) = self.shared.chain.get() else {
            return Err(responder);
        };
        let method = request.method();
        let (inner, params) = match method {
            PROXY_SUCCESSOR if self.opens_envelopes() => match open_unread(request) {
                Some((inner, params)) => (Some(inner), params),
                None => return Err(responder),
            },
            _ => (None, request.params()),
        };
        let Ok(to) = destination(self.hop, method, inner, &chain.is_proxy) else {
            return Err(responder);
        };
        if handshake_slot(&to).is_some() {
            return Err(responder);
        }
        let Some(rpc) = self.connection(chain, to.hop) else {
            return Err(responder);
        };
        let hooks = self.relays.get_or_init(|| {
            let destinations = std::iter::once(None).chain((0..chain.hops.len()).map(Some));
            destinations
                .map(|hop| {
                    Arc::new(RelayBack {
                        shared: self.shared.clone(),
                        chain: chain.clone(),
                        hop,
                    }) as Arc<dyn RelayHooks>
                })
                .collect()
        });
        let Some(hooks) = hooks.get(to.hop.map_or(0, |hop| hop + 1)) else {
            return Err(responder);
        };
        // Counted before it can end (its answer may come on another thread at once).
        self.shared.relaying();
        let relayed = if to.wrapped {
            rpc.try_relay_request_wrapped(PROXY_SUCCESSOR, to.method, params, responder, hooks)
        } else {
            rpc.try_relay_request(to.method, params, responder, hooks)
        };
        if relayed.is_err() {
            self.shared.forwarded();
        }
        relayed
    }
}
