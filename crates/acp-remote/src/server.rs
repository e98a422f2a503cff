//! [`Server`]: ACP for many clients at once, over WebSocket and Streamable HTTP, one
//! connection each.
//!
//! The server's side, from the accept loop down, lives in `server/`:
//!
//! - `options.rs` (the limits and policy), `http.rs` (a request's head as the policy reads
//!   it), `conn.rs` (what the server and its transports share for one client's connection).
//! - `http1.rs`, `http2.rs` and `served.rs`: hyper's server, per HTTP version, only carrying
//!   requests to `exchange/` and its answers back.
//! - `exchange.rs` with `exchange/`: one request, from the policy to its handler (Streamable
//!   HTTP, the WebSocket upgrade, the operator's endpoints); every status is decided there.
//! - `streamable.rs` with `streamable/`: a Streamable HTTP connection's state (its streams,
//!   replay window, and what a durable WebSocket carries), kept in `conn.rs`'s registry.
//! - `ops.rs` and `watch.rs`: the operator's counters, and the turns and sessions read from
//!   each connection's lines.

pub(crate) mod conn;
mod exchange;
pub(crate) mod http;
mod http1;
#[cfg(feature = "http2")]
mod http2;
mod ops;
pub(crate) mod options;
mod served;
mod streamable;
pub(crate) mod watch;

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use acp_runtime::agent::{self, Agent, AgentOptions};
use futures_lite::{AsyncReadExt, future};
use smol::Timer;
use smol::net::{TcpListener, TcpStream};

use self::conn::{
    ConnectionInfo, Handler, IncomingConnection, Live, ServerCtx, Shared, lock_http, lock_peers,
};
use self::http::respond;
use self::options::ServerOptions;
use self::streamable::HttpConn;
use crate::net::NetStream;

/// Stops a running [`Server`]; clone it freely.
#[derive(Debug, Clone)]
pub struct ShutdownHandle(Arc<Shared>);

impl ShutdownHandle {
    /// Begins a graceful shutdown: the server stops accepting, every connection's input ends
    /// (the runtime finishes the requests it is handling, writes their answers and closes the
    /// connection), and connections still open after the grace period are dropped.
    /// [`Server::serve`] returns when all are gone.
    pub fn shutdown(&self) {
        self.0.ops.start_draining();
        self.0.stop_accepting.set();
    }

    /// A graceful drain, for a server about to stop (`acp-bridge serve` on SIGTERM): at once
    /// the health endpoint (`/healthz`) answers 503 and new connections are refused (503,
    /// counted as `draining`), while open connections go on, Streamable HTTP ones with their
    /// new sockets, except that a new `session/prompt` is answered at once with the JSON-RPC
    /// error [`DRAINING_CODE`](crate::DRAINING_CODE) (the turns already running finish); once
    /// no prompt turn is running (a `session/prompt` not yet answered) nor a
    /// session request (`session/new`, `session/load`, ...), and none began for a second, or
    /// after `deadline`, the [`shutdown`](Self::shutdown) follows. Returns when the shutdown
    /// begins: `true` if every turn had finished, `false` if the deadline cut some.
    /// [`Server::serve`] returns after the shutdown's grace, as ever.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # fn main() -> std::io::Result<()> {
    /// let server = acp_remote::Server::bind("127.0.0.1:0".parse().unwrap(), Default::default())?;
    /// let handle = server.shutdown_handle();
    /// smol::spawn(async move {
    ///     // ... on SIGTERM:
    ///     handle.drain(Duration::from_secs(30)).await;
    /// })
    /// .detach();
    /// # Ok(()) }
    /// ```
    pub async fn drain(&self, deadline: Duration) -> bool {
        let ops = &self.0.ops;
        ops.start_draining();
        let finished = future::or(
            async {
                ops.turns_done(DRAIN_QUIET).await;
                true
            },
            async {
                Timer::after(deadline).await;
                false
            },
        )
        .await;
        self.shutdown();
        finished
    }
}

/// How long a drain waits, once no turn runs, for one to begin: a client that has just opened
/// its session is about to prompt.
const DRAIN_QUIET: Duration = Duration::from_secs(1);

/// A TCP connection being served, held while it is open: one of the socket cap, and of its
/// peer prefix's share (the prefix is the second field).
struct Socket(Arc<Shared>, IpAddr);

