//! [`Latch`]: a flag set once and awaited by any number of waiters, early or late (a turn's
//! cancellation, a turn or an initialization done, a connection ended). acp-remote has a
//! `Latch` of the same name and verbs over `event_listener`, pollable by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Cheap to clone; every clone sees the same latch.
#[derive(Clone, Debug)]
pub(crate) struct Latch {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    set: AtomicBool,
    // Never sent to: closing the channel wakes every receiver at once.
    sender: async_channel::Sender<()>,
    receiver: async_channel::Receiver<()>,
}

impl Latch {
    pub(crate) fn new() -> Self {
        let (sender, receiver) = async_channel::bounded(1);
        Latch {
            inner: Arc::new(Inner {
                set: AtomicBool::new(false),
                sender,
                receiver,
            }),
        }
    }

    pub(crate) fn set(&self) {
        self.inner.set.store(true, Ordering::Release);
        self.inner.sender.close();
    }

    pub(crate) fn is_set(&self) -> bool {
        self.inner.set.load(Ordering::Acquire)
    }

    pub(crate) async fn wait(&self) {
        if !self.is_set() {
            let _ = self.inner.receiver.recv().await;
        }
    }
}
