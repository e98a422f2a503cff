//! The Agent Client Protocol over the network: reach an agent that runs elsewhere, or serve
//! one to many clients, over WebSocket and Streamable HTTP.
//!
//! - [`Connector`] opens a connection to a remote agent (`ws://` or `http://`) and hands the
//!   runtime's `client::connect` a reader and a writer ([`Connector::connect_client`] does
//!   both).
//! - [`Server`] accepts many clients at once on one endpoint, by WebSocket or Streamable HTTP,
//!   each on a connection of its own (a fresh agent per client with [`Server::serve_agent`],
//!   or any handler with [`Server::serve`]), with the security defaults below.
//! - `acp-bridge` (a binary of this crate) serves any stdio agent over both transports, one
//!   process per client, and connects a stdio-only editor to a remote agent.
//!
//! # The transports
//!
//! As in the protocol's "Streamable HTTP & WebSocket Transport" RFD, on one endpoint, `/acp`:
//!
//! - **WebSocket**: the client opens `GET /acp` with `Upgrade: websocket`; the server answers
//!   101 with an `Acp-Connection-Id` header; each text frame then carries one JSON-RPC
//!   message, either way. Binary frames are ignored.
//! - **Streamable HTTP**: `POST /acp` with `initialize` opens a connection and is
//!   answered in the body (200, `Acp-Connection-Id`); every other message is POSTed with that
//!   header and answered 202, the agent's messages arriving as Server-Sent Events on `GET`
//!   streams: one for the connection, one per session (`Acp-Session-Id`). `DELETE` ends the
//!   connection. Over HTTP/1.1, and over HTTP/2 with the `http2` feature (see below);
//!   docs/remote.md has every status code. Streams are resumable: every event has an `id`
//!   (per stream), the server keeps what it sent for a while
//!   ([`ServerOptions::with_replay_window`]) and a `GET` with `Last-Event-ID` gets exactly
//!   what the client missed (or `410` when that is no longer kept); a POST sent again with a
//!   request id the server accepted before is not run twice. The [`Connector`] resumes cut
//!   streams and sends failed POSTs again by itself ([`Connector::with_reconnect`]).
//! - **The durable transport** (upstream's open proposal, opt-in on both sides:
//!   [`ServerOptions::with_durable_transport`], [`Connector::with_durable_transport`]): every
//!   message carries its cursor in `_meta["acp/cursor"]`; a dropped WebSocket no longer
//!   ends its connection, and a new one resumes it with `stream/resume`; after a resumption
//!   the server sends the turn state; a refused resumption is taken up on a new connection
//!   with `session/resume`. docs/remote.md has the wire and each of the proposal's points.
//!
//! # How it plugs into the runtime
//!
//! The runtime reads newline-delimited JSON from any `AsyncBufRead` and writes it to any
//! `AsyncWrite`. Rather than add a message-level transport trait to `acp-jsonrpc`, this crate
//! presents a WebSocket in that shape ([`WsReader`], [`WsWriter`]): a text frame becomes a
//! line, a line becomes a text frame. `agent::serve` and `client::connect` take them
//! unchanged, and every limit of the stdio path applies as it does there (docs/limits.md): the
//! longest line (here also the largest WebSocket message), the in-flight requests, the reply
//! budget, the session update budgets. The cost is one newline appended per incoming message
//! and a scan for it per outgoing one, small beside the JSON parse. Streamable HTTP is adapted
//! the same way ([`ConnectionReader`], [`ConnectionWriter`]): POSTed messages become lines,
//! and each line the runtime writes is routed to the SSE stream it belongs to.
//!
//! # Security defaults
//!
//! - [`Server::bind`] refuses a non-loopback address unless an authentication hook is set
//!   ([`ServerOptions::with_bearer_token`] or [`ServerOptions::with_authenticator`]).
//! - A request with an `Origin` header is refused (403) unless that origin is allowed
//!   ([`ServerOptions::with_allowed_origin`]): any web page can open a WebSocket to a loopback
//!   port. An allowed origin gets CORS answers (preflights, `Access-Control-*` headers), so
//!   that its pages can use Streamable HTTP.
//! - Every connection has its own runtime connection (and, with the bridge, its own agent
//!   process); nothing routes one client's messages to another's connection.
//! - Handshake timeout (10 s), idle timeout (10 min), connection limit (128), message size
//!   limit (64 MiB): see [`ServerOptions`].
//! - TLS with the `tls` feature (rustls): `ServerOptions::with_tls` for the server,
//!   `wss://` and `https://` URLs for clients (Mozilla roots, or your own with
//!   `Connector::with_tls`). Without it, terminate TLS in a reverse proxy or tunnel over SSH.
//!
//! # Features
//!
//! - `tls`: TLS through rustls with the ring provider, for the server and for clients.
//! - `http2`: the server and [`Connector`] speak HTTP/2 as well as HTTP/1.1, so that one TCP
//!   connection carries a Streamable HTTP client's POSTs and SSE streams together. The
//!   server: with prior knowledge in the clear (h2c; the `Upgrade: h2c` route, deprecated by
//!   RFC 9113, is not offered), and by ALPN (`h2`, beside `http/1.1`) with `tls` and
//!   `TlsServerConfig::from_pem_files` (a configuration of your own,
//!   `TlsServerConfig::from_rustls`, keeps its own ALPN list). Requests are served by the same
//!   code on both versions, with the same status codes and limits; up to 256 streams at once
//!   per connection. The client: to `https://` URLs it offers `h2` and `http/1.1` by ALPN and
//!   follows the server's choice; to `http://` URLs it speaks h2c only with
//!   `Connector::with_http2_prior_knowledge` (the server must be known to speak it). Its
//!   messages, sessions, streams and refusals are handled by the same code on both versions.
//!   hyper's server and client run on a small adapter to smol: no tokio runtime. WebSocket
//!   stays on HTTP/1.1 (no RFC 8441).
//! - `metrics`: `GET /metrics` with the endpoint's credentials (401 without): the server's
//!   counters (connections by transport, sessions, turns, byte budgets, refusals by reason,
//!   draining) in the Prometheus text format, every name prefixed `acp_remote_`.
//! - `tracing`: an `info` span `acp_remote.connection` (fields `id`, `peer`, `transport`)
//!   around each remote connection's work, with the runtime's own spans inside it.
//!
//! # Operating
//!
//! Beside the endpoint and before its policy, `GET /healthz` needs no credentials and answers
//! `200 {"status":"ok","connections":N,"turns":N}`, or 503 (`"draining"`) from the start of a
//! drain or a shutdown, for a load balancer's health check. [`ShutdownHandle::drain`] is the
//! graceful stop of a server about to go: new connections are refused (503), and new prompts
//! on open ones ([`DRAINING_CODE`]), while the open ones finish their turns, until none runs
//! or the deadline, then
//! [`ShutdownHandle::shutdown`] follows. `acp-bridge serve` drains on SIGTERM or SIGINT for
//! at most `--drain-timeout` seconds (default 30); a second signal exits at once. docs/deploy.md
//! has what to watch and how to deploy several servers.
//!
//! ```no_run
//! use acp_remote::{Connector, Server, ServerOptions};
//! use acp_runtime::agent::AgentOptions;
//! use acp_runtime::client::{AutoAllow, ClientOptions};
//! # struct MyAgent;
//! # impl acp_runtime::agent::Agent for MyAgent {
//! #     async fn new_session(&self, _: acp_runtime::prelude::NewSessionRequest, _: &acp_runtime::agent::ClientHandle)
//! #         -> acp_runtime::Result<acp_runtime::prelude::NewSessionResponse> { unimplemented!() }
//! #     async fn prompt(&self, _: acp_runtime::prelude::PromptRequest, _: acp_runtime::agent::Turn)
//! #         -> acp_runtime::Result<acp_runtime::prelude::PromptResponse> { unimplemented!() }
//! # }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! smol::block_on(async {
//!     // The agent's side: a fresh `MyAgent` for every client.
//!     let server = Server::bind("127.0.0.1:0".parse()?, ServerOptions::default())?;
//!     let url = server.url();
//!     smol::spawn(server.serve_agent(|_| MyAgent, AgentOptions::default())).detach();
//!
//!     // The client's side.
//!     let (agent, driver) = Connector::new(url)
//!         .connect_client(AutoAllow, ClientOptions::default())
//!         .await?;
//!     smol::spawn(driver).detach();
//!     agent.initialize().await?;
//!     Ok(())
//! })
//! # }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
mod lines;
mod net;
mod proto;
mod queue;
mod rt;
mod server;
mod share;
mod tls;
mod transport;

pub use client::{
    ConnectError, Connector, DEFAULT_RECONNECT_ATTEMPTS, DEFAULT_RECONNECT_WITHIN, Remote,
};
pub use proto::ws::{DEFAULT_MAX_MESSAGE_SIZE, WsReader, WsWriter, split};
pub use server::conn::{ConnectionInfo, IncomingConnection};
pub use server::http::{RequestHead, secret_token};
pub use server::options::{Authenticator, DEFAULT_MEMORY_CEILING, ServerOptions};
pub use server::options::{
    DEFAULT_HEAD_TIMEOUT, DEFAULT_REPLAY_AGE, DEFAULT_REPLAY_BYTES, DEFAULT_REPLAY_EVENTS,
    DEFAULT_SSE_KEEP_ALIVE, InstanceName, InvalidInstanceName,
};
pub use server::watch::{DRAINING_CODE, DRAINING_MESSAGE};
pub use server::{Server, ShutdownHandle};
#[cfg(feature = "tls")]
pub use tls::{TlsClientConfig, TlsServerConfig};
pub use transport::{ConnectionReader, ConnectionWriter};

/// The WebSocket library this crate is built on, for [`split`] and custom handshakes.
pub use async_tungstenite;
