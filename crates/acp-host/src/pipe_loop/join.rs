//! Two futures run side by side on one thread, each polled only when it was woken: how a
//! connection's driver and the code consuming it share a pipe loop.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// Runs two futures to completion side by side, like `futures_lite::future::zip`, but polls
/// each only when it was woken. The connection's driver and the code consuming it share one
/// thread; polling both on every wake-up of either cost a poll of the consumer (its channel
/// and response futures) per message the driver handled.
pub async fn join_woken<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let (mut out_a, mut out_b) = (None, None);
    let flag_a = Arc::new(WokenFlag::new());
    let flag_b = Arc::new(WokenFlag::new());
    let waker_a = Waker::from(flag_a.clone());
    let waker_b = Waker::from(flag_b.clone());
    // Which waker the flags hold ([`Waker::data`] and [`Waker::vtable`], as `will_wake`
    // compares them): polled again by the same task, the flags' locks are not taken (two per
    // poll, on every message of the stdio pair). The flags keep that waker alive, so an equal
    // pair always names the one they hold.
    let mut parent = None;
    std::future::poll_fn(|cx| {
        let waker = cx.waker();
        let identity = (waker.data() as usize, waker.vtable() as *const _ as usize);
        if parent != Some(identity) {
            flag_a.set_parent(waker);
            flag_b.set_parent(waker);
            parent = Some(identity);
        }
        if out_a.is_none()
            && flag_a.take()
            && let Poll::Ready(output) = a.as_mut().poll(&mut Context::from_waker(&waker_a))
        {
            out_a = Some(output);
        }
        if out_b.is_none()
            && flag_b.take()
            && let Poll::Ready(output) = b.as_mut().poll(&mut Context::from_waker(&waker_b))
        {
            out_b = Some(output);
        }
        if out_a.is_some() && out_b.is_some() {
            return Poll::Ready((out_a.take().unwrap(), out_b.take().unwrap()));
        }
        Poll::Pending
    })
    .await
}

/// One future's wake-up flag in [`join_woken`]; waking it also wakes the joined future.
struct WokenFlag {
    woken: AtomicBool,
    parent: Mutex<Option<Waker>>,
}

impl WokenFlag {
    fn new() -> Self {
        WokenFlag {
            woken: AtomicBool::new(true),
            parent: Mutex::new(None),
        }
    }

    fn set_parent(&self, waker: &Waker) {
        let mut parent = self.parent.lock().unwrap();
        if !parent.as_ref().is_some_and(|p| p.will_wake(waker)) {
            *parent = Some(waker.clone());
        }
    }

    fn take(&self) -> bool {
        self.woken.swap(false, Ordering::AcqRel)
    }
}

impl Wake for WokenFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.woken.swap(true, Ordering::AcqRel)
            && let Some(parent) = self.parent.lock().unwrap().as_ref()
        {
            parent.wake_by_ref();
        }
    }
}
