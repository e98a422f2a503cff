//! The requests in flight both ways: ours waiting for their responses (by id, the result
//! read or forwarded unread), and the peer's being handled (by id, each holding its bytes of
//! the in-flight budgets until its responder lets go).

use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{PendingRequest, Refusal, RequestState, ResponseResult, Shared, lock};
use crate::budget::Charge;
use crate::forwarded::Answer;
use crate::json::UncheckedJson;
use crate::trace::IncomingTrace;
use crate::{Problem, RequestError, RequestId, Response, oneshot};

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
            .insert(id, PendingRequest { sender, forwarded });
        Some(receiver)
    }

    /// Forgets the waiter for `id`; returns whether it was still waiting.
    pub(crate) fn forget_waiter(&self, id: i64) -> bool {
        lock(&self.pending).waiters.remove(&id).is_some()
    }

    fn take_waiter(&self, id: &RequestId) -> Option<oneshot::Sender<ResponseResult>> {
        let id = id.as_i64()?;
        let waiter = lock(&self.pending).waiters.remove(&id)?;
        Some(waiter.sender)
    }

    /// Hands a response to the request waiting for it.
    pub(crate) fn complete(&self, response: Response) {
        match self.take_waiter(&response.id) {
            Some(waiter) => waiter.send(
                response
                    .result
                    .map(Answer::Checked)
                    .map_err(RequestError::Response),
            ),
            None => self.report(Problem::UnknownResponse(response)),
        }
    }

    /// Hands `result`, unread, to the request `id` if it waits for a result it forwards;
    /// returns whether it did (else the line is decoded as any other).
    pub(crate) fn complete_forwarded(&self, id: i64, result: UncheckedJson<'_>) -> bool {
        let waiter = match lock(&self.pending).waiters.entry(id) {
            Entry::Occupied(waiter) if waiter.get().forwarded => waiter.remove(),
            _ => return false,
        };
        waiter
            .sender
            .send(Ok(Answer::Unread(result.as_bytes().into())));
        true
    }

    /// Fails the request waiting for `id` (its response was malformed).
    pub(crate) fn fail_waiter(&self, id: &RequestId, error: RequestError) {
        if let Some(waiter) = self.take_waiter(id) {
            waiter.send(Err(error));
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
        // Dropping the senders wakes the waiters with "connection closed".
        drop(waiters);
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
