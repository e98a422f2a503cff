//! The Streamable HTTP requests: `POST` a message, `GET` a stream of Server-Sent Events,
//! `DELETE` the connection. Status codes follow the RFD's routing section; where it is silent
//! (an `initialize` the agent does not answer, a second reader of one stream), they follow the
//! TypeScript SDK's `AcpServer` or say why not.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::net::NetStream;
use futures_lite::{AsyncWriteExt, future};
use smol::Timer;

use super::{HttpConn, HttpReader, HttpWriter, Peek, Refusal};
use crate::conn::{AcpSlot, Connection, ConnectionInfo, Live, ServerCtx, idle_watch, lock_http};
use crate::http::{RequestHead, connection_id, read_body, respond, respond_with};
use crate::transport::{ConnectionReader, ConnectionWriter, ReaderInner, WriterInner};

const CONNECTION_ID: &str = "acp-connection-id";
const SESSION_ID: &str = "acp-session-id";

/// How often an idle SSE stream gets a comment, so that proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Up to how many bytes of queued events one write carries.
const BATCH_BYTES: usize = 64 * 1024;

/// The connection a request names, if it exists and the request may use it: 400 without the
/// header, 404 for an unknown id (or one opened with other credentials: the same answer, so
/// that an id reveals nothing).
fn find(head: &RequestHead, ctx: &ServerCtx) -> Result<Arc<HttpConn>, Refusal> {
    let id = head
        .header(CONNECTION_ID)
        .ok_or((400, "missing Acp-Connection-Id"))?;
    let conn = lock_http(&ctx.shared).get(id.trim()).cloned();
    conn.filter(|c| c.authorizes(head.header("authorization")))
        .ok_or((404, "unknown Acp-Connection-Id"))
}

async fn refuse(stream: &mut NetStream, (status, text): Refusal) {
    let _ = respond(stream, status, &[], &format!("{text}\n")).await;
}

/// `POST /acp`: one JSON-RPC message. `initialize` opens a connection and is answered in the
/// body (200, `Acp-Connection-Id`); anything else is queued for the agent and answered 202,
/// its answer coming on a GET stream. Returns whether the socket may carry another request.
pub(crate) async fn handle_post(
    stream: &mut NetStream,
    buf: &mut Vec<u8>,
    head: RequestHead,
    peer: SocketAddr,
    ctx: &ServerCtx,
) -> bool {
    let json = head
        .header("content-type")
        .and_then(|t| t.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        refuse(stream, (415, "Content-Type must be application/json")).await;
        return false;
    }
    if head.header("transfer-encoding").is_some() {
        refuse(stream, (411, "send the body with a Content-Length")).await;
        return false;
    }
    let Some(len) = head
        .header("content-length")
        .and_then(|l| l.trim().parse::<usize>().ok())
    else {
        refuse(stream, (411, "Content-Length required")).await;
        return false;
    };
    if len > ctx.options.max_message_size {
        refuse(stream, (413, "message larger than the server accepts")).await;
        return false;
    }
    if head.header_has_token("expect", "100-continue")
        && stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .is_err()
    {
        return false;
    }
    let body = match future::or(async { Some(read_body(stream, buf, len).await) }, async {
        Timer::after(ctx.options.handshake_timeout).await;
        None
    })
    .await
    {
        Some(Ok(body)) => body,
        _ => return false,
    };
    let keep_alive = !head.header_has_token("connection", "close");
    let result = post(&body, &head, peer, ctx).await;
    let written = match result {
        Ok(Posted::Accepted) => respond_with(stream, 202, &[], "", b"", keep_alive).await,
        Ok(Posted::Initialized { id, answer }) => {
            let headers = [("Acp-Connection-Id", id.as_str())];
            respond_with(
                stream,
                200,
                &headers,
                "application/json",
                &answer,
                keep_alive,
            )
            .await
        }
        Err((status, text)) => {
            let body = format!("{text}\n");
            let text_plain = "text/plain; charset=utf-8";
            respond_with(stream, status, &[], text_plain, body.as_bytes(), keep_alive).await
        }
    };
    written.is_ok() && keep_alive
}

enum Posted {
    Accepted,
    Initialized { id: String, answer: Vec<u8> },
}

