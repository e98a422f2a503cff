//! Reading newline-delimited messages without ever losing part of one.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_io::{AsyncBufRead, AsyncWrite};
use futures_lite::AsyncWriteExt;

use crate::{Message, Problem};

/// Line buffers larger than this are freed once their line is consumed.
const RETAINED_CAPACITY: usize = 1024 * 1024;

/// The default maximum line length: 64 MiB.
pub const DEFAULT_MAX_LINE_LENGTH: usize = 64 * 1024 * 1024;

/// Splits an [`AsyncBufRead`] into lines, keeping every partly read line in
/// the reader itself.
///
/// That is what makes it safe to race a read against anything else: the
/// future returned by [`read_line`](Self::read_line) holds no data, so when
/// it is dropped (because a `select!`, [`futures_lite::future::or`] or a
/// timeout picked another branch) the bytes already read stay here and the
/// next call continues the same line.
///
/// - `\n` ends a line; a `\r` just before it is removed.
/// - Blank lines (nothing but spaces, tabs and `\r`) are skipped.
/// - A line longer than the maximum (not counting its `\n`) is not kept in
///   memory: it is skipped up to its newline and reported as
///   [`LineEvent::TooLong`], and reading continues with the next line.
/// - Bytes after the last newline at end of input form a last line.
///
/// ```
/// use acp_jsonrpc::{LineEvent, LineReader};
/// use futures_lite::future::block_on;
///
/// let input: &[u8] = b"first\r\n\n  \nsecond";
/// let mut lines = LineReader::new(input);
/// block_on(async {
///     assert!(matches!(lines.read_line().await?, Some(LineEvent::Line(b"first"))));
///     assert!(matches!(lines.read_line().await?, Some(LineEvent::Line(b"second"))));
///     assert!(lines.read_line().await?.is_none());
///     std::io::Result::Ok(())
/// })
/// .unwrap();
/// ```
#[derive(Debug)]
pub struct LineReader<R> {
    reader: R,
    line: Vec<u8>,
    max_line_length: usize,
    state: State,
    /// See [`input_exhausted`](Self::input_exhausted).
    exhausted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Accumulating a line in `line`.
    Reading,
    /// `line` holds the line last handed out; clear it before reading on.
    Delivered,
    /// Discarding an over-long line; `length` bytes of it so far.
    Skipping { length: usize },
}

/// What [`LineReader::read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEvent<'a> {
    /// A non-blank line, without its `\n` or `\r\n`.
    Line(&'a [u8]),
    /// A line longer than the maximum was skipped.
    TooLong {
        /// Its length in bytes, not counting the `\n`.
        length: usize,
    },
}

/// What was found, without borrowing the line (the public functions borrow
/// it afterwards).
enum Found {
    Line,
    TooLong(usize),
    End,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// A reader with the default maximum line length (64 MiB).
    pub fn new(reader: R) -> Self {
        Self::with_max_line_length(reader, DEFAULT_MAX_LINE_LENGTH)
    }

    /// A reader that skips lines longer than `max_line_length` bytes.
    pub fn with_max_line_length(reader: R, max_line_length: usize) -> Self {
        LineReader {
            reader,
            line: Vec::new(),
            max_line_length,
            state: State::Reading,
            exhausted: false,
        }
    }

    /// The maximum line length.
    pub fn max_line_length(&self) -> usize {
        self.max_line_length
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.reader
    }

    /// The underlying reader, and whatever part of a line has been read from
    /// it but not returned yet.
    pub fn into_parts(self) -> (R, Vec<u8>) {
        let mut line = self.line;
        if self.state == State::Delivered {
            line.clear();
        }
        (self.reader, line)
    }

    /// Whether the line last found ended exactly where the bytes buffered by
    /// the underlying reader did: reading on would start with a read from
    /// the source.
    pub(crate) fn input_exhausted(&self) -> bool {
        self.exhausted
    }

