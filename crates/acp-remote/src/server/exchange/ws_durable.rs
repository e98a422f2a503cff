//! The durable transport over WebSocket (upstream's open proposal, opt-in: see
//! `docs/remote.md`). A client that asks for it in its `initialize` gets a connection that
//! outlives its WebSocket: the connection is a Streamable HTTP one whose every message goes
//! to its connection stream ([`HttpConn`] with [`Carried`]), and each WebSocket only carries
//! it, so that the stream's cursors, replay window and retried-request ids are the same code
//! on both transports. A dropped WebSocket leaves the connection (and its turns) running for
//! the retention time; a new WebSocket whose first message is `stream/resume` takes it over
//! and gets what it missed, exactly, then the turn state, then live messages; one that cannot
//! be served so is refused with `stream/resume_failed`.

use std::net::SocketAddr;
use std::sync::Arc;

use futures_lite::{AsyncBufReadExt, AsyncWriteExt, future};
use serde_json::{Value, json};
use smol::Timer;

use crate::proto::cursor::{CURSOR_KEY, Retention, TURN_STATE_KEY};
use crate::proto::streamable::Peek;
use crate::proto::ws::socket::WsStream;
use crate::proto::ws::{WsReader, WsWriter};
use crate::server::conn::{AcpSlot, ServerCtx, lock_http};
use crate::server::exchange::streamable::{REPLAY_WINDOW_PASSED, start};
use crate::server::http::RequestHead;
use crate::server::streamable::carried::Carried;
use crate::server::streamable::stream::{AttachError, Batch, SseStream};
use crate::server::streamable::{HttpConn, Incoming, StreamLimits};

/// The method of the first message of a WebSocket that resumes a connection.
pub(crate) const RESUME: &str = "stream/resume";
/// The notification that refuses a resumption (before the error answer to it).
pub(crate) const RESUME_FAILED: &str = "stream/resume_failed";

/// The refusal's reason when the connection is another instance's: not final (the client
/// tries again, for a balancer to route it right).
pub(crate) const OTHER_INSTANCE: &str = "other_instance";

/// Bytes of messages written to the socket at once.
const CHUNK: usize = 64 * 1024;

/// What a durable server's WebSocket opens with, from its first message.
#[derive(Debug)]
pub(crate) enum Opening {
    /// Anything but the two below: the WebSocket is served as without the durable transport.
    Plain,
    /// An `initialize` asking for the durable transport.
    Durable,
    /// `stream/resume`: the request's id (`None`: a notification, refused), and the
    /// connection and cursor it names (`None`: missing or malformed).
    Resume {
        id: Option<Value>,
        target: Option<(String, u64)>,
    },
}

/// Looks at a WebSocket's first message.
pub(crate) fn classify(first: &[u8]) -> Opening {
    let Ok(message) = serde_json::from_slice::<Value>(first) else {
        return Opening::Plain;
    };
    match message.get("method").and_then(Value::as_str) {
        Some("initialize") if crate::proto::cursor::asks_for_resumable(first) => Opening::Durable,
        Some(RESUME) => {
            let params = message.get("params");
            let connection = params
                .and_then(|p| p.get("connectionId"))
                .and_then(Value::as_str);
            // The cursor is opaque to clients: ours are event ids as strings; a number is
            // taken too.
            let cursor = params.and_then(|p| p.get("cursor")).and_then(|c| match c {
                Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                    s.parse().ok()
                }
                Value::Number(n) => n.as_u64(),
                _ => None,
            });
            Opening::Resume {
                id: message.get("id").cloned().filter(|id| !id.is_null()),
                target: connection.zip(cursor).map(|(c, n)| (c.to_owned(), n)),
            }
        }
        _ => Opening::Plain,
    }
}

/// The first message, read off the reader (it was only looked at so far).
async fn take_first(reader: &mut WsReader<WsStream>) -> Vec<u8> {
    let mut line = Vec::new();
    let _ = reader.read_until(b'\n', &mut line).await;
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    line
}

