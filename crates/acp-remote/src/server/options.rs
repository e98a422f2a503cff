//! [`ServerOptions`]: the limits and the security policy of a [`Server`](crate::Server).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::proto::ws::DEFAULT_MAX_MESSAGE_SIZE;
use crate::server::http::{RequestHead, constant_time_eq};

/// Decides whether a request may connect, from its head (request line and headers).
pub type Authenticator = Arc<dyn Fn(&RequestHead) -> bool + Send + Sync>;

/// The limits and the security policy of a [`Server`](crate::Server).
///
/// The defaults suit a server on loopback: path `/acp`, messages up to 64 MiB (the runtime's
/// longest line), 10 s to send a request head, connections closed after 10 minutes without a
/// message either way, at most 128 connections, 16 MiB waiting for a Streamable HTTP client's
/// streams, 5 s of grace at shutdown, no browser Origin allowed and no authentication. A server that listens beyond loopback must be given an
/// authentication hook ([`with_bearer_token`](Self::with_bearer_token) or
/// [`with_authenticator`](Self::with_authenticator)); [`Server::bind`](crate::Server::bind)
/// refuses to start otherwise.
///
/// ```
/// use std::time::Duration;
/// use acp_remote::ServerOptions;
///
/// let options = ServerOptions::default()
///     .with_bearer_token("s3cret")
///     .with_allowed_origin("https://ide.example.com")
///     .with_idle_timeout(Some(Duration::from_secs(60)))
///     .with_max_connections(16);
/// assert_eq!(options.max_connections(), 16);
/// ```
#[derive(Clone)]
pub struct ServerOptions {
    pub(crate) path: String,
    pub(crate) max_message_size: usize,
    pub(crate) max_head_size: usize,
    pub(crate) handshake_timeout: Duration,
    pub(crate) head_timeout: Duration,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) max_connections: usize,
    pub(crate) max_sockets_per_peer: Option<usize>,
    pub(crate) peer_prefix: (u8, u8),
    pub(crate) shutdown_grace: Duration,
    pub(crate) stream_budget: usize,
    pub(crate) memory_ceiling: usize,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) authenticator: Option<Authenticator>,
    pub(crate) keepalive: Option<crate::proto::ws::keepalive::KeepAliveConfig>,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<crate::tls::TlsServerConfig>,
    pub(crate) replay_bytes: usize,
    pub(crate) replay_age: Duration,
    pub(crate) replay_events: usize,
    pub(crate) durable_transport: bool,
    pub(crate) instance: Option<InstanceName>,
    pub(crate) sse_keep_alive: Duration,
}

/// The name of one server instance behind a load balancer, put in front of its connection
/// ids (`<instance>.<token>`): 1 to 32 ASCII letters, digits, `-` and `_`, so that it cannot
/// be confused with the `.` after it nor need escaping in a header or a balancer's rule.
///
/// ```
/// use acp_remote::InstanceName;
///
/// assert_eq!(InstanceName::new("s1").unwrap().as_str(), "s1");
/// assert!(InstanceName::new("a.b").is_err());
/// assert!(InstanceName::new("").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceName(String);

/// Why a string is not an [`InstanceName`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidInstanceName(String);

impl fmt::Display for InvalidInstanceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "instance name {:?} is not 1 to 32 ASCII letters, digits, '-' or '_'",
            self.0
        )
    }
}

impl std::error::Error for InvalidInstanceName {}

