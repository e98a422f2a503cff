//! A WebSocket as the newline-delimited byte streams the runtime reads and writes.
//!
//! The runtime's connections take an `AsyncBufRead` of lines and an `AsyncWrite` of lines, the
//! framing of stdio. Rather than a second, message-level transport inside `acp-jsonrpc`, a
//! WebSocket is presented in that shape: [`WsReader`] turns each text frame into one line and
//! [`WsWriter`] turns each complete line into one text frame. `agent::serve` and
//! `client::connect` take them unchanged, with every limit of the stdio path (line length,
//! in-flight requests, reply budget) applying as it does there.

pub(crate) mod keepalive;
pub(crate) mod pieces;
pub(crate) mod socket;

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::protocol::CloseFrame;
use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use async_tungstenite::tungstenite::protocol::frame::Frame;
use async_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data as OpData, OpCode};
use async_tungstenite::tungstenite::{self, Message};
use futures_io::{AsyncBufRead, AsyncRead, AsyncWrite};
use futures_lite::Stream;
use futures_util::Sink;

use crate::lines::{LineSink, LineWriter};
use crate::proto::ws::keepalive::{Due, KeepAlive, KeepAliveConfig};
use crate::proto::ws::pieces::PIECE;
use crate::proto::ws::socket::Held;
use crate::transport::LineTarget;
use acp_jsonrpc::Latch;

/// The default largest message, in bytes: the runtime's longest line (64 MiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 << 20;

/// The WebSocket library's read buffer, and how much its write buffer gathers before writing
/// to the socket. Each connection keeps both for its life (the read buffer filled with zeros
/// on every read, so its pages are always resident), and they grow only for a frame larger
/// than this, up to [`PIECE`] plus a header on the server. 4 KiB still carries a turn's small
/// messages in a few writes (measured in docs/performance-remote.md, "Memory per connection,
/// profiled"), at a quarter of the 16 KiB each connection kept before.
const WS_BUFFER: usize = 4 * 1024;

/// Room in the write buffer beyond one message: its frame header, a close frame, the eager
/// buffer.
const WRITE_SLACK: usize = 32 * 1024;

/// The WebSocket limits of one connection: messages and frames up to `max_message_size`, and
/// small eager buffers, since a server holds many connections that are mostly quiet. The write
/// buffer holds at most one message and its frame header besides what it flushes eagerly:
/// the writer sends a message only once the last is out, and pongs that cannot be queued
/// replace one another (RFC 6455, 5.5.3, allows answering only the latest ping) while reading
/// pauses (`ws/socket.rs`).
pub(crate) fn websocket_config(max_message_size: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(WS_BUFFER)
        .write_buffer_size(WS_BUFFER)
        .max_write_buffer_size(max_message_size.saturating_add(WRITE_SLACK))
        .max_message_size(Some(max_message_size))
        .max_frame_size(Some(max_message_size))
}

/// When a connection last received or sent a frame: what the server's idle timeout watches.
#[derive(Debug)]
pub(crate) struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    pub(crate) fn new() -> Arc<Activity> {
        Arc::new(Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        })
    }

    pub(crate) fn touch(&self) {
        let now = self.start.elapsed().as_millis() as u64;
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// How long since the last frame either way.
    pub(crate) fn idle_for(&self) -> std::time::Duration {
        let now = self.start.elapsed().as_millis() as u64;
        let last = self.last_ms.load(Ordering::Relaxed);
        std::time::Duration::from_millis(now.saturating_sub(last))
    }
}

/// Splits an open WebSocket into the reader and writer the runtime takes.
///
/// ```no_run
/// # async fn demo(ws: async_tungstenite::WebSocketStream<smol::net::TcpStream>) {
/// use acp_runtime::client::{self, AutoAllow, ClientOptions};
///
/// let (reader, writer) = acp_remote::split(ws);
/// let (agent, driver) = client::connect(AutoAllow, reader, writer, ClientOptions::default());
/// # }
/// ```
pub fn split<S>(ws: WebSocketStream<S>) -> (WsReader<S>, WsWriter<S>)
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin,
{
    split_with(Arc::new(Shared::new(ws)), None, None, None)
}

