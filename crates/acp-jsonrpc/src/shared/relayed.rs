//! Requests of ours that relay a request of another connection's peer, with no task waiting
//! for them: the answer goes on from the driver that reads it. The connection side of the
//! relay (who answers, and how) is the crate's `relay.rs`, which this module only knows
//! through [`Relayed`], so that the shared state does not depend on the handler module.

use std::any::Any;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Weak};

use super::{PendingRequest, Shared, lock};
use crate::RequestError;
use crate::forwarded::Answer;
use crate::json::UncheckedJson;

/// How a relayed request's answer arrived.
pub(crate) enum Delivered<'a> {
    /// In the usual spelling, its result unread, borrowed from the line.
    Unread(UncheckedJson<'a>),
    /// Decoded, or the request failed (a malformed answer, the connection closed).
    Answer(Result<Answer, RequestError>),
}

/// What waits for a relayed request's answer: the request it answers, on the other
/// connection. Dropped undelivered (cancelled), it answers that request as a dropped
/// responder does.
pub(crate) trait Relayed: Send {
    /// Passes the answer on.
    fn deliver(self: Box<Self>, answer: Delivered<'_>);

    /// For the relay that could not queue its request, to take its parts back.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// Where an incoming request was relayed: the next hop's connection and our id there.
pub(crate) struct RelayLink {
    pub(crate) next: Weak<Shared>,
    pub(crate) id: i64,
}

impl Shared {
    /// Registers `relay` as what waits for the answer to our request `id`; gives it back when
    /// the connection can no longer receive answers.
    pub(crate) fn register_relay(
        &self,
        id: i64,
        relay: Box<dyn Relayed>,
    ) -> Result<(), Box<dyn Relayed>> {
        let mut pending = lock(&self.pending);
        if pending.refused {
            return Err(relay);
        }
        pending.waiters.insert(id, PendingRequest::Relayed(relay));
        Ok(())
    }

    /// Takes back the relay waiting for `id`, if it still waits.
    pub(crate) fn take_relay(&self, id: i64) -> Option<Box<dyn Relayed>> {
        match lock(&self.pending).waiters.entry(id) {
            Entry::Occupied(waiter) if matches!(waiter.get(), PendingRequest::Relayed(_)) => {
                let PendingRequest::Relayed(relay) = waiter.remove() else {
                    unreachable!("matched as a relay")
                };
                Some(relay)
            }
            // Answered or abandoned already (a relay's id is never reused).
            _ => None,
        }
    }

    /// The request the relay `id` answers was cancelled, or its connection closed: the relay
    /// is dropped (answering for it) and the request is cancelled here too, as dropping a
    /// [`RequestFuture`](crate::RequestFuture) cancels one.
    pub(crate) fn cancel_relay(&self, id: i64) {
        let Some(relay) = self.take_relay(id) else {
            // Answered already, or never queued.
            return;
        };
        drop(relay);
        self.trace.request_abandoned(id, true);
        self.send_cancel(id);
    }

    /// This connection is closing: the requests of its peer that were relayed are cancelled
    /// where they went.
    pub(crate) fn abandon_relays(&self) {
        let links: Vec<(Weak<Shared>, i64)> = lock(&self.incoming)
            .values()
            .filter_map(|state| state.relay.get())
            .map(|link| (link.next.clone(), link.id))
            .collect();
        for (next, id) in links {
            if let Some(next) = next.upgrade() {
                next.cancel_relay(id);
            }
        }
    }

    /// The link to record on the incoming request that our request `id` relays.
    pub(crate) fn link(self: &Arc<Self>, id: i64) -> RelayLink {
        RelayLink {
            next: Arc::downgrade(self),
            id,
        }
    }
}
