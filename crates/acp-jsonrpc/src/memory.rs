//! In-memory pipes: a connected pair of endpoints for tests, examples and
//! in-process peers, with a bounded buffer so that back-pressure behaves as
//! it does over a real pipe.
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

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures_io::{AsyncBufRead, AsyncRead, AsyncWrite};

/// The default capacity of [`pair`]'s pipes, when in doubt: 64 KiB, like a
/// Linux pipe.
pub const DEFAULT_PIPE_CAPACITY: usize = 64 * 1024;

struct State {
    buffer: VecDeque<u8>,
    capacity: usize,
    writer_closed: bool,
    reader_closed: bool,
    read_waker: Option<Waker>,
    write_waker: Option<Waker>,
}

struct Pipe(Mutex<State>);

impl Pipe {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No critical section can panic halfway.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn store_waker(slot: &mut Option<Waker>, waker: &Waker) {
    if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
}

/// Creates a one-way pipe holding at most `capacity` bytes (at least 1):
/// writes wait while it is full.
///
/// Closing or dropping the writer ends the reader's input once the buffered
/// bytes are read; writing after the reader was dropped fails with
/// [`io::ErrorKind::BrokenPipe`].
pub fn pipe(capacity: usize) -> (PipeWriter, PipeReader) {
    let pipe = Arc::new(Pipe(Mutex::new(State {
        buffer: VecDeque::new(),
        capacity: capacity.max(1),
        writer_closed: false,
        reader_closed: false,
        read_waker: None,
        write_waker: None,
    })));
    (
        PipeWriter { pipe: pipe.clone() },
        PipeReader {
            pipe,
            chunk: Vec::new(),
            position: 0,
        },
    )
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
pub struct PipeWriter {
    pipe: Arc<Pipe>,
}

/// The reading end of a [`pipe`]; buffered, so it is an [`AsyncBufRead`].
pub struct PipeReader {
    pipe: Arc<Pipe>,
    /// Bytes moved out of the shared buffer, so `poll_fill_buf` can lend
    /// them without holding the lock.
    chunk: Vec<u8>,
    position: usize,
}

impl std::fmt::Debug for PipeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeWriter").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for PipeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeReader").finish_non_exhaustive()
    }
}

impl PipeWriter {
    /// How many bytes are buffered, waiting for the reader.
    pub fn buffered(&self) -> usize {
        self.pipe.lock().buffer.len()
    }

    fn close(&self) {
        let waker = {
            let mut state = self.pipe.lock();
            state.writer_closed = true;
            state.read_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let waker = {
            let mut state = self.pipe.lock();
            if state.reader_closed || state.writer_closed {
                return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
            }
            let room = state.capacity - state.buffer.len();
            if room == 0 {
                store_waker(&mut state.write_waker, cx.waker());
                return Poll::Pending;
            }
            let count = room.min(buf.len());
            state.buffer.extend(&buf[..count]);
            let waker = state.read_waker.take();
            drop(state);
            (waker, count)
        };
        let (read_waker, count) = waker;
        if let Some(waker) = read_waker {
            waker.wake();
        }
        Poll::Ready(Ok(count))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.close();
        Poll::Ready(Ok(()))
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        self.close();
    }
}

impl AsyncRead for PipeReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let available = match self.as_mut().poll_fill_buf(cx) {
            Poll::Ready(Ok(available)) => available,
            Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
            Poll::Pending => return Poll::Pending,
        };
        let count = available.len().min(buf.len());
        buf[..count].copy_from_slice(&available[..count]);
        self.consume(count);
        Poll::Ready(Ok(count))
    }
}

impl AsyncBufRead for PipeReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.position == this.chunk.len() {
            let waker = {
                let mut state = this.pipe.lock();
                if state.buffer.is_empty() {
                    if state.writer_closed {
                        return Poll::Ready(Ok(&[]));
                    }
                    store_waker(&mut state.read_waker, cx.waker());
                    return Poll::Pending;
                }
                this.chunk.clear();
                this.position = 0;
                let (front, back) = state.buffer.as_slices();
                this.chunk.extend_from_slice(front);
                this.chunk.extend_from_slice(back);
                state.buffer.clear();
                state.write_waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }
        Poll::Ready(Ok(&this.chunk[this.position..]))
    }

    fn consume(self: Pin<&mut Self>, amount: usize) {
        let this = self.get_mut();
        this.position = (this.position + amount).min(this.chunk.len());
    }
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        let waker = {
            let mut state = self.pipe.lock();
            state.reader_closed = true;
            state.write_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}
