//! [`Latch`]: a flag set once and awaited by any number of waiters, early or late. The one
//! latch of the workspace (a turn's cancellation, an initialization done, a connection or a
//! server ended): here, the lowest crate the runtime and acp-remote share, over the same
//! `event_listener` this crate's outgoing queue wakes senders with, so no executor is named.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker, ready};

use atomic_waker::AtomicWaker;
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
    /// Whether a [`Waiter`] holds `first`.
    first_taken: AtomicBool,
    /// The task of one [`Waiter`], registered without a lock: most latches have one waiter at
    /// a time (a turn making its calls one after another), woken by [`Latch::set`] beside
    /// `event`'s.
    first: AtomicWaker,
    /// The tasks of the other [`Waiter`]s waiting, woken by [`Latch::set`] too.
    slots: Mutex<Slots>,
}

/// The tasks that [`Waiter`]s registered: one slot per waiter until it is dropped, then reused
/// by the next, so the latch keeps as many as there are waiters at once.
#[derive(Debug, Default)]
struct Slots {
    wakers: Vec<Option<Waker>>,
    free: Vec<usize>,
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
        self.inner.first.wake();
        // Taken out of their slots (which stay their waiters' until dropped), woken outside
        // the lock.
        let wakers: Vec<Waker> = lock(&self.inner.slots)
            .wakers
            .iter_mut()
            .filter_map(Option::take)
            .collect();
        for waker in wakers {
            waker.wake();
        }
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

impl Latch {
    /// A waiter to poll by hand, for a future that waits on the latch beside other work many
    /// times over (each call of a turn raced against the turn's cancellation). It registers its
    /// task in a slot of the latch that the next waiter reuses, where [`wait`](Self::wait) and
    /// [`poll_wait`](Self::poll_wait) allocate a listener each time: this is on the path of
    /// every call an agent's turn makes (docs/performance.md). The first waiter at a time
    /// registers without taking a lock, and a waiter polled again by the task it registered
    /// touches nothing shared. Dropping it frees the slot.
    ///
    /// ```
    /// use std::task::{Context, Poll};
    /// use acp_jsonrpc::Latch;
    ///
    /// let latch = Latch::new();
    /// let mut waiter = latch.waiter();
    /// let mut cx = Context::from_waker(std::task::Waker::noop());
    /// assert!(waiter.poll(&mut cx).is_pending());
    /// latch.set();
    /// assert_eq!(waiter.poll(&mut cx), Poll::Ready(()));
    /// ```
    pub fn waiter(&self) -> Waiter<'_> {
        Waiter {
            latch: self,
            slot: Slot::None,
            registered: None,
        }
    }
}

/// A registration with a [`Latch`] kept between polls ([`Latch::waiter`]); removed when
/// dropped.
#[derive(Debug)]
pub struct Waiter<'a> {
    latch: &'a Latch,
    slot: Slot,
    /// Which waker the slot holds ([`Waker::data`] and [`Waker::vtable`], as
    /// [`Waker::will_wake`] compares them): a poll by the same task leaves the slot alone. The
    /// slot keeps that waker alive until `set` takes it, and `set` sets the flag first, so an
    /// equal pair always names the waker registered, or one `set` has woken.
    registered: Option<(usize, usize)>,
}

/// Where a [`Waiter`] registered its task.
#[derive(Debug, Clone, Copy)]
enum Slot {
    None,
    /// The latch's lock-free `first`.
    First,
    /// An entry of the latch's `slots`.
    Shared(usize),
}

impl Waiter<'_> {
    /// Ready once the latch is set; otherwise `cx`'s task is woken when it is.
    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.latch.is_set() {
            return Poll::Ready(());
        }
        let waker = cx.waker();
        let identity = (waker.data() as usize, waker.vtable() as *const _ as usize);
        if self.registered != Some(identity) {
            self.register(waker);
            self.registered = Some(identity);
        }
        // Set between the first read and the registration: `set` may have taken the wakers
        // before this one was in its slot.
        if self.latch.is_set() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Puts `waker` in this waiter's slot, taking one first if it has none.
    fn register(&mut self, waker: &Waker) {
        let inner = &self.latch.inner;
        if let Slot::None = self.slot
            && !inner.first_taken.swap(true, Ordering::AcqRel)
        {
            self.slot = Slot::First;
        }
        match self.slot {
            Slot::First => inner.first.register(waker),
            // Emptied by `set`: the flag read after registering is true.
            Slot::Shared(slot) => {
                if let Some(registered) = &mut lock(&inner.slots).wakers[slot] {
                    registered.clone_from(waker);
                }
            }
            Slot::None => {
                let mut slots = lock(&inner.slots);
                let waker = Some(waker.clone());
                let slot = match slots.free.pop() {
                    Some(slot) => {
                        slots.wakers[slot] = waker;
                        slot
                    }
                    None => {
                        slots.wakers.push(waker);
                        slots.wakers.len() - 1
                    }
                };
                self.slot = Slot::Shared(slot);
            }
        }
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let inner = &self.latch.inner;
        match self.slot {
            Slot::None => {}
            Slot::First => {
                // Given back empty: the next waiter's task is not woken for this one.
                drop(inner.first.take());
                inner.first_taken.store(false, Ordering::Release);
            }
            Slot::Shared(slot) => {
                let mut slots = lock(&inner.slots);
                slots.wakers[slot] = None;
                slots.free.push(slot);
            }
        }
    }
}