/// A WebSocket that opened with `initialize` asking for the durable transport: a new
/// connection, carried by this WebSocket first.
pub(crate) async fn open(
    mut reader: WsReader<WsStream>,
    writer: WsWriter<WsStream>,
    slot: AcpSlot,
    id: String,
    head: &RequestHead,
    peer: SocketAddr,
    ctx: &ServerCtx,
) {
    let first = take_first(&mut reader).await;
    let retention = Retention {
        messages: ctx.options.replay_events,
        seconds: ctx.options.replay_age.as_secs(),
    };
    let conn = HttpConn::new(
        id,
        head.header("authorization").map(str::to_owned),
        ctx.options.max_message_size.max(1 << 20),
        StreamLimits::of(&ctx.options, true),
        &ctx.shared.ceiling,
        Some(Carried::new(retention)),
    );
    start(&conn, slot, head, peer, ctx);
    carry(conn, reader, writer, 0, None, Some(first), ctx).await;
}

/// A WebSocket that opened with `stream/resume`: the connection it names goes on over it, or
/// the resumption is refused and the WebSocket closed.
pub(crate) async fn resume(
    mut reader: WsReader<WsStream>,
    mut writer: WsWriter<WsStream>,
    head: &RequestHead,
    ctx: &ServerCtx,
    id: Option<Value>,
    target: Option<(String, u64)>,
) {
    let _ = take_first(&mut reader).await;
    let Some(id) = id else {
        let refusal = Refusal::new("invalid_request", "stream/resume must be a request (an id)");
        return refuse(&mut writer, Value::Null, refusal).await;
    };
    let Some((connection, cursor)) = target else {
        let refusal = Refusal::new(
            "invalid_params",
            "stream/resume needs params.connectionId and params.cursor (an event id)",
        );
        return refuse(&mut writer, id, refusal).await;
    };
    // A connection another instance named (`NAME.<token>`): a balancer sent the resumption
    // to the wrong server (one just restarted may not route by the id yet). The client tries
    // again; only the owner can say that a connection is gone.
    if let Some(instance) = &ctx.options.instance
        && let Some((owner, _)) = connection.split_once('.')
        && owner != instance.as_str()
    {
        let refusal = Refusal::new(
            OTHER_INSTANCE,
            format!(
                "this is instance {}, not {owner}, which holds the connection: try again",
                instance.as_str()
            ),
        );
        return refuse(&mut writer, id, refusal.at(&connection, cursor)).await;
    }
    // As on Streamable HTTP, a connection opened with other credentials is unknown.
    let conn = lock_http(&ctx.shared)
        .get(&connection)
        .cloned()
        .filter(|c| c.carried.is_some() && c.authorizes(head.header("authorization")));
    let Some(conn) = conn else {
        let refusal = Refusal::new(
            "unknown_connection",
            "no connection of this server has that id (it ended, or it never was)",
        );
        return refuse(&mut writer, id, refusal.at(&connection, cursor)).await;
    };
    carry(conn, reader, writer, cursor, Some(id), None, ctx).await;
}

/// Why a resumption is refused.
struct Refusal {
    reason: &'static str,
    message: String,
    data: serde_json::Map<String, Value>,
}

impl Refusal {
    fn new(reason: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            reason,
            message: message.into(),
            data: serde_json::Map::new(),
        }
    }

    fn at(mut self, connection: &str, cursor: u64) -> Refusal {
        self.data.insert("connectionId".into(), connection.into());
        self.data.insert("cursor".into(), cursor.to_string().into());
        self
    }

    fn with(mut self, key: &str, value: impl Into<Value>) -> Refusal {
        self.data.insert(key.into(), value.into());
        self
    }
}

