//! Turns and sessions, seen from the lines of a connection: a `session/prompt` request from the
//! client starts a turn, its answer ends it; a successful answer to `session/new`,
//! `session/load`, `session/resume` or `session/fork` adds a session, kept until the
//! connection ends. The server wraps every connection's reader and writer in these (whatever
//! the handler is: the bridge's process knows nothing of the server), for the metrics and for
//! the drain, which waits for the running turns.
//!
//! A line is read only when it lies whole in one buffer the transport hands over (a WebSocket
//! frame, a POSTed message, one write of the runtime or the bridge): that is how every line
//! comes in practice, and it keeps this from copying anything. The cost is one more JSON scan
//! per message, of which only `method`, `id` and the presence of `result` are kept.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use futures_io::{AsyncBufRead, AsyncRead, AsyncWrite};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::ops::Ops;

/// How many requests of interest one connection may have unanswered and still be followed;
/// beyond, new ones are not counted (the runtime bounds requests in flight well below).
const MAX_PENDING: usize = 4096;

/// The methods that open a session on success.
const SESSION_METHODS: &[&str] = &[
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prompt,
    Session,
}

#[derive(Debug, Default)]
struct State {
    /// Requests of the client not yet answered, by their id as sent.
    pending: HashMap<Box<str>, Kind>,
    turns: usize,
    sessions: usize,
}

