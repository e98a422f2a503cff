//! The chain's component drivers (with the watchers of their processes and the executor's
//! runner), polled by one future instead of one executor task each. A message the conductor
//! moves from one connection to another wakes the other connection's driver; as an executor
//! task, each such wake-up went through the executor's queues (3.2 k instructions per `rpc`
//! round trip through one proxy, docs/performance-chains.md). Here a wake-up notes the driver
//! in a list and, unless the set is being polled, wakes whoever polls the set: the woken
//! drivers are polled in a loop until none is left, as acp-jsonrpc's driver polls its request
//! handlers.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

/// A driver of the set: it runs until its connection (or its process) is over.
pub(crate) type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Where drivers are added, from anywhere (the chain starts inside a request's handler);
/// [`run`](Self::run) is the future that polls them.
#[derive(Default)]
pub(crate) struct Drivers {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Added since the set was last polled.
    added: Vec<Driver>,
    /// The slots woken since the set last looked.
    ready: Vec<usize>,
    /// Set while the set polls its drivers: a wake-up then only notes the slot.
    polling: bool,
    /// Whoever polls the set, woken when a driver is added or woken while it is not polling.
    outer: Option<Waker>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The waker of one slot.
struct SlotWake {
    index: usize,
    /// Already in the ready list (or being polled for the first time).
    queued: AtomicBool,
    inner: Arc<Inner>,
}

impl Wake for SlotWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        self.inner.note(|state| state.ready.push(self.index));
    }
}

impl Inner {
    /// Changes the state with `change`, then wakes whoever polls the set unless it is polling
    /// (it looks at the state again before it sleeps).
    fn note(&self, change: impl FnOnce(&mut State)) {
        let outer = {
            let mut state = lock(&self.state);
            change(&mut state);
            if state.polling {
                None
            } else {
                state.outer.take()
            }
        };
        if let Some(outer) = outer {
            outer.wake();
        }
    }
}

impl Drivers {
    /// Adds `driver`; it is first polled on the set's next poll.
    pub(crate) fn add(&self, driver: Driver) {
        self.inner.note(|state| state.added.push(driver));
    }

    /// The future that polls the drivers; it never resolves. Dropping it drops them.
    pub(crate) fn run(&self) -> RunDrivers {
        RunDrivers {
            inner: self.inner.clone(),
            slots: Vec::new(),
            ready: Vec::new(),
        }
    }
}

/// One driver and its waker; `None` once it finished.
struct Slot {
    driver: Option<Driver>,
    wake: Arc<SlotWake>,
    waker: Waker,
}

/// Polls the drivers of a [`Drivers`] set.
pub(crate) struct RunDrivers {
    inner: Arc<Inner>,
    slots: Vec<Slot>,
    /// The ready list taken from the shared state, kept to reuse its allocation.
    ready: Vec<usize>,
}

impl Future for RunDrivers {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        loop {
            let added = {
                let mut state = lock(&this.inner.state);
                std::mem::swap(&mut state.ready, &mut this.ready);
                let added = std::mem::take(&mut state.added);
                if this.ready.is_empty() && added.is_empty() {
                    // Nothing left: sleep until a driver is added or woken.
                    state.polling = false;
                    if !state
                        .outer
                        .as_ref()
                        .is_some_and(|w| w.will_wake(cx.waker()))
                    {
                        state.outer = Some(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
                state.polling = true;
                added
            };
            for driver in added {
                let wake = Arc::new(SlotWake {
                    index: this.slots.len(),
                    queued: AtomicBool::new(true),
                    inner: this.inner.clone(),
                });
                this.ready.push(this.slots.len());
                this.slots.push(Slot {
                    driver: Some(driver),
                    waker: Waker::from(wake.clone()),
                    wake,
                });
            }
            for index in this.ready.drain(..) {
                let Some(slot) = this.slots.get_mut(index) else {
                    continue;
                };
                // Cleared before the poll: a wake-up during it queues the slot again.
                slot.wake.queued.store(false, Ordering::Release);
                let Some(driver) = slot.driver.as_mut() else {
                    continue;
                };
                if driver
                    .as_mut()
                    .poll(&mut Context::from_waker(&slot.waker))
                    .is_ready()
                {
                    slot.driver = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_lite::FutureExt;

    use super::*;

    /// Drivers added before and while the set runs are polled, woken from another thread
    /// (each wake-up is served, none lost: only the drivers' own wake-ups move them on), and
    /// let go of once finished.
    #[test]
    fn drivers_added_any_time_and_woken_from_anywhere_all_finish() {
        let drivers = Drivers::default();
        let (sender, receiver) = smol::channel::unbounded::<()>();
        let (done, finished) = smol::channel::unbounded::<()>();
        let driver = |rounds: usize| -> Driver {
            let receiver = receiver.clone();
            let done = done.clone();
            Box::pin(async move {
                for _ in 0..rounds {
                    receiver.recv().await.expect("a message");
                }
                done.send(()).await.expect("the test waits");
            })
        };
        drivers.add(driver(500));
        let mut run = drivers.run();
        let rounds = std::thread::spawn(move || {
            for _ in 0..1000 {
                sender.send_blocking(()).expect("sent");
            }
        });
        smol::block_on(
            async {
                drivers.add(driver(500));
                for _ in 0..2 {
                    finished.recv().await.expect("a driver finished");
                }
            }
            .or(async {
                (&mut run).await;
            })
            .or(async {
                smol::Timer::after(Duration::from_secs(10)).await;
                panic!("a wake-up was lost: the drivers did not finish within 10 s");
            }),
        );
        rounds.join().expect("the sender");
        assert!(run.slots.iter().all(|slot| slot.driver.is_none()));
    }
}
