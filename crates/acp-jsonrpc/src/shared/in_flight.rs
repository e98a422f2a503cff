//! The requests in flight both ways: ours waiting for their responses (by id, the result
//! read or forwarded unread), and the peer's being handled (by id, each holding its bytes of
//! the in-flight budgets until its responder lets go).

use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Delivered, PendingRequest, Refusal, RequestState, ResponseResult, Shared, lock};
use crate::budget::Charge;
use crate::forwarded::Answer;
use crate::json::UncheckedJson;
use crate::trace::IncomingTrace;
use crate::{Problem, RequestError, RequestId, Response, ResponseError, oneshot};

impl PendingRequest {
    fn is_forwarded(&self) -> bool {
        match self {
            PendingRequest::Waiting { forwarded, .. } => *forwarded,
            PendingRequest::Relayed(_) => true,
        }
    }

    /// Hands `answer` to whoever waits.
    fn finish(self, answer: ResponseResult) {
        match self {
            PendingRequest::Waiting { sender, .. } => sender.send(answer),
            PendingRequest::Relayed(relay) => relay.deliver(Delivered::Answer(answer)),
        }
    }
}

impl Shared {
    // --- requests we sent ------------------------------------------------------

    pub(crate) fn next_request_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers a waiter for the response to `id` (whose result is `forwarded` unread, or
    /// read); `None` when the connection can no longer receive responses.
    pub(crate) fn register_waiter(
        &self,
        id: i64,
        forwarded: bool,
    ) -> Option<oneshot::Receiver<ResponseResult>> {
        let mut pending = lock(&self.pending);
        if pending.refused {
            return None;
        }
        let (sender, receiver) = oneshot::channel();
        pending
            .waiters
            .insert(id, PendingRequest::Waiting { sender, forwarded });
        Some(receiver)
    }

    /// Forgets the waiter for `id`; returns whether it was still waiting.
    pub(crate) fn forget_waiter(&self, id: i64) -> bool {
        lock(&self.pending).waiters.remove(&id).is_some()
    }

    fn take_waiter(&self, id: &RequestId) -> Option<PendingRequest> {
        let id = id.as_i64()?;
        lock(&self.pending).waiters.remove(&id)
    }

    /// Hands a response to the request waiting for it.
    pub(crate) fn complete(&self, response: Response) {
        let Some(waiter) = self.take_waiter(&response.id) else {
            return self.report(Problem::UnknownResponse(response));
        };
        let answer = response
            .result
            .map(Answer::Checked)
            .map_err(RequestError::Response);
        waiter.finish(answer);
    }

    /// Hands `result`, unread, to the request `id` if it waits for a result it forwards;
    /// returns whether it did (else the line is decoded as any other).
    pub(crate) fn complete_forwarded(&self, id: i64, result: UncheckedJson<'_>) -> bool {
        let waiter = match lock(&self.pending).waiters.entry(id) {
            Entry::Occupied(waiter) if waiter.get().is_forwarded() => waiter.remove(),
            _ => return false,
        };
        match waiter {
            PendingRequest::Waiting { sender, .. } => {
                sender.send(Ok(Answer::Unread(result.as_bytes().into())))
            }
            PendingRequest::Relayed(relay) => relay.deliver(Delivered::Unread(result)),
        }
        true
    }

    /// Fails the request waiting for `id` (its response was malformed).
    pub(crate) fn fail_waiter(&self, id: &RequestId, error: RequestError) {
        if let Some(waiter) = self.take_waiter(id) {
            waiter.finish(Err(error));
        }
    }

    /// No response can arrive any more: fail every waiting request and
    /// refuse new ones.
    pub(crate) fn refuse_requests(&self) {
        let waiters = {
            let mut pending = lock(&self.pending);
            pending.refused = true;
            std::mem::take(&mut pending.waiters)
        };
        for (_, waiter) in waiters {
            match waiter {
                // Dropping the sender wakes the waiter with "connection closed".
                PendingRequest::Waiting { .. } => {}
                PendingRequest::Relayed(relay) => {
                    relay.deliver(Delivered::Answer(Err(RequestError::ConnectionClosed)))
                }
            }
        }
    }

    // --- requests the peer sent --------------------------------------------------

    /// Records an incoming request of `bytes` on the wire as in flight, unless one with the
    /// same id already is, or `limit` requests are: unanswered ones (responders can be moved
    /// out of their handlers) or `running` handlers (a handler can go on after answering), or
    /// its bytes do not fit in the in-flight budgets.
    pub(crate) fn begin_incoming(
        &self,
        id: &RequestId,
        (limit, running): (usize, usize),
        bytes: usize,
        trace: IncomingTrace,
    ) -> Result<Arc<RequestState>, Refusal> {
        let mut incoming = lock(&self.incoming);
        if incoming.contains_key(id) {
            return Err(Refusal::DuplicateId);
        }
        if incoming.len().max(running) >= limit {
            return Err(Refusal::TooMany);
        }
        let charge = Charge::take(bytes, &self.in_flight, self.shared_in_flight.as_ref())
            .map_err(|(scope, limit)| Refusal::TooLarge { scope, limit })?;
        let state = Arc::new(RequestState {
            _charge: charge,
            trace,
            ..RequestState::default()
        });
        incoming.insert(id.clone(), state.clone());
        Ok(state)
    }

    /// Admits an incoming request of `bytes` on the wire ([`begin_incoming`](Self::begin_incoming)),
    /// or answers and reports why not: `None` then.
    pub(crate) fn admit(
        &self,
        id: &RequestId,
        (limit, running): (usize, usize),
        bytes: usize,
        trace: IncomingTrace,
    ) -> Option<Arc<RequestState>> {
        let refusal = match self.begin_incoming(id, (limit, running), bytes, trace) {
            Ok(state) => return Some(state),
            Err(refusal) => refusal,
        };
        let (error, problem) = match refusal {
            Refusal::DuplicateId => (
                ResponseError::invalid_request(format_args!(
                    "a request with id {id} is already in flight"
                )),
                Problem::DuplicateRequestId(id.clone()),
            ),
            // Answered rather than left unread: reading must go on, for the responses and
            // cancellations that free the handlers.
            Refusal::TooMany => (
                ResponseError::too_many_requests(limit),
                Problem::TooManyRequests {
                    id: id.clone(),
                    limit,
                },
            ),
            // Answered at once like the count limit: what frees the budget (responses,
            // cancellations) must still be read.
            Refusal::TooLarge { scope, limit } => (
                ResponseError::too_many_request_bytes(limit, bytes, scope),
                Problem::InFlightBudgetExceeded {
                    id: id.clone(),
                    bytes,
                    limit,
                    scope,
                },
            ),
        };
        self.reply_error(id, &error);
        self.report(problem);
        None
    }

    pub(crate) fn incoming_state(&self, id: &RequestId) -> Option<Arc<RequestState>> {
        lock(&self.incoming).get(id).cloned()
    }

    /// The bytes the peer's requests in flight hold, and the connection's budget for them.
    pub(crate) fn in_flight_bytes(&self) -> (usize, usize) {
        (self.in_flight.used(), self.in_flight.limit())
    }

    pub(crate) fn has_unanswered_incoming(&self) -> bool {
        !lock(&self.incoming).is_empty()
    }
}
