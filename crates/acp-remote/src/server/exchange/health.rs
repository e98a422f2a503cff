//! The operator's endpoints, beside the ACP endpoint and before its policy: `GET /healthz`
//! (always; no credentials, it says only whether to send clients here) and `GET /metrics`
//! (the `metrics` feature; the endpoint's credentials).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::server::conn::{IncomingConnection, ServerCtx};
use crate::server::exchange::reply::{Reply, ReplyBody};
use crate::server::http::RequestHead;
use crate::server::ops::{Ops, Transport};
use crate::transport::{ConnectionReader, ConnectionWriter, Framing};

/// The health endpoint's path: 200 while serving, 503 while draining or shutting down.
pub(crate) const HEALTH_PATH: &str = "/healthz";

/// The metrics endpoint's path (the `metrics` feature).
#[cfg(feature = "metrics")]
pub(crate) const METRICS_PATH: &str = "/metrics";

/// Answers the operator's endpoints (`/healthz`, and `/metrics` with the feature), or `None`
/// for any other request.
pub(crate) fn serve(head: &RequestHead, ctx: &ServerCtx) -> Option<Reply> {
    let path = head.path();
    let ours = path == HEALTH_PATH;
    #[cfg(feature = "metrics")]
    let ours = ours || path == METRICS_PATH;
    if !ours || path == ctx.options.path {
        return None;
    }
    if let Some(refusal) = refused(head, ctx) {
        return Some(refusal);
    }
    if path == HEALTH_PATH {
        if !matches!(head.method(), "GET" | "HEAD") {
            return Some(Reply::text(405, "method not allowed").with_header("Allow", "GET, HEAD"));
        }
        return Some(health(ctx));
    }
    #[cfg(feature = "metrics")]
    if path == METRICS_PATH {
        if !matches!(head.method(), "GET" | "HEAD") {
            return Some(Reply::text(405, "method not allowed").with_header("Allow", "GET, HEAD"));
        }
        // The metrics say how busy the server is and how it refuses: the same credentials as
        // the endpoint (a load balancer's health check needs none: /healthz says only that).
        if !ctx.options.authenticated(head) {
            return Some(
                Reply::text(401, "authentication required")
                    .with_header("WWW-Authenticate", "Bearer"),
            );
        }
        return Some(metrics(ctx));
    }
    None
}

/// Who may read the operator's endpoints: a browser only from an allowed Origin (403
/// otherwise, as at the ACP endpoint), and, on a server that listens on loopback, only a
/// request that names a loopback host (`localhost`, `127.0.0.1`, `[::1]`, with any port) or
/// none (HTTP/1.0 health checks): a page that rebinds its own DNS name to 127.0.0.1 sends a
/// same-origin GET without `Origin`, but with its own name as `Host` (403).
fn refused(head: &RequestHead, ctx: &ServerCtx) -> Option<Reply> {
    if !ctx.options.origin_allowed(head) {
        return Some(Reply::text(403, "origin not allowed"));
    }
    if ctx.loopback
        && head
            .header("host")
            .is_some_and(|host| !names_loopback(host))
    {
        return Some(Reply::text(
            403,
            "the Host header names no loopback address",
        ));
    }
    None
}

/// Whether a `Host` value names this machine's loopback: `localhost`, an IPv4 address of
/// 127.0.0.0/8 or `[::1]`, with or without a port.
fn names_loopback(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(v6) = host.strip_prefix('[') {
        match v6.split_once(']') {
            Some((address, _)) => address,
            None => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `{"status":"ok"}` (200), or `{"status":"draining"}` (503) once a drain or a shutdown began,
/// so that a load balancer sends no new client here.
fn health(ctx: &ServerCtx) -> Reply {
    let ops = &ctx.shared.ops;
    let draining = ops.is_draining() || ctx.shared.stop_accepting.is_set();
    let (status, word) = if draining {
        (503, "draining")
    } else {
        (200, "ok")
    };
    let body = format!(
        "{{\"status\":\"{word}\",\"connections\":{},\"turns\":{}}}",
        ctx.shared.acp.load(Ordering::SeqCst),
        ops.turns_running()
    );
    Reply {
        status,
        headers: vec![("Cache-Control", "no-store".into())],
        body: ReplyBody::Json(body.into_bytes()),
    }
}

#[cfg(feature = "metrics")]
fn metrics(ctx: &ServerCtx) -> Reply {
    let text = crate::server::exchange::metrics::render(ctx);
    Reply {
        status: 200,
        headers: vec![("Cache-Control", "no-store".into())],
        // text/plain: what Prometheus reads as its text format (0.0.4) without a version.
        body: ReplyBody::Text(text),
    }
}

/// A connection as handlers get it: its reader and writer watched for turns and sessions
/// (src/server/watch.rs), and counted by transport while the guard lives.
pub(crate) fn watched(
    connection: IncomingConnection,
    ops: &Arc<Ops>,
) -> (IncomingConnection, crate::server::ops::Open) {
    let transport = match connection.reader.framing() {
        Framing::WebSocket => Transport::WebSocket,
        Framing::Other => Transport::StreamableHttp,
    };
    let open = ops.opened(transport);
    let (reader, writer) =
        crate::server::watch::watch(connection.reader, connection.writer, ops.clone());
    let connection = IncomingConnection {
        reader: ConnectionReader::new(reader, Framing::Other),
        writer: ConnectionWriter::new(writer),
        info: connection.info,
    };
    (connection, open)
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_hosts_are_told_apart_from_other_names() {
        for host in [
            "localhost",
            "LOCALHOST:8765",
            "127.0.0.1",
            "127.0.0.2:80",
            "[::1]:8765",
        ] {
            assert!(super::names_loopback(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8765",
            "10.0.0.1",
            "[::2]",
            "x",
            "[::1",
        ] {
            assert!(!super::names_loopback(host), "{host}");
        }
    }
}
