//! HTTP/2 (the `http2` feature), so that one TCP connection carries a client's POSTs and its
//! long-lived SSE GETs together, as the RFD asks: hyper's server, on smol through [`rt`](crate::rt).
//! Reached with prior knowledge in the clear (h2c: the connection preface, RFC 9113 3.3; the
//! `Upgrade: h2c` dance is deprecated and not offered) and by ALPN (`h2`) under TLS. Each
//! stream is one request for [`exchange::handle`], exactly as on HTTP/1.1; this module only
//! converts requests and replies. WebSocket stays on HTTP/1.1 (no RFC 8441).

use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_lite::{AsyncReadExt, future};
use hyper::body::Incoming;
use smol::Timer;

use crate::net::NetStream;
use crate::proto::ws::Activity;
use crate::rt;
use crate::server::conn::ServerCtx;
use crate::server::exchange::{self, Outcome};
use crate::server::options::ServerOptions;
use crate::server::served::{self, ReplyStream, RequestBody};

/// What a client sends first on an HTTP/2 connection (RFC 9113, 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Streams open at once on one connection. A client needs its connection's stream, one per
/// session it follows, and its POSTs in flight; a browser also shares one connection between
/// its tabs. RFC 9113 advises no fewer than 100.
const MAX_STREAMS: u32 = 256;

/// What one stream may hold of our output beyond what the client's window lets out: one SSE
/// batch. Messages wait in their connection's bounded queues, not in h2's buffers.
const SEND_BUFFER: usize = 64 * 1024;

/// Pings on a connection quiet for this long, so that a peer gone without a word frees all
/// its streams at once.
const PING_INTERVAL: Duration = Duration::from_secs(60);
const PING_TIMEOUT: Duration = Duration::from_secs(20);

/// Which HTTP a new connection speaks.
pub(crate) enum Detected {
    /// HTTP/2, with the bytes read while finding out.
    Http2(NetStream, Vec<u8>),
    /// HTTP/1.1, with the bytes read while finding out.
    Http1(NetStream, Vec<u8>),
    /// The client left, or did not show which within the head timeout.
    Gone,
}