/// One connection's turns and sessions, given back to the server's counts when it ends.
#[derive(Debug)]
pub(crate) struct Watch {
    ops: Arc<Ops>,
    state: Mutex<State>,
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

impl Watch {
    pub(crate) fn new(ops: Arc<Ops>) -> Arc<Watch> {
        Arc::new(Watch {
            ops,
            state: Mutex::default(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A line from the client.
    fn inbound(&self, line: &[u8]) {
        let Ok(peek) = serde_json::from_slice::<Peek>(line) else {
            return;
        };
        let (Some(method), Some(id)) = (peek.method, peek.id) else {
            return;
        };
        let kind = match method.as_ref() {
            "session/prompt" => Kind::Prompt,
            m if SESSION_METHODS.contains(&m) => Kind::Session,
            _ => return,
        };
        let mut state = self.state();
        if state.pending.len() >= MAX_PENDING {
            return;
        }
        // A repeated id is the client's mistake, answered by the runtime; counted once.
        if state.pending.insert(id.get().into(), kind).is_none() {
            self.ops.busy_started();
            if kind == Kind::Prompt {
                state.turns += 1;
                self.ops.turn_started();
            }
        }
    }

    /// A line to the client.
    fn outbound(&self, line: &[u8]) {
        let Ok(peek) = serde_json::from_slice::<Peek>(line) else {
            return;
        };
        let (None, Some(id)) = (peek.method, peek.id) else {
            return;
        };
        let mut state = self.state();
        let kind = state.pending.remove(id.get());
        if kind.is_some() {
            self.ops.busy_ended(1);
        }
        match kind {
            Some(Kind::Prompt) => {
                state.turns -= 1;
                self.ops.turns_ended(1, 0);
            }
            Some(Kind::Session) if peek.result.is_some() => {
                state.sessions += 1;
                self.ops.sessions_changed(1, 0);
            }
            _ => {}
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let state = self.state();
        if !state.pending.is_empty() {
            self.ops.busy_ended(state.pending.len());
        }
        if state.turns > 0 {
            self.ops.turns_ended(0, state.turns);
        }
        self.ops.sessions_changed(0, state.sessions);
    }
}

/// Finds the lines of a byte stream as it goes by, without copying: each piece that begins a
/// line is offered whole when its newline is in the same buffer, and as it is otherwise (a
/// transport may hand over a message and its newline apart; a message cut in two fails to
/// parse and is not counted).
#[derive(Debug)]
struct Lines {
    /// The stream is at the start of a line.
    at_start: bool,
}

impl Default for Lines {
    fn default() -> Self {
        Lines { at_start: true }
    }
}

impl Lines {
    /// `buf` went by (read, written, or consumed).
    fn pass(&mut self, buf: &[u8], mut each: impl FnMut(&[u8])) {
        let mut first = true;
        for piece in buf.split(|b| *b == b'\n') {
            if (self.at_start || !first) && !piece.is_empty() {
                each(piece);
            }
            first = false;
        }
        if !buf.is_empty() {
            self.at_start = buf.ends_with(b"\n");
        }
    }
}

/// A connection's reader, watched.
#[derive(Debug)]
pub(crate) struct WatchedReader<R> {
    inner: R,
    watch: Arc<Watch>,
    lines: Lines,
}

/// A connection's writer, watched.
#[derive(Debug)]
pub(crate) struct WatchedWriter<W> {
    inner: W,
    watch: Arc<Watch>,
    lines: Lines,
}

/// Wraps a connection's reader and writer so that its turns and sessions are counted in `ops`.
pub(crate) fn watch<R, W>(
    reader: R,
    writer: W,
    ops: Arc<Ops>,
) -> (WatchedReader<R>, WatchedWriter<W>) {
    let watch = Watch::new(ops);
    (
        WatchedReader {
            inner: reader,
            watch: watch.clone(),
            lines: Lines::default(),
        },
        WatchedWriter {
            inner: writer,
            watch,
            lines: Lines::default(),
        },
    )
}

impl<W> WatchedWriter<W> {
    /// The same watch over `f(writer)`.
    pub(crate) fn map(self, f: impl FnOnce(W) -> W) -> Self {
        WatchedWriter {
            inner: f(self.inner),
            ..self
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for WatchedReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let n = ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let watch = &this.watch;
        this.lines.pass(&buf[..n], |line| watch.inbound(line));
        Poll::Ready(Ok(n))
    }
}

impl<R: AsyncBufRead + Unpin> AsyncBufRead for WatchedReader<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        Pin::new(&mut self.get_mut().inner).poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        // What is consumed is still in the inner reader's buffer, which hands it over again at
        // once (a buffered reader does not wait while it holds bytes).
        let mut cx = Context::from_waker(std::task::Waker::noop());
        if amt > 0
            && let Poll::Ready(Ok(buf)) = Pin::new(&mut this.inner).poll_fill_buf(&mut cx)
        {
            let watch = &this.watch;
            this.lines
                .pass(&buf[..amt.min(buf.len())], |line| watch.inbound(line));
        }
        Pin::new(&mut this.inner).consume(amt);
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for WatchedWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let n = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        let watch = &this.watch;
        this.lines.pass(&buf[..n], |line| watch.outbound(line));
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&[u8]]) -> Vec<String> {
        let mut lines = Lines::default();
        let mut out = Vec::new();
        for chunk in chunks {
            lines.pass(chunk, |l| out.push(String::from_utf8_lossy(l).into_owned()));
        }
        out
    }

    #[test]
    fn pieces_that_begin_lines_are_offered_once() {
        assert_eq!(lines_of(&[b"a\nb\n", b"c\n"]), ["a", "b", "c"]);
        // A message and its newline apart: offered once, before its newline.
        assert_eq!(lines_of(&[b"a", b"\n", b"b\n"]), ["a", "b"]);
        // A line cut in two: its first piece only (which then fails to parse).
        assert_eq!(lines_of(&[b"a\nb", b"c\nd\n"]), ["a", "b", "d"]);
    }

    #[test]
    fn a_prompt_is_a_turn_until_answered_and_a_session_counts_on_success() {
        let ops = Arc::new(Ops::default());
        let watch = Watch::new(ops.clone());
        watch.inbound(br#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}"#);
        watch.outbound(br#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#);
        watch.inbound(br#"{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{}}"#);
        watch.inbound(br#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}"#);
        assert_eq!(ops.turns_running(), 2);
        watch.outbound(br#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#);
        watch.outbound(br#"{"jsonrpc":"2.0","id":"p","result":{"stopReason":"end_turn"}}"#);
        assert_eq!(ops.turns_running(), 1);
        drop(watch);
        assert_eq!(ops.turns_running(), 0);
    }
}
