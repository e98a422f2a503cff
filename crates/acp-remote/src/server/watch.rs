//! Turns and sessions, seen from the lines of a connection: a `session/prompt` request from the
//! client starts a turn, its answer ends it; a successful answer to `session/new`,
//! `session/load`, `session/resume` or `session/fork` adds a session, kept until the
//! connection ends. The server wraps every connection's reader and writer in these (whatever
//! the handler is: the bridge's process knows nothing of the server), for the metrics and for
//! the drain, which waits for the running turns.
//!
//! This sits on every line of every remote connection, so it costs little: each line the
//! client sends is read with acp-jsonrpc's envelope scan ([`acp_jsonrpc::json::envelope`]: one
//! validating pass, nothing decoded or copied); a line to the client is scanned only while one
//! of the client's requests of interest is unanswered (an atomic says so), and the lock is
//! taken only for the lines that change a count: a prompt or session request, and an answer
//! while any is pending. A line the scan is unsure of (an escaped `method`, say) goes to
//! serde_json, which no ordinary peer sends.
//!
//! A line from the client comes whole in one buffer (a WebSocket frame, a POSTed message). A
//! line to the client that ends in the write it begins in is read whole; one that goes on into
//! later writes (the bridge copies an agent's output in pieces, so answers of 64 KiB or more
//! come so) is scanned piece by piece as it is written, keeping only its top-level member
//! names and an `id` of up to 1 KiB. Nothing is copied either way.
//!
//! What is remembered of a pending request is a keyed hash of its id as JSON-RPC compares
//! ids (a string by its decoded text), 8 bytes whatever the id's length, so an id of 50 MiB
//! costs what `1` does, and `"\u0061"` is answered by `"a"`.
//!
//! During a drain ([`ShutdownHandle::drain`](crate::ShutdownHandle::drain)) a new
//! `session/prompt` is refused with [`DRAINING_CODE`]. Whatever the handler is, the refusal
//! is made without it knowing ACP's rules: the request reaches it renamed to
//! [`DRAINING_METHOD`], which every JSON-RPC peer answers at once (with "method not found"),
//! and that answer is replaced on its way to the client by the refusal. So the client gets
//! exactly one answer, and the handler's request ids stay in step.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use acp_jsonrpc::json::envelope;
use futures_io::{AsyncBufRead, AsyncRead, AsyncWrite};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::proto::answer_scan::AnswerScan;
use crate::server::ops::{Ops, Reason};
use crate::transport::{ConnectionWriter, LineTarget};

/// How many requests of interest one connection may have unanswered and still be followed;
/// beyond, new ones are not counted (the runtime bounds requests in flight well below).
const MAX_PENDING: usize = 4096;

/// The key under which an id is remembered: a keyed hash (SipHash with a key drawn once per
/// process, so that a peer cannot make two ids collide) of the id as JSON-RPC compares it: a
/// string by its decoded text (`"\u0061"` is `"a"`), anything else by its text. So a request
/// is matched with its answer however either escapes the id, and what is kept per id is 8
/// bytes, not the id.
fn id_key(raw: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::LazyLock;
    static KEY: LazyLock<std::collections::hash_map::RandomState> =
        LazyLock::new(std::collections::hash_map::RandomState::new);
    let raw = raw.trim();
    let mut hasher = KEY.build_hasher();
    match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(text) if !text.contains('\\') => {
            hasher.write_u8(b's');
            hasher.write(text.as_bytes());
        }
        Some(_) => match serde_json::from_str::<String>(raw) {
            Ok(text) => {
                hasher.write_u8(b's');
                hasher.write(text.as_bytes());
            }
            Err(_) => {
                hasher.write_u8(b'?');
                hasher.write(raw.as_bytes());
            }
        },
        None => {
            hasher.write_u8(b'n');
            hasher.write(raw.as_bytes());
        }
    }
    hasher.finish()
}

/// The methods that open a session on success.
const SESSION_METHODS: &[&str] = &[
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
];

/// The JSON-RPC error code of a `session/prompt` refused because the server is draining (in
/// the range JSON-RPC leaves to implementations; ACP itself uses `-32000` and `-32002`).
pub const DRAINING_CODE: i32 = -32050;

/// The message of that refusal.
pub const DRAINING_MESSAGE: &str = "the server is draining: no new prompt turns";

/// The name under which a refused prompt reaches the handler (which answers "method not
/// found"; the client never sees that answer).
pub(crate) const DRAINING_METHOD: &str = "acp-remote/draining";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prompt,
    Session,
    /// A prompt refused by the drain: the handler's answer is replaced.
    Refused,
}