    /// Reads the next line; `None` at end of input.
    ///
    /// Cancel-safe: dropping the returned future loses nothing.
    pub async fn read_line(&mut self) -> io::Result<Option<LineEvent<'_>>> {
        let found = futures_lite::future::poll_fn(|cx| self.poll_find(cx)).await?;
        Ok(self.event(found))
    }

    /// Polls for the next line; `None` at end of input. A `Pending` result
    /// keeps every byte read so far.
    pub fn poll_read_line(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<Option<LineEvent<'_>>>> {
        let found = ready!(self.poll_find(cx))?;
        Poll::Ready(Ok(self.event(found)))
    }

    /// Reads the next line and decodes it: `Ok(Some(Ok(message)))`, or
    /// `Ok(Some(Err(problem)))` for a line that is too long or not a valid
    /// message (the problem says what to answer, if anything), or `Ok(None)`
    /// at end of input.
    ///
    /// Leading byte-order marks are removed silently (see
    /// [`strip_byte_order_mark`]); a line that held nothing else is skipped
    /// like a blank one. A [`Connection`](crate::Connection) reports them as
    /// [`Problem::ByteOrderMark`].
    ///
    /// Cancel-safe, like [`read_line`](Self::read_line).
    pub async fn read_message(&mut self) -> io::Result<Option<Result<Message, Problem>>> {
        loop {
            let line = match self.read_line().await? {
                None => return Ok(None),
                Some(LineEvent::TooLong { length }) => {
                    return Ok(Some(Err(Problem::LineTooLong { length })));
                }
                Some(LineEvent::Line(line)) => strip_byte_order_mark(line).unwrap_or(line),
            };
            // Empty only when the line held nothing but marks: a blank line.
            if !line.is_empty() {
                return Ok(Some(Message::from_slice(line).map_err(Problem::Malformed)));
            }
        }
    }

    fn event(&self, found: Found) -> Option<LineEvent<'_>> {
        match found {
            Found::Line => Some(LineEvent::Line(&self.line)),
            Found::TooLong(length) => Some(LineEvent::TooLong { length }),
            Found::End => None,
        }
    }

    /// Lets go of the line last returned, now rather than at the next read: a connection
    /// calls it once the line is decoded, so that a large message is not held twice (as its
    /// line and as its decoded form) while it is handled.
    pub(crate) fn release_line(&mut self) {
        if self.state == State::Delivered {
            if self.line.capacity() > RETAINED_CAPACITY {
                // One huge message should not pin its size in memory.
                self.line = Vec::new();
            } else {
                self.line.clear();
            }
            self.state = State::Reading;
        }
    }

    fn poll_find(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Found>> {
        self.release_line();
        loop {
            let available = ready!(Pin::new(&mut self.reader).poll_fill_buf(cx))?;
            if available.is_empty() {
                return Poll::Ready(Ok(self.finish_at_end()));
            }
            match memchr::memchr(b'\n', available) {
                Some(newline) => {
                    self.exhausted = newline + 1 == available.len();
                    let found = match self.state {
                        State::Skipping { length } => Some(Found::TooLong(length + newline)),
                        _ if self.line.len() + newline > self.max_line_length => {
                            Some(Found::TooLong(self.line.len() + newline))
                        }
                        _ => {
                            self.line.extend_from_slice(&available[..newline]);
                            None
                        }
                    };
                    Pin::new(&mut self.reader).consume(newline + 1);
                    match found {
                        Some(too_long) => {
                            self.line.clear();
                            self.state = State::Reading;
                            return Poll::Ready(Ok(too_long));
                        }
                        None => {
                            if self.take_line() {
                                return Poll::Ready(Ok(Found::Line));
                            }
                        }
                    }
                }
                None => {
                    let count = available.len();
                    match self.state {
                        State::Skipping { length } => {
                            self.state = State::Skipping {
                                length: length + count,
                            };
                        }
                        _ if self.line.len() + count > self.max_line_length => {
                            self.state = State::Skipping {
                                length: self.line.len() + count,
                            };
                            self.line = Vec::new();
                        }
                        _ => self.line.extend_from_slice(available),
                    }
                    Pin::new(&mut self.reader).consume(count);
                }
            }
        }
    }

    /// Decides what a complete line in `line` is: `true` when it is to be
    /// delivered, `false` (and cleared) when blank.
    fn take_line(&mut self) -> bool {
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            self.line.clear();
            false
        } else {
            self.state = State::Delivered;
            true
        }
    }

    fn finish_at_end(&mut self) -> Found {
        if let State::Skipping { length } = self.state {
            self.state = State::Reading;
            Found::TooLong(length)
        } else if self.take_line() {
            Found::Line
        } else {
            Found::End
        }
    }
}

/// The line without its leading byte-order marks, or `None` when it has
/// none.
///
/// A UTF-8 byte-order mark (U+FEFF, bytes `EF BB BF`) is not JSON, and
/// RFC 8259 (section 8.1) forbids sending one but lets a parser ignore it.
/// Some programs put one at the start of their output, or of every write.
/// Any mix of marks and JSON whitespace before the first other byte is
/// removed (an empty result means the line held nothing else); a mark
/// anywhere else is left alone: inside a string it is a character, after
/// the message it makes the line invalid JSON.
///
/// ```
/// use acp_jsonrpc::strip_byte_order_mark;
///
/// assert_eq!(strip_byte_order_mark(b"\xEF\xBB\xBF{}"), Some(&b"{}"[..]));
/// assert_eq!(strip_byte_order_mark(b" \xEF\xBB\xBF {}"), Some(&b"{}"[..]));
/// assert_eq!(strip_byte_order_mark(b"{}"), None);
/// ```
pub fn strip_byte_order_mark(line: &[u8]) -> Option<&[u8]> {
    let mut rest = line;
    let mut found = false;
    loop {
        match rest {
            [b' ' | b'\t' | b'\r' | b'\n', tail @ ..] => rest = tail,
            [0xEF, 0xBB, 0xBF, tail @ ..] => {
                rest = tail;
                found = true;
            }
            _ => return found.then_some(rest),
        }
    }
}

/// Writes one message as a line and flushes.
///
/// For one-off use (a test, a tool); a [`Connection`](crate::Connection)
/// batches its writes instead.
pub async fn write_message<W: AsyncWrite + Unpin>(
    writer: &mut W,
    message: &Message,
) -> io::Result<()> {
    let mut line = Vec::with_capacity(128);
    message.encode(&mut line);
    writer.write_all(&line).await?;
    writer.flush().await
}
