//! What the server and its two transports share for one client's connection: the
//! [`IncomingConnection`] a handler gets, the server-wide counters and the Streamable HTTP
//! registry, and the idle watch.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_lite::future;
use smol::Timer;

use crate::proto::ws::Activity;
use crate::proto::ws::socket::HeldPool;
use crate::server::http::RequestHead;
use crate::server::options::ServerOptions;
use crate::server::streamable::HttpConn;
use crate::share::{Ceiling, Kind, Share};
use crate::transport::{ConnectionReader, ConnectionWriter};
use acp_jsonrpc::Latch;

/// One client's connection as the server accepted it: what a
/// [`Server::serve`](crate::Server::serve) handler gets. Its reader and writer carry one
/// JSON-RPC message per line, whichever transport the client chose; hand them to
/// `acp_runtime::agent::serve` (or to `acp_jsonrpc::Connection::new`, which runs JSON-RPC over
/// any reader and writer).
#[derive(Debug)]
pub struct IncomingConnection {
    /// The client's messages, one line each.
    pub reader: ConnectionReader,
    /// Each complete line written goes to the client as one message.
    pub writer: ConnectionWriter,
    /// Who connected, and how.
    pub info: ConnectionInfo,
}

/// Who connected, and how.
#[derive(Debug, Clone)]
pub struct ConnectionInfo {
    /// The connection's id, sent to the client in the `Acp-Connection-Id` header (of the 101
    /// answer on WebSocket, of the `initialize` answer on Streamable HTTP).
    pub id: String,
    /// The client's address.
    pub peer: SocketAddr,
    /// The head of the request that opened the connection (the upgrade, or the `initialize`
    /// POST), for handlers that look at headers. The server's checks are already passed.
    pub request: RequestHead,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) stop_accepting: Latch,
    /// Readers see the end of input.
    pub(crate) drain: Arc<Latch>,
    /// Connections still open are dropped.
    pub(crate) stop: Latch,
    /// Tasks alive: TCP connections and Streamable HTTP connections.
    pub(crate) live: AtomicUsize,
    pub(crate) gone: event_listener::Event,
    /// TCP connections being served.
    pub(crate) sockets: AtomicUsize,
    /// Of those, how many each peer address has.
    pub(crate) peers: Mutex<HashMap<IpAddr, usize>>,
    /// TCP connections being refused (503) at once.
    pub(crate) refusing: AtomicUsize,
    /// ACP connections open (WebSockets, Streamable HTTP connections).
    pub(crate) acp: AtomicUsize,
    /// The Streamable HTTP connections, by `Acp-Connection-Id`.
    pub(crate) http: Mutex<HashMap<String, Arc<HttpConn>>>,
    /// The memory ceiling (`ServerOptions::with_memory_ceiling`): what the pools below and
    /// the requests in flight of `serve_agent`'s clients hold, together.
    pub(crate) ceiling: Arc<Ceiling>,
    /// What WebSocket connections hold of their messages beyond a small buffer each.
    pub(crate) ws_held: Arc<HeldPool>,
    /// The bodies of POSTs that name no connection (`initialize`), all together, while they
    /// arrive.
    pub(crate) initial_bodies: Share,
    /// The operator's counters (src/server/ops.rs).
    pub(crate) ops: Arc<crate::server::ops::Ops>,
}

/// What the bodies of POSTs naming no connection may hold at once, all together: sixteen
/// `initialize` messages of the largest size accepted (1 MiB); further ones wait.
const INITIAL_BODIES: usize = 16 << 20;

impl Shared {
    pub(crate) fn new(options: &ServerOptions) -> Shared {
        let ceiling = Ceiling::new(options.memory_ceiling, options.max_connections);
        Shared {
            stop_accepting: Latch::default(),
            drain: Arc::default(),
            stop: Latch::default(),
            live: AtomicUsize::new(0),
            gone: event_listener::Event::new(),
            sockets: AtomicUsize::new(0),
            peers: Mutex::default(),
            refusing: AtomicUsize::new(0),
            acp: AtomicUsize::new(0),
            http: Mutex::default(),
            ceiling: ceiling.clone(),
            // One connection draws at most one message of the limit.
            ws_held: HeldPool::new(ceiling.clone(), options.max_message_size),
            initial_bodies: Share::new(INITIAL_BODIES, &ceiling, Kind::InitializeBodies),
            ops: Arc::default(),
        }
    }
}

/// Counts a task while it lives.
pub(crate) struct Live(Arc<Shared>);

impl Live {
    pub(crate) fn new(shared: &Arc<Shared>) -> Live {
        shared.live.fetch_add(1, Ordering::SeqCst);
        Live(shared.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
        self.0.gone.notify(usize::MAX);
    }
}

/// One of the `max_connections` ACP connections, held while it lives.
pub(crate) struct AcpSlot(Arc<Shared>);

impl AcpSlot {
    /// Takes a slot, or says why not in words a 503's body carries (both transports answer
    /// with it, so the reason lives here).
    pub(crate) fn take(shared: &Arc<Shared>, max: usize) -> Result<AcpSlot, &'static str> {
        if shared.ops.is_draining() {
            shared.ops.refused(crate::server::ops::Reason::Draining);
            return Err("the server is draining");
        }
        if shared.acp.fetch_add(1, Ordering::SeqCst) >= max {
            shared.acp.fetch_sub(1, Ordering::SeqCst);
            shared
                .ops
                .refused(crate::server::ops::Reason::MaxConnections);
            return Err("too many connections");
        }
        Ok(AcpSlot(shared.clone()))
    }
}

impl Drop for AcpSlot {
    fn drop(&mut self) {
        self.0.acp.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) type Handler =
    Arc<dyn Fn(IncomingConnection) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// What every request handler needs.
pub(crate) struct ServerCtx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) options: Arc<ServerOptions>,
    pub(crate) handler: Handler,
    /// Whether the server listens on a loopback address (the operator's endpoints then
    /// answer only requests that name a loopback host: `server/exchange/health.rs`).
    pub(crate) loopback: bool,
}

pub(crate) fn lock_http(
    shared: &Shared,
) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpConn>>> {
    shared.http.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn lock_peers(shared: &Shared) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
    shared.peers.lock().unwrap_or_else(|e| e.into_inner())
}

/// Resolves once nothing went either way for `limit` (never for `None`).
pub(crate) async fn idle_watch(activity: &Activity, limit: Option<Duration>) {
    let Some(limit) = limit else {
        return future::pending().await;
    };
    loop {
        let idle = activity.idle_for();
        if idle >= limit {
            return;
        }
        Timer::after(limit - idle).await;
    }
}
