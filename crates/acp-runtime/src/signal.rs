//! A one-shot broadcast signal: fired once, awaited by any number of waiters, early or late.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Cheap to clone; every clone sees the same signal.
#[derive(Clone, Debug)]
pub(crate) struct Signal {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    fired: AtomicBool,
    // Never sent to: closing the channel wakes every receiver at once.
    sender: async_channel::Sender<()>,
    receiver: async_channel::Receiver<()>,
}

impl Signal {
    pub(crate) fn new() -> Self {
        let (sender, receiver) = async_channel::bounded(1);
        Signal {
            inner: Arc::new(Inner {
                fired: AtomicBool::new(false),
                sender,
                receiver,
            }),
        }
    }

    pub(crate) fn fire(&self) {
        self.inner.fired.store(true, Ordering::Release);
        self.inner.sender.close();
    }

    pub(crate) fn is_fired(&self) -> bool {
        self.inner.fired.load(Ordering::Acquire)
    }

    pub(crate) async fn wait(&self) {
        if !self.is_fired() {
            let _ = self.inner.receiver.recv().await;
        }
    }
}
