//! Message queues bounded in bytes: the streams of one Streamable HTTP connection (server and
//! client), and the runtime's end of a connection a task of ours drives (`client/pipe.rs`).
//! Role-free, below `server/` and `client/`, so that both sides share one kind of queue.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};

use acp_jsonrpc::BudgetListener;

use crate::lines::LineSink;
use crate::share::{Refused, Share};
use event_listener::{Event, EventListener};
use futures_io::{AsyncBufRead, AsyncRead};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves plain counters behind; keep going.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes taken from a [`Share`] for something still arriving (a POST's body), given back
/// when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Share,
    taken: usize,
}

impl Reservation {
    pub(crate) fn new(budget: Share) -> Reservation {
        Reservation { budget, taken: 0 }
    }

    /// Takes `bytes` more, waiting while its own budget is spent; `false` when the ceiling
    /// refuses them (the connection is over its share), taking nothing.
    pub(crate) async fn take(&mut self, bytes: usize) -> bool {
        if !self.budget.take(bytes).await {
            return false;
        }
        self.taken += bytes;
        true
    }

    /// Takes `bytes` more if they fit now (or nothing is taken of the budget); `false`
    /// otherwise, taking nothing.
    pub(crate) fn try_take(&mut self, bytes: usize) -> bool {
        if self.budget.try_take(bytes).is_err() {
            return false;
        }
        self.taken += bytes;
        true
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.give_back(self.taken);
    }
}

/// A queue of messages whose bytes count against a [`Share`]: a push waits while its own
/// budget is spent and fails when the ceiling refuses it (the connection is over its share),
/// a pop waits while the queue is empty. Closing wakes everyone: pushes fail, pops drain what
/// is left and then end.
#[derive(Debug)]
pub(crate) struct ByteQueue {
    state: Mutex<State>,
    budget: Share,
    /// Woken when a message is pushed or the queue is closed.
    pushed: Event,
}

/// Why a message was not pushed (it is dropped).
#[derive(Debug)]
pub(crate) enum Unpushed {
    /// The queue is closed.
    Closed,
    /// The server's memory ceiling has no room for this connection under the share rule
    /// ([`Refused::OverShare`]).
    OverShare,
}

#[derive(Debug, Default)]
struct State {
    messages: VecDeque<Vec<u8>>,
    closed: bool,
}

impl ByteQueue {
    pub(crate) fn new(budget: Share) -> Self {
        ByteQueue {
            state: Mutex::default(),
            budget,
            pushed: Event::new(),
        }
    }

    pub(crate) fn budget(&self) -> &Share {
        &self.budget
    }

    /// Pushes `message` once its own budget has room; `Err` (dropping it) if the queue is
    /// closed or the connection over its share of the ceiling.
    pub(crate) async fn push(&self, message: Vec<u8>) -> Result<(), Unpushed> {
        let mut message = Some(message);
        let mut listener = BudgetListener::default();
        std::future::poll_fn(|cx| self.poll_push(&mut message, &mut listener, cx)).await
    }

    /// Pushes what `message` holds once its own budget has room, leaving it `None`.
    pub(crate) fn poll_push(
        &self,
        message: &mut Option<Vec<u8>>,
        listener: &mut BudgetListener,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), Unpushed>> {
        loop {
            let Some(m) = message.take() else {
                return Poll::Ready(Ok(()));
            };
            if lock(&self.state).closed {
                return Poll::Ready(Err(Unpushed::Closed));
            }
            match self.budget.try_take(m.len()) {
                Ok(()) => {
                    let mut state = lock(&self.state);
                    if state.closed {
                        drop(state);
                        self.budget.give_back(m.len());
                        return Poll::Ready(Err(Unpushed::Closed));
                    }
                    state.messages.push_back(m);
                    drop(state);
                    self.pushed.notify(usize::MAX);
                    return Poll::Ready(Ok(()));
                }
                Err(Refused::OverShare) => return Poll::Ready(Err(Unpushed::OverShare)),
                Err(Refused::Own) => {}
            }
            *message = Some(m);
            ready!(self.budget.poll_freed(listener, cx));
        }
    }