impl InstanceName {
    /// Checks `name` (see the type's docs).
    pub fn new(name: &str) -> Result<InstanceName, InvalidInstanceName> {
        let fits = (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if fits {
            Ok(InstanceName(name.to_owned()))
        } else {
            Err(InvalidInstanceName(name.to_owned()))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Default bytes of [`ServerOptions::with_replay_window`]: 2 MiB per Streamable HTTP
/// connection, all its streams together.
pub const DEFAULT_REPLAY_BYTES: usize = 2 << 20;

/// Default age of [`ServerOptions::with_replay_window`]: 5 minutes.
pub const DEFAULT_REPLAY_AGE: Duration = Duration::from_secs(300);

/// Default events of [`ServerOptions::with_replay_events`]: 4096 per Streamable HTTP
/// connection, all its streams together.
pub const DEFAULT_REPLAY_EVENTS: usize = 4096;

/// Default of [`ServerOptions::with_head_timeout`]: 5 s.
pub const DEFAULT_HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// Default of [`ServerOptions::with_sse_keep_alive`]: 15 s.
pub const DEFAULT_SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Default of [`ServerOptions::with_memory_ceiling`]: 256 MiB for the whole server, which a
/// machine of 1 GiB can give it.
pub const DEFAULT_MEMORY_CEILING: usize = 256 * 1024 * 1024;

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            path: "/acp".into(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_head_size: 16 * 1024,
            handshake_timeout: Duration::from_secs(10),
            head_timeout: DEFAULT_HEAD_TIMEOUT,
            idle_timeout: Some(Duration::from_secs(600)),
            max_connections: 128,
            max_sockets_per_peer: None,
            peer_prefix: (32, 64),
            shutdown_grace: Duration::from_secs(5),
            stream_budget: 16 << 20,
            memory_ceiling: DEFAULT_MEMORY_CEILING,
            allowed_origins: Vec::new(),
            authenticator: None,
            keepalive: Some(crate::proto::ws::keepalive::KeepAliveConfig::default()),
            #[cfg(feature = "tls")]
            tls: None,
            replay_bytes: DEFAULT_REPLAY_BYTES,
            replay_age: DEFAULT_REPLAY_AGE,
            replay_events: DEFAULT_REPLAY_EVENTS,
            durable_transport: false,
            instance: None,
            sse_keep_alive: DEFAULT_SSE_KEEP_ALIVE,
        }
    }
}

impl fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerOptions")
            .field("path", &self.path)
            .field("max_message_size", &self.max_message_size)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("head_timeout", &self.head_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_connections", &self.max_connections)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("stream_budget", &self.stream_budget)
            .field("memory_ceiling", &self.memory_ceiling)
            .field("allowed_origins", &self.allowed_origins)
            .field("authenticated", &self.authenticator.is_some())
            .field("replay_bytes", &self.replay_bytes)
            .field("replay_age", &self.replay_age)
            .field("replay_events", &self.replay_events)
            .field("durable_transport", &self.durable_transport)
            .field("instance", &self.instance)
            .field("sse_keep_alive", &self.sse_keep_alive)
            .field("keepalive", &self.keepalive)
            .finish()
    }
}

impl ServerOptions {
    /// The path clients connect to (default `/acp`); other paths are answered 404.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The largest message (and frame) accepted, in bytes (default 64 MiB, the runtime's
    /// longest line). A larger one closes the connection with 1009 ("message too big"): unlike
    /// a line on stdio it cannot be skipped without being received.
    pub fn with_max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How long a client has for the TLS handshake and for each request body (default 10 s);
    /// a slower one is disconnected without an answer. An HTTP/2 connection without streams
    /// is closed after it too. Request heads have their own, shorter deadline
    /// ([`with_head_timeout`](Self::with_head_timeout)).
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// How long a client has to send a complete request head over HTTP/1.1, and to show it
    /// speaks HTTP/2 in the clear (default [`DEFAULT_HEAD_TIMEOUT`], 5 s), counted from its
    /// first byte (a socket that sends nothing is dropped after 2 s) or, on a kept-alive
    /// socket, from the end of the previous answer: a head that trickles in is cut there, so
    /// that slow sockets cannot hold their place for long. Bodies have the handshake timeout.
    ///
    /// ```
    /// use std::time::Duration;
    /// use acp_remote::ServerOptions;
    ///
    /// let options = ServerOptions::default().with_head_timeout(Duration::from_secs(3));
    /// # let _ = options;
    /// ```
    pub fn with_head_timeout(mut self, timeout: Duration) -> Self {
        self.head_timeout = timeout;
        self
    }

