//! HTTP/1.1 on one socket, through hyper's server on smol (`rt.rs`): requests one after the
//! other (kept alive between POSTs, DELETEs and preflights), each served by
//! [`exchange::handle`] exactly as an HTTP/2 stream is; a WebSocket upgrade, once the exchange
//! and [`upgrade::accept`] agreed to it, handed over by `hyper::upgrade` with the socket itself
//! (what hyper read past the request comes along). hyper parses heads and frames bodies
//! (`Content-Length`, chunks, `100 Continue`) and refuses what is malformed (400), a head
//! beyond `max_head_size` (431) and differing lengths; this module decides no status.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_lite::future;
use hyper::body::Incoming;
use hyper::header::{CONNECTION, HeaderValue};
use hyper::upgrade::OnUpgrade;

use crate::net::NetStream;
use crate::rt;
use crate::server::conn::ServerCtx;
use crate::server::exchange::upgrade::{self, Accepted};
use crate::server::exchange::{self, Outcome};
use crate::server::http::RequestHead;
use crate::server::served::{self, ReplyStream, RequestBody};

/// A WebSocket the server answered 101 to: the socket is taken over once hyper wrote it.
struct Pending {
    on_upgrade: OnUpgrade,
    head: RequestHead,
    accepted: Accepted,
}

type Slot = Arc<Mutex<Option<Pending>>>;

/// Serves requests on `stream`; `read_first` holds what was read of it already.
pub(crate) async fn serve(
    stream: NetStream,
    read_first: Vec<u8>,
    peer: SocketAddr,
    ctx: &Arc<ServerCtx>,
) {
    let upgrade = Slot::default();
    let service = {
        let (ctx, upgrade) = (ctx.clone(), upgrade.clone());
        hyper::service::service_fn(move |request| {
            let (ctx, upgrade) = (ctx.clone(), upgrade.clone());
            async move { answer(request, peer, &ctx, &upgrade).await }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // A client has the head timeout to send each request head (hyper counts it from when it
    // waits for one: on a kept-alive socket, it bounds the wait between requests too); hyper's
    // read buffer (the head's bound) cannot be smaller than 8 KiB.
    builder
        .timer(rt::Timer)
        .header_read_timeout(ctx.options.head_timeout)
        // Header names as most HTTP/1.1 peers write them (`Sec-WebSocket-Accept`).
        .title_case_headers(true)
        .max_buf_size(ctx.options.max_head_size.max(8192));
    // hyper's connection and the WebSocket served after it each in a box of their own,
    // allocated while it runs: inline, the socket's task kept room for both for its life
    // (measured in docs/performance-remote.md, "Memory per connection, profiled").
    let connection = Box::pin(
        builder
            .serve_connection(rt::Io::new(stream, read_first), service)
            .with_upgrades(),
    );
    let served = async { connection.await.is_ok() };
    let stopped = async {
        ctx.shared.stop.wait().await;
        false
    };
    if !future::or(served, stopped).await {
        return;
    }
    let Some(pending) = upgrade.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return;
    };
    let Ok(upgraded) = pending.on_upgrade.await else {
        return;
    };
    let Ok(parts) = upgraded.downcast::<rt::Io>() else {
        return;
    };
    // What hyper read past the request comes first, then what it had not read yet. Both are
    // copied out and let go of here: hyper's read buffer (8 KiB) would otherwise live as long
    // as the WebSocket does.
    let hyper::upgrade::Parts { io, read_buf, .. } = parts;
    let (stream, rest) = io.into_parts();
    let mut leftover = read_buf.to_vec();
    leftover.extend_from_slice(&rest);
    drop((read_buf, rest));
    Box::pin(upgrade::serve_websocket(
        stream,
        leftover,
        pending.head,
        peer,
        pending.accepted,
        ctx,
    ))
    .await;
}

/// One request. A request left without an answer (the peer left, or was too slow sending its
/// body) closes the socket.
async fn answer(
    mut request: hyper::Request<Incoming>,
    peer: SocketAddr,
    ctx: &ServerCtx,
    upgrade: &Slot,
) -> io::Result<hyper::Response<ReplyStream>> {
    let on_upgrade = hyper::upgrade::on(&mut request);
    let (parts, body) = request.into_parts();
    let head = match served::head_of(&parts) {
        Ok(head) => head,
        Err(name) => {
            return Ok(close(served::render(
                exchange::unreadable_header(&name),
                Box::new(()),
            )));
        }
    };
    let mut body = RequestBody::new(body, true);
    // Boxed, so that what hyper keeps of a served request (its future's room, for the
    // socket's life) is small: a request's exchange is large and brief.
    let reply = match Box::pin(exchange::handle(&head, peer, &mut body, true, ctx)).await {
        Outcome::Drop => return Err(io::ErrorKind::ConnectionAborted.into()),
        Outcome::Upgrade => match upgrade::accept(&head, ctx) {
            Ok((switching, accepted)) => {
                *upgrade.lock().unwrap_or_else(|e| e.into_inner()) = Some(Pending {
                    on_upgrade,
                    head,
                    accepted,
                });
                return Ok(served::render(switching, Box::new(())));
            }
            Err(refused) => refused,
        },
        Outcome::Reply(reply) => reply,
    };
    // A GET is a WebSocket or an SSE stream, which takes the socket over: refused, it ends
    // it too, as a WebSocket client that reads until the close expects. Other methods (POST,
    // DELETE, preflights) share kept-alive sockets once their body is read; a body left
    // unread ends the socket, so that none of it is ever read as a request.
    let keep_alive = matches!(head.method(), "POST" | "DELETE" | "OPTIONS") && body.consumed();
    let response = served::render(reply, Box::new(()));
    Ok(if keep_alive {
        response
    } else {
        close(response)
    })
}

/// The socket ends after this answer.
fn close(mut response: hyper::Response<ReplyStream>) -> hyper::Response<ReplyStream> {
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}
