//! Byte budgets for what the peer's requests hold while they are in flight: each connection
//! has its own, and several connections may also draw from one [`ByteBudget`] they share
//! (a server's budget across its clients).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use event_listener::EventListener;

use crate::wakeup::Wakeup;

/// The default of [`ConnectionOptions::with_in_flight_budget`](crate::ConnectionOptions::with_in_flight_budget):
/// 64 MiB, the default longest line, so that any one request the connection reads fits.
pub const DEFAULT_IN_FLIGHT_BUDGET: usize = 64 * 1024 * 1024;

/// A number of bytes that requests in flight draw from and give back when they are done.
///
/// Every connection has one of its own
/// ([`ConnectionOptions::with_in_flight_budget`](crate::ConnectionOptions::with_in_flight_budget)).
/// A clone is the same budget, so one made once and given to several connections
/// ([`ConnectionOptions::with_shared_in_flight_budget`](crate::ConnectionOptions::with_shared_in_flight_budget))
/// bounds them together: a server's clients cannot hold more than it, however many they are.
///
/// A request larger than the whole budget is still taken when nothing else holds any of
/// it, so that a budget below the longest line never refuses a request for its size alone.
///
/// ```
/// use acp_jsonrpc::{ByteBudget, ConnectionOptions};
///
/// let everyone = ByteBudget::new(256 * 1024 * 1024);
/// let first = ConnectionOptions::default().with_shared_in_flight_budget(everyone.clone());
/// let second = ConnectionOptions::default().with_shared_in_flight_budget(everyone.clone());
/// assert_eq!(everyone.used(), 0);
/// # let _ = (first, second);
/// ```
#[derive(Clone)]
pub struct ByteBudget {
    inner: Arc<Inner>,
}

struct Inner {
    limit: usize,
    used: AtomicUsize,
    /// Woken when bytes are given back, for [`ByteBudget::take`]'s waiters: a connection's own
    /// budget gives back on every request it answers and is never waited on (taken with
    /// `try_take` alone), so its notify must cost nothing without listeners.
    freed: Wakeup,
    /// Of the limit, what only holders holding at most `guaranteed` may take
    /// ([`ByteBudget::with_reserve`]).
    reserve: usize,
    guaranteed: usize,
}

impl ByteBudget {
    /// A budget of `limit` bytes, none of them used.
    pub fn new(limit: usize) -> Self {
        ByteBudget {
            inner: Arc::new(Inner {
                limit,
                used: AtomicUsize::new(0),
                freed: Wakeup::new(),
                reserve: 0,
                guaranteed: 0,
            }),
        }
    }

    /// A budget of `limit` bytes whose last `reserve` bytes are kept for holders that hold
    /// little: [`try_take_as`](Self::try_take_as) gives them only to a holder that then holds
    /// at most `guaranteed`. With `guaranteed` at most `reserve` divided by the number of
    /// holders there can be, each can always hold that much, whatever the others hold: a
    /// server's share rule, so that no client can take it all. (Plain
    /// [`try_take`](Self::try_take) ignores the reserve.)
    ///
    /// ```
    /// let budget = acp_jsonrpc::ByteBudget::with_reserve(100, 20, 10);
    /// assert!(budget.try_take_as(80, 80));
    /// // The reserve: not for a holder of 81 bytes, but for one of 10.
    /// assert!(!budget.try_take_as(1, 81));
    /// assert!(budget.try_take_as(10, 10));
    /// ```
    pub fn with_reserve(limit: usize, reserve: usize, guaranteed: usize) -> Self {
        ByteBudget {
            inner: Arc::new(Inner {
                limit,
                used: AtomicUsize::new(0),
                freed: Wakeup::new(),
                reserve: reserve.min(limit),
                guaranteed,
            }),
        }
    }

