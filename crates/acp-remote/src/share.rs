//! The server's memory ceiling as the Streamable HTTP side draws on it: one [`Ceiling`] per
//! server (its budget is the one `ServerOptions::with_memory_ceiling` sets, shared with the
//! WebSocket messages and the requests in flight), and a [`Share`] per holder (a
//! connection's stream queues, its POST bodies, the `initialize` bodies), which takes from
//! its own budget and from the ceiling together.
//!
//! The share rule: a holder takes from the ceiling only while the ceiling then holds at most
//! its limit minus a reserve (an eighth of it); the reserve is for holders that hold little
//! (after the take, at most the reserve divided by the number of holders there can be: five
//! per connection and the `initialize` pool), so that a new connection and a small message
//! still pass however much the others hold, and no connection can take it all.
//!
//! Nothing waits for the ceiling: what it refuses is refused to the holder that asked (a
//! body answered 413, a connection over its share ended), so its give-backs wake nobody.
//! A holder waits only for its own budget, which only its own connection gives back to.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use acp_jsonrpc::{BudgetListener, ByteBudget};

/// What a [`Share`] holds, for the metrics (one count per kind, all connections together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Messages waiting for a client's SSE streams.
    SseQueues,
    /// POST bodies arriving, and POSTed messages waiting for the runtime.
    PostBodies,
    /// The bodies of `initialize` POSTs arriving.
    InitializeBodies,
    /// WebSocket messages not yet handed over, beyond a small buffer per connection
    /// (src/proto/ws/socket.rs).
    WebSocketMessages,
}

const KINDS: usize = 4;

/// The most holders of the ceiling one connection has (see [`Ceiling::new`]).
const HOLDERS_PER_CONNECTION: usize = 5;

/// The server's memory ceiling, with what each kind of [`Share`] holds of it.
#[derive(Debug)]
pub(crate) struct Ceiling {
    /// The one budget, with its reserve (`ByteBudget::with_reserve`).
    budget: ByteBudget,
    held: [AtomicUsize; KINDS],
}

impl Ceiling {
    /// A ceiling of `limit` bytes, for a server of at most `max_connections` connections.
    pub(crate) fn new(limit: usize, max_connections: usize) -> Arc<Ceiling> {
        let reserve = limit / 8;
        // At most five holders per connection (stream queues, POST bodies, or a WebSocket's
        // messages; and the runtime's requests in flight, answers waiting and sessions) and
        // the `initialize` pool share the reserve: each can always take its part of it,
        // whatever the others hold.
        let guaranteed = reserve / (HOLDERS_PER_CONNECTION * max_connections + 1);
        Arc::new(Ceiling {
            budget: ByteBudget::with_reserve(limit, reserve, guaranteed),
            held: Default::default(),
        })
    }

    /// The one budget (also the WebSocket messages' and the requests in flight's).
    pub(crate) fn budget(&self) -> &ByteBudget {
        &self.budget
    }

    /// Bytes the shares of `kind` hold now, all together.
    #[cfg_attr(not(any(test, feature = "metrics")), allow(dead_code))]
    pub(crate) fn held(&self, kind: Kind) -> usize {
        self.held[kind as usize].load(Ordering::Acquire)
    }

    /// Takes `bytes` for a holder of `kind` that then holds `holder_after`, under the share
    /// rule; `false` otherwise, taking nothing.
    pub(crate) fn try_take(&self, kind: Kind, bytes: usize, holder_after: usize) -> bool {
        if !self.budget.try_take_as(bytes, holder_after) {
            return false;
        }
        self.held[kind as usize].fetch_add(bytes, Ordering::AcqRel);
        true
    }

    /// Gives back `bytes` a holder of `kind` took.
    pub(crate) fn give_back(&self, kind: Kind, bytes: usize) {
        self.held[kind as usize].fetch_sub(bytes, Ordering::AcqRel);
        self.budget.give_back(bytes);
    }
}

/// Why a [`Share`] refused a take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its own budget is spent: room comes back as its own connection gives bytes back.
    Own,
    /// The ceiling has no room for a holder that holds this much: the holder is over its
    /// share, and waiting would wait on the other connections.
    OverShare,
}

/// A holder's budget: its own limit, and (on a server) its part of the [`Ceiling`] under the
/// share rule. A clone is the same share.
#[derive(Debug, Clone)]
pub(crate) struct Share {
    own: ByteBudget,
    ceiling: Option<(Arc<Ceiling>, Kind)>,
}

impl Share {
    /// A share of `limit` bytes of its own, drawn from `ceiling` too.
    pub(crate) fn new(limit: usize, ceiling: &Arc<Ceiling>, kind: Kind) -> Share {
        Share {
            own: ByteBudget::new(limit),
            ceiling: Some((ceiling.clone(), kind)),
        }
    }

    /// A budget of `limit` bytes drawing on no ceiling (a client's queues, tests).
    pub(crate) fn alone(limit: usize) -> Share {
        Share {
            own: ByteBudget::new(limit),
            ceiling: None,
        }
    }