/// Refuses a resumption: `stream/resume_failed`, then the error answer to the request (so that
/// it gets exactly one), then a close frame. Never a stream with a gap.
async fn refuse(writer: &mut WsWriter<WsStream>, id: Value, refusal: Refusal) {
    let mut data = refusal.data;
    data.insert("reason".into(), refusal.reason.into());
    let failed = json!({
        "jsonrpc": "2.0",
        "method": RESUME_FAILED,
        "params": {
            "code": REPLAY_WINDOW_PASSED,
            "message": refusal.message,
            "data": data,
        },
    });
    let answer = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": REPLAY_WINDOW_PASSED, "message": refusal.message, "data": data},
    });
    let text = format!("{failed}\n{answer}\n");
    let _ = writer.write_all(text.as_bytes()).await;
    let _ = writer.close().await;
}

/// How a carrier ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The client closed the WebSocket (a close frame): the connection ends.
    Closed,
    /// The connection ended (its handler finished, or the server drains): the WebSocket is
    /// closed after the last message.
    Finished,
    /// The WebSocket dropped, or another took the connection over: the connection waits for
    /// a resumption.
    Dropped,
    /// The connection takes no more input (the reading side's end only).
    InputEnded,
}

/// Carries `conn` over one WebSocket: the client's messages to it (`first` already read),
/// its stream's messages after `cursor` to the client; for a resumption (`resume`: the
/// request's id), the replay, then the answer with the turn state, then live messages.
async fn carry(
    conn: Arc<HttpConn>,
    reader: WsReader<WsStream>,
    mut writer: WsWriter<WsStream>,
    cursor: u64,
    resume: Option<Value>,
    first: Option<Vec<u8>>,
    ctx: &ServerCtx,
) {
    let Some(carried) = conn.carried.as_ref() else {
        return;
    };
    let Some(stream) = conn.stream(None) else {
        return;
    };
    // What is too old is given up before the resumption is judged.
    conn.trim_replay();
    let (number, stop) = carried.take_over();
    let attached = match stream.attach(Some(cursor)) {
        Ok(attached) => attached,
        Err(error) => {
            let refusal = match error {
                AttachError::Passed { first_kept } => Refusal::new(
                    "replay_window_passed",
                    format!(
                        "the messages after cursor {cursor} are no longer kept (the oldest kept \
                         is {first_kept}); the stream cannot resume without a gap"
                    ),
                )
                .with("firstKept", first_kept.to_string()),
                AttachError::Ahead { last } => Refusal::new(
                    "unknown_cursor",
                    format!("cursor {cursor} is beyond the stream's last message ({last})"),
                )
                .with("last", last.to_string()),
                AttachError::Busy => Refusal::new("busy", "the stream has a reader"),
            };
            let refusal = refusal
                .at(&conn.id, cursor)
                .with("retentionMessages", ctx.options.replay_events)
                .with("retentionSeconds", ctx.options.replay_age.as_secs());
            refuse(&mut writer, resume.unwrap_or_default(), refusal).await;
            // The carrier it replaced was stopped: the connection waits as after a drop.
            watch_retention(&conn, number, ctx);
            return;
        }
    };
    // The last carrier stops reading before this one counts what it received.
    let reading = carried.reading.lock().await;
    let received = carried.received();
    let read = read_side(&conn, reader, first, &stop, reading);
    let write = write_side(&conn, &stream, attached, writer, resume, received);
    futures_lite::pin!(read, write);
    let outcome = match future::or(read.as_mut(), write.as_mut()).await {
        // The connection took no more input (it is ending): what it still sends goes out,
        // and the WebSocket is closed after it.
        Outcome::InputEnded => write.await,
        outcome => outcome,
    };
    stream.detach(attached.reader);
    match outcome {
        Outcome::Closed => end(&conn, ctx),
        Outcome::Finished | Outcome::InputEnded => {}
        Outcome::Dropped => watch_retention(&conn, number, ctx),
    }
}

