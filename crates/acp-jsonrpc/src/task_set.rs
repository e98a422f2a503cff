//! A set of futures polled from one parent future, each only when it was
//! woken: the driver's way of running many request handlers concurrently
//! without spawning them on any executor.
//!
//! Futures of one type live in boxes that are kept and reused once their
//! task finishes: a handler future is often kilobytes, and allocating and
//! freeing one per request showed up in profiles.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Wake, Waker};

pub(crate) struct TaskSet<F, D> {
    slots: Vec<Slot<F, D>>,
    free: Vec<usize>,
    len: usize,
    ready: Arc<ReadyQueue>,
}

struct Slot<F, D> {
    /// The task's future, or `None` (the box kept for the next task).
    future: Pin<Box<Option<F>>>,
    /// Set exactly while the slot holds a task.
    data: Option<D>,
    waker: Arc<SlotWaker>,
}

struct ReadyQueue {
    indices: Mutex<Vec<usize>>,
    parent: Mutex<Option<Waker>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here is a push, a swap or an assignment; a
    // panic cannot leave the data half-updated.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Wakes one slot: queues its index and wakes the parent future. A wake
/// meant for a task that has since finished only causes a harmless extra
/// poll of whatever task took its slot.
struct SlotWaker {
    index: usize,
    queued: AtomicBool,
    queue: Arc<ReadyQueue>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        lock(&self.queue.indices).push(self.index);
        let parent = lock(&self.queue.parent).clone();
        if let Some(parent) = parent {
            parent.wake();
        }
    }
}

impl<F: Future<Output = ()>, D> TaskSet<F, D> {
    pub(crate) fn new() -> Self {
        TaskSet {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            ready: Arc::new(ReadyQueue {
                indices: Mutex::new(Vec::new()),
                parent: Mutex::new(None),
            }),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a task; it is polled on the next [`poll`](Self::poll).
    pub(crate) fn insert(&mut self, future: F, data: D) {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                let index = self.slots.len();
                self.slots.push(Slot {
                    future: Box::pin(None),
                    data: None,
                    waker: Arc::new(SlotWaker {
                        index,
                        queued: AtomicBool::new(false),
                        queue: self.ready.clone(),
                    }),
                });
                index
            }
        };
        let slot = &mut self.slots[index];
        slot.future.set(Some(future));
        slot.data = Some(data);
        self.len += 1;
        // Queued directly rather than woken: the parent is running and will
        // poll it, so waking the parent too would only cost a spurious poll.
        slot.waker.queued.store(true, Ordering::Release);
        lock(&self.ready.indices).push(index);
    }

    /// Removes (and so cancels) every task whose data matches.
    pub(crate) fn remove_where(&mut self, mut matches: impl FnMut(&D) -> bool) {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot.data.as_ref().is_some_and(&mut matches) {
                // Dropping in place is fine: a task's destructor (a
                // responder answering, say) cannot reach this set.
                slot.future.set(None);
                slot.data = None;
                self.free.push(index);
                self.len -= 1;
            }
        }
    }

    /// Drops every task.
    pub(crate) fn clear(&mut self) {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot.data.take().is_some() {
                slot.future.set(None);
                self.free.push(index);
            }
        }
        self.len = 0;
    }

    /// Polls the tasks that were woken; returns whether any was polled.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> bool {
        // No task, nothing to poll or be woken for (a stale wake-up of a finished task stays
        // queued: at most one per slot, and harmless, as above).
        if self.len == 0 {
            return false;
        }
        {
            let mut parent = lock(&self.ready.parent);
            if !parent.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *parent = Some(cx.waker().clone());
            }
        }
        let woken = std::mem::take(&mut *lock(&self.ready.indices));
        if woken.is_empty() {
            return false;
        }
        for &index in &woken {
            let slot = &mut self.slots[index];
            slot.waker.queued.store(false, Ordering::Release);
            let Some(future) = slot.future.as_mut().as_pin_mut() else {
                continue;
            };
            let waker = Waker::from(slot.waker.clone());
            let mut task_cx = Context::from_waker(&waker);
            if future.poll(&mut task_cx).is_ready() {
                slot.future.set(None);
                slot.data = None;
                self.free.push(index);
                self.len -= 1;
            }
        }
        // Hand the (now empty) allocation back to avoid reallocating.
        let mut indices = lock(&self.ready.indices);
        if indices.is_empty() {
            let mut woken = woken;
            woken.clear();
            *indices = woken;
        }
        true
    }
}
