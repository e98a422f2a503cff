//! `acp-bridge`: a stdio agent served over WebSocket and Streamable HTTP, or a remote agent
//! reached from stdio.
//!
//! ```text
//! acp-bridge serve [--listen ADDR] [--token T] [--allow-origin ORIGIN]... -- AGENT [ARGS...]
//! acp-bridge connect ws://HOST:PORT/acp|http://HOST:PORT/acp [--token T] [--header 'N: v']...
//!     [--http2-prior-knowledge]
//! ```
//!
//! `serve` starts one agent process per WebSocket client and pipes the connection through
//! it; `connect` pipes this process's stdin and stdout through a WebSocket, so that an editor
//! that only knows how to run a command reaches a remote agent. In both directions a line is
//! one text frame: a partial line is never sent as a message.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use acp_remote::{Connector, IncomingConnection, Server, ServerOptions};
use acp_runtime::process::AgentCommand;
use futures_lite::io::BufWriter;
use futures_lite::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, future};

const USAGE: &str = "\
usage:
  acp-bridge serve [OPTIONS] -- AGENT [ARGS...]
      Serves a stdio agent at ws://ADDR/acp (WebSocket) and http://ADDR/acp (Streamable HTTP),
      one agent process per client.
      --listen ADDR          address to listen on (default 127.0.0.1:8765); any address other
                             than loopback needs a token
      --token TOKEN          require 'Authorization: Bearer TOKEN' (default: $ACP_BRIDGE_TOKEN)
      --allow-origin ORIGIN  allow browsers from ORIGIN (repeatable; default: none)
      --max-connections N    at most N clients at once (default 128)
      --max-sockets-per-peer N
                             at most N TCP connections from one address (default: a quarter
                             of four times --max-connections beyond loopback, none on it)
      --idle-timeout SECS    close connections quiet for SECS (default 600; 0 for never)
      --tls-cert FILE        serve TLS (wss://, https://) with this PEM certificate chain...
      --tls-key FILE         ...and this PEM private key (needs the `tls` feature)
      --drain-timeout SECS   on SIGTERM or SIGINT: refuse new clients (GET /healthz answers
                             503), let running prompt turns finish for at most SECS (default
                             30), then close every connection and exit; a second signal exits
                             at once
  acp-bridge connect URL [OPTIONS]
      Connects stdin and stdout to the remote agent at URL: ws://HOST:PORT/acp (WebSocket) or
      http://HOST:PORT/acp (Streamable HTTP).
      --token TOKEN          send 'Authorization: Bearer TOKEN' (default: $ACP_BRIDGE_TOKEN)
      --header 'NAME: VALUE' send a header with each request (repeatable)
      --ca FILE              trust only the certificates of this PEM file for wss:// and
                             https:// (default: the Mozilla roots; needs the `tls` feature)
      --http2-prior-knowledge
                             speak HTTP/2 to an http:// URL from the first byte (h2c), for a
                             server known to speak it (needs the `http2` feature); https://
                             URLs use HTTP/2 whenever the server offers it
";

/// What is left to a side once the other has finished: the agent's last answers after the
/// client closed, or the client's after the agent closed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The longest line an agent may write before the bridge gives up on that connection.
const MAX_LINE: usize = acp_remote::DEFAULT_MAX_MESSAGE_SIZE;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("connect") => connect(&args[1..]),
        Some("-h" | "--help") => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(Usage("a command: serve or connect".into()).into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Usage(Usage(message))) => {
            eprintln!("acp-bridge: expected {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Error::Failed(message)) => {
            eprintln!("acp-bridge: {message}");
            ExitCode::FAILURE
        }
    }
}

struct Usage(String);

enum Error {
    Usage(Usage),
    Failed(String),
}

impl From<Usage> for Error {
    fn from(usage: Usage) -> Self {
        Error::Usage(usage)
    }
}

