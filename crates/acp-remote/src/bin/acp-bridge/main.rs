//! `acp-bridge`: a stdio agent served over WebSocket and Streamable HTTP, or a remote agent
//! reached from stdio.
//!
//! ```text
//! acp-bridge serve [--listen ADDR] [--token T] [--allow-origin ORIGIN]...
//!     [--replay-bytes BYTES] [--replay-age SECS] [--sse-keep-alive SECS]
//!     [--instance NAME] [--durable-transport]
//!     (-- AGENT [ARGS...] | --agent ID [--registry FILE|URL] [--refresh])
//! acp-bridge connect ws://HOST:PORT/acp|http://HOST:PORT/acp [--token T] [--header 'N: v']...
//!     [--http2-prior-knowledge] [--reconnect-attempts N] [--reconnect-within SECS]
//!     [--durable-transport]
//! ```
//!
//! `serve` starts one agent process per WebSocket client and pipes the connection through
//! it; `connect` pipes this process's stdin and stdout through a WebSocket, so that an editor
//! that only knows how to run a command reaches a remote agent. In both directions a line is
//! one text frame: a partial line is never sent as a message.

mod running;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use acp_remote::{Connector, IncomingConnection, Server, ServerOptions};
use acp_runtime::process::AgentCommand;
use clap::Parser;
use futures_lite::io::BufWriter;
use futures_lite::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, future};

/// Serves a stdio agent over WebSocket and Streamable HTTP, or reaches a remote agent from
/// stdio.
#[derive(Debug, Parser)]
#[command(name = "acp-bridge", version, args_override_self = true)]
enum Cli {
    /// Serves a stdio agent at ws://ADDR/acp (WebSocket) and http://ADDR/acp (Streamable
    /// HTTP), one agent process per client
    #[command(
        override_usage = "acp-bridge serve [OPTIONS] -- AGENT [ARGS...]\n       acp-bridge serve [OPTIONS] --agent ID [--registry FILE|URL] [--refresh]"
    )]
    Serve(Box<ServeArgs>),
    /// Connects stdin and stdout to the remote agent at URL: ws://HOST:PORT/acp (WebSocket) or
    /// http://HOST:PORT/acp (Streamable HTTP)
    Connect(ConnectArgs),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address to listen on; any address other than loopback needs a token
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    listen: SocketAddr,
    /// Require 'Authorization: Bearer TOKEN' [default: $ACP_BRIDGE_TOKEN]
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Allow browsers from ORIGIN (repeatable) [default: none]
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// At most N clients at once [default: 128]
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// At most N TCP connections from one peer (see --peer-prefix) [default: a quarter of
    /// four times --max-connections beyond loopback, none on it]
    #[arg(long, value_name = "N")]
    max_sockets_per_peer: Option<usize>,
    /// Count peers by the first V4 bits of an IPv4 address and V6 bits of an IPv6 one,
    /// as V4/V6 [default: 32/64]
    #[arg(long, value_name = "V4/V6", value_parser = peer_prefix)]
    peer_prefix: Option<(u8, u8)>,
    /// Close connections quiet for SECS (0 for never) [default: 600]
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<u64>,
    /// Cut a socket whose request head is not complete SECS after its first byte, or after
    /// the previous answer on a kept-alive socket (fractions allowed) [default: 5]
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    head_timeout: Option<Duration>,
    /// Serve TLS (wss://, https://) with this PEM certificate chain...
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<String>,
    /// ...and this PEM private key (needs the `tls` feature)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<String>,
    /// On SIGTERM or SIGINT: refuse new clients (GET /healthz answers 503), let running prompt
    /// turns finish for at most SECS, then close every connection and exit; a second signal
    /// exits at once
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    drain_timeout: u64,
    /// What all clients together may make the server hold of their messages beyond a small
    /// buffer each, in bytes (WebSocket messages, Streamable HTTP queues and POST bodies,
    /// requests in flight); what would go beyond is refused to the connection that asked
    /// (1009, 413, -32603; a Streamable HTTP connection whose stream message does not fit is
    /// ended) [default: 256 MiB]
    #[arg(long, value_name = "BYTES")]
    memory_ceiling: Option<usize>,
    /// Streamable HTTP: bytes of sent SSE events each connection keeps for clients that
    /// resume with Last-Event-ID (0 keeps nothing) [default: 2 MiB]
    #[arg(long, value_name = "BYTES")]
    replay_bytes: Option<usize>,
    /// Streamable HTTP: age in seconds of the oldest event kept for resumption (fractions
    /// allowed) [default: 300]
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    replay_age: Option<Duration>,
    /// This server's name among the instances behind one load balancer: connection ids
    /// start with 'NAME.', which the balancer routes by (docs/deploy.md)
    #[arg(long, value_name = "NAME", value_parser = instance_name)]
    instance: Option<acp_remote::InstanceName>,
    /// Serve the durable-transport proposal (cursors in _meta, retention advertised at
    /// initialize, WebSockets resumed with stream/resume) to clients that ask for it at
    /// initialize
    #[arg(long)]
    durable_transport: bool,
    /// Streamable HTTP: a ': keepalive' comment on an SSE stream quiet for SECS (fractions
    /// allowed) [default: 15]
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    sse_keep_alive: Option<Duration>,
    /// An agent of the ACP agent registry instead of a command (resolved, and installed if
    /// it is a binary, once at startup).
    #[command(flatten)]
    registry: acp_registry::cli::RegistryArgs,
    /// The agent's command and arguments, after `--`
    #[arg(
        last = true,
        required_unless_present = "agent_id",
        conflicts_with = "agent_id",
        value_name = "AGENT"
    )]
    command: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct ConnectArgs {
    /// ws(s)://HOST:PORT/acp or http(s)://HOST:PORT/acp
    #[arg(value_name = "URL")]
    url: String,
    /// Send 'Authorization: Bearer TOKEN' [default: $ACP_BRIDGE_TOKEN]
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Send a header with each request (repeatable)
    #[arg(long, value_name = "NAME: VALUE", value_parser = header)]
    header: Vec<(String, String)>,
    /// Trust only the certificates of this PEM file for wss:// and https:// [default: the
    /// Mozilla roots; needs the `tls` feature]
    #[arg(long, value_name = "FILE")]
    ca: Option<String>,
    /// Speak HTTP/2 to an http:// URL from the first byte (h2c), for a server known to speak it
    /// (needs the `http2` feature); https:// URLs use HTTP/2 whenever the server offers it
    #[arg(long)]
    http2_prior_knowledge: bool,
    /// After a network error, try again at most N times (0: a cut stream ends the
    /// connection); a cut SSE stream resumes with Last-Event-ID, a dropped durable WebSocket
    /// with stream/resume
    #[arg(long, value_name = "N", default_value_t = acp_remote::DEFAULT_RECONNECT_ATTEMPTS)]
    reconnect_attempts: u32,
    /// ...for at most SECS from the first failure (fractions allowed)
    /// [default: 30]
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    reconnect_within: Option<Duration>,
    /// Ask the server for the durable-transport proposal at initialize (cursors in _meta; a
    /// dropped WebSocket resumes with stream/resume; a refused resumption is taken up on a
    /// new connection with session/resume)
    #[arg(long)]
    durable_transport: bool,
}

