//! Waiting for a turn's concurrent workers: the agent peers' in-flight workloads, v1 and v2.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// A worker: one boxed future that fails with `E`.
pub type Worker<'a, E> = Pin<Box<dyn Future<Output = Result<(), E>> + Send + 'a>>;

/// Polls every worker in place until all are done (the first error wins), without spawning:
/// the bench measures the protocol, not an executor's task hand-off.
pub async fn join_all<E>(mut workers: Vec<Worker<'_, E>>) -> Result<(), E> {
    std::future::poll_fn(|cx| {
        let mut error = None;
        workers.retain_mut(|worker| match worker.as_mut().poll(cx) {
            Poll::Ready(Ok(())) => false,
            Poll::Ready(Err(e)) => {
                error.get_or_insert(e);
                false
            }
            Poll::Pending => true,
        });
        match error {
            Some(e) => Poll::Ready(Err(e)),
            None if workers.is_empty() => Poll::Ready(Ok(())),
            None => Poll::Pending,
        }
    })
    .await
}
