//! [`Server`]: ACP over WebSocket for many clients at once, one connection each.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_runtime::agent::{self, Agent, AgentOptions};
use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::handshake::derive_accept_key;
use async_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use futures_lite::future;
use smol::Timer;
use smol::net::{TcpListener, TcpStream};

use crate::frames::{Activity, Signal, WsReader, WsWriter, split_with};
use crate::http::{HeadError, RequestHead, connection_id, read_head, respond};
use crate::options::ServerOptions;

/// One client's connection, upgraded: what a [`Server::serve`] handler gets.
#[derive(Debug)]
pub struct Connection {
    /// Each text frame from the client, as one line.
    pub reader: WsReader<TcpStream>,
    /// Each line written, as one text frame to the client.
    pub writer: WsWriter<TcpStream>,
    /// Who connected, and how.
    pub info: ConnectionInfo,
}

/// Who connected, and how.
#[derive(Debug, Clone)]
pub struct ConnectionInfo {
    /// The id sent to the client in the `Acp-Connection-Id` header of the 101 answer.
    pub id: String,
    /// The client's address.
    pub peer: SocketAddr,
    /// The upgrade request's head, for handlers that look at headers (authentication done by
    /// the server's hook is already passed).
    pub request: RequestHead,
}

/// Stops a running [`Server`]; clone it freely.
#[derive(Debug, Clone)]
pub struct ShutdownHandle(Arc<Shared>);

impl ShutdownHandle {
    /// Begins a graceful shutdown: the server stops accepting, every connection's input ends
    /// (the runtime finishes the requests it is handling, writes their answers and closes the
    /// WebSocket), and connections still open after the grace period are dropped.
    /// [`Server::serve`] returns when all are gone.
    pub fn shutdown(&self) {
        self.0.stop_accepting.set();
    }
}

#[derive(Debug, Default)]
struct Shared {
    stop_accepting: Signal,
    /// Readers see the end of input.
    drain: Arc<Signal>,
    /// Connections still open are dropped.
    stop: Signal,
    live: AtomicUsize,
    gone: event_listener::Event,
}

/// Counts a connection while it lives.
struct Live(Arc<Shared>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
        self.0.gone.notify(usize::MAX);
    }
}

