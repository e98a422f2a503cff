//! [`Wakeup`]: an `event_listener::Event` whose notify costs nothing until someone has listened,
//! for the events the hot path notifies on every message (room in the outgoing queue, reply
//! room, bytes given back to a budget) and that are rarely waited on.

use std::sync::atomic::{AtomicBool, Ordering, fence};

use event_listener::{Event, EventListener};

/// An event for waiters of a state change: change the state, then [`notify_all`](Self::notify_all);
/// wait with [`listen`](Self::listen), then look at the state again, then await the listener.
///
/// event-listener 5 takes the event's lock on every notify, whether anyone listens or not
/// (about 90 instructions, once per message on the stdio pair, docs/performance.md). A flag,
/// set before the first listener and never cleared, lets a notify skip the event until then.
/// The fences make it safe for state kept in atomics as well as under a lock: either the
/// notify reads the flag set (and the listener, registered under the event's lock, is
/// notified or sees the change when it looks again), or the listener's look at the state,
/// after its fence, sees the change made before the notify's fence.
#[derive(Debug, Default)]
pub(crate) struct Wakeup {
    event: Event,
    listened: AtomicBool,
}

impl Wakeup {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A listener, after marking the event listened to; look at the state again before
    /// awaiting it.
    pub(crate) fn listen(&self) -> EventListener {
        self.listened.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.event.listen()
    }

    /// Wakes every listener, after the state change they wait for.
    pub(crate) fn notify_all(&self) {
        fence(Ordering::SeqCst);
        if self.listened.load(Ordering::Relaxed) {
            self.event.notify(usize::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_notify_before_anyone_listened_is_skipped_and_later_ones_wake() {
        let wakeup = Wakeup::new();
        wakeup.notify_all();
        assert!(!wakeup.listened.load(Ordering::SeqCst));
        let listener = wakeup.listen();
        wakeup.notify_all();
        futures_lite::future::block_on(listener);
    }

    #[test]
    fn a_change_made_on_another_thread_is_never_missed() {
        for _ in 0..200 {
            let wakeup = Arc::new(Wakeup::new());
            let state = Arc::new(AtomicUsize::new(0));
            let changer = {
                let (wakeup, state) = (wakeup.clone(), state.clone());
                std::thread::spawn(move || {
                    state.store(1, Ordering::Relaxed);
                    wakeup.notify_all();
                })
            };
            // The waiter's loop: listen, look, then wait (which would hang if the notify
            // were lost).
            loop {
                let listener = wakeup.listen();
                if state.load(Ordering::Relaxed) == 1 {
                    break;
                }
                futures_lite::future::block_on(listener);
            }
            changer.join().unwrap();
        }
    }
}