    /// Takes `bytes` for a holder that then holds `holder_after` of it (the bytes included),
    /// under the reserve's rule ([`with_reserve`](Self::with_reserve)): beyond `limit -
    /// reserve` only for a holder holding at most `guaranteed`; `false` otherwise, taking
    /// nothing. Without a reserve, as [`try_take`](Self::try_take).
    pub fn try_take_as(&self, bytes: usize, holder_after: usize) -> bool {
        let cap = if holder_after <= self.inner.guaranteed {
            self.inner.limit
        } else {
            self.inner.limit - self.inner.reserve
        };
        self.try_take_below(bytes, cap)
    }

    /// Whether the budget holds so much that only holders holding little get more: its
    /// reserve is being drawn on (without one, its last eighth).
    pub(crate) fn is_nearly_full(&self) -> bool {
        let reserve = self.inner.reserve.max(self.inner.limit / 8);
        self.used() >= self.inner.limit - reserve
    }

    /// Its size in bytes.
    pub fn limit(&self) -> usize {
        self.inner.limit
    }

    /// The bytes held now.
    pub fn used(&self) -> usize {
        self.inner.used.load(Ordering::Acquire)
    }

    /// Takes `bytes` when they fit, or when nothing is held (see the type's docs); `false`
    /// otherwise, taking nothing. For holders other than a connection's requests (a server
    /// that bounds its other buffers by the same budget); they give the bytes back with
    /// [`give_back`](Self::give_back).
    ///
    /// ```
    /// let budget = acp_jsonrpc::ByteBudget::new(100);
    /// assert!(budget.try_take(60));
    /// assert!(!budget.try_take(60));
    /// budget.give_back(60);
    /// assert_eq!(budget.used(), 0);
    /// ```
    pub fn try_take(&self, bytes: usize) -> bool {
        self.try_take_below(bytes, self.inner.limit)
    }

    /// Takes `bytes` when the budget then holds at most `cap` (or when nothing is held).
    fn try_take_below(&self, bytes: usize, cap: usize) -> bool {
        let cap = cap.min(self.inner.limit);
        let mut used = self.used();
        loop {
            if used != 0 && used.saturating_add(bytes) > cap {
                return false;
            }
            match self.inner.used.compare_exchange_weak(
                used,
                used + bytes,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    /// Takes `bytes`, waiting until they fit (or nothing is held): for a holder that must
    /// wait rather than be refused (a queue's writer). Dropping the future takes nothing.
    ///
    /// ```
    /// let budget = acp_jsonrpc::ByteBudget::new(100);
    /// futures_lite::future::block_on(budget.take(100));
    /// assert_eq!(budget.used(), 100);
    /// ```
    pub async fn take(&self, bytes: usize) {
        // Most takes fit at once: no listener (an allocation) for them.
        if self.try_take(bytes) {
            return;
        }
        loop {
            // Listening first, then trying: a give_back in between is not missed.
            let freed = self.inner.freed.listen();
            if self.try_take(bytes) {
                return;
            }
            freed.await;
        }
    }

    /// For a hand-written `poll` that takes as [`take`](Self::take) does: after a failed
    /// [`try_take`](Self::try_take), call this and try again when it is ready. The first call
    /// registers `listener` and is ready at once (so that bytes given back meanwhile are not
    /// missed); the next is ready once bytes were given back or [`wake_waiters`](Self::wake_waiters)
    /// was called.
    pub fn poll_freed(&self, listener: &mut BudgetListener, cx: &mut Context<'_>) -> Poll<()> {
        match &mut listener.0 {
            None => listener.0 = Some(self.inner.freed.listen()),
            Some(registered) => {
                ready!(Pin::new(registered).poll(cx));
                listener.0 = None;
            }
        }
        Poll::Ready(())
    }

    /// Wakes every waiter for room, to look again: for a holder whose own state changed in a
    /// way its waiters must see (a queue closed while its writers wait for room).
    pub fn wake_waiters(&self) {
        self.inner.freed.notify_all();
    }

    /// Gives back `bytes` taken with [`try_take`](Self::try_take) or [`take`](Self::take),
    /// waking whoever waits in [`take`](Self::take).
    pub fn give_back(&self, bytes: usize) {
        self.inner.used.fetch_sub(bytes, Ordering::AcqRel);
        self.inner.freed.notify_all();
    }
}

/// Where a hand-written `poll` keeps its registration between calls to
/// [`ByteBudget::poll_freed`]: start with `BudgetListener::default()`.
#[derive(Debug, Default)]
pub struct BudgetListener(Option<EventListener>);

impl std::fmt::Debug for ByteBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteBudget")
            .field("limit", &self.limit())
            .field("used", &self.used())
            .finish()
    }
}

/// Which budget refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BudgetScope {
    /// The connection's own.
    Connection,
    /// The one it shares with other connections.
    Shared,
}