/// A WebSocket server for ACP: each client that upgrades `GET /acp` gets a connection of its
/// own, never shared: with [`serve_agent`](Self::serve_agent) a fresh agent from the factory,
/// with [`serve`](Self::serve) whatever the handler does with it (the bridge starts a
/// process).
///
/// Connection tasks run on smol's global executor; `serve` itself is a plain future.
///
/// ```no_run
/// use acp_remote::{Server, ServerOptions};
/// use acp_runtime::agent::AgentOptions;
/// # struct MyAgent;
/// # impl acp_runtime::agent::Agent for MyAgent {
/// #     async fn new_session(&self, _: acp_types::NewSessionRequest, _: &acp_runtime::agent::ClientHandle)
/// #         -> acp_runtime::Result<acp_types::NewSessionResponse> { unimplemented!() }
/// #     async fn prompt(&self, _: acp_types::PromptRequest, _: acp_runtime::agent::Turn)
/// #         -> acp_runtime::Result<acp_types::PromptResponse> { unimplemented!() }
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
        let local_addr = listener.local_addr()?;
        Ok(Server {
            listener: TcpListener::try_from(listener)?,
            local_addr,
            options: Arc::new(options),
            shared: Arc::default(),
        })
    }

    /// The address listened on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The `ws://` URL clients connect to.
    pub fn url(&self) -> String {
        format!("ws://{}{}", self.local_addr, self.options.path)
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
        let options = options.with_max_line_length(self.options.max_message_size);
        self.serve(move |connection: Connection| {
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

    /// Runs `handler` on each upgraded connection, in a task of its own. Returns after a
    /// shutdown, once every connection is gone.
    pub async fn serve<H, Fut>(self, handler: H) -> io::Result<()>
    where
        H: Fn(Connection) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let handler = Arc::new(handler);
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
            let shared = self.shared.clone();
            let options = self.options.clone();
            if shared.live.fetch_add(1, Ordering::SeqCst) >= options.max_connections {
                let live = Live(shared);
                smol::spawn(async move {
                    let _live = live;
                    refuse_busy(stream, &options).await;
                })
                .detach();
                continue;
            }
            let live = Live(shared.clone());
            let handler = handler.clone();
            smol::spawn(async move {
                let _live = live;
                run_connection(stream, peer, &shared, &options, &*handler).await;
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

async fn wait_all_gone(shared: &Shared) {
    loop {
        let listener = shared.gone.listen();
        if shared.live.load(Ordering::SeqCst) == 0 {
            return;
        }
        listener.await;
    }
}

/// Answers 503 to a client over the connection limit (within the handshake timeout).
async fn refuse_busy(mut stream: TcpStream, options: &ServerOptions) {
    let answer = async {
        let _ = read_head(&mut stream, options.max_head_size).await;
        let _ = respond(
            &mut stream,
            503,
            &[("Retry-After", "1")],
            "too many connections\n",
        )
        .await;
    };
    let timeout = async {
        Timer::after(options.handshake_timeout).await;
    };
    future::or(answer, timeout).await;
}

async fn run_connection<H, Fut>(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    options: &ServerOptions,
    handler: &H,
) where
    H: Fn(Connection) -> Fut,
    Fut: Future<Output = ()>,
{
    let activity = Activity::new();
    let handshake = async { handshake(stream, peer, options, &activity, shared).await };
    let timeout = async {
        Timer::after(options.handshake_timeout).await;
        None
    };
    let stopped = async {
        shared.stop.wait().await;
        None
    };
    let Some(connection) = future::or(handshake, future::or(timeout, stopped)).await else {
        return;
    };
    let work = handler(connection);
    let idle = async {
        match options.idle_timeout {
            Some(limit) => idle_watch(&activity, limit).await,
            None => future::pending().await,
        }
    };
    future::or(work, future::or(idle, shared.stop.wait())).await;
}

/// Resolves once no frame went either way for `limit`.
async fn idle_watch(activity: &Activity, limit: Duration) {
    loop {
        let idle = activity.idle_for();
        if idle >= limit {
            return;
        }
        Timer::after(limit - idle).await;
    }
}

/// Reads the upgrade request, applies the policy, and answers 101 or the refusal.
async fn handshake(
    mut stream: TcpStream,
    peer: SocketAddr,
    options: &ServerOptions,
    activity: &Arc<Activity>,
    shared: &Shared,
) -> Option<Connection> {
    let (head, leftover) = match read_head(&mut stream, options.max_head_size).await {
        Ok(read) => read,
        Err(HeadError::TooLarge) => {
            let _ = respond(&mut stream, 431, &[], "request head too large\n").await;
            return None;
        }
        Err(HeadError::Malformed) => {
            let _ = respond(&mut stream, 400, &[], "not an HTTP/1.1 request\n").await;
            return None;
        }
        Err(HeadError::Closed) => return None,
    };
    let refusal = check(&head, options);
    let key = match refusal {
        Err((status, headers, body)) => {
            let _ = respond(&mut stream, status, headers, body).await;
            return None;
        }
        Ok(key) => key,
    };
    let id = connection_id();
    let accept = derive_accept_key(key.as_bytes());
    let headers = [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Accept", accept.as_str()),
        ("Acp-Connection-Id", id.as_str()),
    ];
    respond(&mut stream, 101, &headers, "").await.ok()?;
    let config = websocket_config(options.max_message_size);
    let ws =
        WebSocketStream::from_partially_read(stream, leftover, Role::Server, Some(config)).await;
    let (reader, writer) = split_with(ws, Some(activity.clone()), Some(shared.drain.clone()));
    Some(Connection {
        reader,
        writer,
        info: ConnectionInfo {
            id,
            peer,
            request: head,
        },
    })
}

type Refusal = (u16, &'static [(&'static str, &'static str)], &'static str);

/// The policy, in order: path, method, Origin, authentication, then the WebSocket headers.
/// Returns the client's key.
fn check(head: &RequestHead, options: &ServerOptions) -> Result<String, Refusal> {
    if head.path() != options.path {
        return Err((404, &[], "not found\n"));
    }
    if head.method() != "GET" {
        return Err((
            405,
            &[("Allow", "GET")],
            "use GET with Upgrade: websocket\n",
        ));
    }
    if !options.origin_allowed(head) {
        return Err((403, &[], "origin not allowed\n"));
    }
    if !options.authenticated(head) {
        return Err((
            401,
            &[("WWW-Authenticate", "Bearer")],
            "authentication required\n",
        ));
    }
    let upgrade = head.header_has_token("upgrade", "websocket")
        && head.header_has_token("connection", "upgrade");
    if !upgrade {
        return Err((
            426,
            &[("Upgrade", "websocket"), ("Connection", "Upgrade")],
            "this endpoint speaks WebSocket\n",
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
