//! One request, whichever HTTP version brought it: the server's policy (path, Origin and CORS,
//! authentication, method), then the Streamable HTTP handler, then the CORS headers of the
//! answer. HTTP/1.1 (`server/http1.rs`) and HTTP/2 (`server/http2.rs`) only parse requests
//! into a [`RequestHead`], read POST bodies through [`ReadBody`], and render the [`Reply`];
//! every rule and status code is here or in this folder:
//!
//! - `exchange/streamable.rs`: the Streamable HTTP requests (`POST`, `GET`, `DELETE`) on the
//!   connections `server/streamable/` keeps; `exchange/reply.rs`: the answer, for either
//!   HTTP version.
//! - `exchange/upgrade.rs`: `GET` with `Upgrade: websocket`, and `exchange/ws_durable.rs`, a
//!   WebSocket that carries a durable-transport connection.
//! - `exchange/health.rs` and `exchange/metrics.rs`: the operator's endpoints.

pub(crate) mod health;
#[cfg(feature = "metrics")]
mod metrics;
pub(crate) mod reply;
mod streamable;
pub(crate) mod upgrade;
mod ws_durable;

use std::net::SocketAddr;

use futures_lite::future;
use smol::Timer;

use self::streamable::TOO_LARGE;
use crate::proto::answer_scan::AnswerScan;
use crate::queue::Reservation;
use crate::server::conn::ServerCtx;
use crate::server::exchange::reply::Reply;
use crate::server::http::RequestHead;
use crate::server::options::ServerOptions;
use crate::server::streamable::{HttpConn, Refusal};
use crate::share::Share;

/// The methods of the endpoint, as `Allow` and `Access-Control-Allow-Methods` list them.
const METHODS: &str = "GET, POST, DELETE";

/// The request headers a browser may send cross-origin (beyond the CORS-safelisted ones).
const ALLOW_HEADERS: &str =
    "Content-Type, Authorization, Accept, Acp-Connection-Id, Acp-Session-Id, Last-Event-ID";

/// The answer headers a browser script may read cross-origin.
const EXPOSE_HEADERS: &str = "Acp-Connection-Id, Acp-Session-Id";

/// How long a browser may cache a preflight's answer, in seconds.
const PREFLIGHT_MAX_AGE: &str = "600";

/// Headers with one meaning, refused (400) when repeated with differing values.
const SINGLE_HEADERS: &[&str] = &[
    "host",
    "authorization",
    "content-type",
    "content-length",
    "origin",
    "acp-connection-id",
    "acp-session-id",
    "last-event-id",
    "sec-websocket-key",
    "sec-websocket-version",
];

/// The headers the server reads: a value that is not UTF-8 refuses the request (400).
pub(crate) const MEANINGFUL: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "content-type",
    "connection",
    "upgrade",
    "expect",
    "authorization",
    "origin",
    "accept",
    "acp-connection-id",
    "acp-session-id",
    "last-event-id",
    "sec-websocket-key",
    "sec-websocket-version",
];

/// The answer to a request with a header of [`MEANINGFUL`] that is not UTF-8: a header we
/// read must say what it says (one we could not read might frame or route the request
/// differently for another party).
pub(crate) fn unreadable_header(name: &str) -> Reply {
    Reply::text(400, &format!("a {name} header that is not UTF-8"))
}

/// Why a POST's body was not read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Answered with this status (411 from HTTP/1.1 framing, 501 for another coding).
    Refused(Refusal),
    /// Over the limit (413).
    TooLarge,
    /// No room for it in the budget of bodies arriving ([`NO_ROOM`], 413 at once).
    NoRoom,
    /// The peer went away, or was too slow: no answer.
    Gone,
}

/// A POST's body, as the HTTP version carrying it reads it: piece by piece, so that what is
/// kept of it is bounded here, while it arrives, the same way for both versions.
pub(crate) trait ReadBody {
    /// Begins reading the body of `head` (HTTP/1.1: its framing checked, `100 Continue`
    /// sent when the client waits for it).
    async fn start(&mut self, head: &RequestHead) -> Result<(), BodyError>;
    /// The next piece of the body; `None` at its end.
    async fn next(&mut self) -> Result<Option<Vec<u8>>, BodyError>;
}

/// The largest body of a POST that names no connection: it can only be `initialize`, which
/// is small, and it arrives before anything about the client is known.
const MAX_INITIAL_BODY: usize = 1 << 20;

/// An `initialize` body announced at most this long is taken without drawing on the
/// server's pool of them: every client's own (a few hundred bytes) gets in however slow
/// bodies hold the pool, and these cost at most this much per socket.
const SMALL_INITIAL_BODY: usize = 16 * 1024;

/// The budget an `initialize` body is read in: its own for a small one, the server's pool
/// (16 MiB of them arriving at once) for a larger or unannounced one.
fn initial_budget(head: &RequestHead, ctx: &ServerCtx) -> Share {
    let small = head
        .header("content-length")
        .and_then(|n| n.trim().parse::<usize>().ok())
        .is_some_and(|n| n <= SMALL_INITIAL_BODY);
    if small {
        Share::alone(SMALL_INITIAL_BODY)
    } else {
        ctx.shared.initial_bodies.clone()
    }
}

