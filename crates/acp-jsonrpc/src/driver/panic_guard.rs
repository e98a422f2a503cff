//! A request handler future whose panic is caught: reported to the connection's observer and
//! answered `-32603` by the request's responder, instead of taking the driver down with it;
//! and the words of a panic's payload, which the driver reports for notification handlers too.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use crate::shared::{RequestState, Shared};
use crate::{Problem, RequestId};

/// Turns a panicking request handler into a report and a `-32603`.
pub(crate) struct PanicGuard {
    pub(super) id: RequestId,
    pub(super) state: Arc<RequestState>,
    pub(super) shared: Arc<Shared>,
}

impl PanicGuard {
    pub(crate) fn run<F: Future<Output = ()>>(self, handler: F) -> Guarded<F> {
        Guarded {
            handler,
            guard: self,
        }
    }
}

pin_project_lite::pin_project! {
    /// A request handler future under a [`PanicGuard`]. A combinator rather
    /// than an `async fn`, which would store the handler future twice (as
    /// its argument and as the pinned local it polls).
    pub(crate) struct Guarded<F> {
        #[pin]
        handler: F,
        guard: PanicGuard,
    }
}

impl<F: Future<Output = ()>> Future for Guarded<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let handler = this.handler;
        let _entered = this.guard.state.trace.enter();
        match std::panic::catch_unwind(AssertUnwindSafe(|| handler.poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => {
                // Recorded before the handler future (and any responder in
                // it) is dropped, so that the responder answers -32603.
                this.guard.state.panicked.store(true, Ordering::Release);
                this.guard.shared.report(Problem::RequestHandlerPanicked {
                    id: this.guard.id.clone(),
                    message: panic_message(payload.as_ref()),
                });
                Poll::Ready(())
            }
        }
    }
}

pub(super) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "(a panic payload that is not a string)".to_owned()
    }
}
