//! The Streamable HTTP requests: `POST` a message, `GET` a stream of Server-Sent Events,
//! `DELETE` the connection. Status codes follow the RFD's routing section; where it is silent
//! (an `initialize` the agent does not answer, a second reader of one stream), they follow the
//! TypeScript SDK's `AcpServer` or say why not. Nothing here knows the HTTP version: a request
//! comes as its head (and a POST's body, read by the version's own code), and leaves as a
//! [`Reply`].

use std::net::SocketAddr;
use std::sync::Arc;

use futures_lite::future;

use super::reply::{EventStream, Reply, ReplyBody};
use crate::proto::streamable::Peek;
use crate::proto::streamable::{CONNECTION_ID, LAST_EVENT_ID, OTHER_INSTANCE, SESSION_ID};
use crate::queue::Reservation;
use crate::server::conn::{
    AcpSlot, ConnectionInfo, IncomingConnection, Live, ServerCtx, idle_watch, lock_http,
};
use crate::server::http::{RequestHead, connection_id};
use crate::server::options::{InstanceName, ServerOptions};
use crate::server::streamable::stream::AttachError;
use crate::server::streamable::{
    HttpConn, HttpReader, Incoming, Refusal, StreamLimits, http_writer,
};
use crate::transport::{ConnectionReader, ConnectionWriter, Framing};

/// The JSON-RPC error code of the answer to a resumption whose events are no longer kept
/// (in the range JSON-RPC leaves to implementations, and used by no ACP error).
pub(crate) const REPLAY_WINDOW_PASSED: i64 = -32010;

/// The connection a request names, if it exists and the request may use it: 400 without the
/// header, 404 for an unknown id (or one opened with other credentials: the same answer, so
/// that an id reveals nothing).
fn find(head: &RequestHead, ctx: &ServerCtx) -> Result<Arc<HttpConn>, Refusal> {
    let id = head
        .header(CONNECTION_ID)
        .ok_or((400, "missing Acp-Connection-Id"))?;
    if let Some(instance) = &ctx.options.instance
        && let Some((owner, _)) = id.trim().split_once('.')
        && owner != instance.as_str()
    {
        // A balancer's mistake (one just restarted may not route by the id yet): a durable
        // client tries again rather than taking the connection for gone.
        return Err((404, OTHER_INSTANCE));
    }
    let conn = lock_http(&ctx.shared).get(id.trim()).cloned();
    // A connection carried by WebSockets is not reachable by HTTP requests.
    conn.filter(|c| c.carried.is_none() && c.authorizes(head.header("authorization")))
        .ok_or((404, "unknown Acp-Connection-Id"))
}

fn refused((status, text): Refusal) -> Reply {
    Reply::text(status, text)
}

/// What a POST's head must say before its body is read: JSON (415), no more than the message
/// limit (413), and a connection that exists and that the request may use (400 with
/// `initialize`'s absence left to the body, 404), so that a made-up id costs no body. Returns
/// the connection named, if any.
pub(crate) fn check_post_head(
    head: &RequestHead,
    ctx: &ServerCtx,
) -> Result<Option<Arc<HttpConn>>, Refusal> {
    let json = head
        .header("content-type")
        .and_then(|t| t.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err((415, "Content-Type must be application/json"));
    }
    let len = head
        .header("content-length")
        .and_then(|l| l.trim().parse::<usize>().ok());
    if len.is_some_and(|len| len > ctx.options.max_message_size) {
        return Err(TOO_LARGE);
    }
    if head.header(CONNECTION_ID).is_none() {
        return Ok(None);
    }
    find(head, ctx).map(Some)
}

/// The connection a refused POST names, if it exists, the request may use it, and its agent
/// waits for answers from the client (the refused body may be one).
pub(crate) fn awaiting_conn(head: &RequestHead, ctx: &ServerCtx) -> Option<Arc<HttpConn>> {
    find(head, ctx).ok().filter(|conn| conn.awaits_answers())
}

/// The refusal of a body that turns out larger than the message limit as it is read.
pub(crate) const TOO_LARGE: Refusal = (413, "message larger than the server accepts");

/// `POST /acp`: one JSON-RPC message. `initialize` opens a connection and is answered in the
/// body (200, `Acp-Connection-Id`); anything else is queued for the agent and answered 202,
/// its answer coming on a GET stream.
pub(crate) async fn post(
    body: &[u8],
    reserved: Reservation,
    head: &RequestHead,
    peer: SocketAddr,
    ctx: &ServerCtx,
) -> Reply {
    // The body's bytes go back to their budget as it is queued (counted again there).
    drop(reserved);
    match posted(body, head, peer, ctx).await {
        Ok(Posted::Accepted) => Reply::text(202, ""),
        Ok(Posted::Initialized { id, answer }) => Reply {
            status: 200,
            headers: vec![(CONNECTION_ID, id)],
            body: ReplyBody::Json(answer),
        },
        Err(refusal) => refused(refusal),
    }
}