#[derive(Debug, Default)]
struct State {
    /// Requests of the client not yet answered, by the key of their id ([`id_key`]): a few
    /// bytes each, whatever the id's length.
    pending: HashMap<u64, Kind>,
    turns: usize,
    sessions: usize,
}

/// One connection's turns and sessions, given back to the server's counts when it ends.
#[derive(Debug)]
pub(crate) struct Watch {
    ops: Arc<Ops>,
    /// `state.pending.len()`, read without the lock: lines to the client are looked at only
    /// while it is not zero.
    pending: AtomicUsize,
    /// How many of them are refused prompts: lines to the client are looked at before they
    /// are written only while it is not zero.
    refused: AtomicUsize,
    state: Mutex<State>,
}

/// The members of a line this module reads.
struct Seen<'a> {
    id: Option<&'a str>,
    method: Option<std::borrow::Cow<'a, str>>,
    has_result: bool,
}

/// What serde_json reads of a line the envelope scan was unsure of.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

fn seen(line: &[u8]) -> Option<Seen<'_>> {
    if let Some(envelope) = std::str::from_utf8(line).ok().and_then(envelope) {
        return Some(Seen {
            id: envelope.id,
            method: envelope.method.map(std::borrow::Cow::Borrowed),
            has_result: envelope.has_result,
        });
    }
    let peek = serde_json::from_slice::<Peek>(line).ok()?;
    Some(Seen {
        id: peek.id.map(RawValue::get),
        method: peek.method,
        has_result: peek.result.is_some(),
    })
}

/// What the reader does with a line from the client.
#[derive(Debug, PartialEq, Eq)]
enum Inbound {
    Pass,
    /// A prompt refused by the drain: the handler gets this line instead (the request renamed),
    /// once [`Watch::refusing`] has recorded its id.
    Refuse {
        id: Box<str>,
        line: Vec<u8>,
    },
}

impl Watch {
    pub(crate) fn new(ops: Arc<Ops>) -> Arc<Watch> {
        Arc::new(Watch {
            ops,
            pending: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
            state: Mutex::default(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A line from the client. Counts a prompt or session request; a prompt during a drain is
    /// not counted but refused (nothing changes until [`Watch::refusing`]).
    fn inbound(&self, line: &[u8]) -> Inbound {
        let Some(seen) = seen(line) else {
            return Inbound::Pass;
        };
        let (Some(method), Some(id)) = (seen.method, seen.id) else {
            return Inbound::Pass;
        };
        let kind = match method.as_ref() {
            "session/prompt" => Kind::Prompt,
            m if SESSION_METHODS.contains(&m) => Kind::Session,
            _ => return Inbound::Pass,
        };
        if kind == Kind::Prompt && self.ops.is_draining() {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{DRAINING_METHOD}"}}"#);
            return Inbound::Refuse {
                id: id.into(),
                line: line.into_bytes(),
            };
        }
        self.track(id, kind);
        Inbound::Pass
    }

    /// The prompt `id` is being refused: its answer is to be replaced.
    fn refusing(&self, id: &str) {
        self.ops.refused(Reason::Draining);
        self.track(id, Kind::Refused);
    }

    fn track(&self, id: &str, kind: Kind) {
        let mut state = self.state();
        if state.pending.len() >= MAX_PENDING {
            return;
        }
        // A repeated id is the client's mistake, answered by the runtime; counted once.
        if state.pending.insert(id_key(id), kind).is_none() {
            self.pending.store(state.pending.len(), Ordering::SeqCst);
            if kind == Kind::Refused {
                self.refused.fetch_add(1, Ordering::SeqCst);
                return;
            }
            self.ops.busy_started();
            if kind == Kind::Prompt {
                state.turns += 1;
                self.ops.turn_started();
            }
        }
    }

    /// A line to the client; `Some` with the line to send instead (the refusal of a prompt
    /// during a drain).
    fn outbound(&self, line: &[u8]) -> Option<Vec<u8>> {
        if self.pending.load(Ordering::SeqCst) == 0 || !may_answer(line) {
            return None;
        }
        let seen = seen(line)?;
        let (None, Some(id)) = (seen.method, seen.id) else {
            return None;
        };
        self.answered(id, seen.has_result).then(|| refusal(id))
    }

    /// The client is sent the answer with `id` (raw), a success or not: the request it
    /// answers is no longer pending. `true` when that was a refused prompt, whose answer is
    /// to be replaced.
    fn answered(&self, id: &str, success: bool) -> bool {
        let mut state = self.state();
        let kind = state.pending.remove(&id_key(id));
        self.pending.store(state.pending.len(), Ordering::SeqCst);
        if matches!(kind, Some(Kind::Prompt | Kind::Session)) {
            self.ops.busy_ended(1);
        }
        match kind {
            Some(Kind::Prompt) => {
                state.turns -= 1;
                self.ops.turns_ended(1, 0);
            }
            Some(Kind::Session) if success => {
                state.sessions += 1;
                self.ops.sessions_changed(1, 0);
            }
            Some(Kind::Refused) => {
                self.refused.fetch_sub(1, Ordering::SeqCst);
                return true;
            }
            _ => {}
        }
        false
    }
}

impl Watch {
    /// Whether `line`, about to go to the client, answers a refused prompt (it is then
    /// replaced, through [`Watch::outbound`]).
    fn answers_refused(&self, line: &[u8]) -> bool {
        if self.refused.load(Ordering::SeqCst) == 0 || !may_answer(line) {
            return false;
        }
        let Some(seen) = seen(line) else {
            return false;
        };
        let (None, Some(id)) = (seen.method, seen.id) else {
            return false;
        };
        self.state().pending.get(&id_key(id)) == Some(&Kind::Refused)
    }
}

/// Whether `line` may be an answer: one has a `result` or an `error` member, whose key is
/// written `"result"` or `"error"`, or else with a `\u` escape (the only escape that stands
/// for a letter). The streamed updates of a turn, most of what goes to the client, fail all
/// three searches (a few SIMD passes), and are not scanned.
fn may_answer(line: &[u8]) -> bool {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    // Built once: a finder's construction costs more than its search of a short line.
    static KEYS: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| {
        [
            Finder::new(br#""result""#),
            Finder::new(br#""error""#),
            Finder::new(br"\u"),
        ]
    });
    KEYS.iter().any(|key| key.find(line).is_some())
}

/// The answer to a prompt refused by the drain.
fn refusal(id: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{DRAINING_CODE},"message":"{DRAINING_MESSAGE}","data":{{"reason":"draining"}}}}}}"#
    )
    .into_bytes()
}

