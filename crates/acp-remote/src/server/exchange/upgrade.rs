//! The WebSocket side of the server: `GET /acp` with `Upgrade: websocket`.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_io::{AsyncRead, AsyncWrite};
use futures_util::Sink;
use smol::Timer;

use crate::net::NetStream;
use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::handshake::derive_accept_key;
use async_tungstenite::tungstenite::protocol::Role;
use futures_lite::future;

use crate::proto::streamable::CONNECTION_ID;
use crate::proto::ws::socket::WsStream;
use crate::proto::ws::socket::{Held, WsSocket};
use crate::proto::ws::{Activity, Shared, split_with, websocket_config};
use crate::server::conn::{AcpSlot, ConnectionInfo, IncomingConnection, ServerCtx, idle_watch};
use crate::server::exchange::reply::Reply;
use crate::server::exchange::ws_durable;
use crate::server::http::{RequestHead, connection_id};
use crate::server::options::InstanceName;
use crate::transport::{ConnectionReader, ConnectionWriter, Framing};
use futures_io::AsyncBufRead;

/// Whether a GET asks for a WebSocket.
pub(crate) fn is_upgrade(head: &RequestHead) -> bool {
    head.header_has_token("upgrade", "websocket")
}

/// An upgrade the server agreed to: the 101 to send, and what the WebSocket then runs with.
pub(crate) struct Accepted {
    slot: AcpSlot,
    id: String,
}

/// Checks the upgrade request's WebSocket headers and takes a connection slot (after the
/// exchange's policy passed it): the 101 to answer, or the refusal.
pub(crate) fn accept(head: &RequestHead, ctx: &ServerCtx) -> Result<(Reply, Accepted), Reply> {
    let key = check(head).map_err(|(status, headers, body)| {
        headers
            .iter()
            .fold(Reply::text(status, body), |reply, (name, value)| {
                reply.with_header(name, *value)
            })
    })?;
    let slot = AcpSlot::take(&ctx.shared, ctx.options.max_connections)
        .map_err(|why| Reply::text(503, why).with_header("Retry-After", "1"))?;
    let id = connection_id(ctx.options.instance.as_ref().map(InstanceName::as_str));
    let switching = Reply::text(101, "")
        .with_header("Upgrade", "websocket")
        .with_header("Connection", "Upgrade")
        .with_header("Sec-WebSocket-Accept", derive_accept_key(key.as_bytes()))
        .with_header(CONNECTION_ID, id.clone());
    Ok((switching, Accepted { slot, id }))
}

/// Runs the handler on the upgraded socket (`leftover`: what the client sent after its
/// request, already read) until it ends, goes idle, or the server stops.
pub(crate) async fn serve_websocket(
    stream: NetStream,
    leftover: Vec<u8>,
    head: RequestHead,
    peer: SocketAddr,
    accepted: Accepted,
    ctx: &ServerCtx,
) {
    let Accepted { slot, id } = accepted;
    let config = websocket_config(ctx.options.max_message_size);
    let held = Held::new(Some(ctx.shared.ws_held.clone()));
    let stream = WsSocket::new(stream, held.clone(), true);
    let ws =
        WebSocketStream::from_partially_read(stream, leftover, Role::Server, Some(config)).await;
    let ws = Arc::new(Shared::new(ws));
    let activity = Activity::new();
    let (reader, writer) = split_with(
        ws.clone(),
        Some(activity.clone()),
        Some(ctx.shared.drain.clone()),
        Some(held),
    );
    let mut reader = reader.with_keepalive(ctx.options.keepalive);
    if ctx.options.durable_transport {
        // The first message says whether the client asks for the durable transport or
        // resumes a connection (src/server/exchange/ws_durable.rs); it is only looked at here.
        let peeked = async {
            std::future::poll_fn(|cx| {
                Pin::new(&mut reader)
                    .poll_fill_buf(cx)
                    .map(|r| r.map(<[u8]>::to_vec))
            })
            .await
            .ok()
        };
        let idle = async {
            idle_watch(&activity, ctx.options.idle_timeout).await;
            None
        };
        let Some(first) = future::or(peeked, idle).await else {
            return;
        };
        let opening = ws_durable::classify(&first);
        if !matches!(opening, ws_durable::Opening::Plain) {
            let carried = async {
                match opening {
                    ws_durable::Opening::Resume { id, target } => {
                        // The connection resumed holds its own slot.
                        drop(slot);
                        ws_durable::resume(reader, writer, &head, ctx, id, target).await;
                    }
                    _ => ws_durable::open(reader, writer, slot, id, &head, peer, ctx).await,
                }
            };
            // Boxed: the durable transport's state is large, and a plain WebSocket's future
            // would otherwise keep room for it for the connection's life.
            future::or(Box::pin(carried), ctx.shared.stop.wait()).await;
            if !ctx.shared.stop.is_set() {
                linger(&ws).await;
            }
            return;
        }
    }
    let connection = IncomingConnection {
        reader: ConnectionReader::new(reader, Framing::WebSocket),
        writer: ConnectionWriter::new(writer),
        info: ConnectionInfo {
            id,
            peer,
            request: head,
        },
    };
    let _slot = slot;
    let work = (ctx.handler)(connection);
    let idle = idle_watch(&activity, ctx.options.idle_timeout);
    future::or(work, future::or(idle, ctx.shared.stop.wait())).await;
    if !ctx.shared.stop.is_set() {
        linger(&ws).await;
    }
}

/// How long a closed WebSocket's socket is kept for its close frame to reach the client.
const LINGER: Duration = Duration::from_secs(1);

/// Lets a close frame (1009 after an oversized message, or any other) reach the client
/// before the socket goes: what we queued is written, our side of the TCP connection is shut,
/// and what the client still sends is read and dropped for a moment. Closing a socket with
/// unread input would reset it, and the client could lose the close frame.
async fn linger(ws: &Shared<WsStream>) {
    let done = async {
        let _ = std::future::poll_fn(|cx| Sink::poll_flush(Pin::new(&mut *ws.lock()), cx)).await;
        let _ =
            std::future::poll_fn(|cx| Pin::new(ws.lock().get_mut().get_mut()).poll_close(cx)).await;
        // On the heap, and only now: inline, every WebSocket's future kept these 4 KiB.
        let mut sink = vec![0u8; 4096];
        loop {
            let read = std::future::poll_fn(|cx| {
                Pin::new(ws.lock().get_mut().get_mut()).poll_read(cx, &mut sink)
            });
            if !matches!(read.await, Ok(n) if n > 0) {
                return;
            }
        }
    };
    future::or(done, async {
        Timer::after(LINGER).await;
    })
    .await;
}

type Refusal = (u16, &'static [(&'static str, &'static str)], &'static str);

/// The WebSocket headers; returns the client's key.
fn check(head: &RequestHead) -> Result<String, Refusal> {
    if !head.header_has_token("connection", "upgrade") {
        return Err((
            426,
            &[("Upgrade", "websocket"), ("Connection", "Upgrade")],
            "Connection: Upgrade is missing",
        ));
    }
    if head.header("sec-websocket-version").map(str::trim) != Some("13") {
        return Err((
            426,
            &[("Sec-WebSocket-Version", "13")],
            "unsupported WebSocket version",
        ));
    }
    match head.header("sec-websocket-key").map(str::trim) {
        Some(key) if !key.is_empty() => Ok(key.to_owned()),
        _ => Err((400, &[], "missing Sec-WebSocket-Key")),
    }
}
