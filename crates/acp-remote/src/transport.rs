//! [`ConnectionReader`] and [`ConnectionWriter`]: one client's messages as lines, whichever
//! transport it came by.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::net::NetStream;
use futures_io::{AsyncBufRead, AsyncRead, AsyncWrite};

use crate::frames::{WsReader, WsWriter};
use crate::watch::{WatchedReader, WatchedWriter};
use crate::ws_socket::WsSocket;

/// The socket under our own WebSockets (server and client).
pub(crate) type WsStream = WsSocket<NetStream>;
use crate::pipe::{PipeReader, PipeWriter};
use crate::streamable::client::{HttpClientReader, HttpClientWriter};
use crate::streamable::{HttpReader, HttpWriter};

/// One peer's messages, one line each, whichever transport carries them: on a server, the
/// client's WebSocket text frames or Streamable HTTP `POST`s; on a client ([`Remote`]), the
/// agent's text frames or SSE events. The end of input is the peer closing (a close frame,
/// `DELETE`, the end of the connection's stream), the idle timeout, or the server's shutdown.
///
/// [`Remote`]: crate::Remote
#[derive(Debug)]
pub struct ConnectionReader(pub(crate) ReaderInner);

#[derive(Debug)]
pub(crate) enum ReaderInner {
    Ws(WsReader<WsStream>),
    Http(HttpReader),
    HttpClient(HttpClientReader),
    /// A client's connection driven by a task of ours (durable WebSockets, the fallback to
    /// `session/resume`: src/pipe.rs).
    Piped(PipeReader),
    /// A server's connection, its turns and sessions counted (src/watch.rs).
    Watched(Box<WatchedReader<ConnectionReader>>),
}

/// Messages to the peer, one line each: WebSocket text frames; on a server, Server-Sent Events
/// on the client's `GET` streams; on a client, `POST`s. Only complete lines are sent; they go
/// out on flush.
#[derive(Debug)]
pub struct ConnectionWriter(pub(crate) WriterInner);

#[derive(Debug)]
pub(crate) enum WriterInner {
    Ws(WsWriter<WsStream>),
    Http(HttpWriter),
    HttpClient(HttpClientWriter),
    Piped(PipeWriter),
    Watched(Box<WatchedWriter<ConnectionWriter>>),
}

impl ConnectionWriter {
    /// Fails a write whose line would grow beyond `bytes` before its newline instead of
    /// keeping it (default: no limit). The bridge sets it, so that an agent that never writes
    /// a newline cannot grow the buffer without bound.
    pub fn with_max_line(self, bytes: usize) -> Self {
        ConnectionWriter(match self.0 {
            WriterInner::Ws(w) => WriterInner::Ws(w.with_max_line(bytes)),
            WriterInner::Http(w) => WriterInner::Http(w.with_max_line(bytes)),
            WriterInner::HttpClient(w) => WriterInner::HttpClient(w.with_max_line(bytes)),
            WriterInner::Piped(w) => WriterInner::Piped(w.with_max_line(bytes)),
            WriterInner::Watched(w) => {
                WriterInner::Watched(Box::new(w.map(|w| w.with_max_line(bytes))))
            }
        })
    }
}

impl AsyncRead for ConnectionReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            ReaderInner::Ws(r) => Pin::new(r).poll_read(cx, buf),
            ReaderInner::Http(r) => Pin::new(r).poll_read(cx, buf),
            ReaderInner::HttpClient(r) => Pin::new(r).poll_read(cx, buf),
            ReaderInner::Piped(r) => Pin::new(r).poll_read(cx, buf),
            ReaderInner::Watched(r) => Pin::new(r.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncBufRead for ConnectionReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        match &mut self.get_mut().0 {
            ReaderInner::Ws(r) => Pin::new(r).poll_fill_buf(cx),
            ReaderInner::Http(r) => Pin::new(r).poll_fill_buf(cx),
            ReaderInner::HttpClient(r) => Pin::new(r).poll_fill_buf(cx),
            ReaderInner::Piped(r) => Pin::new(r).poll_fill_buf(cx),
            ReaderInner::Watched(r) => Pin::new(r.as_mut()).poll_fill_buf(cx),
        }
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        match &mut self.get_mut().0 {
            ReaderInner::Ws(r) => Pin::new(r).consume(amt),
            ReaderInner::Http(r) => Pin::new(r).consume(amt),
            ReaderInner::HttpClient(r) => Pin::new(r).consume(amt),
            ReaderInner::Piped(r) => Pin::new(r).consume(amt),
            ReaderInner::Watched(r) => Pin::new(r.as_mut()).consume(amt),
        }
    }
}

impl AsyncWrite for ConnectionWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            WriterInner::Ws(w) => Pin::new(w).poll_write(cx, buf),
            WriterInner::Http(w) => Pin::new(w).poll_write(cx, buf),
            WriterInner::HttpClient(w) => Pin::new(w).poll_write(cx, buf),
            WriterInner::Piped(w) => Pin::new(w).poll_write(cx, buf),
            WriterInner::Watched(w) => Pin::new(w.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            WriterInner::Ws(w) => Pin::new(w).poll_flush(cx),
            WriterInner::Http(w) => Pin::new(w).poll_flush(cx),
            WriterInner::HttpClient(w) => Pin::new(w).poll_flush(cx),
            WriterInner::Piped(w) => Pin::new(w).poll_flush(cx),
            WriterInner::Watched(w) => Pin::new(w.as_mut()).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            WriterInner::Ws(w) => Pin::new(w).poll_close(cx),
            WriterInner::Http(w) => Pin::new(w).poll_close(cx),
            WriterInner::HttpClient(w) => Pin::new(w).poll_close(cx),
            WriterInner::Piped(w) => Pin::new(w).poll_close(cx),
            WriterInner::Watched(w) => Pin::new(w.as_mut()).poll_close(cx),
        }
    }
}