    /// The next message, or `None` once the queue is closed and empty.
    pub(crate) async fn pop(&self) -> Option<Vec<u8>> {
        let mut listener = None;
        std::future::poll_fn(|cx| self.poll_pop(&mut listener, cx)).await
    }

    pub(crate) fn poll_pop(
        &self,
        listener: &mut Option<EventListener>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Vec<u8>>> {
        loop {
            {
                let mut state = lock(&self.state);
                if let Some(m) = state.messages.pop_front() {
                    drop(state);
                    self.budget.give_back(m.len());
                    return Poll::Ready(Some(m));
                }
                if state.closed {
                    return Poll::Ready(None);
                }
            }
            match listener {
                None => *listener = Some(self.pushed.listen()),
                Some(l) => {
                    ready!(Pin::new(l).poll(cx));
                    *listener = None;
                }
            }
        }
    }

    /// The next message if one is queued now: `Ok(None)` when none is, `Err(())` once the
    /// queue is closed and empty.
    pub(crate) fn try_pop(&self) -> Result<Option<Vec<u8>>, ()> {
        let mut state = lock(&self.state);
        match state.messages.pop_front() {
            Some(m) => {
                drop(state);
                self.budget.give_back(m.len());
                Ok(Some(m))
            }
            None if state.closed => Err(()),
            None => Ok(None),
        }
    }

    /// Whether the queue is closed and empty.
    pub(crate) fn is_finished(&self) -> bool {
        let state = lock(&self.state);
        state.closed && state.messages.is_empty()
    }

    /// A listener woken by the next push (or the close): made before [`try_pop`](Self::try_pop)
    /// finds nothing, so that no push in between is missed.
    pub(crate) fn listen_pushed(&self) -> EventListener {
        self.pushed.listen()
    }

    /// Ends the queue: pushes fail from now on; pops get what is left, then `None`.
    pub(crate) fn close(&self) {
        lock(&self.state).closed = true;
        self.pushed.notify(usize::MAX);
        self.budget.wake_waiters();
    }

    /// Ends the queue and drops what it holds.
    pub(crate) fn abort(&self) {
        let dropped: usize = {
            let mut state = lock(&self.state);
            state.closed = true;
            state.messages.drain(..).map(|m| m.len()).sum()
        };
        self.budget.give_back(dropped);
        self.pushed.notify(usize::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_in_bytes_with_one_oversized_message_alone() {
        smol::block_on(async {
            let budget = Share::alone(10);
            let queue = ByteQueue::new(budget.clone());
            let other = ByteQueue::new(budget);
            queue.push(vec![0; 8]).await.unwrap();
            // 8 + 8 > 10, even in another queue of the same budget: the push waits until
            // the first message is popped.
            let second = other.push(vec![1; 8]);
            let pop = async {
                smol::Timer::after(std::time::Duration::from_millis(10)).await;
                queue.pop().await
            };
            let (pushed, popped) = futures_lite::future::zip(second, pop).await;
            pushed.unwrap();
            assert_eq!(popped.unwrap(), vec![0; 8]);
            assert_eq!(other.pop().await.unwrap(), vec![1; 8]);
            // Larger than the whole budget, with nothing else queued: accepted.
            queue.push(vec![2; 100]).await.unwrap();
            queue.close();
            assert_eq!(queue.try_pop().unwrap().unwrap().len(), 100);
            assert_eq!(queue.try_pop(), Err(()));
            assert_eq!(queue.pop().await, None);
            assert!(queue.push(vec![3]).await.is_err());
            assert_eq!(other.try_pop(), Ok(None));
        });
    }
}

/// Why a connection's input failed: a resumption the server refused (the connection may be
/// taken up again on a new one, with `session/resume`), or anything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    Refused(String),
    Other(String),
}

impl Failure {
    /// Its reason, as the runtime's reader reports it.
    pub(crate) fn reason(&self) -> &str {
        match self {
            Failure::Refused(reason) | Failure::Other(reason) => reason,
        }
    }

    /// The error the runtime's reader fails with: a refused resumption as [`ResumeRefused`],
    /// which the fallback recognises by its type.
    pub(crate) fn to_error(&self) -> std::io::Error {
        let kind = std::io::ErrorKind::ConnectionAborted;
        match self {
            Failure::Refused(reason) => std::io::Error::new(kind, ResumeRefused(reason.clone())),
            Failure::Other(reason) => std::io::Error::new(kind, reason.clone()),
        }
    }
}

/// The error a refused resumption fails the runtime's reader with: its text is the server's
/// reason; the fallback (`src/client/fallback.rs`) recognises it by its type.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ResumeRefused(pub(crate) String);

/// What owns the queue of a connection's incoming lines: the server's side of a Streamable
/// HTTP connection, or the client's.
pub(crate) trait Inbound {
    fn inbound(&self) -> &ByteQueue;

    /// Why the input ended, if it did not end cleanly: the reader fails with it after the
    /// last line.
    fn failure(&self) -> Option<String> {
        None
    }

    /// The error the reader fails with after the last line, if the input did not end
    /// cleanly (by default, [`failure`](Self::failure)'s reason).
    fn failure_error(&self) -> Option<std::io::Error> {
        self.failure()
            .map(|reason| std::io::Error::new(std::io::ErrorKind::ConnectionAborted, reason))
    }
}

/// The lines of an [`Inbound`] queue, one after the other, as the runtime's reader.
#[derive(Debug)]
pub(crate) struct QueueReader<S> {
    source: Arc<S>,
    line: Vec<u8>,
    pos: usize,
    listener: Option<EventListener>,
}

impl<S> QueueReader<S> {
    pub(crate) fn new(source: Arc<S>) -> Self {
        QueueReader {
            source,
            line: Vec::new(),
            pos: 0,
            listener: None,
        }
    }
}

impl<S: Inbound> AsyncBufRead for QueueReader<S> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.pos >= this.line.len() {
            match ready!(this.source.inbound().poll_pop(&mut this.listener, cx)) {
                Some(line) => {
                    this.line = line;
                    this.pos = 0;
                }
                None => {
                    return Poll::Ready(match this.source.failure_error() {
                        Some(error) => Err(error),
                        None => Ok(&[]),
                    });
                }
            }
        }
        Poll::Ready(Ok(&this.line[this.pos..]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.line.len());
    }
}

impl<S: Inbound> AsyncRead for QueueReader<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let available = ready!(self.as_mut().poll_fill_buf(cx))?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Poll::Ready(Ok(n))
    }
}