enum Posted {
    Accepted,
    Initialized { id: String, answer: Vec<u8> },
}

async fn posted(
    body: &[u8],
    head: &RequestHead,
    peer: SocketAddr,
    ctx: &ServerCtx,
) -> Result<Posted, Refusal> {
    if body.trim_ascii_start().starts_with(b"[") {
        return Err((501, "batch JSON-RPC requests are not implemented"));
    }
    let Ok(peek) = serde_json::from_slice::<Peek<'_>>(body) else {
        const INVALID: Refusal = (400, "invalid JSON");
        // An answer broken after its id still names the request of the agent it answers.
        if let (Ok(conn), Some(id)) = (find(head, ctx), crate::proto::answer_scan::answer_id(body))
        {
            conn.fail_answer(&id, INVALID.1).await;
        }
        return Err(INVALID);
    };
    if !peek.is_jsonrpc() {
        const NOT_JSONRPC: Refusal = (400, "not a JSON-RPC 2.0 message");
        if let Ok(conn) = find(head, ctx) {
            conn.fail_pending(&peek, NOT_JSONRPC.1).await;
        }
        return Err(NOT_JSONRPC);
    }
    if peek.is_initialize() {
        if head.header(CONNECTION_ID).is_some() {
            return Err((400, "initialize is not allowed on an existing connection"));
        }
        return initialize(body, &peek, head, peer, ctx).await;
    }
    let conn = find(head, ctx)?;
    if conn.accept_incoming(&peek, head.header(SESSION_ID).map(str::trim))? == Incoming::Retried {
        // Accepted before: the answer goes (or went) to its stream once; this POST gets the
        // same 202 the first one got.
        return Ok(Posted::Accepted);
    }
    if let Err(refusal) = conn.push_incoming(body).await {
        // Refused after all (413: no room now): a retry of it is new, not a duplicate.
        conn.withdraw_incoming(&peek);
        return Err(refusal);
    }
    Ok(Posted::Accepted)
}

/// A new connection: its own handler task (an agent, a process), fed this `initialize`; the
/// agent's answer is the POST's body.
async fn initialize(
    body: &[u8],
    peek: &Peek<'_>,
    head: &RequestHead,
    peer: SocketAddr,
    ctx: &ServerCtx,
) -> Result<Posted, Refusal> {
    let slot = AcpSlot::take(&ctx.shared, ctx.options.max_connections).map_err(|why| (503, why))?;
    let id = connection_id(ctx.options.instance.as_ref().map(InstanceName::as_str));
    let durable = ctx.options.durable_transport && crate::proto::cursor::asks_for_resumable(body);
    let conn = HttpConn::new(
        id.clone(),
        head.header("authorization").map(str::to_owned),
        ctx.options.max_message_size.max(1 << 20),
        StreamLimits::of(&ctx.options, durable),
        &ctx.shared.ceiling,
        None,
    );
    start(&conn, slot, head, peer, ctx);

    conn.expect_initial(peek);
    let answered = async {
        conn.push_incoming(body).await.ok()?;
        conn.initial_answer().await
    };
    let ended = async {
        conn.ended.wait().await;
        None
    };
    match future::or(answered, ended).await {
        Some(answer) if durable => {
            let retention = crate::proto::cursor::Retention {
                messages: ctx.options.replay_events,
                seconds: ctx.options.replay_age.as_secs(),
            };
            let answer = crate::proto::cursor::advertise(&answer, retention);
            Ok(Posted::Initialized { id, answer })
        }
        Some(answer) => Ok(Posted::Initialized { id, answer }),
        None => {
            conn.abort();
            Err((500, "the agent ended without answering initialize"))
        }
    }
}

/// Registers `conn` (by its id) and runs the server's handler on it in a task of its own,
/// until the handler ends, the connection goes idle, is ended (`DELETE`, or its WebSocket
/// closed) or the server stops; the connection is then dropped.
pub(crate) fn start(
    conn: &Arc<HttpConn>,
    slot: AcpSlot,
    head: &RequestHead,
    peer: SocketAddr,
    ctx: &ServerCtx,
) {
    lock_http(&ctx.shared).insert(conn.id.clone(), conn.clone());
    let connection = IncomingConnection {
        reader: ConnectionReader::new(HttpReader::new(conn.clone()), Framing::Other),
        writer: ConnectionWriter::new(http_writer(conn.clone())),
        info: ConnectionInfo {
            id: conn.id.clone(),
            peer,
            request: head.clone(),
        },
    };
    let live = Live::new(&ctx.shared);
    let work = (ctx.handler)(connection);
    let (shared, task_conn, idle) = (ctx.shared.clone(), conn.clone(), ctx.options.idle_timeout);
    smol::spawn(async move {
        let _live = live;
        let _slot = slot;
        let ended = async {
            task_conn.ended.wait().await;
        };
        let idle = idle_watch(&task_conn.activity, idle);
        future::or(
            work,
            future::or(idle, future::or(ended, shared.stop.wait())),
        )
        .await;
        lock_http(&shared).remove(&task_conn.id);
        task_conn.abort();
    })
    .detach();
}