    /// How long a connection may go without a frame either way before it is closed (default
    /// 10 minutes; `None` for never). A prompt turn that streams updates is not idle; an agent
    /// that thinks for longer than this without sending anything is, unless the client pings.
    pub fn with_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// WebSocket keep-alive (default: a ping after 30 s without a frame from the client, and
    /// the connection ends when a ping stays 30 s without any frame back). A client gone
    /// without closing (asleep, off the network) is then noticed within `interval + timeout`
    /// instead of at the idle timeout, and a quiet connection keeps proxies from cutting it.
    /// The client's pongs do not count against the idle timeout. `None` sends no pings.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = acp_remote::ServerOptions::default()
    ///     .with_websocket_keepalive(Some((Duration::from_secs(10), Duration::from_secs(20))));
    /// ```
    pub fn with_websocket_keepalive(mut self, keepalive: Option<(Duration, Duration)>) -> Self {
        self.keepalive =
            keepalive.map(
                |(interval, timeout)| crate::proto::ws::keepalive::KeepAliveConfig {
                    interval,
                    timeout,
                },
            );
        self
    }

    /// How many connections are served at once (default 128), WebSocket and Streamable HTTP
    /// together; further clients are answered 503 with `Retry-After`. Each connection costs at
    /// most its runtime budgets (see docs/limits.md) plus one message. Sockets are bounded at
    /// four times this (a Streamable HTTP client holds a few).
    pub fn with_max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// How many TCP connections one peer address may hold at once (default: a quarter of the
    /// socket cap, 128 with the default connection limit, for peers beyond loopback; loopback
    /// peers, such as a reverse proxy on the same host that brings every client, share the
    /// whole cap). Further sockets from that address are answered 503, so that a few slow or
    /// idle sockets from one place cannot lock everyone else out. Given here, it applies to
    /// every address, loopback included.
    pub fn with_max_sockets_per_peer(mut self, sockets: usize) -> Self {
        self.max_sockets_per_peer = Some(sockets);
        self
    }

    /// How peers are told apart for [`with_max_sockets_per_peer`](Self::with_max_sockets_per_peer):
    /// by the first `v4` bits of an IPv4 address and the first `v6` bits of an IPv6 one
    /// (default 32 and 64: an IPv4 address, an IPv6 /64, which one host usually has whole).
    /// Beyond the socket cap, an eighth of it more (at least 16) is kept for prefixes that
    /// hold fewer than 4 sockets, so that a few prefixes that fill the cap cannot lock a new
    /// client out.
    ///
    /// ```
    /// let options = acp_remote::ServerOptions::default().with_peer_prefix(24, 48);
    /// # let _ = options;
    /// ```
    pub fn with_peer_prefix(mut self, v4: u8, v6: u8) -> Self {
        self.peer_prefix = (v4.min(32), v6.min(128));
        self
    }

    /// How long connections have to finish at shutdown before they are dropped (default 5 s).
    pub fn with_shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// How many bytes of messages a Streamable HTTP connection keeps for its client's SSE
    /// streams, all streams together (default 16 MiB; one message larger than that still goes
    /// through alone). Messages wait there until the client opens the stream they belong to;
    /// when it is full, the agent's output waits, as it does for a WebSocket peer that does
    /// not read.
    pub fn with_stream_budget(mut self, bytes: usize) -> Self {
        self.stream_budget = bytes;
        self
    }