impl BudgetScope {
    /// `"connection"` or `"shared"`, as the refusal's `data` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetScope::Connection => "connection",
            BudgetScope::Shared => "shared",
        }
    }
}

/// The bytes one request holds of its connection's budget and of the shared one, given back
/// when it is dropped: when the request's handler has finished and its responder is gone.
#[derive(Default)]
pub(crate) struct Charge {
    bytes: usize,
    own: Option<ByteBudget>,
    shared: Option<ByteBudget>,
}

impl Charge {
    /// Takes `bytes` of `own` and of `shared`, or names the one that has no room.
    pub(crate) fn take(
        bytes: usize,
        own: &ByteBudget,
        shared: Option<&ByteBudget>,
    ) -> Result<Charge, (BudgetScope, usize)> {
        if !own.try_take(bytes) {
            return Err((BudgetScope::Connection, own.limit()));
        }
        let mut charge = Charge {
            bytes,
            own: Some(own.clone()),
            shared: None,
        };
        match shared {
            None => Ok(charge),
            // The shared budget's reserve, if it has one, is for connections holding little.
            Some(shared) if shared.try_take_as(bytes, own.used()) => {
                charge.shared = Some(shared.clone());
                Ok(charge)
            }
            // Dropping `charge` gives the connection's part back.
            Some(shared) => Err((BudgetScope::Shared, shared.limit())),
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        for budget in [&self.own, &self.shared].into_iter().flatten() {
            budget.give_back(self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_takes_from_both_and_gives_back_when_dropped() {
        let own = ByteBudget::new(100);
        let shared = ByteBudget::new(150);
        let a = Charge::take(60, &own, Some(&shared)).ok().unwrap();
        assert_eq!((own.used(), shared.used()), (60, 60));
        assert_eq!(
            Charge::take(60, &own, Some(&shared)).err(),
            Some((BudgetScope::Connection, 100))
        );
        let other = ByteBudget::new(100);
        let b = Charge::take(60, &other, Some(&shared)).ok().unwrap();
        assert_eq!(
            Charge::take(60, &ByteBudget::new(100), Some(&shared)).err(),
            Some((BudgetScope::Shared, 150))
        );
        drop((a, b));
        assert_eq!((own.used(), other.used(), shared.used()), (0, 0, 0));
    }

    #[test]
    fn a_connection_holding_much_is_kept_out_of_the_shared_reserve() {
        let shared = ByteBudget::with_reserve(150, 50, 20);
        let (big, small) = (ByteBudget::new(200), ByteBudget::new(200));
        let held = Charge::take(100, &big, Some(&shared)).ok().unwrap();
        assert_eq!(
            Charge::take(10, &big, Some(&shared)).err(),
            Some((BudgetScope::Shared, 150))
        );
        let little = Charge::take(20, &small, Some(&shared)).ok().unwrap();
        drop((held, little));
        assert_eq!(shared.used(), 0);
    }

    #[test]
    fn one_request_larger_than_the_budget_passes_alone() {
        let own = ByteBudget::new(10);
        let big = Charge::take(1000, &own, None).ok().unwrap();
        assert!(Charge::take(1, &own, None).is_err());
        drop(big);
        assert!(Charge::take(1, &own, None).is_ok());
    }
}