/// `GET /acp` (no upgrade): the connection's SSE stream, or a session's with
/// `Acp-Session-Id`. One reader per stream at a time (409 for a second: the RFD has one of
/// each); messages wait in the stream's queue while nobody reads, within the connection's
/// budget. With `Last-Event-ID` the GET resumes the stream after that event, taking it over
/// from a reader the server still has (MCP's rule: the client knows that one is dead): 400
/// for an id that is not one of the stream's, 410 with a JSON-RPC error when the events
/// after it are no longer kept (409, the durable-transport proposal's refusal, to a client
/// that asked for that transport).
pub(crate) fn get(head: &RequestHead, ctx: &ServerCtx) -> Reply {
    let accepts = head
        .header("accept")
        .is_some_and(|a| a.to_ascii_lowercase().contains("text/event-stream"));
    if !accepts {
        return refused((406, "Accept must include text/event-stream"));
    }
    let conn = match find(head, ctx) {
        Ok(conn) => conn,
        Err(refusal) => return refused(refusal),
    };
    let session = head.header(SESSION_ID).map(str::trim);
    let resume = match head.header(LAST_EVENT_ID).map(str::trim) {
        None => None,
        Some(id) => match id.parse::<u64>() {
            Ok(n) if id.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => return refused((400, "Last-Event-ID is not an event id of this server")),
        },
    };
    let Some(stream) = conn.stream(session) else {
        return refused((404, "too many session streams"));
    };
    let keep_alive = ctx.options.sse_keep_alive;
    let refusal_status = if conn.durable() { 409 } else { 410 };
    let attached = EventStream::attach(
        conn,
        stream,
        resume,
        session,
        ctx.shared.clone(),
        keep_alive,
    );
    let events = match attached {
        Ok(events) => events,
        Err(AttachError::Busy) => return refused((409, "this stream already has a reader")),
        Err(AttachError::Ahead { .. }) => {
            return refused((400, "Last-Event-ID is beyond this stream's last event"));
        }
        Err(AttachError::Passed { first_kept }) => {
            let asked = resume.unwrap_or_default();
            return window_passed(asked, first_kept, &ctx.options, refusal_status);
        }
    };
    Reply {
        status: 200,
        headers: vec![
            ("Cache-Control", "no-cache".into()),
            // nginx would otherwise hold events back to fill its buffers.
            ("X-Accel-Buffering", "no".into()),
        ],
        body: ReplyBody::Events(events),
    }
}

/// The answer to a resumption after `asked` when the oldest event kept is `first_kept`:
/// `status` (`410 Gone`; `409` for a durable-transport client, whose proposal says so), and a JSON-RPC error (no id: it answers no request) that says which events are
/// lost and the window's bounds. The client cannot continue the stream without a gap; ours
/// ends the connection with this message.
pub(crate) fn window_passed(
    asked: u64,
    first_kept: u64,
    options: &ServerOptions,
    status: u16,
) -> Reply {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": REPLAY_WINDOW_PASSED,
            "message": format!(
                "the events after Last-Event-ID {asked} are no longer kept (the oldest kept is \
                 {first_kept}); the stream cannot resume without a gap"
            ),
            "data": {
                "reason": "replay_window_passed",
                "lastEventId": asked.to_string(),
                "firstKept": first_kept.to_string(),
                "windowBytes": options.replay_bytes,
                "windowSeconds": options.replay_age.as_secs(),
            },
        },
    });
    Reply {
        status,
        headers: Vec::new(),
        body: ReplyBody::Json(error.to_string().into_bytes()),
    }
}

/// `DELETE /acp`: ends the connection (its agent, its streams).
pub(crate) fn delete(head: &RequestHead, ctx: &ServerCtx) -> Reply {
    match find(head, ctx) {
        Ok(conn) => {
            lock_http(&ctx.shared).remove(&conn.id);
            conn.end_input();
            conn.ended.set();
            Reply::text(202, "")
        }
        Err(refusal) => refused(refusal),
    }
}
