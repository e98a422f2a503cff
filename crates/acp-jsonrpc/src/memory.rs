//! In-memory pipes: a connected pair of endpoints for tests, examples and
//! in-process peers, with a bounded buffer so that back-pressure behaves as
//! it does over a real pipe.
//!
//! Each direction is a [`piper`] pipe (smol-rs' bounded ring buffer, which
//! needs no executor); the types here only turn a write into a closed pipe
//! into [`io::ErrorKind::BrokenPipe`], as an OS pipe does, where `piper`
//! reports writing 0 bytes.
//!
//! ```
//! use acp_jsonrpc::{Connection, ConnectionOptions, memory};
//!
//! let (client_end, agent_end) = memory::pair(64 * 1024);
//! let (client, client_driver) =
//!     Connection::new(client_end.reader, client_end.writer, (), ConnectionOptions::default());
//! let (agent, agent_driver) =
//!     Connection::new(agent_end.reader, agent_end.writer, (), ConnectionOptions::default());
//! # drop((client, client_driver, agent, agent_driver));
//! ```

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_io::{AsyncBufRead, AsyncRead, AsyncWrite};

/// The default capacity of [`pair`]'s pipes, when in doubt: 64 KiB, like a
/// Linux pipe.
pub const DEFAULT_PIPE_CAPACITY: usize = 64 * 1024;

/// Creates a one-way pipe holding at most `capacity` bytes (at least 1):
/// writes wait while it is full. The buffer is allocated once, at its full
/// capacity.
///
/// Closing or dropping either end closes the pipe: the reader still gets
/// the bytes already buffered, then the end of its input; a write after
/// that (or after the reader was dropped) fails with
/// [`io::ErrorKind::BrokenPipe`], and a writer waiting for room is woken to
/// get that error.
///
/// ```
/// use acp_jsonrpc::memory;
/// use futures_lite::{AsyncReadExt, AsyncWriteExt, future};
///
/// let (mut writer, mut reader) = memory::pipe(4);
/// future::block_on(async {
///     writer.write_all(b"ping").await.unwrap();
///     assert_eq!(writer.buffered(), 4);
///     drop(writer);
///     let mut text = String::new();
///     reader.read_to_string(&mut text).await.unwrap();
///     assert_eq!(text, "ping");
/// });
/// ```
pub fn pipe(capacity: usize) -> (PipeWriter, PipeReader) {
    let (reader, writer) = piper::pipe(capacity.max(1));
    (PipeWriter(writer), PipeReader(reader))
}

/// One end of a connected pair: read what the other end writes, write what
/// it reads.
#[derive(Debug)]
pub struct Endpoint {
    /// Reads what the other end writes.
    pub reader: PipeReader,
    /// Writes what the other end reads.
    pub writer: PipeWriter,
}

/// Two connected endpoints, each direction a [`pipe`] of `capacity` bytes.
pub fn pair(capacity: usize) -> (Endpoint, Endpoint) {
    let (a_writer, b_reader) = pipe(capacity);
    let (b_writer, a_reader) = pipe(capacity);
    (
        Endpoint {
            reader: a_reader,
            writer: a_writer,
        },
        Endpoint {
            reader: b_reader,
            writer: b_writer,
        },
    )
}

/// The writing end of a [`pipe`].
pub struct PipeWriter(piper::Writer);

/// The reading end of a [`pipe`]; buffered, so it is an [`AsyncBufRead`].
pub struct PipeReader(piper::Reader);

impl std::fmt::Debug for PipeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeWriter")
            .field("buffered", &self.0.len())
            .field("capacity", &self.0.capacity())
            .finish()
    }
}

impl std::fmt::Debug for PipeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeReader")
            .field("buffered", &self.0.len())
            .field("capacity", &self.0.capacity())
            .finish()
    }
}

impl PipeWriter {
    /// How many bytes are buffered, waiting for the reader.
    pub fn buffered(&self) -> usize {
        self.0.len()
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        match Pin::new(&mut self.0).poll_write(cx, buf) {
            // piper's "closed": 0 bytes taken from a non-empty buffer.
            Poll::Ready(Ok(0)) => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
            other => other,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_close(cx)
    }
}

impl AsyncRead for PipeReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncBufRead for PipeReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        Pin::new(&mut self.get_mut().0).poll_fill_buf(cx)
    }

    fn consume(mut self: Pin<&mut Self>, amount: usize) {
        Pin::new(&mut self.0).consume(amount)
    }
}
