//! One request, whichever HTTP version brought it: the server's policy (path, Origin,
//! authentication, method), then the Streamable HTTP handler. HTTP/1.1 (`http1.rs`) and HTTP/2 (`http2/`) only parse requests into a
//! [`RequestHead`], read POST bodies through [`ReadBody`], and render the [`Reply`]; every
//! rule and status code is here or in `streamable/handlers.rs`.

use std::net::SocketAddr;

use futures_lite::future;
use smol::Timer;

use crate::conn::ServerCtx;
use crate::http::RequestHead;
use crate::streamable::Refusal;
use crate::streamable::handlers;
use crate::streamable::reply::Reply;

/// The methods of the endpoint, as `Allow` lists them.
const METHODS: &str = "GET, POST, DELETE";

/// Why a POST's body was not read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Answered with this status (411 from HTTP/1.1 framing, 413 for a body over the limit).
    Refused(Refusal),
    /// The peer went away, or was too slow: no answer.
    Gone,
}

/// A POST's body, as the HTTP version carrying it reads it.
pub(crate) trait ReadBody {
    /// The whole body, at most `max` bytes; `announced` is its `Content-Length`, already
    /// checked against `max`.
    async fn read(
        &mut self,
        head: &RequestHead,
        announced: Option<usize>,
        max: usize,
    ) -> Result<Vec<u8>, BodyError>;
}

/// What became of a request.
#[derive(Debug)]
pub(crate) enum Outcome {
    Reply(Reply),
    /// A WebSocket upgrade that passed the policy: the HTTP/1.1 connection is handed over.
    Upgrade,
    /// Nothing to answer (the peer left, or was too slow sending its body).
    Drop,
}

/// Serves one request: the policy every request meets, in order (path, Origin,
/// authentication, method), then its handler. `websocket` says whether the request
/// may become a WebSocket (HTTP/1.1 only).
pub(crate) async fn handle(
    head: &RequestHead,
    peer: SocketAddr,
    body: &mut impl ReadBody,
    websocket: bool,
    ctx: &ServerCtx,
) -> Outcome {
    let options = &ctx.options;
    if head.path() != options.path {
        return Outcome::Reply(Reply::text(404, "not found"));
    }
    if !options.origin_allowed(head) {
        return Outcome::Reply(Reply::text(403, "origin not allowed"));
    }
    if !options.authenticated(head) {
        return Outcome::Reply(
            Reply::text(401, "authentication required").with_header("WWW-Authenticate", "Bearer"),
        );
    }
    let reply = match head.method() {
        "GET" if websocket && crate::upgrade::is_upgrade(head) => return Outcome::Upgrade,
        "GET" => handlers::get(head, ctx),
        "POST" => {
            let announced = match handlers::check_post_head(head, options.max_message_size) {
                Ok(announced) => announced,
                Err((status, text)) => return Outcome::Reply(Reply::text(status, text)),
            };
            // A client has the handshake timeout to send its body, as for a request head.
            let read = async { Some(body.read(head, announced, options.max_message_size).await) };
            let timeout = async {
                Timer::after(options.handshake_timeout).await;
                None
            };
            match future::or(read, timeout).await {
                Some(Ok(body)) => handlers::post(&body, head, peer, ctx).await,
                Some(Err(BodyError::Refused((status, text)))) => Reply::text(status, text),
                Some(Err(BodyError::Gone)) | None => return Outcome::Drop,
            }
        }
        "DELETE" => handlers::delete(head, ctx),
        _ => Reply::text(405, "method not allowed").with_header("Allow", METHODS),
    };
    Outcome::Reply(reply)
}
