//! [`Handoff`]: a reader that gives back lines someone else already read before the rest of
//! its stream, so that a router can read a connection's first lines, pick who serves it, and
//! hand it over whole: the chosen side's [`Connection`](crate::Connection) reads the handed
//! lines first and then the stream, where the router stopped, without a byte lost or read twice.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_io::{AsyncBufRead, AsyncRead};

/// An [`AsyncBufRead`] that yields `lines` (already read from `reader`, each given back with
/// its `\n`) and then whatever `reader` still holds.
///
/// A connection started directly on `reader` pays nothing for this type: only a router's
/// hand-off wraps the reader.
///
/// ```
/// use acp_jsonrpc::{Handoff, LineEvent, LineReader};
/// use futures_lite::future::block_on;
///
/// let input: &[u8] = b"{\"first\":1}\n{\"second\":2}\n";
/// let mut router = LineReader::new(input);
/// let first = block_on(async {
///     match router.read_line().await.unwrap() {
///         Some(LineEvent::Line(line)) => line.to_vec(),
///         _ => panic!(),
///     }
/// });
/// let (rest, partial) = router.into_parts();
/// assert!(partial.is_empty());
/// // The chosen side reads the first line again from the hand-off, then the rest.
/// let mut lines = LineReader::new(Handoff::new(vec![first], rest));
/// block_on(async {
///     assert!(matches!(lines.read_line().await?, Some(LineEvent::Line(b"{\"first\":1}"))));
///     assert!(matches!(lines.read_line().await?, Some(LineEvent::Line(b"{\"second\":2}"))));
///     assert!(lines.read_line().await?.is_none());
///     std::io::Result::Ok(())
/// })
/// .unwrap();
/// ```
#[derive(Debug)]
pub struct Handoff<R> {
    /// The handed lines, each ending in `\n`, one after the other.
    handed: Vec<u8>,
    /// How much of `handed` has been consumed.
    position: usize,
    reader: R,
}

impl<R> Handoff<R> {
    /// `lines` (without their newlines) first, then `reader`. For a line the router found cut
    /// short by a concurrent read, pass the part read so far as the last line's prefix through
    /// [`with_partial`](Self::with_partial) instead.
    pub fn new(lines: Vec<Vec<u8>>, reader: R) -> Self {
        let mut handed = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for line in lines {
            handed.extend_from_slice(&line);
            handed.push(b'\n');
        }
        Handoff {
            handed,
            position: 0,
            reader,
        }
    }

    /// Appends bytes of a line not finished yet (what
    /// [`LineReader::into_parts`](crate::LineReader::into_parts) gives back): they come after
    /// the whole lines and before the rest of the stream, which finishes the line.
    pub fn with_partial(mut self, partial: &[u8]) -> Self {
        self.handed.extend_from_slice(partial);
        self
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.reader
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Handoff<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let left = &this.handed[this.position..];
        if left.is_empty() {
            return Pin::new(&mut this.reader).poll_read(cx, buf);
        }
        let n = left.len().min(buf.len());
        buf[..n].copy_from_slice(&left[..n]);
        this.position += n;
        this.release_when_done();
        Poll::Ready(Ok(n))
    }
}

impl<R: AsyncBufRead + Unpin> AsyncBufRead for Handoff<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.position < this.handed.len() {
            return Poll::Ready(Ok(&this.handed[this.position..]));
        }
        Pin::new(&mut this.reader).poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amount: usize) {
        let this = self.get_mut();
        if this.position < this.handed.len() {
            this.position = (this.position + amount).min(this.handed.len());
            this.release_when_done();
        } else {
            Pin::new(&mut this.reader).consume(amount);
        }
    }
}

impl<R> Handoff<R> {
    /// Frees the handed lines once they are read: the connection may run for hours.
    fn release_when_done(&mut self) {
        if self.position == self.handed.len() {
            self.handed = Vec::new();
            self.position = 0;
        }
    }
}