/// One WebSocket, shared by its reader and writer: each locks it for one poll at a time (as
/// the WebSocket library's own split does), so that the reader can also close it with 1009.
pub(crate) struct Shared<S>(Mutex<WebSocketStream<S>>);

impl<S> Shared<S> {
    pub(crate) fn new(ws: WebSocketStream<S>) -> Self {
        Shared(Mutex::new(ws))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, WebSocketStream<S>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) fn split_with<S>(
    ws: Arc<Shared<S>>,
    activity: Option<Arc<Activity>>,
    drain: Option<Arc<Latch>>,
    held: Option<Arc<Held>>,
) -> (WsReader<S>, WsWriter<S>)
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin,
{
    let reader = WsReader {
        receiver: ws.clone(),
        frame: Pending::Empty,
        pos: 0,
        ended: false,
        activity: activity.clone(),
        drain,
        drain_listener: acp_jsonrpc::LatchListener::default(),
        held,
        keepalive: None,
        holding: false,
        closed_by_peer: false,
    };
    let writer = WsWriter(LineWriter::new(WsSink {
        sender: ws,
        activity,
        rest: None,
    }));
    (reader, writer)
}

/// Whether a read failed because a message is larger than we take: the close then says 1009.
fn is_oversize(error: &tungstenite::Error) -> bool {
    match error {
        tungstenite::Error::Capacity(_) => true,
        tungstenite::Error::Io(error) => error.kind() == io::ErrorKind::OutOfMemory,
        _ => false,
    }
}

/// What the reader hands out: the current frame's text, then its newline.
enum Pending {
    Empty,
    /// The frame as received (no copy): it held no raw newline.
    Shared(tungstenite::Bytes),
    /// The frame with its raw line breaks replaced (a copy).
    Owned(Vec<u8>),
    Newline,
}

/// The reading half of a WebSocket, as newline-delimited JSON: each text frame is one line.
///
/// - A text frame becomes its text followed by `\n`. JSON escapes line breaks inside strings,
///   but a peer may still put raw `\n` or `\r` between tokens (pretty-printed JSON); those are
///   replaced by `\t`, which is whitespace between tokens just as they are, and as invalid as
///   they are inside a string, so a frame never splits into two lines and its meaning (or its
///   invalidity) is unchanged.
/// - Frames that hold only whitespace, binary frames, pings and pongs are skipped. Pings are
///   answered by the WebSocket layer.
/// - A close frame, or the end of the stream, is the end of input.
/// - A frame larger than the configured maximum message size fails the read (the WebSocket
///   layer closes the connection with 1009, "message too big").
pub struct WsReader<S> {
    receiver: Arc<Shared<S>>,
    frame: Pending,
    pos: usize,
    ended: bool,
    activity: Option<Arc<Activity>>,
    /// The server's shutdown: once set, the reader reports the end of input, so that the
    /// runtime finishes what it is handling and closes.
    drain: Option<Arc<Latch>>,
    drain_listener: acp_jsonrpc::LatchListener,
    /// What the socket holds of an unfinished message, released at each complete one.
    held: Option<Arc<Held>>,
    /// Pings while quiet, and the dead-peer timeout (src/proto/ws/keepalive.rs).
    keepalive: Option<KeepAlive>,
    /// Whether the last message handed out still counts in `held`: until the runtime asks
    /// for the next.
    holding: bool,
    /// The peer sent a close frame meaning the end (1000 or no code), rather than vanishing
    /// or giving up on us.
    closed_by_peer: bool,
}

impl<S> std::fmt::Debug for WsReader<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsReader")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<S> WsReader<S> {
    /// Pings the peer while the connection is quiet, and fails the read when a ping stays
    /// unanswered for the timeout (src/proto/ws/keepalive.rs).
    pub(crate) fn with_keepalive(mut self, config: Option<KeepAliveConfig>) -> Self {
        self.keepalive = config.map(KeepAlive::new);
        self
    }