/// A duration in seconds, fractions allowed: `15`, `0.25`.
fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| format!("seconds (such as 15 or 0.25), not {text:?}"))
}

/// `--instance NAME`.
fn instance_name(text: &str) -> Result<acp_remote::InstanceName, String> {
    acp_remote::InstanceName::new(text).map_err(|e| e.to_string())
}

/// `--header 'NAME: VALUE'`.
fn header(text: &str) -> Result<(String, String), String> {
    text.split_once(':')
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .ok_or_else(|| format!("NAME: VALUE, not {text:?}"))
}

/// What is left to a side once the other has finished: the agent's last answers after the
/// client closed, or the client's after the agent closed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The longest line an agent may write before the bridge gives up on that connection.
const MAX_LINE: usize = acp_remote::DEFAULT_MAX_MESSAGE_SIZE;

fn main() -> ExitCode {
    // Usage errors exit with 2, `--help` and `--version` with 0 (clap's statuses).
    let result = match Cli::parse() {
        Cli::Serve(args) => serve(*args),
        Cli::Connect(args) => connect(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failed(message)) => {
            eprintln!("acp-bridge: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A failure after the command line was understood: exit status 1.
struct Failed(String);

impl<E: std::fmt::Display> From<E> for Failed {
    fn from(error: E) -> Self {
        Failed(error.to_string())
    }
}

fn default_token() -> Option<String> {
    std::env::var("ACP_BRIDGE_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
}

fn serve(args: ServeArgs) -> Result<(), Failed> {
    let (name, command) = match args
        .registry
        .launch(|message| eprintln!("acp-bridge: {message}"))?
    {
        Some(launch) => (launch.to_string(), AgentCommand::from(launch)),
        None => {
            let (program, program_args) = args
                .command
                .split_first()
                .expect("clap requires the agent command or --agent");
            (
                program.clone(),
                AgentCommand::new(program).args(program_args),
            )
        }
    };
    let listen = args.listen;
    let token = args.token.or_else(default_token);
    let mut server_options = ServerOptions::default();
    for origin in args.allow_origin {
        server_options = server_options.with_allowed_origin(origin);
    }
    if let Some(n) = args.max_connections {
        server_options = server_options.with_max_connections(n);
    }
    if let Some(n) = args.max_sockets_per_peer {
        server_options = server_options.with_max_sockets_per_peer(n);
    }
    if let Some((v4, v6)) = args.peer_prefix {
        server_options = server_options.with_peer_prefix(v4, v6);
    }
    if let Some(secs) = args.idle_timeout {
        let timeout = (secs > 0).then(|| Duration::from_secs(secs));
        server_options = server_options.with_idle_timeout(timeout);
    }
    if let Some(timeout) = args.head_timeout {
        server_options = server_options.with_head_timeout(timeout);
    }
    if let Some(bytes) = args.memory_ceiling {
        server_options = server_options.with_memory_ceiling(bytes);
    }
    if args.replay_bytes.is_some() || args.replay_age.is_some() {
        server_options = server_options.with_replay_window(
            args.replay_bytes
                .unwrap_or(acp_remote::DEFAULT_REPLAY_BYTES),
            args.replay_age.unwrap_or(acp_remote::DEFAULT_REPLAY_AGE),
        );
    }
    if let Some(instance) = args.instance.clone() {
        server_options = server_options.with_instance(instance);
    }
    if args.durable_transport {
        server_options = server_options.with_durable_transport(true);
    }
    if let Some(interval) = args.sse_keep_alive {
        server_options = server_options.with_sse_keep_alive(interval);
    }
    let drain_timeout = Duration::from_secs(args.drain_timeout);
    let (tls_cert, tls_key) = (args.tls_cert, args.tls_key);
    if let Some(token) = token {
        server_options = server_options.with_bearer_token(token);
    }
    // clap lets only both or neither through.
    if let (Some(cert), Some(key)) = (tls_cert, tls_key) {
        server_options = with_tls(server_options, &cert, &key)?;
    }
    let server = Server::bind(listen, server_options)?;
    eprintln!(
        "acp-bridge: serving {name} at {} (WebSocket) and {} (Streamable HTTP)",
        server.url(),
        server.http_url()
    );
    let handle = server.shutdown_handle();
    let signals =
        async_signal::Signals::new([async_signal::Signal::Term, async_signal::Signal::Int])?;
    smol::spawn(drain_on_signal(signals, handle, drain_timeout)).detach();
    smol::block_on(server.serve(move |connection| bridge(connection, command.clone())))?;
    eprintln!("acp-bridge: stopped");
    Ok(())
}

/// The first SIGTERM or SIGINT drains the server (see `ShutdownHandle::drain`); a second one
/// exits at once.
async fn drain_on_signal(
    mut signals: async_signal::Signals,
    handle: acp_remote::ShutdownHandle,
    deadline: Duration,
) {
    use futures_lite::StreamExt;
    if signals.next().await.is_none() {
        return;
    }
    eprintln!(
        "acp-bridge: draining: no new clients; running turns have {}s to finish",
        deadline.as_secs()
    );
    let drain = async {
        if handle.drain(deadline).await {
            eprintln!("acp-bridge: every turn finished; closing the connections");
        } else {
            eprintln!("acp-bridge: drain deadline passed with turns still running; closing");
        }
        // Stay to catch a second signal while the connections close.
        futures_lite::future::pending::<()>().await;
    };
    let again = async {
        signals.next().await;
        eprintln!("acp-bridge: second signal: exiting now");
        std::process::exit(1);
    };
    futures_lite::future::or(drain, again).await;
}

#[cfg(feature = "tls")]
fn with_tls(options: ServerOptions, cert: &str, key: &str) -> Result<ServerOptions, Failed> {
    let tls = acp_remote::TlsServerConfig::from_pem_files(cert, key)
        .map_err(|e| Failed(format!("TLS certificate {cert}, key {key}: {e}")))?;
    Ok(options.with_tls(tls))
}

#[cfg(not(feature = "tls"))]
fn with_tls(_: ServerOptions, _: &str, _: &str) -> Result<ServerOptions, Failed> {
    Err(Failed("built without TLS (the `tls` feature)".into()))
}

#[cfg(feature = "tls")]
fn with_ca(connector: Connector, ca: &str) -> Result<Connector, Failed> {
    let tls = acp_remote::TlsClientConfig::with_root_pem_file(ca)
        .map_err(|e| Failed(format!("certificates {ca}: {e}")))?;
    Ok(connector.with_tls(tls))
}

#[cfg(not(feature = "tls"))]
fn with_ca(_: Connector, _: &str) -> Result<Connector, Failed> {
    Err(Failed("built without TLS (the `tls` feature)".into()))
}

#[cfg(feature = "http2")]
fn with_h2c(connector: Connector) -> Result<Connector, Failed> {
    Ok(connector.with_http2_prior_knowledge())
}

#[cfg(not(feature = "http2"))]
fn with_h2c(_: Connector) -> Result<Connector, Failed> {
    Err(Failed("built without HTTP/2 (the `http2` feature)".into()))
}

/// One client: a process of its own, its stdout lines as frames, frames as its stdin lines.
async fn bridge(connection: IncomingConnection, command: AgentCommand) {
    let id = connection.info.id.clone();
    let tag = id.clone();
    let command = command.on_stderr_line(move |line| eprintln!("[{tag}] {line}"));
    let mut process = match command.spawn() {
        Ok(process) => process,
        Err(error) => {
            eprintln!("[{id}] cannot start the agent: {error}");
            let mut writer = connection.writer;
            let _ = writer.close().await;
            return;
        }
    };
    eprintln!("[{id}] connected from {}", connection.info.peer);
    let Some((stdout, mut stdin)) = process.take_stdio() else {
        return;
    };
    let reader = connection.reader;
    let mut writer = connection.writer.with_max_line(MAX_LINE);
    let turns = Mutex::new(running::RunningTurns::default());
    let seen = |chunk: &[u8], from_agent: bool| {
        let mut turns = turns
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if from_agent {
            turns.agent_sent(chunk);
        } else {
            turns.client_sent(chunk);
        }
    };
    let downstream = async {
        let _ = copy_lines(stdout, &mut writer, |chunk| seen(chunk, true)).await;
        let _ = writer.close().await;
    };
    let upstream = async {
        let _ = copy_lines(reader, &mut stdin, |chunk| seen(chunk, false)).await;
        // The client is gone: its turns still running are cancelled, then the agent sees the
        // end of its input, and has a moment to finish.
        let cancels = turns
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .cancels();
        if !cancels.is_empty() {
            let _ = stdin.write_all(&cancels).await;
            let _ = stdin.flush().await;
        }
        let _ = stdin.close().await;
        drop(stdin);
        smol::Timer::after(DRAIN_GRACE).await;
    };
    future::or(downstream, upstream).await;
    let exit = process.shutdown().await;
    eprintln!("[{id}] closed ({exit})");
}

/// `--peer-prefix V4/V6`: prefix lengths of at most 32 and 128.
fn peer_prefix(text: &str) -> Result<(u8, u8), String> {
    let (v4, v6) = text
        .split_once('/')
        .ok_or_else(|| "expected V4/V6, such as 32/64".to_owned())?;
    let v4: u8 = v4
        .parse()
        .map_err(|_| format!("not a prefix length: {v4}"))?;
    let v6: u8 = v6
        .parse()
        .map_err(|_| format!("not a prefix length: {v6}"))?;
    if v4 > 32 || v6 > 128 {
        return Err("an IPv4 prefix is at most 32 bits, an IPv6 one at most 128".into());
    }
    Ok((v4, v6))
}

fn connect(args: ConnectArgs) -> Result<(), Failed> {
    let mut connector = Connector::new(args.url.as_str());
    let token = args.token.or_else(default_token);
    for (name, value) in args.header {
        connector = connector.with_header(name, value);
    }
    if let Some(ca) = &args.ca {
        connector = with_ca(connector, ca)?;
    }
    if args.http2_prior_knowledge {
        connector = with_h2c(connector)?;
    }
    connector = connector.with_reconnect(
        args.reconnect_attempts,
        args.reconnect_within
            .unwrap_or(acp_remote::DEFAULT_RECONNECT_WITHIN),
    );
    if args.durable_transport {
        connector = connector.with_durable_transport();
    }
    if let Some(token) = token {
        connector = connector.with_bearer_token(token);
    }
    let (stdin, stdout) = acp_runtime::stdio::stdio()?;
    smol::block_on(async {
        let remote = connector.connect().await?;
        let mut writer = remote.writer;
        let upstream = async {
            let _ = copy_lines(stdin, &mut writer, |_| {}).await;
            let _ = writer.close().await;
            smol::Timer::after(DRAIN_GRACE).await;
            Ok(())
        };
        future::or(copy_lines(remote.reader, stdout, |_| {}), upstream).await
    })
}

/// Copies `reader` to `writer`, flushing whenever a line was completed, so that a message goes
/// out as soon as its newline arrived (`io::copy` flushes only at the end). A WebSocket writer
/// sends each complete line as a frame and keeps the partial rest.
/// `seen` is shown every piece copied.
async fn copy_lines(
    mut reader: impl futures_lite::AsyncBufRead + Unpin,
    writer: impl AsyncWrite + Unpin,
    mut seen: impl FnMut(&[u8]),
) -> Result<(), Failed> {
    let mut writer = BufWriter::new(writer);
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            writer.flush().await?;
            return Ok(());
        }
        let len = chunk.len();
        let line_ended = chunk.contains(&b'\n');
        seen(chunk);
        writer.write_all(chunk).await?;
        reader.consume(len);
        if line_ended {
            writer.flush().await?;
        }
    }
}