    /// The server's memory ceiling: the one budget for what all clients together may make it
    /// hold of their messages beyond a small buffer each (default [`DEFAULT_MEMORY_CEILING`],
    /// 256 MiB). It covers the WebSocket messages not yet handed to the handler (beyond 64 KiB
    /// a connection); the Streamable HTTP connections' SSE queues, POST bodies arriving and
    /// POSTed messages waiting, and the `initialize` bodies arriving; and, with
    /// [`Server::serve_agent`](crate::Server::serve_agent) (or a handler given
    /// [`Server::memory_ceiling`](crate::Server::memory_ceiling)), the requests in flight,
    /// the answers waiting for the clients and what their sessions keep (besides each
    /// connection's own budgets).
    ///
    /// Shared fairly: the last eighth is kept for holders that hold little (at most that
    /// eighth divided by five times the connection limit plus one, 51 KiB at the defaults), so a
    /// new connection and small messages pass whatever the others hold; a WebSocket holds at
    /// most one message of the limit. What does not fit is refused to the connection that
    /// asked, never taken from the others: a WebSocket message closes its connection with
    /// 1009, a POST body is answered 413 at once, a request in flight `-32603` (data
    /// `"scope": "shared"`), an answer pauses its connection's reading until its peer takes
    /// it, and a message for an SSE stream ends its Streamable HTTP connection. docs/limits.md
    /// has the server's worst case.
    ///
    /// ```
    /// let options = acp_remote::ServerOptions::default().with_memory_ceiling(64 << 20);
    /// assert_eq!(options.memory_ceiling(), 64 << 20);
    /// ```
    pub fn with_memory_ceiling(mut self, bytes: usize) -> Self {
        self.memory_ceiling = bytes;
        self
    }

    /// The server's memory ceiling, in bytes.
    pub fn memory_ceiling(&self) -> usize {
        self.memory_ceiling
    }

    /// Allows browsers on `origin` (exactly as browsers send it, e.g.
    /// `https://ide.example.com`). Requests with an `Origin` header not on this list are
    /// refused (403): any web page can open a WebSocket to a loopback port, and the Origin
    /// header is how a server tells those pages apart. Requests without `Origin` (editors,
    /// command-line clients) are not affected. An allowed origin also gets CORS answers, so
    /// that its pages can use Streamable HTTP with `fetch`: `OPTIONS` preflights are answered
    /// 204 (before authentication: browsers never send credentials on them) and every answer
    /// carries `Access-Control-Allow-Origin` and exposes `Acp-Connection-Id` and
    /// `Acp-Session-Id`.
    pub fn with_allowed_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Requires `Authorization: Bearer <token>` on every connection (compared in constant
    /// time); others are answered 401.
    pub fn with_bearer_token(self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.with_authenticator(move |head: &RequestHead| {
            head.bearer_token()
                .is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes()))
        })
    }

    /// Decides with `hook` whether a request may connect (401 when it returns `false`). It
    /// runs after the path, method and Origin checks, before the upgrade.
    pub fn with_authenticator(
        mut self,
        hook: impl Fn(&RequestHead) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.authenticator = Some(Arc::new(hook));
        self
    }

    /// What a Streamable HTTP connection keeps of the events it has already sent on its SSE
    /// streams, so that a client whose stream was cut can reconnect with `Last-Event-ID` and
    /// get exactly what it missed: at most `bytes` (all the connection's streams together,
    /// the oldest event given up first; default [`DEFAULT_REPLAY_BYTES`], 2 MiB) and no event
    /// older than `age` (default [`DEFAULT_REPLAY_AGE`], 5 minutes). A client that asks for
    /// events no longer kept is answered `410` with a JSON-RPC error (docs/remote.md), never
    /// a stream with a gap. `bytes` 0 keeps nothing: every resumption that missed something
    /// fails.
    ///
    /// ```
    /// use std::time::Duration;
    /// use acp_remote::ServerOptions;
    ///
    /// let options = ServerOptions::default().with_replay_window(8 << 20, Duration::from_secs(60));
    /// assert_eq!(options.replay_window(), (8 << 20, Duration::from_secs(60)));
    /// ```
    pub fn with_replay_window(mut self, bytes: usize, age: Duration) -> Self {
        self.replay_bytes = bytes;
        self.replay_age = age;
        self
    }