    /// Whether the input ended with the peer's close frame meaning the end (code 1000 or
    /// none; not a dropped socket, an error, another code, or the server's drain): a
    /// durable-transport connection then ends rather than waits for a resumption.
    pub(crate) fn closed_by_peer(&self) -> bool {
        self.closed_by_peer
    }
}

impl<S> WsReader<S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin,
{
    /// While the reader waits: a ping when one is due, or the end when the peer is gone.
    fn poll_keepalive(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let Some(keepalive) = &mut self.keepalive else {
            return Poll::Pending;
        };
        loop {
            match ready!(keepalive.poll(cx)) {
                Due::Dead => {
                    let mut ws = self.receiver.lock();
                    let frame = CloseFrame {
                        code: CloseCode::Away,
                        reason: "keep-alive timeout".into(),
                    };
                    if Pin::new(&mut *ws)
                        .start_send(Message::Close(Some(frame)))
                        .is_ok()
                    {
                        let _ = Pin::new(&mut *ws).poll_flush(cx);
                    }
                    return Poll::Ready(keepalive.dead());
                }
                Due::Ping => {
                    let mut ws = self.receiver.lock();
                    // A writer in the middle of a frame has the socket: the ping waits for it
                    // (the frames it writes are no answer, so the timeout is not affected).
                    if Pin::new(&mut *ws).poll_ready(cx).is_pending() {
                        return Poll::Pending;
                    }
                    if Pin::new(&mut *ws)
                        .start_send(Message::Ping(Default::default()))
                        .is_ok()
                    {
                        let _ = Pin::new(&mut *ws).poll_flush(cx);
                    }
                    keepalive.pinged();
                }
            }
        }
    }

    /// The current message is no longer held here: its bytes leave [`Held`]'s count.
    fn handed_over(&self) {
        if let Some(held) = &self.held {
            held.message_done();
        }
    }

    fn pending(&self) -> &[u8] {
        match &self.frame {
            Pending::Empty => &[],
            Pending::Shared(bytes) => &bytes[self.pos..],
            Pending::Owned(bytes) => &bytes[self.pos..],
            Pending::Newline => &b"\n"[self.pos..],
        }
    }

    /// Queues a close frame with 1009 ("message too big") and lets it out if the socket takes
    /// it now; the connection ends after it either way.
    fn close_too_big(&self, cx: &mut Context<'_>) {
        let mut ws = self.receiver.lock();
        let frame = CloseFrame {
            code: CloseCode::Size,
            reason: "message too big".into(),
        };
        if Pin::new(&mut *ws)
            .start_send(Message::Close(Some(frame)))
            .is_ok()
        {
            let _ = Pin::new(&mut *ws).poll_flush(cx);
        }
    }