impl Drop for Socket {
    fn drop(&mut self) {
        self.0.sockets.fetch_sub(1, Ordering::SeqCst);
        // (Admitted sockets only: a refused one never became a `Socket`.)
        let mut peers = lock_peers(&self.0);
        if let Some(count) = peers.get_mut(&self.1) {
            *count -= 1;
            if *count == 0 {
                peers.remove(&self.1);
            }
        }
    }
}

impl Socket {
    /// A place for a socket from `peer`: within the cap, and within its prefix's share of it;
    /// or, beyond the cap, in the headroom kept for prefixes that hold almost nothing, so
    /// that a few addresses that fill the cap cannot lock everyone else out.
    fn admit(
        shared: &Arc<Shared>,
        peer: IpAddr,
        max_sockets: usize,
        options: &ServerOptions,
    ) -> Option<Socket> {
        let share = per_peer(peer, max_sockets, options);
        let key = prefix_of(peer, options.peer_prefix);
        let mut peers = lock_peers(shared);
        let count = peers.entry(key).or_insert(0);
        let room = if *count < FAIR_FLOOR {
            max_sockets + headroom(max_sockets)
        } else {
            max_sockets
        };
        if *count >= share || shared.sockets.fetch_add(1, Ordering::SeqCst) >= room {
            if *count < share {
                shared.sockets.fetch_sub(1, Ordering::SeqCst);
            }
            if *count == 0 {
                peers.remove(&key);
            }
            return None;
        }
        *count += 1;
        Some(Socket(shared.clone(), key))
    }
}

/// One peer prefix's share of the socket cap: as set, or by default a quarter (at least 8)
/// beyond loopback, so that a few slow or idle sockets from one place cannot lock everyone
/// else out (a Streamable HTTP client holds a socket per open stream plus its POSTs; a quarter
/// of the default is 128). Loopback peers share the whole cap by default: a reverse proxy on
/// the same host brings every client from there.
fn per_peer(peer: IpAddr, max_sockets: usize, options: &ServerOptions) -> usize {
    match options.max_sockets_per_peer {
        Some(share) => share,
        None if peer.is_loopback() => max_sockets,
        None => (max_sockets / 4).max(8),
    }
}

/// A prefix that holds fewer sockets than this is admitted beyond the cap (within the
/// [`headroom`]): a client needs a socket or two (a Streamable HTTP one a few).
const FAIR_FLOOR: usize = 4;

/// The sockets admitted beyond the cap for prefixes under [`FAIR_FLOOR`]: an eighth of the
/// cap, at least 16.
fn headroom(max_sockets: usize) -> usize {
    (max_sockets / 8).max(16)
}

/// The prefix that a peer's sockets are counted under: its IPv4 address cut to `v4` bits, its
/// IPv6 address to `v6` (an IPv4 address mapped into IPv6 counts as IPv4). One host on IPv6
/// usually has a whole /64, so counting by address would give it as many shares as it likes.
fn prefix_of(peer: IpAddr, (v4, v6): (u8, u8)) -> IpAddr {
    match peer {
        IpAddr::V4(address) => IpAddr::V4(mask_v4(address, v4)),
        IpAddr::V6(address) => match address.to_ipv4_mapped() {
            Some(address) => IpAddr::V4(mask_v4(address, v4)),
            None => {
                let bits = u128::from(address);
                let keep = u32::from(v6.min(128));
                let mask = if keep == 0 {
                    0
                } else {
                    u128::MAX << (128 - keep)
                };
                IpAddr::V6((bits & mask).into())
            }
        },
    }
}

fn mask_v4(address: std::net::Ipv4Addr, bits: u8) -> std::net::Ipv4Addr {
    let keep = u32::from(bits.min(32));
    let mask = if keep == 0 {
        0
    } else {
        u32::MAX << (32 - keep)
    };
    (u32::from(address) & mask).into()
}

/// Sockets refused at once (beyond the cap, or beyond their peer's share), each answered
/// 503 and closed within a second; further ones are closed without an answer, so that the
/// descriptors held never exceed the cap and its headroom by more than this.
const MAX_REFUSING: usize = 16;

/// How long a new socket has to send its first byte (a request, or a TLS hello).
const FIRST_BYTE: Duration = Duration::from_secs(2);

/// A socket being refused, held while its answer goes out.
struct Refusing(Arc<Shared>);