impl Drop for Watch {
    fn drop(&mut self) {
        let state = self.state();
        let busy = state
            .pending
            .values()
            .filter(|k| **k != Kind::Refused)
            .count();
        if busy > 0 {
            self.ops.busy_ended(busy);
        }
        if state.turns > 0 {
            self.ops.turns_ended(0, state.turns);
        }
        self.ops.sessions_changed(0, state.sessions);
    }
}

/// The pieces of `buf` that begin a line, with where each ends: `start` says whether `buf`
/// begins one, and becomes whether what follows `buf` does.
fn pieces(buf: &[u8], start: &mut bool, mut each: impl FnMut(usize, usize) -> bool) {
    let mut at = 0;
    while at < buf.len() {
        let end = memchr::memchr(b'\n', &buf[at..]).map_or(buf.len(), |i| at + i);
        if *start && end > at && !each(at, end) {
            return;
        }
        *start = end < buf.len();
        at = end + 1;
    }
}

/// A connection's reader, watched.
#[derive(Debug)]
pub(crate) struct WatchedReader<R> {
    inner: R,
    watch: Arc<Watch>,
    /// How much of the front of the inner reader's buffer was looked at.
    seen: usize,
    /// Whether the byte at `seen` begins a line.
    start: bool,
    /// A refused prompt's renamed request, handed over in its place.
    instead: Option<(Vec<u8>, usize)>,
}

/// A connection's writer, watched.
#[derive(Debug)]
pub(crate) struct WatchedWriter<W> {
    inner: W,
    watch: Arc<Watch>,
    start: bool,
    /// The scan of a line begun in an earlier write, while it goes on.
    scan: Option<AnswerScan>,
    /// A refusal taken in place of the handler's answer, not yet all written.
    instead: Option<(Vec<u8>, usize)>,
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
            seen: 0,
            start: true,
            instead: None,
        },
        WatchedWriter {
            inner: writer,
            watch,
            start: true,
            scan: None,
            instead: None,
        },
    )
}