/// The slots stay consistent whatever panicked while they were held (each write is whole).
fn lock(mutex: &Mutex<Slots>) -> MutexGuard<'_, Slots> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Counts its wake-ups.
    struct Counter(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counter() -> (Arc<Counter>, Waker) {
        let counter = Arc::new(Counter(std::sync::atomic::AtomicUsize::new(0)));
        (counter.clone(), Waker::from(counter))
    }

    #[test]
    fn a_waiter_is_woken_once_by_set_then_ready() {
        let latch = Latch::new();
        let (count, waker) = counter();
        let mut cx = Context::from_waker(&waker);
        let mut waiter = latch.waiter();
        assert!(waiter.poll(&mut cx).is_pending());
        // Polled again by the same task: still one registration, woken once.
        assert!(waiter.poll(&mut cx).is_pending());
        latch.set();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(waiter.poll(&mut cx).is_ready());
        drop(waiter);
        assert!(latch.waiter().poll(&mut cx).is_ready());
    }

    #[test]
    fn dropped_waiters_give_their_slots_back_and_are_not_woken() {
        let latch = Latch::new();
        let (dropped, dropped_waker) = counter();
        for _ in 0..100 {
            let mut waiter = latch.waiter();
            assert!(
                waiter
                    .poll(&mut Context::from_waker(&dropped_waker))
                    .is_pending()
            );
        }
        // One waiter at a time: always the lock-free slot, given back each time.
        assert!(lock(&latch.inner.slots).wakers.is_empty());
        assert!(!latch.inner.first_taken.load(Ordering::SeqCst));
        let (kept, kept_waker) = counter();
        let mut waiter = latch.waiter();
        assert!(
            waiter
                .poll(&mut Context::from_waker(&kept_waker))
                .is_pending()
        );
        latch.set();
        assert_eq!(dropped.0.load(Ordering::SeqCst), 0);
        assert_eq!(kept.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_lock_free_slot_and_the_shared_ones_are_all_woken_by_the_task_that_last_polled() {
        let latch = Latch::new();
        let (first_before, first_before_waker) = counter();
        let (first_after, first_after_waker) = counter();
        let (shared, shared_waker) = counter();
        let mut first = latch.waiter();
        let mut second = latch.waiter();
        assert!(
            first
                .poll(&mut Context::from_waker(&first_before_waker))
                .is_pending()
        );
        assert!(
            second
                .poll(&mut Context::from_waker(&shared_waker))
                .is_pending()
        );
        assert!(matches!(
            (first.slot, second.slot),
            (Slot::First, Slot::Shared(0))
        ));
        // Moved to another task: the new one is woken, not the old.
        assert!(
            first
                .poll(&mut Context::from_waker(&first_after_waker))
                .is_pending()
        );
        latch.set();
        assert_eq!(first_before.0.load(Ordering::SeqCst), 0);
        assert_eq!(first_after.0.load(Ordering::SeqCst), 1);
        assert_eq!(shared.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_set_from_another_thread_is_never_missed_by_a_waiter() {
        for _ in 0..200 {
            let latch = Latch::new();
            let setter = {
                let latch = latch.clone();
                std::thread::spawn(move || latch.set())
            };
            let (count, waker) = counter();
            let mut cx = Context::from_waker(&waker);
            let mut waiter = latch.waiter();
            let first = waiter.poll(&mut cx);
            setter.join().unwrap();
            // Pending only if registered in time for `set` to wake it.
            if first.is_pending() {
                assert_eq!(count.0.load(Ordering::SeqCst), 1);
            }
            assert!(waiter.poll(&mut cx).is_ready());
        }
    }
}