async fn post(
    body: &[u8],
    head: &RequestHead,
    peer: SocketAddr,
    ctx: &ServerCtx,
) -> Result<Posted, Refusal> {
    if body.trim_ascii_start().starts_with(b"[") {
        return Err((501, "batch JSON-RPC requests are not implemented"));
    }
    let peek: Peek<'_> = serde_json::from_slice(body).map_err(|_| (400, "invalid JSON"))?;
    if !peek.is_jsonrpc() {
        return Err((400, "not a JSON-RPC 2.0 message"));
    }
    if peek.is_initialize() {
        if head.header(CONNECTION_ID).is_some() {
            return Err((400, "initialize is not allowed on an existing connection"));
        }
        return initialize(body, &peek, head, peer, ctx).await;
    }
    let conn = find(head, ctx)?;
    conn.accept_incoming(&peek, head.header(SESSION_ID).map(str::trim))?;
    conn.push_incoming(body)
        .await
        .map_err(|()| (404, "the connection has ended"))?;
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
    let Some(slot) = AcpSlot::take(&ctx.shared, ctx.options.max_connections) else {
        return Err((503, "too many connections"));
    };
    let id = connection_id();
    let conn = HttpConn::new(
        id.clone(),
        head.header("authorization").map(str::to_owned),
        ctx.options.max_message_size.max(1 << 20),
        ctx.options.stream_budget,
    );
    lock_http(&ctx.shared).insert(id.clone(), conn.clone());
    let connection = Connection {
        reader: ConnectionReader(ReaderInner::Http(HttpReader::new(conn.clone()))),
        writer: ConnectionWriter(WriterInner::Http(HttpWriter::new(conn.clone()))),
        info: ConnectionInfo {
            id: id.clone(),
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
        Some(answer) => Ok(Posted::Initialized { id, answer }),
        None => {
            conn.abort();
            Err((500, "the agent ended without answering initialize"))
        }
    }
}

/// `GET /acp` (no upgrade): the connection's SSE stream, or a session's with
/// `Acp-Session-Id`. One reader per stream at a time (409 for a second: the RFD has one of
/// each); messages wait in the stream's queue while nobody reads, within the connection's
/// budget.
pub(crate) async fn handle_get(mut stream: NetStream, head: RequestHead, ctx: &ServerCtx) {
    let accepts = head
        .header("accept")
        .is_some_and(|a| a.to_ascii_lowercase().contains("text/event-stream"));
    if !accepts {
        return refuse(&mut stream, (406, "Accept must include text/event-stream")).await;
    }
    let conn = match find(&head, ctx) {
        Ok(conn) => conn,
        Err(refusal) => return refuse(&mut stream, refusal).await,
    };
    let session = head.header(SESSION_ID).map(str::trim);
    let Some(queue) = conn.stream(session) else {
        return refuse(&mut stream, (404, "too many session streams")).await;
    };
    if !queue.attach() {
        return refuse(&mut stream, (409, "this stream already has a reader")).await;
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_ok() && stream.flush().await.is_ok() {
        let _ = pump(&mut stream, &conn, &queue, ctx).await;
    }
    queue.detach();
}

/// Writes each message of `queue` as an SSE event (one chunk each) until the queue ends.
async fn pump(
    stream: &mut NetStream,
    conn: &HttpConn,
    queue: &super::queue::ByteQueue,
    ctx: &ServerCtx,
) -> std::io::Result<()> {
    loop {
        let next = async { Some(queue.pop().await) };
        let keep_alive = async {
            Timer::after(KEEP_ALIVE).await;
            None
        };
        let stopped = async {
            future::or(conn.ended.wait(), ctx.shared.stop.wait()).await;
            Some(None)
        };
        match future::or(next, future::or(keep_alive, stopped)).await {
            None => write_chunk(stream, b":\n\n").await?,
            Some(None) => return write_last_chunk(stream).await,
            Some(Some(first)) => {
                // What is queued already goes out in the same write: a burst of updates costs
                // one system call, not one each.
                let mut messages = vec![first];
                let mut size = messages[0].len();
                while size < BATCH_BYTES {
                    match future::poll_once(queue.pop()).await {
                        Some(Some(message)) => {
                            size += message.len();
                            messages.push(message);
                        }
                        _ => break,
                    }
                }
                let mut events = Vec::with_capacity(size + 8 * messages.len());
                for message in &messages {
                    events.extend_from_slice(b"data: ");
                    events.extend_from_slice(message);
                    events.extend_from_slice(b"\n\n");
                }
                if let Err(error) = write_chunk(stream, &events).await {
                    // Not delivered: the next reader of this stream gets them, in order.
                    for message in messages.into_iter().rev() {
                        queue.unpop(message);
                    }
                    return Err(error);
                }
                conn.activity.touch();
            }
        }
    }
}

async fn write_chunk(stream: &mut NetStream, data: &[u8]) -> std::io::Result<()> {
    let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
    chunk.extend_from_slice(data);
    chunk.extend_from_slice(b"\r\n");
    stream.write_all(&chunk).await?;
    stream.flush().await
}

async fn write_last_chunk(stream: &mut NetStream) -> std::io::Result<()> {
    stream.write_all(b"0\r\n\r\n").await?;
    stream.flush().await
}

/// `DELETE /acp`: ends the connection (its agent, its streams). Returns whether the socket
/// may carry another request.
pub(crate) async fn handle_delete(
    stream: &mut NetStream,
    head: &RequestHead,
    ctx: &ServerCtx,
) -> bool {
    let keep_alive = !head.header_has_token("connection", "close");
    let (status, text) = match find(head, ctx) {
        Ok(conn) => {
            lock_http(&ctx.shared).remove(&conn.id);
            conn.end_input();
            conn.ended.set();
            (202, "")
        }
        Err(refusal) => refusal,
    };
    let body = if text.is_empty() {
        String::new()
    } else {
        format!("{text}\n")
    };
    let text_plain = "text/plain; charset=utf-8";
    respond_with(stream, status, &[], text_plain, body.as_bytes(), keep_alive)
        .await
        .is_ok()
        && keep_alive
}