    /// Moves to the next frame; `Ok(false)` at the end of input.
    fn poll_next_frame(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        // The runtime asks for more: it has decoded the last message and handled it (a
        // notification), or holds it in its in-flight budget (a request). Only then: this is
        // polled again and again while the next message arrives, which must stay counted.
        if std::mem::take(&mut self.holding) {
            self.handed_over();
        }
        loop {
            if self.ended {
                return Poll::Ready(Ok(false));
            }
            if let Some(drain) = &self.drain
                && drain.poll_wait(&mut self.drain_listener, cx).is_ready()
            {
                self.ended = true;
                continue;
            }
            let next = Pin::new(&mut *self.receiver.lock()).poll_next(cx);
            if next.is_pending()
                && let Poll::Ready(error) = self.poll_keepalive(cx)
            {
                self.ended = true;
                return Poll::Ready(Err(error));
            }
            let message = match ready!(next) {
                None => {
                    self.ended = true;
                    continue;
                }
                Some(Err(error)) => {
                    self.ended = true;
                    if is_oversize(&error) {
                        self.close_too_big(cx);
                    }
                    return Poll::Ready(Err(ws_error(error)));
                }
                Some(Ok(message)) => message,
            };
            if let Some(keepalive) = &mut self.keepalive {
                keepalive.received();
            }
            // What a message held is released once it is handed over: a text frame when the
            // runtime asks for the next (above), so that a finished message counts while it
            // waits and while the runtime decodes it; the others now. Control frames do not
            // count: they may come between the fragments of a message.
            if let (Some(held), Message::Binary(_) | Message::Close(_)) = (&self.held, &message) {
                held.message_done();
            }
            // The answers to our keep-alive pings keep a connection alive, not busy: the idle
            // timeout still ends a connection that carries nothing else.
            if let Some(activity) = &self.activity
                && !matches!(message, Message::Pong(_))
            {
                activity.touch();
            }
            let text = match message {
                Message::Text(text) => tungstenite::Bytes::from(text),
                Message::Close(frame) => {
                    self.ended = true;
                    // A close meant as the end (1000, or no code); not one sent because the
                    // peer gave up on us (1001 "keep-alive timeout", an error's code).
                    self.closed_by_peer =
                        frame.as_ref().is_none_or(|f| f.code == CloseCode::Normal);
                    continue;
                }
                // Binary frames carry nothing for us (the transport is text frames only);
                // pings are answered by the WebSocket layer.
                Message::Binary(_) | Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {
                    continue;
                }
            };
            if text.iter().all(u8::is_ascii_whitespace) {
                self.handed_over();
                continue;
            }
            self.pos = 0;
            self.holding = true;
            self.frame = if text.iter().any(|&b| b == b'\n' || b == b'\r') {
                let replaced = text
                    .iter()
                    .map(|&b| if b == b'\n' || b == b'\r' { b'\t' } else { b })
                    .collect();
                Pending::Owned(replaced)
            } else {
                Pending::Shared(text)
            };
            return Poll::Ready(Ok(true));
        }
    }
}

impl<S> AsyncBufRead for WsReader<S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin,
{
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        loop {
            if !this.pending().is_empty() {
                return Poll::Ready(Ok(this.pending()));
            }
            match this.frame {
                Pending::Shared(_) | Pending::Owned(_) => {
                    this.frame = Pending::Newline;
                    this.pos = 0;
                }
                Pending::Empty | Pending::Newline => {
                    this.frame = Pending::Empty;
                    if !ready!(this.poll_next_frame(cx))? {
                        return Poll::Ready(Ok(&[]));
                    }
                }
            }
        }
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.pos + this.pending().len());
    }
}

impl<S> AsyncRead for WsReader<S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin,
{
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

/// The writing half of a WebSocket, as newline-delimited JSON: each complete line written is
/// sent as one text frame, without its newline (the crate's one line writer, see `lines.rs`).
///
/// A partial line is kept until its newline arrives, so a line written in pieces is still one
/// frame, and a write holding several lines sends several frames. Empty lines are not sent.
/// Frames are queued in the WebSocket's buffer and go out on `flush` (or once 16 KiB are
/// queued), as with any buffered writer: the runtime flushes after each batch; a plain
/// `io::copy` flushes only at the end.
/// Closing sends a close frame (1000, normal closure) and flushes it. A line that is not UTF-8
/// fails the write: a text frame must be UTF-8, and the runtime only writes JSON.
pub struct WsWriter<S>(LineWriter<WsSink<S>>);

impl<S> std::fmt::Debug for WsWriter<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsWriter")
            .field("partial_line", &self.0.partial_line())
            .finish_non_exhaustive()
    }
}

impl<S> LineTarget for WsWriter<S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Send + Unpin + 'static,
{
    fn boxed_with_max_line(self: Box<Self>, bytes: usize) -> Box<dyn LineTarget> {
        Box::new(self.with_max_line(bytes))
    }
}

