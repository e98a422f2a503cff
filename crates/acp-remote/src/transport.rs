//! [`ConnectionReader`] and [`ConnectionWriter`]: one peer's messages as lines, whichever
//! transport and role carry them.
//!
//! Each side builds them from its own line streams (the server's WebSocket, Streamable HTTP
//! and watched connections in `server/`, the client's in `client/`), so this module names
//! neither role: a reader or writer is a boxed line stream, as hyper's `Upgraded` is a boxed
//! socket. The box is made once per connection; a call through it costs one indirect jump.

use std::fmt::Debug;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_io::{AsyncBufRead, AsyncRead, AsyncWrite};

/// Which framing carries a connection's lines, as the server's counters tell them apart
/// (a durable WebSocket connection is served by the Streamable HTTP machinery and counts as
/// that).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Text frames of a plain WebSocket.
    WebSocket,
    /// Anything else: `POST`s and SSE events, a durable WebSocket, a pipe of ours.
    Other,
}

/// A peer's lines, as one of the transports reads them.
pub(crate) trait LineSource: AsyncBufRead + Debug + Send + Sync + Unpin {}

impl<T: AsyncBufRead + Debug + Send + Sync + Unpin> LineSource for T {}

/// Lines to a peer, as one of the transports writes them.
pub(crate) trait LineTarget: AsyncWrite + Debug + Send + Sync + Unpin {
    /// This writer, failing a line that grows beyond `bytes` before its newline.
    fn boxed_with_max_line(self: Box<Self>, bytes: usize) -> Box<dyn LineTarget>;
}

/// One peer's messages, one line each, whichever transport carries them: on a server, the
/// client's WebSocket text frames or Streamable HTTP `POST`s; on a client ([`Remote`]), the
/// agent's text frames or SSE events. The end of input is the peer closing (a close frame,
/// `DELETE`, the end of the connection's stream), the idle timeout, or the server's shutdown.
///
/// [`Remote`]: crate::Remote
#[derive(Debug)]
pub struct ConnectionReader {
    lines: Box<dyn LineSource>,
    framing: Framing,
}

impl ConnectionReader {
    pub(crate) fn new(lines: impl LineSource + 'static, framing: Framing) -> Self {
        ConnectionReader {
            lines: Box::new(lines),
            framing,
        }
    }

    pub(crate) fn framing(&self) -> Framing {
        self.framing
    }
}

/// Messages to the peer, one line each: WebSocket text frames; on a server, Server-Sent Events
/// on the client's `GET` streams; on a client, `POST`s. Only complete lines are sent; they go
/// out on flush.
#[derive(Debug)]
pub struct ConnectionWriter(Box<dyn LineTarget>);

impl ConnectionWriter {
    pub(crate) fn new(lines: impl LineTarget + 'static) -> Self {
        ConnectionWriter(Box::new(lines))
    }

    /// Fails a write whose line would grow beyond `bytes` before its newline instead of
    /// keeping it (default: no limit). The bridge sets it, so that an agent that never writes
    /// a newline cannot grow the buffer without bound.
    pub fn with_max_line(self, bytes: usize) -> Self {
        ConnectionWriter(self.0.boxed_with_max_line(bytes))
    }
}

impl AsyncRead for ConnectionReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().lines).poll_read(cx, buf)
    }
}

impl AsyncBufRead for ConnectionReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        Pin::new(&mut self.get_mut().lines).poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        Pin::new(&mut self.get_mut().lines).consume(amt)
    }
}

impl AsyncWrite for ConnectionWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_close(cx)
    }
}