/// Reads a POST's body within `limit` bytes, each piece counted against `budget` as it
/// arrives (waiting for room while the budget is spent). Over the limit, what was read goes
/// through `scan` (when given) before it is dropped.
/// A body refused because the bytes its connection may have arriving at once (or those of
/// every `initialize` together, or the server's memory ceiling under its share rule) are
/// taken by others: 413 at once, never a wait (the agent's request it answers, when it
/// answers one, fails with this reason as for [`TOO_LARGE`]).
const NO_ROOM: (u16, &str) = (
    413,
    "no room for this body now (its connection's bodies or the server's memory ceiling): send it again later",
);

async fn read_body(
    head: &RequestHead,
    body: &mut impl ReadBody,
    limit: usize,
    budget: &Share,
    scan: Option<&mut AnswerScan>,
) -> Result<(Vec<u8>, Reservation), BodyError> {
    body.start(head).await?;
    let mut reserved = Reservation::new(budget.clone());
    // A body is admitted whole or not at all, never waiting for room: two bodies that each
    // held part of the budget while waiting for the rest would wait for each other. With a
    // length, all of it is taken before a byte is read; without (chunks), each piece as it
    // comes, and the first that does not fit refuses the body.
    let announced = head
        .header("content-length")
        .and_then(|n| n.trim().parse::<usize>().ok())
        .filter(|&n| n <= limit);
    if let Some(length) = announced
        && !reserved.try_take(length)
    {
        return Err(BodyError::NoRoom);
    }
    let mut data = Vec::new();
    while let Some(piece) = body.next().await? {
        if data.len().saturating_add(piece.len()) > limit {
            if let Some(scan) = scan {
                scan.feed(&data);
                scan.feed(&piece);
            }
            return Err(BodyError::TooLarge);
        }
        let covered = announced.is_some_and(|length| data.len() + piece.len() <= length);
        if !covered && !reserved.try_take(piece.len()) {
            if let Some(scan) = scan {
                scan.feed(&data);
                scan.feed(&piece);
            }
            return Err(BodyError::NoRoom);
        }
        data.extend_from_slice(&piece);
    }
    Ok((data, reserved))
}

/// Reads the rest of a refused body through `scan` until it decides or the body ends: one
/// piece at a time, counted in `budget` while it is looked at and then dropped (a piece the
/// ceiling refuses ends the scan), so that a refused body of any size costs one piece of
/// memory.
async fn scan_rest(body: &mut impl ReadBody, scan: &mut AnswerScan, budget: &Share) {
    while !scan.is_decided() {
        let Ok(Some(piece)) = body.next().await else {
            return;
        };
        let mut reserved = Reservation::new(budget.clone());
        // Over its share of the ceiling: the rest is not looked at, and the agent's request
        // waits as for an answer never sent.
        if !reserved.take(piece.len()).await {
            return;
        }
        scan.feed(&piece);
    }
}

