//! hyper's runtime, on smol: its I/O traits over our futures-io socket,
//! its executor spawning on smol's global executor, its timer on `smol::Timer`. hyper-util has
//! these for tokio only, and this crate runs on no tokio runtime. The server's HTTP/1.1
//! and HTTP/2 connections and the Streamable HTTP client's run on it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_io::{AsyncRead, AsyncWrite};
use hyper::rt::{ReadBufCursor, Sleep};

use crate::net::NetStream;

/// The socket of a connection, with the bytes a server read from it while looking for the
/// HTTP/2 connection preface given back first (a client has none).
pub(crate) struct Io {
    read_first: Vec<u8>,
    at: usize,
    inner: NetStream,
}

impl Io {
    pub(crate) fn new(inner: NetStream, read_first: Vec<u8>) -> Io {
        Io {
            read_first,
            at: 0,
            inner,
        }
    }
}

impl Io {
    /// The socket back (after an upgrade), with what is left of the bytes given first.
    pub(crate) fn into_parts(self) -> (NetStream, Vec<u8>) {
        let mut rest = self.read_first;
        rest.drain(..self.at);
        (self.inner, rest)
    }
}

impl hyper::rt::Read for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.read_first.len() {
            let n = (this.read_first.len() - this.at).min(buf.remaining());
            buf.put_slice(&this.read_first[this.at..this.at + n]);
            this.at += n;
            if this.at == this.read_first.len() {
                this.read_first = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        // Through a buffer of our own rather than hyper's uninitialised one: a copy of what
        // fits in a TLS record or a segment, against `unsafe` here.
        let mut chunk = [0u8; 16 * 1024];
        let want = buf.remaining().min(chunk.len());
        let n = std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut chunk[..want]))?;
        buf.put_slice(&chunk[..n]);
        Poll::Ready(Ok(()))
    }
}

impl hyper::rt::Write for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    /// Every socket of ours writes vectored (`writev(2)`, or one TLS record from several
    /// slices), so hyper queues a body's chunks beside its head instead of copying them into
    /// its write buffer: with a copy, that buffer grew to an SSE stream's largest batch (16 KiB
    /// in a turn of the load example) and kept it for the socket's life.
    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}

/// Runs hyper's tasks (one per stream) on smol's global executor, as the server's own.
#[cfg(feature = "http2")]
#[derive(Clone, Copy)]
pub(crate) struct Spawn;

#[cfg(feature = "http2")]
impl<F> hyper::rt::Executor<F> for Spawn
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        smol::spawn(future).detach();
    }
}

/// hyper's timer (keep-alive pings and their timeout) on smol's reactor.
#[derive(Clone, Copy)]
pub(crate) struct Timer;

struct Sleeping(smol::Timer);

impl Future for Sleeping {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.get_mut().0).poll(cx).map(drop)
    }
}

impl Sleep for Sleeping {}

impl hyper::rt::Timer for Timer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        Box::pin(Sleeping(smol::Timer::after(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(Sleeping(smol::Timer::at(deadline)))
    }
}
