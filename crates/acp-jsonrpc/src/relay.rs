//! Relaying a request with no task: a router's handler hands the peer's request, unread, to
//! [`ConnectionHandle::try_relay_request`] on the next hop, together with its [`Responder`];
//! the responder waits in that connection's map of requests in flight, and the driver that
//! reads the answer answers the peer with it. A router that forwards a request through a task
//! pays for the task, its future, a channel and two wake-ups per request; a relay pays for the
//! map entry.
//!
//! What a task would do after the answer, the relay does at once when it can: a result goes
//! back spliced in unread when the reply budget has room for it now, and an `error` answer
//! goes back as it came. Anything else (no room in the reply budget, a malformed answer, the
//! next hop's connection closed) is handed to the router's [`RelayHooks::finish`], with the
//! responder, to finish the way it would have in a task.

use std::any::Any;
use std::sync::Arc;

use crate::connection::ConnectionHandle;
use crate::forwarded::Answer;
use crate::handler::Responder;
use crate::json::UncheckedJson;
use crate::message::{encode_raw_request, encode_wrapped_request};
use crate::shared::{Delivered, Relayed};
use crate::{ForwardedResult, RequestError, RequestId};

/// What a router adds to the relays it makes ([`ConnectionHandle::try_relay_request`]).
/// Both methods run in the driver of the connection the answer came on (or that closed, or
/// that read the cancellation), so they must not block: spawn what waits.
///
/// ```
/// use acp_jsonrpc::{ForwardedResult, RelayHooks, RequestError, Responder, ResponseError};
///
/// struct Hooks;
///
/// impl RelayHooks for Hooks {
///     fn finish(&self, responder: Responder, answer: Result<ForwardedResult, RequestError>) {
///         match answer {
///             // In a real router: spawn this, with `responder.reserve(result.len()).await`
///             // first.
///             Ok(result) => responder.respond_forwarded(&result),
///             Err(error) => responder.respond_error(ResponseError::internal_error(error)),
///         }
///     }
/// }
/// ```
pub trait RelayHooks: Send + Sync + 'static {
    /// Finishes a relayed request the connection could not answer by itself: with the result
    /// when the reply budget had no room for it now (reserve it, then
    /// [`Responder::respond_forwarded`]), or with why the request failed (a malformed answer,
    /// the next hop's connection closed). An `error` answer never comes here: it goes back as
    /// it came.
    fn finish(&self, responder: Responder, answer: Result<ForwardedResult, RequestError>);

    /// Called once for each relay made with these hooks when it is over: answered, failed,
    /// or cancelled. The default does nothing.
    fn ended(&self) {}
}

/// What waits in the next hop's map for a relayed request's answer.
struct Relay {
    /// Taken when the answer is delivered, or the relay given back.
    responder: Option<Responder>,
    hooks: Arc<dyn RelayHooks>,
    /// The relay was made (its request queued, or about to be): [`RelayHooks::ended`] is due.
    made: bool,
}

/// Dropped when it is over, whichever way (answered, cancelled, failed), with its responder
/// if still there: a responder dropped unanswered answers for itself, `-32800` once cancelled.
impl Drop for Relay {
    fn drop(&mut self) {
        drop(self.responder.take());
        if self.made {
            self.hooks.ended();
        }
    }
}

impl Relay {
    /// Answers with a result read into `result`, or hands it to the hooks when the reply
    /// budget has no room for it now.
    fn answer(&self, mut responder: Responder, result: ForwardedResult) {
        if responder.try_reserve_now(result.len()) {
            return responder.respond_forwarded(&result);
        }
        self.hooks.finish(responder, Ok(result));
    }
}