/// A POST refused from its head (too large, not JSON) on a connection whose agent waits for
/// answers: its body is read through an [`AnswerScan`] (piece by piece, counted in the
/// connection's budget, within the handshake timeout, never kept) to find whether it answers
/// one of them, which then fails with the reason instead of waiting for ever.
async fn fail_refused_answer(
    head: &RequestHead,
    body: &mut impl ReadBody,
    conn: &HttpConn,
    reason: &str,
    options: &ServerOptions,
) {
    let mut scan = AnswerScan::new();
    let read = async {
        if body.start(head).await.is_ok() {
            scan_rest(body, &mut scan, &conn.inbound_budget()).await;
        }
    };
    let timeout = async {
        Timer::after(options.handshake_timeout).await;
    };
    future::or(read, timeout).await;
    if let Some(id) = scan.answer_id() {
        conn.fail_answer(id, reason).await;
    }
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

/// Serves one request: the policy every request meets, in order (path, Origin, a CORS
/// preflight, authentication, method), then its handler. `websocket` says whether the request
/// may become a WebSocket (HTTP/1.1 only).
pub(crate) async fn handle(
    head: &RequestHead,
    peer: SocketAddr,
    body: &mut impl ReadBody,
    websocket: bool,
    ctx: &ServerCtx,
) -> Outcome {
    if let Some(reply) = crate::server::exchange::health::serve(head, ctx) {
        return Outcome::Reply(reply);
    }
    let outcome = route(head, peer, body, websocket, ctx).await;
    match outcome {
        Outcome::Reply(reply) => {
            ctx.shared.ops.answered(reply.status);
            Outcome::Reply(with_cors(head, &ctx.options, reply))
        }
        other => other,
    }
}

async fn route(
    head: &RequestHead,
    peer: SocketAddr,
    body: &mut impl ReadBody,
    websocket: bool,
    ctx: &ServerCtx,
) -> Outcome {
    let options = &ctx.options;
    if let Some(name) = head.repeated_header(SINGLE_HEADERS) {
        // Two differing values of a header that has one meaning: whichever we took, another
        // party (a proxy, the hook) may have taken the other.
        return Outcome::Reply(Reply::text(400, &format!("repeated {name} header")));
    }
    if head.path() != options.path {
        return Outcome::Reply(Reply::text(404, "not found"));
    }
    if !options.origin_allowed(head) {
        return Outcome::Reply(Reply::text(403, "origin not allowed"));
    }
    if head.method() == "OPTIONS" {
        // Browsers never send credentials on a preflight: it is answered before
        // authentication, and says only what the endpoint accepts.
        return Outcome::Reply(Reply::text(204, "").with_header("Allow", METHODS));
    }
    if !options.authenticated(head) {
        return Outcome::Reply(
            Reply::text(401, "authentication required").with_header("WWW-Authenticate", "Bearer"),
        );
    }
    let reply = match head.method() {
        "GET" if websocket && crate::server::exchange::upgrade::is_upgrade(head) => {
            return Outcome::Upgrade;
        }
        "GET" => streamable::get(head, ctx),
        "POST" => {
            // Everything the head can refuse is refused before a byte of the body is read:
            // its type and announced length, and the connection it names (unknown, or opened
            // with other credentials).
            let (limit, budget, conn) = match streamable::check_post_head(head, ctx) {
                Ok(Some(conn)) => (options.max_message_size, conn.inbound_budget(), Some(conn)),
                Ok(None) => (
                    MAX_INITIAL_BODY.min(options.max_message_size),
                    initial_budget(head, ctx),
                    None,
                ),
                Err((status, text)) => {
                    if let Some(conn) = streamable::awaiting_conn(head, ctx) {
                        fail_refused_answer(head, body, &conn, text, options).await;
                    }
                    return Outcome::Reply(Reply::text(status, text));
                }
            };
            // A client has the handshake timeout to send its body, as for a request head. A
            // body over the limit is still looked through, within the same time, for the
            // agent's request it answers (when the agent waits for one).
            let (mut scan, mut over) = (AnswerScan::new(), false);
            let awaited = conn.as_ref().is_some_and(|conn| conn.awaits_answers());
            let read = async {
                let into = awaited.then_some(&mut scan);
                let read = read_body(head, body, limit, &budget, into).await;
                if matches!(read, Err(BodyError::TooLarge | BodyError::NoRoom)) {
                    over = true;
                    if awaited {
                        scan_rest(body, &mut scan, &budget).await;
                    }
                }
                Some(read)
            };
            let timeout = async {
                Timer::after(options.handshake_timeout).await;
                None
            };
            // (Bound first: the future borrows `scan` and `over`.)
            let read = future::or(read, timeout).await;
            match read {
                Some(Ok((body, reserved))) => {
                    streamable::post(&body, reserved, head, peer, ctx).await
                }
                Some(Err(BodyError::Refused((status, text)))) => Reply::text(status, text),
                Some(Err(BodyError::NoRoom)) => {
                    if let (Some(conn), Some(id)) = (&conn, scan.answer_id()) {
                        conn.fail_answer(id, NO_ROOM.1).await;
                    }
                    Reply::text(NO_ROOM.0, NO_ROOM.1)
                }
                Some(Err(BodyError::TooLarge)) | None if over => {
                    if let (Some(conn), Some(id)) = (&conn, scan.answer_id()) {
                        conn.fail_answer(id, TOO_LARGE.1).await;
                    }
                    Reply::text(TOO_LARGE.0, TOO_LARGE.1)
                }
                Some(Err(BodyError::TooLarge | BodyError::Gone)) | None => return Outcome::Drop,
            }
        }
        "DELETE" => streamable::delete(head, ctx),
        _ => Reply::text(405, "method not allowed").with_header("Allow", METHODS),
    };
    Outcome::Reply(reply)
}

/// The CORS headers of an answer to an allowed browser Origin (a disallowed one never gets
/// this far: 403, without them).
fn with_cors(head: &RequestHead, options: &ServerOptions, mut reply: Reply) -> Reply {
    let Some(origin) = head.header("origin") else {
        return reply;
    };
    if !options.origin_allowed(head) {
        return reply;
    }
    reply
        .headers
        .push(("Access-Control-Allow-Origin", origin.trim().to_owned()));
    reply.headers.push(("Vary", "Origin".into()));
    if head.method() == "OPTIONS" {
        reply
            .headers
            .push(("Access-Control-Allow-Methods", METHODS.into()));
        reply
            .headers
            .push(("Access-Control-Allow-Headers", ALLOW_HEADERS.into()));
        reply
            .headers
            .push(("Access-Control-Max-Age", PREFLIGHT_MAX_AGE.into()));
    } else {
        reply
            .headers
            .push(("Access-Control-Expose-Headers", EXPOSE_HEADERS.into()));
    }
    reply
}