impl<E: std::fmt::Display> From<E> for Error {
    fn from(error: E) -> Self {
        Error::Failed(error.to_string())
    }
}

/// The value after an option, or a usage error naming it.
fn value<'a>(option: &str, rest: &mut impl Iterator<Item = &'a String>) -> Result<String, Usage> {
    rest.next()
        .cloned()
        .ok_or_else(|| Usage(format!("a value after {option}")))
}

fn default_token() -> Option<String> {
    std::env::var("ACP_BRIDGE_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
}

fn serve(args: &[String]) -> Result<(), Error> {
    let split = args.iter().position(|a| a == "--");
    let (options, command) = match split {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => return Err(Usage("-- AGENT [ARGS...] after the options".into()).into()),
    };
    let Some((program, program_args)) = command.split_first() else {
        return Err(Usage("an agent command after --".into()).into());
    };
    let mut listen: SocketAddr = "127.0.0.1:8765".parse().expect("a valid address");
    let mut token = default_token();
    let mut server_options = ServerOptions::default();
    let (mut tls_cert, mut tls_key) = (None, None);
    let mut drain_timeout = Duration::from_secs(30);
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        match option.as_str() {
            "--listen" => {
                let addr = value(option, &mut rest)?;
                listen = addr
                    .parse()
                    .map_err(|_| Usage(format!("an IP:PORT address, not {addr:?}")))?;
            }
            "--token" => token = Some(value(option, &mut rest)?),
            "--tls-cert" => tls_cert = Some(value(option, &mut rest)?),
            "--tls-key" => tls_key = Some(value(option, &mut rest)?),
            "--allow-origin" => {
                server_options = server_options.with_allowed_origin(value(option, &mut rest)?);
            }
            "--max-connections" => {
                let n = value(option, &mut rest)?;
                let n = n
                    .parse()
                    .map_err(|_| Usage(format!("a number, not {n:?}")))?;
                server_options = server_options.with_max_connections(n);
            }
            "--max-sockets-per-peer" => {
                let n = value(option, &mut rest)?;
                let n = n
                    .parse()
                    .map_err(|_| Usage(format!("a number, not {n:?}")))?;
                server_options = server_options.with_max_sockets_per_peer(n);
            }
            "--drain-timeout" => {
                let secs = value(option, &mut rest)?;
                let secs: u64 = secs
                    .parse()
                    .map_err(|_| Usage(format!("seconds, not {secs:?}")))?;
                drain_timeout = Duration::from_secs(secs);
            }
            "--idle-timeout" => {
                let secs = value(option, &mut rest)?;
                let secs: u64 = secs
                    .parse()
                    .map_err(|_| Usage(format!("seconds, not {secs:?}")))?;
                let timeout = (secs > 0).then(|| Duration::from_secs(secs));
                server_options = server_options.with_idle_timeout(timeout);
            }
            other => return Err(Usage(format!("an option of serve, not {other:?}")).into()),
        }
    }
    if let Some(token) = token {
        server_options = server_options.with_bearer_token(token);
    }
    match (tls_cert, tls_key) {
        (None, None) => {}
        (Some(cert), Some(key)) => server_options = with_tls(server_options, &cert, &key)?,
        _ => return Err(Usage("both --tls-cert and --tls-key".into()).into()),
    }
    let command = AgentCommand::new(program).args(program_args);
    let server = Server::bind(listen, server_options)?;
    eprintln!(
        "acp-bridge: serving {program} at {} (WebSocket) and {} (Streamable HTTP)",
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
fn with_tls(options: ServerOptions, cert: &str, key: &str) -> Result<ServerOptions, Error> {
    let tls = acp_remote::TlsServerConfig::from_pem_files(cert, key)
        .map_err(|e| Error::Failed(format!("TLS certificate {cert}, key {key}: {e}")))?;
    Ok(options.with_tls(tls))
}

#[cfg(not(feature = "tls"))]
fn with_tls(_: ServerOptions, _: &str, _: &str) -> Result<ServerOptions, Error> {
    Err(Error::Failed(
        "built without TLS (the `tls` feature)".into(),
    ))
}

#[cfg(feature = "tls")]
fn with_ca(connector: Connector, ca: &str) -> Result<Connector, Error> {
    let tls = acp_remote::TlsClientConfig::with_root_pem_file(ca)
        .map_err(|e| Error::Failed(format!("certificates {ca}: {e}")))?;
    Ok(connector.with_tls(tls))
}

#[cfg(not(feature = "tls"))]
fn with_ca(_: Connector, _: &str) -> Result<Connector, Error> {
    Err(Error::Failed(
        "built without TLS (the `tls` feature)".into(),
    ))
}

#[cfg(feature = "http2")]
fn with_h2c(connector: Connector) -> Result<Connector, Error> {
    Ok(connector.with_http2_prior_knowledge())
}

#[cfg(not(feature = "http2"))]
fn with_h2c(_: Connector) -> Result<Connector, Error> {
    Err(Error::Failed(
        "built without HTTP/2 (the `http2` feature)".into(),
    ))
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
    let downstream = async {
        let _ = copy_lines(stdout, &mut writer).await;
        let _ = writer.close().await;
    };
    let upstream = async move {
        let _ = copy_lines(reader, &mut stdin).await;
        // The client is gone: the agent sees the end of its input, and has a moment to finish.
        let _ = stdin.close().await;
        drop(stdin);
        smol::Timer::after(DRAIN_GRACE).await;
    };
    future::or(downstream, upstream).await;
    let exit = process.shutdown().await;
    eprintln!("[{id}] closed ({exit})");
}

fn connect(args: &[String]) -> Result<(), Error> {
    let mut rest = args.iter();
    let url = rest
        .next()
        .filter(|u| !u.starts_with('-'))
        .ok_or_else(|| Usage("a ws(s):// or http(s):// URL after connect".into()))?;
    let mut connector = Connector::new(url.as_str());
    let mut token = default_token();
    while let Some(option) = rest.next() {
        match option.as_str() {
            "--token" => token = Some(value(option, &mut rest)?),
            "--header" => {
                let header = value(option, &mut rest)?;
                let (name, value) = header
                    .split_once(':')
                    .ok_or_else(|| Usage(format!("NAME: VALUE, not {header:?}")))?;
                connector = connector.with_header(name.trim(), value.trim());
            }
            "--ca" => connector = with_ca(connector, &value(option, &mut rest)?)?,
            "--http2-prior-knowledge" => connector = with_h2c(connector)?,
            other => return Err(Usage(format!("an option of connect, not {other:?}")).into()),
        }
    }
    if let Some(token) = token {
        connector = connector.with_bearer_token(token);
    }
    let (stdin, stdout) = acp_runtime::stdio::stdio()?;
    smol::block_on(async {
        let remote = connector.connect().await?;
        let mut writer = remote.writer;
        let upstream = async {
            let _ = copy_lines(stdin, &mut writer).await;
            let _ = writer.close().await;
            smol::Timer::after(DRAIN_GRACE).await;
            Ok(())
        };
        future::or(copy_lines(remote.reader, stdout), upstream).await
    })
}

/// Copies `reader` to `writer`, flushing whenever a line was completed, so that a message goes
/// out as soon as its newline arrived (`io::copy` flushes only at the end). A WebSocket writer
/// sends each complete line as a frame and keeps the partial rest.
async fn copy_lines(
    mut reader: impl futures_lite::AsyncBufRead + Unpin,
    writer: impl AsyncWrite + Unpin,
) -> Result<(), Error> {
    let mut writer = BufWriter::new(writer);
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            writer.flush().await?;
            return Ok(());
        }
        let len = chunk.len();
        let line_ended = chunk.contains(&b'\n');
        writer.write_all(chunk).await?;
        reader.consume(len);
        if line_ended {
            writer.flush().await?;
        }
    }
}
