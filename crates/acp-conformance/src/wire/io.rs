//! The two pipes, so that neither can hold the checker's clock: reads come in slices of
//! bounded size, and writes go through a bounded queue that is written as the pipe takes it.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use acp_runtime::process::AgentStdin;
use futures_lite::{AsyncBufRead, AsyncRead, AsyncWrite};

use crate::limits::OUTBOX_BYTES;

/// A reader that hands out at most a budget of bytes between two resets, then reports
/// `Pending` (waking itself at once): a line reader looping over an agent that writes faster
/// than the checker reads returns to the caller, which looks at its clock.
pub(crate) struct Metered<R> {
    inner: R,
    budget: Cell<usize>,
    consumed: Cell<u64>,
}

impl<R> Metered<R> {
    pub fn new(inner: R) -> Self {
        Metered {
            inner,
            budget: Cell::new(0),
            consumed: Cell::new(0),
        }
    }

    /// Allows `bytes` more bytes before the next `Pending`.
    pub fn refill(&self, bytes: usize) {
        self.budget.set(bytes);
    }

    /// Bytes consumed since the start.
    pub fn consumed(&self) -> u64 {
        self.consumed.get()
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Metered<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let budget = this.budget.get();
        if budget == 0 {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let limit = buf.len().min(budget);
        let n = ready!(Pin::new(&mut this.inner).poll_read(cx, &mut buf[..limit]))?;
        this.budget.set(budget - n);
        this.consumed.set(this.consumed.get() + n as u64);
        Poll::Ready(Ok(n))
    }
}

impl<R: AsyncBufRead + Unpin> AsyncBufRead for Metered<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        let budget = this.budget.get();
        if budget == 0 {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let buf = ready!(Pin::new(&mut this.inner).poll_fill_buf(cx))?;
        Poll::Ready(Ok(&buf[..buf.len().min(budget)]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.budget.set(this.budget.get().saturating_sub(amt));
        this.consumed.set(this.consumed.get() + amt as u64);
        Pin::new(&mut this.inner).consume(amt);
    }
}

/// The agent's stdin behind a queue of at most [`OUTBOX_BYTES`]: lines are queued, and
/// written whenever the checker waits for something (see [`Outbox::poll_flush`]).
pub(crate) struct Outbox {
    stdin: Option<AgentStdin>,
    queue: VecDeque<u8>,
    /// Lines that did not fit in the queue, and their bytes.
    pub dropped: usize,
    pub dropped_bytes: u64,
    /// Set when a write failed: the agent closed its stdin or exited.
    pub broken: Option<String>,
}

impl Outbox {
    pub fn new(stdin: AgentStdin) -> Self {
        Outbox {
            stdin: Some(stdin),
            queue: VecDeque::new(),
            dropped: 0,
            dropped_bytes: 0,
            broken: None,
        }
    }

    /// Whether stdin is still open.
    pub fn is_open(&self) -> bool {
        self.stdin.is_some()
    }

    /// Bytes queued, not yet taken by the pipe.
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Queues `line` and a `\n`, and writes what the pipe takes without waiting. False when
    /// stdin is closed or the line does not fit (the agent is not reading); a line always fits
    /// an empty queue.
    pub fn push(&mut self, line: &str) -> bool {
        if self.stdin.is_none() {
            return false;
        }
        if !self.queue.is_empty() && self.queue.len() + line.len() + 1 > OUTBOX_BYTES {
            self.dropped += 1;
            self.dropped_bytes += line.len() as u64 + 1;
            return false;
        }
        self.queue.extend(line.as_bytes());
        self.queue.push_back(b'\n');
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let _ = self.poll_flush(&mut cx);
        true
    }

    /// Writes queued bytes until the queue is empty (`Ready`) or the pipe is full
    /// (`Pending`). A failed write closes stdin and empties the queue.
    pub fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while !self.queue.is_empty() {
            let Some(stdin) = self.stdin.as_mut() else {
                self.queue.clear();
                break;
            };
            let (front, _) = self.queue.as_slices();
            match Pin::new(stdin).poll_write(cx, front) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(n)) if n > 0 => {
                    self.queue.drain(..n);
                }
                Poll::Ready(Ok(_)) => self.fail("the pipe took nothing".to_owned()),
                Poll::Ready(Err(e)) => self.fail(e.to_string()),
            }
        }
        Poll::Ready(())
    }

    fn fail(&mut self, why: String) {
        self.broken = Some(why);
        self.stdin = None;
        self.queue.clear();
    }

    /// Closes stdin; whatever is still queued is lost.
    pub fn close(&mut self) {
        self.stdin = None;
        self.queue.clear();
    }
}
