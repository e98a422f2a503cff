//! Keeps what a router forwards in the order it arrived.
//!
//! The connection starts every handler in arrival order, but handlers then run concurrently:
//! a request's handler waiting for room on the next hop could let a later notification
//! overtake it. So each message takes a ticket when its handler starts, and a message is
//! queued on the next hop only on its ticket's turn; the turn passes on once it is queued
//! (not answered), so forwarding stays concurrent. A ticket dropped before its turn (its
//! request was cancelled) is skipped when the turn reaches it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use event_listener::Event;

/// One connection's order of arrival.
#[derive(Debug, Default)]
pub(crate) struct Order {
    state: Mutex<State>,
    turn_changed: Event,
}

#[derive(Debug, Default)]
struct State {
    next_ticket: u64,
    turn: u64,
    /// Tickets released before their turn. At most one per message in flight, so bounded by
    /// the connection's in-flight limit plus the one notification.
    released_early: BTreeSet<u64>,
}

fn lock(mutex: &Mutex<State>) -> MutexGuard<'_, State> {
    // Every critical section is a few integer and set operations; nothing can be left half
    // done by a panic.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Order {
    /// Whether every ticket taken was forwarded or given up: a message may then be forwarded
    /// at once, without a ticket, and still keeps its place (the forwarding path).
    pub(crate) fn is_idle(&self) -> bool {
        let state = lock(&self.state);
        state.turn == state.next_ticket
    }

    /// The next ticket, in arrival order: take it before the handler's first await.
    pub(crate) fn ticket(self: &Arc<Self>) -> Ticket {
        let mut state = lock(&self.state);
        let number = state.next_ticket;
        state.next_ticket += 1;
        Ticket {
            order: self.clone(),
            number,
        }
    }
}

/// A place in the order; dropping it passes the turn on.
#[derive(Debug)]
pub(crate) struct Ticket {
    order: Arc<Order>,
    number: u64,
}

impl Ticket {
    /// Waits until every earlier message was forwarded (or given up).
    pub(crate) async fn turn(&self) {
        loop {
            if lock(&self.order.state).turn == self.number {
                return;
            }
            let listener = self.order.turn_changed.listen();
            if lock(&self.order.state).turn == self.number {
                return;
            }
            listener.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut state = lock(&self.order.state);
        if state.turn == self.number {
            state.turn += 1;
            loop {
                let turn = state.turn;
                if !state.released_early.remove(&turn) {
                    break;
                }
                state.turn += 1;
            }
            drop(state);
            self.order.turn_changed.notify(usize::MAX);
        } else {
            state.released_early.insert(self.number);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_follow_tickets_and_skip_the_dropped_ones() {
        let order = Arc::new(Order::default());
        let first = order.ticket();
        let second = order.ticket();
        let third = order.ticket();
        smol::block_on(async {
            drop(second);
            assert!(
                futures_lite::future::poll_once(third.turn())
                    .await
                    .is_none()
            );
            first.turn().await;
            drop(first);
            third.turn().await;
        });
        drop(third);
        assert!(lock(&order.state).released_early.is_empty());
    }
}
