//! The WebSocket side of the server: `GET /acp` with `Upgrade: websocket`.

use std::net::SocketAddr;

use crate::net::NetStream;
use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::handshake::derive_accept_key;
use async_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use futures_lite::future;

use crate::conn::{AcpSlot, Connection, ConnectionInfo, ServerCtx, idle_watch};
use crate::frames::{Activity, split_with};
use crate::http::{RequestHead, connection_id, respond};
use crate::transport::{ConnectionReader, ConnectionWriter, ReaderInner, WriterInner};

/// Whether a GET asks for a WebSocket.
pub(crate) fn is_upgrade(head: &RequestHead) -> bool {
    head.header_has_token("upgrade", "websocket")
}

/// Checks the upgrade request, answers 101 (or the refusal), and runs the handler on the
/// WebSocket until it ends, goes idle, or the server stops.
pub(crate) async fn serve_websocket(
    mut stream: NetStream,
    leftover: Vec<u8>,
    head: RequestHead,
    peer: SocketAddr,
    ctx: &ServerCtx,
) {
    let key = match check(&head) {
        Ok(key) => key,
        Err((status, headers, body)) => {
            let _ = respond(&mut stream, status, headers, body).await;
            return;
        }
    };
    let Some(slot) = AcpSlot::take(&ctx.shared, ctx.options.max_connections) else {
        let _ = respond(
            &mut stream,
            503,
            &[("Retry-After", "1")],
            "too many connections\n",
        )
        .await;
        return;
    };
    let id = connection_id();
    let accept = derive_accept_key(key.as_bytes());
    let headers = [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Accept", accept.as_str()),
        ("Acp-Connection-Id", id.as_str()),
    ];
    if respond(&mut stream, 101, &headers, "").await.is_err() {
        return;
    }
    let config = websocket_config(ctx.options.max_message_size);
    let ws =
        WebSocketStream::from_partially_read(stream, leftover, Role::Server, Some(config)).await;
    let activity = Activity::new();
    let (reader, writer) = split_with(ws, Some(activity.clone()), Some(ctx.shared.drain.clone()));
    let connection = Connection {
        reader: ConnectionReader(ReaderInner::Ws(reader)),
        writer: ConnectionWriter(WriterInner::Ws(writer)),
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
}

type Refusal = (u16, &'static [(&'static str, &'static str)], &'static str);

/// The WebSocket headers; returns the client's key.
fn check(head: &RequestHead) -> Result<String, Refusal> {
    if !head.header_has_token("connection", "upgrade") {
        return Err((
            426,
            &[("Upgrade", "websocket"), ("Connection", "Upgrade")],
            "Connection: Upgrade is missing\n",
        ));
    }
    if head.header("sec-websocket-version").map(str::trim) != Some("13") {
        return Err((
            426,
            &[("Sec-WebSocket-Version", "13")],
            "unsupported WebSocket version\n",
        ));
    }
    match head.header("sec-websocket-key").map(str::trim) {
        Some(key) if !key.is_empty() => Ok(key.to_owned()),
        _ => Err((400, &[], "missing Sec-WebSocket-Key\n")),
    }
}

/// The WebSocket limits of one connection: messages and frames up to `max_message_size`, and
/// small eager buffers, since a server holds many connections that are mostly quiet.
pub(crate) fn websocket_config(max_message_size: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(16 * 1024)
        .write_buffer_size(16 * 1024)
        .max_message_size(Some(max_message_size))
        .max_frame_size(Some(max_message_size))
}