/// Under TLS, what ALPN chose; in the clear, whether the first bytes are the HTTP/2 preface
/// (no HTTP/1.1 request starts like it: `PRI` is no method of ours).
pub(crate) async fn detect(mut stream: NetStream, options: &ServerOptions) -> Detected {
    if stream.is_tls() {
        return if stream.negotiated_h2() {
            Detected::Http2(stream, Vec::new())
        } else {
            Detected::Http1(stream, Vec::new())
        };
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    // Telling HTTP/2 from HTTP/1.1 reads the start of a head: it has the head's deadline.
    let deadline = Timer::after(options.head_timeout);
    let mut deadline = pin!(deadline);
    loop {
        let read = async { Some(stream.read(&mut chunk).await) };
        let timeout = async {
            deadline.as_mut().await;
            None
        };
        let n = match future::or(read, timeout).await {
            Some(Ok(n)) if n > 0 => n,
            _ => return Detected::Gone,
        };
        buf.extend_from_slice(&chunk[..n]);
        let seen = buf.len().min(PREFACE.len());
        if buf[..seen] != PREFACE[..seen] {
            return Detected::Http1(stream, buf);
        }
        if seen == PREFACE.len() {
            return Detected::Http2(stream, buf);
        }
    }
}

/// Streams open on one connection, and when that last changed: a connection without streams
/// is closed after the handshake timeout, as an HTTP/1.1 socket between requests.
#[derive(Debug)]
struct Streams {
    open: AtomicUsize,
    activity: Arc<Activity>,
}

/// One open stream, until its answer is sent (or the stream reset).
struct StreamGuard(Arc<Streams>);

impl StreamGuard {
    fn new(streams: &Arc<Streams>) -> StreamGuard {
        streams.open.fetch_add(1, Ordering::SeqCst);
        streams.activity.touch();
        StreamGuard(streams.clone())
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.activity.touch();
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves an HTTP/2 connection until the client closes it, it stays without streams for the
/// handshake timeout (or any time during a shutdown), or the server stops.
pub(crate) async fn serve(
    stream: NetStream,
    read_first: Vec<u8>,
    peer: SocketAddr,
    ctx: &Arc<ServerCtx>,
) {
    let streams = Arc::new(Streams {
        open: AtomicUsize::new(0),
        activity: Activity::new(),
    });
    let service = {
        let (ctx, streams) = (ctx.clone(), streams.clone());
        hyper::service::service_fn(move |request| {
            let guard = StreamGuard::new(&streams);
            let ctx = ctx.clone();
            async move { answer(request, peer, &ctx, guard).await }
        })
    };
    let mut builder = hyper::server::conn::http2::Builder::new(rt::Spawn);
    builder
        .timer(rt::Timer)
        .max_concurrent_streams(MAX_STREAMS)
        .max_header_list_size(u32::try_from(ctx.options.max_head_size).unwrap_or(u32::MAX))
        .max_send_buf_size(SEND_BUFFER)
        .keep_alive_interval(PING_INTERVAL)
        .keep_alive_timeout(PING_TIMEOUT);
    let connection = builder.serve_connection(rt::Io::new(stream, read_first), service);
    let mut connection = pin!(connection);
    let served = async {
        let _ = connection.as_mut().await;
        true
    };
    let idle = async {
        future::or(unused(&streams, ctx), ctx.shared.stop.wait()).await;
        false
    };
    if future::or(served, idle).await || ctx.shared.stop.is_set() {
        return;
    }
    // GOAWAY, then a moment for the client to read it.
    connection.as_mut().graceful_shutdown();
    future::or(
        async {
            let _ = connection.as_mut().await;
        },
        async {
            Timer::after(Duration::from_secs(1)).await;
        },
    )
    .await;
}

/// Resolves once the connection has had no stream for the handshake timeout, or has none
/// while the server shuts down.
async fn unused(streams: &Streams, ctx: &ServerCtx) {
    let limit = ctx.options.handshake_timeout;
    loop {
        let quiet = streams.open.load(Ordering::SeqCst) == 0;
        if quiet && ctx.shared.drain.is_set() {
            return;
        }
        let idle = streams.activity.idle_for();
        if quiet && idle >= limit {
            return;
        }
        let wait = if quiet { limit - idle } else { limit };
        // A shutdown is noticed within a tenth of a second; the grace is seconds long.
        let wait = if ctx.shared.drain.is_set() {
            wait.min(Duration::from_millis(100))
        } else {
            wait
        };
        future::or(
            async {
                Timer::after(wait).await;
            },
            async {
                if !ctx.shared.drain.is_set() {
                    ctx.shared.drain.wait().await;
                } else {
                    future::pending::<()>().await;
                }
            },
        )
        .await;
    }
}

/// One stream: its request served as any other, its reply in HTTP/2's shape. A request left
/// without an answer resets its stream.
async fn answer(
    request: hyper::Request<Incoming>,
    peer: SocketAddr,
    ctx: &ServerCtx,
    guard: StreamGuard,
) -> io::Result<hyper::Response<ReplyStream>> {
    let (parts, body) = request.into_parts();
    let head = match served::head_of(&parts) {
        Ok(head) => head,
        Err(name) => {
            let refused = exchange::unreadable_header(&name);
            return Ok(served::render(refused, Box::new(guard)));
        }
    };
    let mut body = RequestBody::new(body, false);
    match exchange::handle(&head, peer, &mut body, false, ctx).await {
        Outcome::Reply(reply) => Ok(served::render(reply, Box::new(guard))),
        Outcome::Upgrade | Outcome::Drop => Err(io::ErrorKind::ConnectionAborted.into()),
    }
}
