//! [`Latch`]: a flag set once and awaited by any number of waiters (the server's stop, drain
//! and stop-accepting, a Streamable HTTP connection's end). Over `event_listener`, with a
//! `poll_wait` for the hand-written readers; acp-runtime's `Latch` has the same verbs.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

/// A flag that can be awaited: set once, seen by every waiter.
#[derive(Debug, Default)]
pub(crate) struct Latch {
    set: AtomicBool,
    event: event_listener::Event,
}

impl Latch {
    pub(crate) fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.event.notify(usize::MAX);
    }

    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    /// Ready once set; registers `cx` otherwise (through `listener`, kept by the caller).
    pub(crate) fn poll_wait(
        &self,
        listener: &mut Option<event_listener::EventListener>,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        loop {
            if self.is_set() {
                return Poll::Ready(());
            }
            match listener {
                None => *listener = Some(self.event.listen()),
                Some(l) => {
                    ready!(Pin::new(l).poll(cx));
                    *listener = None;
                }
            }
        }
    }

    pub(crate) async fn wait(&self) {
        let mut listener = None;
        std::future::poll_fn(|cx| self.poll_wait(&mut listener, cx)).await
    }
}
