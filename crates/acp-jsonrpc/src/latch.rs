//! [`Latch`]: a flag set once and awaited by any number of waiters, early or late. The one
//! latch of the workspace (a turn's cancellation, an initialization done, a connection or a
//! server ended): here, the lowest crate the runtime and acp-remote share, over the same
//! `event_listener` this crate's outgoing queue wakes senders with, so no executor is named.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use event_listener::{Event, EventListener};

/// A flag set once and seen by every waiter, whether it waited before or after. Cheap to
/// clone: every clone is the same latch. Dropping a waiter's future is harmless (it only
/// stops waiting); dropping every clone drops the latch.
///
/// ```
/// use acp_jsonrpc::Latch;
///
/// let done = Latch::new();
/// let waiter = done.clone();
/// assert!(!waiter.is_set());
/// done.set();
/// done.set(); // setting again changes nothing
/// futures_lite::future::block_on(waiter.wait()); // ready at once
/// assert!(waiter.is_set());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Latch {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    set: AtomicBool,
    event: Event,
}

/// Where a hand-written `poll` keeps its registration between calls to
/// [`Latch::poll_wait`]: start with `LatchListener::default()`.
#[derive(Debug, Default)]
pub struct LatchListener(Option<EventListener>);

impl Latch {
    /// A latch not yet set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the latch and wakes every waiter. Idempotent.
    pub fn set(&self) {
        self.inner.set.store(true, Ordering::SeqCst);
        self.inner.event.notify(usize::MAX);
    }

    /// Whether the latch was set.
    pub fn is_set(&self) -> bool {
        self.inner.set.load(Ordering::SeqCst)
    }

    /// Resolves once the latch is set (at once if it already is).
    pub async fn wait(&self) {
        let mut listener = LatchListener::default();
        std::future::poll_fn(|cx| self.poll_wait(&mut listener, cx)).await
    }

    /// Ready once set; otherwise registers `cx` to be woken when it is, through `listener`,
    /// which the caller keeps between polls.
    pub fn poll_wait(&self, listener: &mut LatchListener, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if self.is_set() {
                listener.0 = None;
                return Poll::Ready(());
            }
            match &mut listener.0 {
                // Registered first, then the flag is read again: a `set` in between is seen.
                None => listener.0 = Some(self.inner.event.listen()),
                Some(registered) => {
                    ready!(Pin::new(registered).poll(cx));
                    listener.0 = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_before_and_after_the_set_are_all_released() {
        let latch = Latch::new();
        let early: Vec<_> = (0..3)
            .map(|_| {
                let latch = latch.clone();
                std::thread::spawn(move || futures_lite::future::block_on(latch.wait()))
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(20));
        latch.set();
        for waiter in early {
            waiter.join().unwrap();
        }
        futures_lite::future::block_on(latch.wait());
    }

    #[test]
    fn a_hand_written_poll_is_woken() {
        let latch = Latch::new();
        let mut listener = LatchListener::default();
        let waker = futures_lite::future::block_on(std::future::poll_fn(|cx| {
            Poll::Ready(cx.waker().clone())
        }));
        let mut cx = Context::from_waker(&waker);
        assert!(latch.poll_wait(&mut listener, &mut cx).is_pending());
        latch.set();
        assert!(latch.poll_wait(&mut listener, &mut cx).is_ready());
    }
}
