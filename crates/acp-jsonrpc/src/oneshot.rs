//! A single-value channel: how a response reaches the request waiting for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
    sender_gone: bool,
}

struct Inner<T>(Mutex<Slot<T>>);

impl<T> Inner<T> {
    /// A panic while holding the lock cannot leave the slot inconsistent
    /// (every update is a single assignment), so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, Slot<T>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub(crate) struct Sender<T>(Arc<Inner<T>>);

pub(crate) struct Receiver<T>(Arc<Inner<T>>);

pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Inner(Mutex::new(Slot {
        value: None,
        waker: None,
        sender_gone: false,
    })));
    (Sender(inner.clone()), Receiver(inner))
}

impl<T> Sender<T> {
    pub(crate) fn send(self, value: T) {
        let waker = {
            let mut slot = self.0.lock();
            slot.value = Some(value);
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        // Drop marks the sender gone, which is harmless once a value is in.
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut slot = self.0.lock();
            slot.sender_gone = true;
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Resolves to the value, or `None` if the sender was dropped without one.
impl<T> Future for Receiver<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut slot = self.0.lock();
        if let Some(value) = slot.value.take() {
            return Poll::Ready(Some(value));
        }
        if slot.sender_gone {
            return Poll::Ready(None);
        }
        match &slot.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => slot.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}