    /// At most this many events kept in a connection's replay window besides its bytes
    /// (default [`DEFAULT_REPLAY_EVENTS`], 4096; the oldest given up first): the number a
    /// durable-transport client is told at `initialize` as `retentionMessages`.
    pub fn with_replay_events(mut self, events: usize) -> Self {
        self.replay_events = events;
        self
    }

    /// Serves the durable-transport proposal (upstream agent-client-protocol PR #2208, open:
    /// off by default) to clients that ask for it at `initialize` with
    /// `params.clientCapabilities.transport.resumable`, on both transports: each message
    /// carries its cursor (its event id) in `_meta["acp/cursor"]` too, and the `initialize`
    /// answer advertises the replay window as `agentCapabilities.transport.resumable
    /// {retentionMessages, retentionSeconds}`. A durable WebSocket's connection outlives the
    /// WebSocket for the window's age, and a new WebSocket whose first message is
    /// `stream/resume` takes it up (docs/remote.md). Clients that do not ask get today's wire.
    ///
    /// ```
    /// use acp_remote::ServerOptions;
    ///
    /// let options = ServerOptions::default().with_durable_transport(true);
    /// assert!(options.durable_transport());
    /// ```
    pub fn with_durable_transport(mut self, enabled: bool) -> Self {
        self.durable_transport = enabled;
        self
    }

    /// Whether the durable-transport proposal is served (see
    /// [`with_durable_transport`](Self::with_durable_transport)).
    pub fn durable_transport(&self) -> bool {
        self.durable_transport
    }

    /// Names this server among the instances behind one load balancer: its connection ids
    /// become `<instance>.<token>`, so that the balancer can send every later request of a
    /// connection (a POST, a resumed SSE stream) to the instance that holds it from the id
    /// alone, without a table that a restart empties (docs/deploy.md has the HAProxy rules).
    ///
    /// ```
    /// use acp_remote::{InstanceName, ServerOptions};
    ///
    /// let options = ServerOptions::default().with_instance(InstanceName::new("s1").unwrap());
    /// assert_eq!(options.instance().map(InstanceName::as_str), Some("s1"));
    /// ```
    pub fn with_instance(mut self, instance: InstanceName) -> Self {
        self.instance = Some(instance);
        self
    }

    /// The instance name put in front of connection ids, if any.
    pub fn instance(&self) -> Option<&InstanceName> {
        self.instance.as_ref()
    }

    /// How long an SSE stream may stay quiet before it gets a `: keepalive` comment (default
    /// [`DEFAULT_SSE_KEEP_ALIVE`], 15 s), so that proxies and load balancers that close idle
    /// connections keep it open. Zero is taken as 1 ms.
    pub fn with_sse_keep_alive(mut self, interval: Duration) -> Self {
        self.sse_keep_alive = interval.max(Duration::from_millis(1));
        self
    }

    /// The replay window: bytes per connection and the age of the oldest event kept.
    pub fn replay_window(&self) -> (usize, Duration) {
        (self.replay_bytes, self.replay_age)
    }

    /// Serves TLS only (`wss://`, `https://`), with this certificate (the `tls` feature).
    /// The TLS handshake counts against the handshake timeout.
    #[cfg(feature = "tls")]
    pub fn with_tls(mut self, tls: crate::tls::TlsServerConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Whether the server speaks TLS.
    pub fn has_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The path clients connect to.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The largest message accepted, in bytes.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// How many connections are served at once.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// Whether an authentication hook is set.
    pub fn is_authenticated(&self) -> bool {
        self.authenticator.is_some()
    }

    pub(crate) fn origin_allowed(&self, head: &RequestHead) -> bool {
        match head.header("origin") {
            None => true,
            Some(origin) => self
                .allowed_origins
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(origin.trim())),
        }
    }

    pub(crate) fn authenticated(&self, head: &RequestHead) -> bool {
        self.authenticator.as_ref().is_none_or(|hook| hook(head))
    }
}