impl<S> WsWriter<S> {
    /// Fails a write whose line would grow beyond `bytes` before its newline, instead of
    /// keeping it (default: no limit). The bridge sets it so that an agent that never writes a
    /// newline cannot grow the buffer without bound; the runtime's own lines need none.
    pub fn with_max_line(self, bytes: usize) -> Self {
        WsWriter(self.0.with_max_line(bytes))
    }
}

impl<S> AsyncWrite for WsWriter<S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin,
{
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

/// A WebSocket as the place lines go: one text message each. A message longer than
/// [`PIECE`] goes out as fragments of about that size, each queued once the last is written,
/// so that the WebSocket library's write buffer never grows to a large message's size (it
/// keeps its largest size for the connection's life).
struct WsSink<S> {
    sender: Arc<Shared<S>>,
    activity: Option<Arc<Activity>>,
    /// The fragments of a long message still to queue: the text, and how far it is sent.
    rest: Option<(tungstenite::Bytes, usize)>,
}

impl<S> WsSink<S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin,
{
    /// Queues what is left of a long message, one fragment at a time.
    fn poll_rest(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((text, at)) = &mut self.rest {
            let mut ws = self.sender.lock();
            // Written out before the next is queued: what waits is one fragment.
            ready!(Pin::new(&mut *ws).poll_flush(cx)).map_err(ws_error)?;
            let mut end = (*at + PIECE).min(text.len());
            // Fragments of a text message end between characters (receivers would accept a
            // cut character, but need not be shown one).
            while end < text.len() && (text[end] & 0xC0) == 0x80 {
                end -= 1;
            }
            let opcode = if *at == 0 {
                OpData::Text
            } else {
                OpData::Continue
            };
            let last = end == text.len();
            let frame = Frame::message(text.slice(*at..end), OpCode::Data(opcode), last);
            Pin::new(&mut *ws)
                .start_send(Message::Frame(frame))
                .map_err(ws_error)?;
            *at = end;
            if last {
                self.rest = None;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<S> LineSink for WsSink<S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin,
{
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_rest(cx))?;
        Pin::new(&mut *self.sender.lock())
            .poll_ready(cx)
            .map_err(ws_error)
    }

    fn start_send(&mut self, line: Vec<u8>, cx: &mut Context<'_>) -> io::Result<()> {
        let text = String::from_utf8(line)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a line that is not UTF-8"))?;
        if let Some(activity) = &self.activity {
            activity.touch();
        }
        if text.len() > PIECE {
            self.rest = Some((tungstenite::Bytes::from(text.into_bytes()), 0));
            // Queued as far as the socket takes it now; the rest on the next poll.
            return match self.poll_rest(cx) {
                Poll::Ready(result) => result,
                Poll::Pending => Ok(()),
            };
        }
        Pin::new(&mut *self.sender.lock())
            .start_send(Message::text(text))
            .map_err(ws_error)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_rest(cx))?;
        Pin::new(&mut *self.sender.lock())
            .poll_flush(cx)
            .map_err(ws_error)
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_rest(cx))?;
        let mut ws = self.sender.lock();
        ready!(Pin::new(&mut *ws).poll_flush(cx)).map_err(ws_error)?;
        Pin::new(&mut *ws).poll_close(cx).map_err(ws_error)
    }
}

/// A WebSocket error as an I/O error: the peer closing is the end of input, not a failure.
pub(crate) fn ws_error(error: tungstenite::Error) -> io::Error {
    match error {
        tungstenite::Error::Io(error) => error,
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
            io::Error::new(io::ErrorKind::ConnectionAborted, "the WebSocket is closed")
        }
        tungstenite::Error::Capacity(error) => {
            io::Error::new(io::ErrorKind::InvalidData, error.to_string())
        }
        other => io::Error::other(other.to_string()),
    }
}