impl Drop for Refusing {
    fn drop(&mut self) {
        self.0.refusing.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An ACP server for many clients at once, on one endpoint (`/acp`): WebSocket (`GET` with
/// `Upgrade: websocket`) and Streamable HTTP (`POST`, SSE `GET`s, `DELETE`). Each client gets
/// a connection of its own, never shared: with [`serve_agent`](Self::serve_agent) a fresh
/// agent from the factory, with [`serve`](Self::serve) whatever the handler does with it (the
/// bridge starts a process).
///
/// Connection tasks run on smol's global executor; `serve` itself is a plain future.
///
/// ```no_run
/// use acp_remote::{Server, ServerOptions};
/// use acp_runtime::agent::AgentOptions;
/// # struct MyAgent;
/// # impl acp_runtime::agent::Agent for MyAgent {
/// #     async fn new_session(&self, _: acp_runtime::prelude::NewSessionRequest, _: &acp_runtime::agent::ClientHandle)
/// #         -> acp_runtime::Result<acp_runtime::prelude::NewSessionResponse> { unimplemented!() }
/// #     async fn prompt(&self, _: acp_runtime::prelude::PromptRequest, _: acp_runtime::agent::Turn)
/// #         -> acp_runtime::Result<acp_runtime::prelude::PromptResponse> { unimplemented!() }
/// # }
///
/// fn main() -> std::io::Result<()> {
///     let server = Server::bind("127.0.0.1:8765".parse().unwrap(), ServerOptions::default())?;
///     eprintln!("ws://{}/acp", server.local_addr());
///     smol::block_on(server.serve_agent(|_connection| MyAgent, AgentOptions::default()))
/// }
/// ```
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    local_addr: SocketAddr,
    options: Arc<ServerOptions>,
    shared: Arc<Shared>,
}

impl Server {
    /// Listens on `addr`. Refuses (`PermissionDenied`) to listen beyond loopback without an
    /// authentication hook in `options`.
    pub fn bind(addr: SocketAddr, options: ServerOptions) -> io::Result<Server> {
        if !addr.ip().is_loopback() && !options.is_authenticated() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "refusing to listen on {addr} without authentication: anyone who can reach \
                     it could run the agent; set a bearer token (or listen on 127.0.0.1)"
                ),
            ));
        }
        let listener = std::net::TcpListener::bind(addr)?;
        deepen_backlog(&listener);
        let local_addr = listener.local_addr()?;
        Ok(Server {
            listener: TcpListener::try_from(listener)?,
            local_addr,
            shared: Arc::new(Shared::new(&options)),
            options: Arc::new(options),
        })
    }

    /// The address listened on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The server's memory ceiling (`ServerOptions::with_memory_ceiling`): the one budget
    /// its WebSocket messages, Streamable HTTP queues and bodies draw on. A
    /// [`serve`](Self::serve) handler that runs JSON-RPC itself hands it to
    /// `with_shared_in_flight_budget`, `with_shared_reply_budget` and (an agent)
    /// `with_shared_session_budget`, as [`serve_agent`](Self::serve_agent) does, so that its
    /// clients' requests in flight, the answers waiting for them and their sessions count in
    /// it too, and in the `/metrics` gauge `budget_used_bytes{budget="runtime"}`.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// use acp_remote::{Server, ServerOptions};
    ///
    /// let options = ServerOptions::default().with_memory_ceiling(64 << 20);
    /// let server = Server::bind("127.0.0.1:0".parse().unwrap(), options)?;
    /// let ceiling = server.memory_ceiling();
    /// assert_eq!(ceiling.limit(), 64 << 20);
    /// let agent_options = acp_runtime::agent::AgentOptions::default()
    ///     .with_shared_in_flight_budget(ceiling);
    /// # let _ = agent_options;
    /// # Ok(())
    /// # }
    /// ```
    pub fn memory_ceiling(&self) -> acp_jsonrpc::ByteBudget {
        self.shared.ceiling.budget().clone()
    }

    /// The `ws://` (`wss://` with TLS) URL clients connect to.
    pub fn url(&self) -> String {
        let scheme = if self.options.has_tls() { "wss" } else { "ws" };
        format!("{scheme}://{}{}", self.local_addr, self.options.path)
    }

    /// The `http://` (`https://` with TLS) URL of the Streamable HTTP transport (the same
    /// endpoint).
    pub fn http_url(&self) -> String {
        let scheme = if self.options.has_tls() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}{}", self.local_addr, self.options.path)
    }

    /// A handle that stops the server.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(self.shared.clone())
    }

    /// Serves an agent from `factory` on each connection, with `options` (every connection
    /// gets the budgets of the stdio path: see docs/limits.md). Returns after a shutdown,
    /// once every connection is gone.
    pub async fn serve_agent<A, F>(self, factory: F, options: AgentOptions) -> io::Result<()>
    where
        A: Agent,
        F: Fn(&ConnectionInfo) -> A + Send + Sync + 'static,
    {
        // The requests in flight of every client, the answers waiting for it and what its
        // sessions keep draw on the server's ceiling, besides each connection's own budgets.
        let options = options
            .with_max_line_length(self.options.max_message_size)
            .with_shared_in_flight_budget(self.memory_ceiling())
            .with_shared_reply_budget(self.memory_ceiling())
            .with_shared_session_budget(self.memory_ceiling());
        self.serve(move |connection: IncomingConnection| {
            let agent = factory(&connection.info);
            let (client, driver) =
                agent::serve(agent, connection.reader, connection.writer, options.clone());
            async move {
                let _client = client;
                let _ = driver.await;
            }
        })
        .await
    }

    /// Runs `handler` on each client's connection, in a task of its own. Returns after a
    /// shutdown, once every connection is gone.
    pub async fn serve<H, Fut>(self, handler: H) -> io::Result<()>
    where
        H: Fn(IncomingConnection) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let ops = self.shared.ops.clone();
        let handler: Handler = Arc::new(move |connection| {
            let (connection, open) = self::exchange::health::watched(connection, &ops);
            // A span per remote connection (the `tracing` feature), around the runtime's own.
            #[cfg(feature = "tracing")]
            let span = tracing::info_span!(
                "acp_remote.connection",
                id = %connection.info.id,
                peer = %connection.info.peer,
                transport = open.transport_name(),
            );
            let served = handler(connection);
            #[cfg(feature = "tracing")]
            let served = tracing::Instrument::instrument(served, span);
            Box::pin(async move {
                let _open = open;
                served.await;
            })
        });
        let ctx = Arc::new(ServerCtx {
            shared: self.shared.clone(),
            options: self.options.clone(),
            handler,
            loopback: self.local_addr.ip().is_loopback(),
        });
        // A Streamable HTTP client holds a few sockets per connection (its GET streams and
        // its POSTs); these bound them all.
        let max_sockets = self.options.max_connections.saturating_mul(4).max(16);
        loop {
            let accepted = future::or(async { Some(self.listener.accept().await) }, async {
                self.shared.stop_accepting.wait().await;
                None
            })
            .await;
            let (stream, peer) = match accepted {
                None => break,
                Some(Ok(accepted)) => accepted,
                // Out of descriptors, or a connection reset before it was accepted: neither
                // ends the server. A short pause keeps an exhausted process from spinning.
                Some(Err(_)) => {
                    Timer::after(Duration::from_millis(20)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let Some(socket) = Socket::admit(&self.shared, peer.ip(), max_sockets, &self.options)
            else {
                self.shared.ops.refused(self::ops::Reason::Sockets);
                // Over TLS a plain answer would be noise: just close.
                if ctx.options.has_tls()
                    || self.shared.refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSING
                {
                    if !ctx.options.has_tls() {
                        self.shared.refusing.fetch_sub(1, Ordering::SeqCst);
                    }
                    continue;
                }
                let refusing = Refusing(self.shared.clone());
                smol::spawn(async move {
                    let _refusing = refusing;
                    refuse_busy(stream).await;
                })
                .detach();
                continue;
            };
            let live = Live::new(&self.shared);
            let ctx = ctx.clone();
            smol::spawn(async move {
                let _live = live;
                let _socket = socket;
                run_socket(stream, peer, &ctx).await;
            })
            .detach();
        }
        self.finish().await;
        Ok(())
    }

    /// The end of a graceful shutdown: inputs end, then what is left after the grace is
    /// dropped.
    async fn finish(&self) {
        self.shared.drain.set();
        let http: Vec<Arc<HttpConn>> = lock_http(&self.shared).values().cloned().collect();
        for conn in http {
            conn.end_input();
        }
        let all_gone = async {
            wait_all_gone(&self.shared).await;
            true
        };
        let grace = async {
            Timer::after(self.options.shutdown_grace).await;
            false
        };
        if !future::or(all_gone, grace).await {
            self.shared.stop.set();
            // Dropping a connection is immediate once its task runs; the bound only guards
            // against an executor too busy to run it.
            future::or(wait_all_gone(&self.shared), async {
                Timer::after(Duration::from_secs(2)).await;
            })
            .await;
        }
    }
}

/// How many connections may wait to be accepted. std listens with 128: a burst of clients
/// beyond that (a Streamable HTTP client opens several sockets at once) has its SYNs dropped
/// and retried a second later.
const BACKLOG: i32 = 1024;

#[cfg(unix)]
fn deepen_backlog(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    // SAFETY: `listen` on a socket this function borrows, already bound and listening; calling
    // it again only changes the backlog (capped by the system). A failure leaves it at 128.
    unsafe {
        libc::listen(listener.as_raw_fd(), BACKLOG);
    }
}

#[cfg(not(unix))]
fn deepen_backlog(_: &std::net::TcpListener) {}

async fn wait_all_gone(shared: &Shared) {
    loop {
        let listener = shared.gone.listen();
        if shared.live.load(Ordering::SeqCst) == 0 {
            return;
        }
        listener.await;
    }
}

/// The TLS handshake when the server has a certificate (within the handshake timeout).
async fn secure(tcp: TcpStream, ctx: &ServerCtx) -> Option<NetStream> {
    #[cfg(feature = "tls")]
    if let Some(tls) = &ctx.options.tls {
        let timeout = async {
            Timer::after(ctx.options.handshake_timeout).await;
            None
        };
        let handshake = async {
            let stream = tls.accept(tcp).await.ok()?;
            Some(NetStream::ServerTls(Box::new(stream)))
        };
        return future::or(handshake, timeout).await;
    }
    let _ = ctx;
    Some(NetStream::Plain(tcp))
}

/// Answers 503 to a client over the socket limit, without reading its request (reading it
/// is what a slow client would hold us up with), then lets the answer reach it: our side is
/// shut and what it sends is read and dropped, for a second at most.
async fn refuse_busy(mut stream: TcpStream) {
    let answer = async {
        let _ = respond(
            &mut stream,
            503,
            &[("Retry-After", "1")],
            "too many connections\n",
        )
        .await;
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let mut sink = [0u8; 4096];
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    };
    future::or(answer, async {
        Timer::after(Duration::from_secs(1)).await;
    })
    .await;
}

/// One TCP connection: HTTP/2 when the client asks for it (by ALPN under TLS, with the
/// connection preface in the clear), HTTP/1.1 otherwise.
async fn run_socket(tcp: TcpStream, peer: SocketAddr, ctx: &Arc<ServerCtx>) {
    // A socket that says nothing is dropped soon, not after the whole handshake timeout.
    let first = async { matches!(tcp.peek(&mut [0u8; 1]).await, Ok(n) if n > 0) };
    let silent = async {
        Timer::after(FIRST_BYTE.min(ctx.options.handshake_timeout)).await;
        false
    };
    if !future::or(first, silent).await {
        return;
    }
    let Some(stream) = secure(tcp, ctx).await else {
        return;
    };
    #[cfg(feature = "http2")]
    let (stream, buf) = match http2::detect(stream, &ctx.options).await {
        http2::Detected::Http2(stream, buf) => return http2::serve(stream, buf, peer, ctx).await,
        http2::Detected::Http1(stream, buf) => (stream, buf),
        http2::Detected::Gone => return,
    };
    #[cfg(not(feature = "http2"))]
    let buf = Vec::new();
    http1::serve(stream, buf, peer, ctx).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_counted_by_prefix() {
        let key = |peer: &str, prefix| prefix_of(peer.parse().unwrap(), prefix);
        let defaults = (32, 64);
        assert_eq!(
            key("2001:db8:1:2:aaaa::1", defaults),
            key("2001:db8:1:2:bbbb::9", defaults)
        );
        assert_ne!(
            key("2001:db8:1:2::1", defaults),
            key("2001:db8:1:3::1", defaults)
        );
        assert_ne!(key("10.0.0.1", defaults), key("10.0.0.2", defaults));
        assert_eq!(key("10.0.0.1", (24, 48)), key("10.0.0.200", (24, 48)));
        assert_eq!(key("::ffff:10.0.0.1", defaults), key("10.0.0.1", defaults));
    }
}
