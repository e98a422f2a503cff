//! The operator's endpoints, beside the ACP endpoint and before its policy: `GET /healthz`
//! (always; no credentials, it says only whether to send clients here) and `GET /metrics`
//! (the `metrics` feature; the endpoint's credentials).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::conn::{IncomingConnection, ServerCtx};
use crate::http::RequestHead;
use crate::ops::{Ops, Transport};
use crate::streamable::reply::{Reply, ReplyBody};
use crate::transport::{ConnectionReader, ConnectionWriter, ReaderInner, WriterInner};

/// The health endpoint's path: 200 while serving, 503 while draining or shutting down.
pub(crate) const HEALTH_PATH: &str = "/healthz";

/// The metrics endpoint's path (the `metrics` feature).
#[cfg(feature = "metrics")]
pub(crate) const METRICS_PATH: &str = "/metrics";

/// Answers the operator's endpoints (`/healthz`, and `/metrics` with the feature), or `None`
/// for any other request.
pub(crate) fn serve(head: &RequestHead, ctx: &ServerCtx) -> Option<Reply> {
    let path = head.path();
    if path == HEALTH_PATH && path != ctx.options.path {
        if !matches!(head.method(), "GET" | "HEAD") {
            return Some(Reply::text(405, "method not allowed").with_header("Allow", "GET, HEAD"));
        }
        return Some(health(ctx));
    }
    #[cfg(feature = "metrics")]
    if path == METRICS_PATH && path != ctx.options.path {
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
    let text = crate::metrics::render(ctx);
    Reply {
        status: 200,
        headers: vec![("Cache-Control", "no-store".into())],
        // text/plain: what Prometheus reads as its text format (0.0.4) without a version.
        body: ReplyBody::Text(text),
    }
}

/// A connection as handlers get it: its reader and writer watched for turns and sessions
/// (src/watch.rs), and counted by transport while the guard lives.
pub(crate) fn watched(
    connection: IncomingConnection,
    ops: &Arc<Ops>,
) -> (IncomingConnection, crate::ops::Open) {
    let transport = match &connection.reader.0 {
        ReaderInner::Ws(_) => Transport::WebSocket,
        _ => Transport::StreamableHttp,
    };
    let open = ops.opened(transport);
    let (reader, writer) = crate::watch::watch(connection.reader, connection.writer, ops.clone());
    let connection = IncomingConnection {
        reader: ConnectionReader(ReaderInner::Watched(Box::new(reader))),
        writer: ConnectionWriter(WriterInner::Watched(Box::new(writer))),
        info: connection.info,
    };
    (connection, open)
}