/// What owns the queue a [`QueueSink`] pushes the runtime's lines into, for a task of ours to
/// send (the Streamable HTTP client's poster, a driven WebSocket connection).
pub(crate) trait Outbound {
    fn outbound(&self) -> &ByteQueue;
}

/// The runtime's output as lines pushed into `owner`'s outbound queue, waiting for room there.
/// Closing (or dropping) it closes the queue: the task sends what is queued, then ends.
#[derive(Debug)]
pub(crate) struct QueueSink<O: Outbound> {
    owner: Arc<O>,
    pending: Option<Vec<u8>>,
    listener: BudgetListener,
}

impl<O: Outbound> QueueSink<O> {
    pub(crate) fn new(owner: Arc<O>) -> Self {
        QueueSink {
            owner,
            pending: None,
            listener: BudgetListener::default(),
        }
    }
}

impl<O: Outbound> LineSink for QueueSink<O> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.pending.is_some() {
            let pushed = ready!(self.owner.outbound().poll_push(
                &mut self.pending,
                &mut self.listener,
                cx
            ));
            self.pending = None;
            if pushed.is_err() {
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "the connection has ended",
                )));
            }
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(&mut self, line: Vec<u8>, cx: &mut Context<'_>) -> std::io::Result<()> {
        self.pending = Some(line);
        let _ = self.poll_ready(cx);
        Ok(())
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_ready(cx)
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.poll_ready(cx))?;
        self.owner.outbound().close();
        Poll::Ready(Ok(()))
    }
}

impl<O: Outbound> Drop for QueueSink<O> {
    fn drop(&mut self) {
        self.owner.outbound().close();
    }
}