impl LineTarget for WatchedWriter<ConnectionWriter> {
    fn boxed_with_max_line(self: Box<Self>, bytes: usize) -> Box<dyn LineTarget> {
        Box::new(self.map(|writer| writer.with_max_line(bytes)))
    }
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

impl<R: AsyncBufRead + Unpin> AsyncBufRead for WatchedReader<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.instead.is_none() {
            let buf = ready!(Pin::new(&mut this.inner).poll_fill_buf(cx))?;
            let (watch, from) = (&this.watch, this.seen.min(buf.len()));
            let mut refused = None;
            let mut start = this.start;
            pieces(&buf[from..], &mut start, |at, end| {
                match watch.inbound(&buf[from + at..from + end]) {
                    Inbound::Pass => true,
                    Inbound::Refuse { id, line } => {
                        refused = Some((from + at, from + end, id, line));
                        false
                    }
                }
            });
            match refused {
                // Handed over up to the refused line; it is looked at again once at the front.
                Some((at, ..)) if at > 0 => {
                    this.seen = at;
                    this.start = true;
                    let buf = ready!(Pin::new(&mut this.inner).poll_fill_buf(cx))?;
                    return Poll::Ready(Ok(&buf[..at]));
                }
                Some((_, end, id, line)) => {
                    this.watch.refusing(&id);
                    Pin::new(&mut this.inner).consume(end);
                    this.seen = 0;
                    this.start = false;
                    this.instead = Some((line, 0));
                }
                None => {
                    this.seen = buf.len();
                    this.start = start;
                }
            }
        }
        match &this.instead {
            Some((line, at)) => Poll::Ready(Ok(&line[*at..])),
            None => Pin::new(&mut this.inner).poll_fill_buf(cx),
        }
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        if let Some((line, at)) = &mut this.instead {
            *at += amt;
            if *at >= line.len() {
                this.instead = None;
            }
            return;
        }
        this.seen = this.seen.saturating_sub(amt);
        Pin::new(&mut this.inner).consume(amt);
    }
}

impl<R: AsyncBufRead + Unpin> AsyncRead for WatchedReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let available = ready!(self.as_mut().poll_fill_buf(cx))?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Poll::Ready(Ok(n))
    }
}

impl<W> WatchedWriter<W> {
    /// Looks at what was written to the client: each line that ends in it is read whole; a
    /// line that goes on into the next writes (the bridge copies an agent's output in pieces,
    /// and answers of 64 KiB or more come so) is scanned as its pieces pass
    /// ([`AnswerScan`]: its top-level member names and an `id` of up to 1 KiB, nothing else
    /// kept), while anything is pending. Refused answers were taken before (`poll_write`).
    fn follow(&mut self, written: &[u8]) {
        let mut at = 0;
        if !self.start {
            let end = memchr::memchr(b'\n', written).unwrap_or(written.len());
            if let Some(scan) = &mut self.scan {
                scan.feed(&written[..end]);
            }
            if end == written.len() {
                return;
            }
            if let Some(scan) = self.scan.take()
                && let Some(id) = scan.answer_id()
            {
                self.watch.answered(id, scan.is_success());
            }
            self.start = true;
            at = end + 1;
        }
        while at < written.len() {
            let Some(end) = memchr::memchr(b'\n', &written[at..]).map(|i| at + i) else {
                if self.watch.pending.load(Ordering::SeqCst) > 0 {
                    let mut scan = AnswerScan::new();
                    scan.feed(&written[at..]);
                    self.scan = Some(scan);
                }
                self.start = false;
                return;
            };
            if end > at {
                // Not a refused answer: those were taken before it was written.
                let _ = self.watch.outbound(&written[at..end]);
            }
            at = end + 1;
        }
    }
}

impl<W: AsyncWrite + Unpin> WatchedWriter<W> {
    /// Writes out what was taken in place of an answer.
    fn poll_instead(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((line, at)) = &mut self.instead {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &line[*at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *at += n;
            if *at >= line.len() {
                self.instead = None;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for WatchedWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_instead(cx))?;
        let watch = &this.watch;
        let mut found = None;
        if watch.refused.load(Ordering::SeqCst) > 0 {
            let mut start = this.start;
            pieces(buf, &mut start, |at, end| {
                if !watch.answers_refused(&buf[at..end]) {
                    return true;
                }
                found = Some((at, end));
                false
            });
        }
        let upto = match found {
            // The answer is taken whole (its newline still to come) and the refusal is sent
            // instead.
            Some((0, end)) => {
                if let Some(line) = watch.outbound(&buf[..end]) {
                    this.instead = Some((line, 0));
                    this.start = false;
                    return Poll::Ready(Ok(end));
                }
                buf.len()
            }
            // What comes before it first; it is looked at again at the front.
            Some((at, _)) => at,
            None => buf.len(),
        };
        let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &buf[..upto]))?;
        this.follow(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_instead(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_instead(cx))?;
        Pin::new(&mut this.inner).poll_close(cx)
    }
}

#[cfg(test)]
mod tests;