/// The connection, dropped by carrier `number`, lives on for the retention time, then ends
/// if no WebSocket took it over in the meantime.
fn watch_retention(conn: &Arc<HttpConn>, number: u64, ctx: &ServerCtx) {
    let (conn, shared) = (conn.clone(), ctx.shared.clone());
    let age = ctx.options.replay_age;
    smol::spawn(async move {
        Timer::after(age).await;
        let current = conn.carried.as_ref().is_some_and(|c| c.is_current(number));
        if current && lock_http(&shared).contains_key(&conn.id) {
            lock_http(&shared).remove(&conn.id);
            conn.end_input();
            conn.ended.set();
        }
    })
    .detach();
}

/// Ends the connection as a `DELETE` does.
fn end(conn: &HttpConn, ctx: &ServerCtx) {
    lock_http(&ctx.shared).remove(&conn.id);
    conn.end_input();
    conn.ended.set();
}

/// The client's messages to the connection, each counted, a request or answer whose id was
/// taken before (sent again after a resumption) not handed on twice.
async fn read_side(
    conn: &HttpConn,
    mut reader: WsReader<WsStream>,
    first: Option<Vec<u8>>,
    stop: &acp_jsonrpc::Latch,
    _reading: smol::lock::MutexGuard<'_, ()>,
) -> Outcome {
    let Some(carried) = conn.carried.as_ref() else {
        return Outcome::Dropped;
    };
    let mut next = first;
    loop {
        let message = match next.take() {
            Some(message) => message,
            None => {
                let mut line = Vec::new();
                let read = async { Some(reader.read_until(b'\n', &mut line).await) };
                let stopped = async {
                    stop.wait().await;
                    None
                };
                match future::or(read, stopped).await {
                    None | Some(Err(_)) => return Outcome::Dropped,
                    Some(Ok(0)) if reader.closed_by_peer() => return Outcome::Closed,
                    Some(Ok(0)) => return Outcome::Dropped,
                    Some(Ok(_)) => {}
                }
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                line
            }
        };
        let retried = serde_json::from_slice::<Peek<'_>>(&message)
            .is_ok_and(|peek| conn.accept_carried(&peek) == Incoming::Retried);
        if !retried && conn.push_incoming(&message).await.is_err() {
            return Outcome::InputEnded;
        }
        carried.received_one();
    }
}

/// The stream's messages to the client: for a resumption, the replay (the very bytes, cursors
/// included), then the answer to `stream/resume` with the turn state; then live messages.
async fn write_side(
    conn: &HttpConn,
    stream: &SseStream,
    attached: crate::server::streamable::stream::Attached,
    mut writer: WsWriter<WsStream>,
    resume: Option<Value>,
    received: u64,
) -> Outcome {
    let reader = attached.reader;
    let mut cursor = attached.cursor;
    let replay_end = stream.last_id();
    let mut resume = resume;
    loop {
        let listeners = stream.listen();
        let batch = if cursor < replay_end || resume.is_none() {
            stream.take_lines(reader, cursor, CHUNK)
        } else {
            Batch::Empty
        };
        match batch {
            Batch::Events(lines, last) => {
                if writer.write_all(&lines).await.is_err() || writer.flush().await.is_err() {
                    return Outcome::Dropped;
                }
                stream.written(reader, last);
                cursor = last;
                conn.trim_replay();
            }
            Batch::Ended if stream.broken(reader) => return Outcome::Dropped,
            Batch::Ended => {
                let _ = writer.close().await;
                return Outcome::Finished;
            }
            Batch::Empty => {
                if let Some(id) = resume.take() {
                    // The replay is out: the turn state, before anything live.
                    let answer = json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "result": {
                            "cursor": cursor.to_string(),
                            "received": received,
                            "_meta": {
                                TURN_STATE_KEY: conn.turn_state(None),
                                CURSOR_KEY: cursor.to_string(),
                            },
                        },
                    });
                    let line = format!("{answer}\n");
                    if writer.write_all(line.as_bytes()).await.is_err()
                        || writer.flush().await.is_err()
                    {
                        return Outcome::Dropped;
                    }
                    continue;
                }
                let (pushed, taken) = listeners;
                future::or(pushed, taken).await;
            }
        }
    }
}