impl Relayed for Relay {
    fn deliver(mut self: Box<Self>, answer: Delivered<'_>) {
        let Some(mut responder) = self.responder.take() else {
            return;
        };
        let result = match answer {
            Delivered::Unread(result) => result,
            Delivered::Answer(Ok(answer)) => {
                return self.answer(responder, ForwardedResult(answer));
            }
            Delivered::Answer(Err(RequestError::Response(error))) => {
                return responder.respond_error(error);
            }
            Delivered::Answer(Err(error)) => return self.hooks.finish(responder, Err(error)),
        };
        if responder.try_reserve_now(result.as_bytes().len()) {
            return responder.respond_unread(result);
        }
        // Copied only now: it outlives the line it was read from.
        let result = ForwardedResult(Answer::Unread(result.as_bytes().into()));
        self.hooks.finish(responder, Ok(result));
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

impl ConnectionHandle {
    /// Relays the peer's request answered by `responder` to this connection's peer as
    /// `method` with `params` written as they are, if its outgoing queue has room now: the
    /// answer goes back to `responder` from this connection's driver, with no task, or through
    /// [`RelayHooks::finish`]. Gives the responder back when there is no room, or this
    /// connection is closed (the hooks are then not called).
    ///
    /// For [`Handler::relay_request`](crate::Handler::relay_request). Cancelling the relayed
    /// request (the peer's `$/cancel_request`) answers it `-32800` and cancels ours, as
    /// dropping a [`RequestFuture`](crate::RequestFuture) does; so does closing its
    /// connection ([`ConnectionHandle::close`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use acp_jsonrpc::{ConnectionHandle, RawRequest, RelayHooks, Responder};
    ///
    /// fn relay(
    ///     next: &ConnectionHandle,
    ///     request: &RawRequest<'_>,
    ///     responder: Responder,
    ///     hooks: &Arc<dyn RelayHooks>,
    /// ) -> Result<(), Responder> {
    ///     next.try_relay_request(request.method(), request.params(), responder, hooks)
    /// }
    /// ```
    pub fn try_relay_request(
        &self,
        method: &str,
        params: Option<UncheckedJson<'_>>,
        responder: Responder,
        hooks: &Arc<dyn RelayHooks>,
    ) -> Result<(), Responder> {
        let at_least = method.len() + params.map_or(0, |params| params.as_bytes().len());
        let encode =
            |out: &mut Vec<u8>, id: &RequestId| encode_raw_request(out, id, method, params);
        self.relay(method, at_least, encode, responder, hooks)
    }

    /// Like [`try_relay_request`](Self::try_relay_request), as the request `outer` whose
    /// params carry the message `inner` with `params` (`{"method":inner,"params":…}`, as ACP's
    /// `proxy/successor` carries one), spliced into the line unread.
    pub fn try_relay_request_wrapped(
        &self,
        outer: &str,
        inner: &str,
        params: Option<UncheckedJson<'_>>,
        responder: Responder,
        hooks: &Arc<dyn RelayHooks>,
    ) -> Result<(), Responder> {
        let at_least =
            outer.len() + inner.len() + params.map_or(0, |params| params.as_bytes().len());
        let encode = |out: &mut Vec<u8>, id: &RequestId| {
            encode_wrapped_request(out, id, outer, inner, params)
        };
        self.relay(outer, at_least, encode, responder, hooks)
    }

    fn relay(
        &self,
        method: &str,
        at_least: usize,
        encode: impl Fn(&mut Vec<u8>, &RequestId),
        responder: Responder,
        hooks: &Arc<dyn RelayHooks>,
    ) -> Result<(), Responder> {
        // Only `Relay`s are registered as relays, and each holds its responder until delivered.
        let give_back = |relay: Box<dyn Relayed>| {
            let mut relay = relay.into_any().downcast::<Relay>().ok()?;
            relay.made = false;
            relay.responder.take()
        };
        let id = self.shared.next_request_id();
        let state = responder.state().clone();
        let relay = Box::new(Relay {
            responder: Some(responder),
            hooks: hooks.clone(),
            made: true,
        });
        if let Err(relay) = self.shared.register_relay(id, relay) {
            return give_back(relay).map_or(Ok(()), Err);
        }
        // Linked before it is queued: a cancellation of the peer's request finds it from here
        // on (one that comes before finds nothing to cancel here: nothing was sent).
        let _ = state.relay.set(self.shared.link(id));
        let request_id = RequestId::from(id);
        match self
            .shared
            .try_enqueue_encoded(at_least, |out| encode(out, &request_id))
        {
            Some(length) => {
                let trace = self.shared.trace.request(id, method);
                self.shared.trace.request_sent(trace, id, length);
                Ok(())
            }
            // Not queued: taken back, unless the connection closed meanwhile and answered it.
            None => match self.shared.take_relay(id).and_then(give_back) {
                Some(responder) => Err(responder),
                None => Ok(()),
            },
        }
    }
}
