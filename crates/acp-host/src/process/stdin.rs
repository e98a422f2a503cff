//! The agent's stdin, closable from the writer and from the process handle alike.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use async_process::ChildStdin;
use futures_lite::AsyncWrite;

use crate::os::lock;

/// The writer for the agent's stdin.
///
/// Closing it ([`AsyncWriteExt::close`](futures_lite::AsyncWriteExt::close)) or dropping it
/// closes the agent's stdin. [`AgentProcess::shutdown`] and dropping the
/// [`AgentProcess`] close the stdin too, while this writer may still be held: pending and
/// later writes then fail with [`io::ErrorKind::BrokenPipe`].
///
/// [`AgentProcess`]: super::AgentProcess
/// [`AgentProcess::shutdown`]: super::AgentProcess::shutdown
pub struct AgentStdin {
    pub(super) pipe: Arc<StdinPipe>,
}

impl fmt::Debug for AgentStdin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let open = lock(&self.pipe.state).pipe.is_some();
        f.debug_struct("AgentStdin").field("open", &open).finish()
    }
}

impl AsyncWrite for AgentStdin {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.pipe
            .poll_with(cx, |pipe, cx| Pin::new(pipe).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.pipe
            .poll_with(cx, |pipe, cx| Pin::new(pipe).poll_flush(cx))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self
            .as_ref()
            .pipe
            .poll_with(cx, |pipe, cx| Pin::new(pipe).poll_flush(cx))
        {
            Poll::Pending => return Poll::Pending,
            // Already closed: closing twice is fine.
            Poll::Ready(Err(error)) if error.kind() == io::ErrorKind::BrokenPipe => {}
            Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
            Poll::Ready(Ok(())) => {}
        }
        self.pipe.close();
        Poll::Ready(Ok(()))
    }
}

impl Drop for AgentStdin {
    fn drop(&mut self) {
        self.pipe.close();
    }
}

/// The agent's stdin, shared by the writer handed out and the process handle, so that
/// either can close it.
pub(super) struct StdinPipe {
    pub(super) state: Mutex<StdinState>,
}

pub(super) struct StdinState {
    pub(super) pipe: Option<ChildStdin>,
    /// The reactor only wakes a writer waiting for room in a pipe that is still open, so a
    /// writer blocked at the moment of closing is woken here.
    pub(super) blocked_writer: Option<Waker>,
}

impl StdinPipe {
    fn poll_with<T>(
        &self,
        cx: &mut Context<'_>,
        operation: impl FnOnce(&mut ChildStdin, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let mut state = lock(&self.state);
        let Some(pipe) = state.pipe.as_mut() else {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the agent's stdin was closed",
            )));
        };
        let result = operation(pipe, cx);
        if result.is_pending() {
            state.blocked_writer = Some(cx.waker().clone());
        }
        result
    }

    pub(super) fn close(&self) {
        let (pipe, blocked_writer) = {
            let mut state = lock(&self.state);
            (state.pipe.take(), state.blocked_writer.take())
        };
        drop(pipe);
        if let Some(waker) = blocked_writer {
            waker.wake();
        }
    }
}