    /// Takes `bytes` when its own budget and the ceiling (under the share rule) both have
    /// room; otherwise says which refused, taking nothing.
    pub(crate) fn try_take(&self, bytes: usize) -> Result<(), Refused> {
        if !self.own.try_take(bytes) {
            return Err(Refused::Own);
        }
        if let Some((ceiling, kind)) = &self.ceiling
            && !ceiling.try_take(*kind, bytes, self.own.used())
        {
            self.own.give_back(bytes);
            return Err(Refused::OverShare);
        }
        Ok(())
    }

    /// Takes `bytes`, waiting while its own budget is spent; `false` when the ceiling refuses
    /// them ([`Refused::OverShare`]), taking nothing.
    pub(crate) async fn take(&self, bytes: usize) -> bool {
        let mut listener = BudgetListener::default();
        std::future::poll_fn(|cx| {
            loop {
                match self.try_take(bytes) {
                    Ok(()) => return Poll::Ready(true),
                    Err(Refused::OverShare) => return Poll::Ready(false),
                    Err(Refused::Own) => std::task::ready!(self.poll_freed(&mut listener, cx)),
                }
            }
        })
        .await
    }

    /// As [`ByteBudget::poll_freed`] for its own budget, after a take it refused
    /// ([`Refused::Own`]): ready once its own connection gave bytes back (never for the
    /// ceiling's give-backs, so that one connection's wait costs the others nothing).
    pub(crate) fn poll_freed(
        &self,
        listener: &mut BudgetListener,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        self.own.poll_freed(listener, cx)
    }

    /// Wakes whoever waits for room, to look again.
    pub(crate) fn wake_waiters(&self) {
        self.own.wake_waiters();
    }

    /// Gives back `bytes` taken.
    pub(crate) fn give_back(&self, bytes: usize) {
        // The ceiling first: the waiter woken by its own budget's give-back then finds both
        // freed.
        if let Some((ceiling, kind)) = &self.ceiling {
            ceiling.give_back(*kind, bytes);
        }
        self.own.give_back(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_kept_for_holders_that_hold_little() {
        // 8 MiB ceiling: 1 MiB reserve; 2 connections: 11 holders, 93 KiB each.
        let ceiling = Ceiling::new(8 << 20, 2);
        let greedy = Share::new(64 << 20, &ceiling, Kind::SseQueues);
        assert_eq!(greedy.try_take(7 << 20), Ok(()));
        // Beyond the general part: refused to the holder of much, whatever its own budget.
        assert_eq!(greedy.try_take(1), Err(Refused::OverShare));
        let newcomer = Share::new(64 << 20, &ceiling, Kind::PostBodies);
        assert_eq!(newcomer.try_take(80 << 10), Ok(()));
        assert_eq!(newcomer.try_take(80 << 10), Err(Refused::OverShare));
        assert_eq!(ceiling.held(Kind::SseQueues), 7 << 20);
        assert_eq!(ceiling.held(Kind::PostBodies), 80 << 10);
        greedy.give_back(7 << 20);
        newcomer.give_back(80 << 10);
        assert_eq!(ceiling.budget().used(), 0);
    }

    /// Counts its wake-ups.
    struct Counting(AtomicUsize);

    impl std::task::Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_give_back_wakes_only_the_waiters_of_its_own_share() {
        let ceiling = Ceiling::new(8 << 20, 2);
        let waiting = Share::new(1 << 20, &ceiling, Kind::SseQueues);
        assert_eq!(waiting.try_take(1 << 20), Ok(()));
        assert_eq!(waiting.try_take(1), Err(Refused::Own));
        let other = Share::new(4 << 20, &ceiling, Kind::PostBodies);
        assert_eq!(other.try_take(2 << 20), Ok(()));
        let woken = Arc::new(Counting(AtomicUsize::new(0)));
        let waker = std::task::Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let mut listener = BudgetListener::default();
        // The first poll registers; the second waits.
        assert!(waiting.poll_freed(&mut listener, &mut cx).is_ready());
        assert!(waiting.poll_freed(&mut listener, &mut cx).is_pending());
        // Another connection's give-back to the ceiling wakes nobody here.
        other.give_back(2 << 20);
        assert_eq!(woken.0.load(Ordering::SeqCst), 0);
        waiting.give_back(1);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        assert!(waiting.poll_freed(&mut listener, &mut cx).is_ready());
    }

    #[test]
    fn its_own_limit_holds_besides_the_ceiling() {
        let ceiling = Ceiling::new(8 << 20, 2);
        let share = Share::new(1 << 20, &ceiling, Kind::SseQueues);
        assert_eq!(share.try_take(1 << 20), Ok(()));
        assert_eq!(share.try_take(1), Err(Refused::Own));
        assert_eq!(ceiling.budget().used(), 1 << 20);
    }
}
