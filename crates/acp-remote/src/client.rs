//! [`Connector`]: the client side, from a `ws://` URL to the reader and writer the runtime's
//! `client::connect` takes.
//!
//! The client's side lives in `client/`: `streamable.rs` with `streamable/` (the Streamable
//! HTTP client, its hyper link and wire, and the SSE parser), `ws_durable.rs` (the durable
//! transport over WebSocket), `fallback.rs` (a refused resumption taken up with
//! `session/resume`) and `pipe.rs` (the runtime's end of a connection a task of ours drives).

mod fallback;
mod pipe;
pub(crate) mod streamable;
mod ws_durable;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::net::NetStream;
use crate::tls::ClientTls;
use acp_runtime::client::{self, AgentHandle, Client, ClientOptions};
use async_tungstenite::tungstenite::client::IntoClientRequest;
use async_tungstenite::tungstenite::http::HeaderValue;
use async_tungstenite::tungstenite::{self, http};
use futures_lite::future;
use smol::Timer;

use crate::proto::streamable::CONNECTION_ID;
use crate::proto::ws::socket::WsStream;
use crate::proto::ws::socket::{Held, WsSocket};
use crate::proto::ws::{DEFAULT_MAX_MESSAGE_SIZE, Shared, split_with, websocket_config, ws_error};
use crate::transport::{ConnectionReader, ConnectionWriter, Framing};
use async_tungstenite::WebSocketStream;
use streamable::wire::{Endpoint, Reconnect};

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is not a `ws://` URL this crate can reach.
    #[error("invalid URL {url:?}: {reason}")]
    Url {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server answered the upgrade with something other than 101.
    #[error("the server refused the connection: {status} {body}")]
    Refused {
        /// The HTTP status, e.g. 401 for a missing or wrong token.
        status: u16,
        /// The start of the answer's body.
        body: String,
    },
    /// No answer within the connector's timeout.
    #[error("no connection within {0:?}")]
    Timeout(Duration),
    /// The network failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// So that a client over the network uses the runtime's [`Result`](acp_runtime::Result), as
/// over stdio: the error is kept whole, as the source of
/// [`acp_runtime::Error::Connect`].
///
/// ```no_run
/// use acp_remote::Connector;
/// use acp_runtime::prelude::*;
///
/// fn main() -> Result<()> {
///     smol::block_on(async {
///         let (agent, driver) = Connector::new("ws://127.0.0.1:8765/acp")
///             .connect_client(AutoAllow, ClientOptions::default())
///             .await?;
///         smol::spawn(driver).detach();
///         agent.initialize().await?;
///         Ok(())
///     })
/// }
/// ```
impl From<ConnectError> for acp_runtime::Error {
    fn from(error: ConnectError) -> Self {
        acp_runtime::Error::Connect(Box::new(error))
    }
}

/// An open connection to a remote agent: the halves to give `client::connect`, and the id the
/// server gave it.
#[derive(Debug)]
pub struct Remote {
    /// The agent's messages, one line each.
    pub reader: ConnectionReader,
    /// Each line written goes to the agent as one message.
    pub writer: ConnectionWriter,
    /// The `Acp-Connection-Id` header of the server's 101 answer, if it sent one. (A
    /// Streamable HTTP connection gets its id with the answer to `initialize`, later: `None`
    /// here.)
    pub connection_id: Option<String>,
}

/// Opens connections to a remote agent: WebSocket for `ws://` URLs, Streamable HTTP for
/// `http://` URLs.
///
/// Over Streamable HTTP the connection opens with the first message, which must be
/// `initialize` (as the runtime's client sends it); the messages are then POSTed in order and
/// the agent's arrive on the connection's and the sessions' SSE streams, each opened as soon
/// as it is known. A POST the server refuses fails its request (`-32603`, with the HTTP
/// status) instead of leaving it waiting. Closing the writer DELETEs the connection. With the
/// `http2` feature, Streamable HTTP goes over HTTP/2 when the server picks `h2` by ALPN
/// (`https://`) or with prior knowledge (`with_http2_prior_knowledge`, `http://`): one
/// TCP connection then carries every request.
///
/// ```no_run
/// use acp_remote::Connector;
/// use acp_runtime::client::{AutoAllow, ClientOptions};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// smol::block_on(async {
///     let connector = Connector::new("ws://127.0.0.1:8765/acp").with_bearer_token("s3cret");
///     let (agent, driver) = connector.connect_client(AutoAllow, ClientOptions::default()).await?;
///     smol::spawn(driver).detach();
///     let info = agent.initialize().await?;
///     println!("connected to {:?}", info.agent_info);
///     Ok(())
/// })
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Connector {
    url: String,
    headers: Vec<(String, String)>,
    max_message_size: usize,
    timeout: Duration,
    keepalive: Option<crate::proto::ws::keepalive::KeepAliveConfig>,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsClientConfig>,
    #[cfg(feature = "http2")]
    http2_prior_knowledge: bool,
    reconnect: Reconnect,
    durable: bool,
}

/// Default `attempts` of [`Connector::with_reconnect`]: 8.
pub const DEFAULT_RECONNECT_ATTEMPTS: u32 = 8;

/// Default `within` of [`Connector::with_reconnect`]: 30 s.
pub const DEFAULT_RECONNECT_WITHIN: Duration = Duration::from_secs(30);

const DEFAULT_RECONNECT: Reconnect = Reconnect {
    attempts: DEFAULT_RECONNECT_ATTEMPTS,
    within: DEFAULT_RECONNECT_WITHIN,
};

impl Connector {
    /// A connector to `url` (`ws://host:port/path` or `http://host:port/path`).
    pub fn new(url: impl Into<String>) -> Self {
        Connector {
            url: url.into(),
            headers: Vec::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            timeout: Duration::from_secs(30),
            keepalive: Some(crate::proto::ws::keepalive::KeepAliveConfig::default()),
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "http2")]
            http2_prior_knowledge: false,
            reconnect: DEFAULT_RECONNECT,
            durable: false,
        }
    }

    /// Asks the server for upstream's open durable-transport proposal (see docs/remote.md)
    /// in the `initialize` it sends: a server that serves it stamps each message with its
    /// cursor. Over Streamable HTTP, resuming works as without it, and a resumption the
    /// server cannot serve exactly is refused with `409`. Over WebSocket, a dropped
    /// WebSocket no longer ends the connection: a new one resumes it with `stream/resume`
    /// (within [`with_reconnect`](Self::with_reconnect)'s bounds), gets what it missed, and
    /// sends again what the server did not get; one that heard nothing for five keep-alive
    /// intervals is taken for dropped. A refused resumption ends the connection with the
    /// server's reason.
    ///
    /// ```
    /// use acp_remote::Connector;
    ///
    /// let connector = Connector::new("http://127.0.0.1:8765/acp").with_durable_transport();
    /// # let _ = connector;
    /// ```
    pub fn with_durable_transport(mut self) -> Self {
        self.durable = true;
        self
    }

    /// How a Streamable HTTP connection (`http://`, `https://`) gets over a network error:
    /// at most `attempts` tries again, for at most `within` from the first failure (default 8
    /// within 30 s; the first try again at once, then after 100 ms, doubling up to 2 s).
    /// A cut SSE stream is reopened with `Last-Event-ID`, and a server that keeps a replay
    /// window (this crate's) sends exactly the events the client missed; a POST is sent
    /// again, and such a server does not run a request twice. Each event or answer received
    /// starts the count again. `attempts` 0 turns it off: a cut stream ends the connection.
    /// On WebSocket URLs, the same bounds for resuming a durable connection
    /// ([`with_durable_transport`](Self::with_durable_transport)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use acp_remote::Connector;
    ///
    /// let connector = Connector::new("http://127.0.0.1:8765/acp")
    ///     .with_reconnect(20, Duration::from_secs(120));
    /// # let _ = connector;
    /// ```
    pub fn with_reconnect(mut self, attempts: u32, within: Duration) -> Self {
        self.reconnect = Reconnect { attempts, within };
        self
    }

    /// Whom to trust for `wss://` and `https://` URLs (the `tls` feature; default: the Mozilla
    /// roots).
    #[cfg(feature = "tls")]
    pub fn with_tls(mut self, tls: crate::tls::TlsClientConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Speaks HTTP/2 in the clear (h2c) to an `http://` URL, from the first byte (the `http2`
    /// feature). This needs prior knowledge that the server speaks it: a server of HTTP/1.1
    /// only would not understand the connection preface (RFC 9113, 3.3; the `Upgrade: h2c`
    /// route that asked first is deprecated). One TCP connection then carries every POST and
    /// SSE stream of the connection. Without it an `http://` URL is HTTP/1.1; `https://` URLs
    /// need nothing: ALPN offers `h2` and `http/1.1`, and the server chooses. No effect on
    /// `ws://` and `wss://` URLs (WebSocket stays on HTTP/1.1).
    #[cfg(feature = "http2")]
    pub fn with_http2_prior_knowledge(mut self) -> Self {
        self.http2_prior_knowledge = true;
        self
    }

    /// The TLS configuration for a `wss://` or `https://` URL.
    fn tls_for(
        &self,
        url_error: impl Fn(String) -> ConnectError,
    ) -> Result<ClientTls, ConnectError> {
        #[cfg(feature = "tls")]
        {
            let _ = url_error;
            Ok(self
                .tls
                .clone()
                .unwrap_or_else(crate::tls::TlsClientConfig::mozilla_roots))
        }
        #[cfg(not(feature = "tls"))]
        Err(url_error(
            "TLS is not built in (the `tls` feature); put a TLS-terminating proxy in front, or \
             use an SSH tunnel to a ws:// or http:// server"
                .into(),
        ))
    }

    /// Sends `Authorization: Bearer <token>` with the upgrade request.
    pub fn with_bearer_token(self, token: impl AsRef<str>) -> Self {
        let value = format!("Bearer {}", token.as_ref());
        self.with_header("Authorization", value)
    }

    /// Sends a header with the upgrade request (e.g. `Origin`, or a proxy's own
    /// authentication).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The largest message accepted from the agent, in bytes (default 64 MiB, the runtime's
    /// longest line).
    pub fn with_max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How long the TCP connection and the upgrade may take together (default 30 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// WebSocket keep-alive (`ws://`, `wss://`; default: a ping after 30 s without a frame
    /// from the agent, and the connection fails with [`std::io::ErrorKind::TimedOut`] when a
    /// ping stays 30 s without any frame back). The driver then ends with that error, and the
    /// calls waiting on the agent fail: reconnect, and `session/load` or `session/resume`
    /// the session (docs/remote.md). `None` sends no pings.
    ///
    /// ```
    /// use std::time::Duration;
    /// let connector = acp_remote::Connector::new("ws://127.0.0.1:8080/acp")
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

    /// The URL connected to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Opens a connection.
    pub async fn connect(&self) -> Result<Remote, ConnectError> {
        let timeout = async {
            Timer::after(self.timeout).await;
            Err(ConnectError::Timeout(self.timeout))
        };
        let remote = future::or(self.connect_transport(), timeout).await?;
        if !self.durable {
            return Ok(remote);
        }
        // A refused resumption is taken up on a new connection with `session/resume`.
        let connector = self.clone();
        let reconnect: crate::client::fallback::Reconnect = Arc::new(move || {
            let connector = connector.clone();
            Box::pin(async move {
                let remote = connector
                    .connect_transport()
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((remote.reader, remote.writer))
            })
        });
        let (reader, writer) = crate::client::fallback::wrap(
            reconnect,
            remote.reader,
            remote.writer,
            self.max_message_size,
        );
        Ok(Remote {
            reader: ConnectionReader::new(reader, Framing::Other),
            writer: ConnectionWriter::new(writer),
            connection_id: remote.connection_id,
        })
    }

    /// Opens a connection by the URL's transport (without the fallback of
    /// [`connect`](Self::connect)).
    pub(crate) async fn connect_transport(&self) -> Result<Remote, ConnectError> {
        let url_error = |reason: String| ConnectError::Url {
            url: self.url.clone(),
            reason,
        };
        let request = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|e| url_error(e.to_string()))?;
        let uri = request.uri().clone();
        let host = uri
            .host()
            .ok_or_else(|| url_error("no host".into()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let secure = matches!(uri.scheme_str(), Some("wss" | "https"));
        let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
        let tls = if secure {
            Some(self.tls_for(url_error)?)
        } else {
            None
        };
        match uri.scheme_str() {
            Some("ws" | "wss") => {}
            Some("http" | "https") => {
                let endpoint = Endpoint {
                    host,
                    port,
                    authority: uri.authority().map(|a| a.to_string()).unwrap_or_default(),
                    path: uri.path_and_query().map_or("/".into(), |p| p.to_string()),
                    headers: self.headers.clone(),
                    max_message_size: self.max_message_size,
                    tls,
                    reconnect: self.reconnect,
                    durable: self.durable,
                    silence: self
                        .keepalive
                        .filter(|_| self.durable)
                        .map(|k| k.interval.saturating_mul(5)),
                    #[cfg(feature = "http2")]
                    http2_prior_knowledge: self.http2_prior_knowledge,
                };
                let (reader, writer) = streamable::open(endpoint);
                return Ok(Remote {
                    reader: ConnectionReader::new(reader, Framing::Other),
                    writer: ConnectionWriter::new(writer),
                    connection_id: None,
                });
            }
            _ => return Err(url_error("not a ws:// or http:// URL".into())),
        }
        let (ws, connection_id) = self.websocket(request, &host, port, tls.as_ref()).await?;
        if self.durable {
            // The resuming upgrades name the connection, so that a balancer routing by the
            // id's instance prefix sends them to the server that holds it.
            let connector = match &connection_id {
                Some(id) => self.clone().with_header(CONNECTION_ID, id.clone()),
                None => self.clone(),
            };
            let reopen: crate::client::ws_durable::Reopen = Arc::new(move || {
                let connector = connector.clone();
                Box::pin(async move {
                    let (ws, _) = connector
                        .open_websocket()
                        .await
                        .map_err(|e| e.to_string())?;
                    Ok(ws)
                })
            });
            let (reader, writer) = crate::client::ws_durable::open(
                reopen,
                ws,
                connection_id.clone(),
                self.keepalive,
                self.reconnect,
                self.max_message_size,
            );
            return Ok(Remote {
                reader: ConnectionReader::new(reader, Framing::Other),
                writer: ConnectionWriter::new(writer),
                connection_id,
            });
        }
        let (reader, writer) = split_with(Arc::new(Shared::new(ws)), None, None, None);
        let reader = reader.with_keepalive(self.keepalive);
        Ok(Remote {
            reader: ConnectionReader::new(reader, Framing::WebSocket),
            writer: ConnectionWriter::new(writer),
            connection_id,
        })
    }

    /// Opens another WebSocket to the connector's `ws://` URL (a durable connection
    /// resuming), within the connector's timeout; the `Acp-Connection-Id` of the answer.
    pub(crate) async fn open_websocket(
        &self,
    ) -> Result<(WebSocketStream<WsStream>, Option<String>), ConnectError> {
        let attempt = async {
            let url_error = |reason: String| ConnectError::Url {
                url: self.url.clone(),
                reason,
            };
            let request = self
                .url
                .as_str()
                .into_client_request()
                .map_err(|e| url_error(e.to_string()))?;
            let uri = request.uri().clone();
            let host = uri
                .host()
                .ok_or_else(|| url_error("no host".into()))?
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let secure = matches!(uri.scheme_str(), Some("wss"));
            let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
            let tls = if secure {
                Some(self.tls_for(url_error)?)
            } else {
                None
            };
            self.websocket(request, &host, port, tls.as_ref()).await
        };
        let timeout = async {
            Timer::after(self.timeout).await;
            Err(ConnectError::Timeout(self.timeout))
        };
        future::or(attempt, timeout).await
    }

    /// The WebSocket upgrade of `request` to `host:port`: the socket, and the
    /// `Acp-Connection-Id` of the answer.
    async fn websocket(
        &self,
        mut request: http::Request<()>,
        host: &str,
        port: u16,
        tls: Option<&ClientTls>,
    ) -> Result<(WebSocketStream<WsStream>, Option<String>), ConnectError> {
        let url_error = |reason: String| ConnectError::Url {
            url: self.url.clone(),
            reason,
        };
        for (name, value) in &self.headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| url_error(format!("header {name:?}: {e}")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|e| url_error(format!("header {name:?}: {e}")))?;
            request.headers_mut().append(name, value);
        }
        let stream = NetStream::connect(host, port, tls).await?;
        // The client's one connection holds at most one message (the message limit).
        let stream = WsSocket::new(stream, Held::new(None), false);
        let config = websocket_config(self.max_message_size);
        let (ws, response) =
            async_tungstenite::client_async_with_config(request, stream, Some(config))
                .await
                .map_err(|error| match error {
                    tungstenite::Error::Http(response) => {
                        let body = response
                            .body()
                            .as_deref()
                            .map(|b| String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned())
                            .unwrap_or_default();
                        ConnectError::Refused {
                            status: response.status().as_u16(),
                            body: body.trim().to_owned(),
                        }
                    }
                    other => ConnectError::Io(ws_error(other)),
                })?;
        let connection_id = response
            .headers()
            .get("acp-connection-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok((ws, connection_id))
    }

    /// Opens a connection and runs `client` on it: [`connect`](Self::connect), then the
    /// runtime's `client::connect`. Poll the driver (e.g. `smol::spawn(driver).detach()`)
    /// for anything to happen.
    pub async fn connect_client<C: Client>(
        &self,
        client: C,
        options: ClientOptions,
    ) -> Result<
        (
            AgentHandle,
            impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<C>,
        ),
        ConnectError,
    > {
        let remote = self.connect().await?;
        Ok(client::connect(
            client,
            remote.reader,
            remote.writer,
            options,
        ))
    }
}
