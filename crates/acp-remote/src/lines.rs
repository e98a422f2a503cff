//! The runtime's newline-delimited output, cut into messages: the one line writer of every
//! transport (WebSocket frames, the server's SSE queues, the client's POSTs).
//!
//! Each transport only says where a complete line goes ([`LineSink`]); how lines are cut,
//! bounded and cleaned is decided here once, so the three cannot drift apart. The clients'
//! drivers read a line back as a message with [`read_message`].

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_io::AsyncWrite;

use crate::transport::LineTarget;

/// Where complete lines go: one message each, without its newline.
pub(crate) trait LineSink {
    /// Ready once the sink can take a line. The writer takes a line from its caller only then,
    /// so that the caller's bytes stay theirs while the sink is full.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    /// Takes one line: never blank, no line break in it (raw CRs became tabs).
    fn start_send(&mut self, line: Vec<u8>, cx: &mut Context<'_>) -> io::Result<()>;
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

/// A message the runtime reads as one line: raw `\n` and `\r` (whitespace between JSON
/// tokens, invalid inside strings) become `\t`, which is both as well, so the message's
/// meaning, or its invalidity, is unchanged; then the newline.
pub(crate) fn to_line(message: &[u8]) -> Vec<u8> {
    let mut line = Vec::with_capacity(message.len() + 1);
    line.extend(message.iter().map(|&b| match b {
        b'\n' | b'\r' => b'\t',
        b => b,
    }));
    line.push(b'\n');
    line
}

/// An `AsyncWrite` of newline-delimited messages over a [`LineSink`].
///
/// A partial line is kept until its newline arrives (up to `max_line` bytes, past which the
/// write fails instead of keeping more: a line never ended cannot grow without bound), so a line written in pieces is one message and a
/// write holding several lines gives several. A trailing `\r` is dropped, other raw `\r`
/// become `\t` (an SSE `data:` line or a text frame must not break early), and blank lines
/// are not sent.
#[derive(Debug)]
pub(crate) struct LineWriter<S> {
    sink: S,
    line: Vec<u8>,
    max_line: usize,
}

impl<S> LineWriter<S> {
    pub(crate) fn new(sink: S) -> Self {
        LineWriter {
            sink,
            line: Vec::new(),
            max_line: usize::MAX,
        }
    }

    pub(crate) fn with_max_line(mut self, bytes: usize) -> Self {
        self.max_line = bytes;
        self
    }

    pub(crate) fn partial_line(&self) -> usize {
        self.line.len()
    }
}

impl<S> LineTarget for LineWriter<S>
where
    S: LineSink + std::fmt::Debug + Send + Sync + Unpin + 'static,
{
    fn boxed_with_max_line(self: Box<Self>, bytes: usize) -> Box<dyn LineTarget> {
        Box::new(self.with_max_line(bytes))
    }
}

impl<S: LineSink + Unpin> AsyncWrite for LineWriter<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let Some(newline) = buf.iter().position(|&b| b == b'\n') else {
            if this.line.len().saturating_add(buf.len()) > this.max_line {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a line longer than {} bytes", this.max_line),
                )));
            }
            this.line.extend_from_slice(buf);
            return Poll::Ready(Ok(buf.len()));
        };
        ready!(this.sink.poll_ready(cx))?;
        let mut line = std::mem::take(&mut this.line);
        line.extend_from_slice(&buf[..newline]);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            for b in &mut line {
                if *b == b'\r' {
                    *b = b'\t';
                }
            }
            this.sink.start_send(line, cx)?;
        }
        Poll::Ready(Ok(newline + 1))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().sink.poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().sink.poll_close(cx)
    }
}

/// The next message of a line stream, without its newline (`None` at the end of input): how a
/// client's driver reads what the runtime or the server wrote.
pub(crate) async fn read_message<R>(reader: &mut R) -> io::Result<Option<Vec<u8>>>
where
    R: futures_io::AsyncBufRead + Unpin,
{
    use futures_lite::AsyncBufReadExt;
    let mut line = Vec::new();
    if reader.read_until(b'\n', &mut line).await? == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    Ok(Some(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::AsyncWriteExt;

    #[derive(Default)]
    struct Collect(Vec<Vec<u8>>);

    impl LineSink for Collect {
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn start_send(&mut self, line: Vec<u8>, _: &mut Context<'_>) -> io::Result<()> {
            self.0.push(line);
            Ok(())
        }
        fn poll_flush(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn lines_are_cut_cleaned_and_bounded() {
        smol::block_on(async {
            let mut w = LineWriter::new(Collect::default()).with_max_line(8);
            w.write_all(b"{\"a\"").await.unwrap();
            w.write_all(b":1}\r\n \n\n{\r}\n[1]").await.unwrap();
            assert_eq!(w.sink.0, vec![b"{\"a\":1}".to_vec(), b"{\t}".to_vec()]);
            assert_eq!(w.partial_line(), 3);
            assert!(w.write_all(b"23456").await.is_ok());
            assert!(w.write_all(b"7").await.is_err());
        });
    }

    #[test]
    fn a_message_becomes_one_line() {
        assert_eq!(to_line(b"{\n\"a\":\r1}"), b"{\t\"a\":\t1}\n");
    }
}
