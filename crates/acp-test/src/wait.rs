//! Small timing helpers: nothing in a test should hang.

use std::future::Future;
use std::time::{Duration, Instant};

/// Polls `check` every few milliseconds until it returns `Some`, or `timeout` passes.
pub(crate) async fn poll_until<T>(
    timeout: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = check() {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        smol::Timer::after(Duration::from_millis(2)).await;
    }
}

/// `future`'s output, or `None` when `timeout` passes first.
pub(crate) async fn within<T>(timeout: Duration, future: impl Future<Output = T>) -> Option<T> {
    futures_lite::future::or(async { Some(future.await) }, async {
        smol::Timer::after(timeout).await;
        None
    })
    .await
}
