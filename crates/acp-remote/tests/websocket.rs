//! A test agent served over WebSocket to the runtime's client: full prompt turns, several
//! clients at once and isolated from each other, the security refusals, shutdown.
#![cfg(unix)]

mod common;

use std::time::Duration;

use acp_remote::{ConnectError, Connector, Server, ServerOptions};
use acp_runtime::client::{AgentHandle, AutoAllow, ClientOptions};
use acp_runtime::fs::FsHost;
use acp_runtime::terminal::TerminalHost;
use acp_types::*;
use async_tungstenite::tungstenite::Message;
use common::*;
use futures_lite::StreamExt;

/// A demo-agent server on a loopback port; returns its URL and its shutdown handle.
fn start(options: ServerOptions) -> (String, acp_remote::ShutdownHandle, smol::Task<()>) {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
    let url = server.url();
    let (handle, task) = serve_bound(server);
    (url, handle, task)
}

fn client_options() -> ClientOptions {
    ClientOptions::default()
        .with_file_system(FsHost::new())
        .with_terminals(TerminalHost::new())
}

async fn connect(connector: &Connector) -> (AgentHandle, smol::Task<()>) {
    let (agent, driver) = within(
        "connect",
        connector.connect_client(AutoAllow, client_options()),
    )
    .await
    .unwrap();
    let driver = smol::spawn(async move {
        let _ = driver.await;
    });
    (agent, driver)
}

#[test]
fn a_full_prompt_turn_over_websocket() {
    smol::block_on(async {
        let (url, shutdown, server) = start(ServerOptions::default());
        let project = Project::new("full-turn");
        let (agent, driver) = connect(&Connector::new(&url)).await;
        full_turn(&agent, &project).await;
        cancelled_turn(&agent, &project).await;
        agent.close();
        within("the client driver", driver).await;
        shutdown.shutdown();
        within("the server", server).await;
    });
}

#[test]
fn concurrent_connections_are_isolated() {
    smol::block_on(async {
        let (url, shutdown, server) = start(ServerOptions::default());
        let (a, b) = (Project::new("iso-a"), Project::new("iso-b"));
        let connector = Connector::new(&url);
        let remote = connector.connect().await.unwrap();
        let other = connector.connect().await.unwrap();
        let (id_a, id_b) = (remote.connection_id.unwrap(), other.connection_id.unwrap());
        assert_ne!(id_a, id_b, "each connection has its own id");
        drop((remote.reader, remote.writer, other.reader, other.writer));

        let (agent_a, driver_a) = connect(&connector).await;
        let (agent_b, driver_b) = connect(&connector).await;
        let (session_a, session_b) =
            futures_lite::future::zip(full_turn(&agent_a, &a), full_turn(&agent_b, &b)).await;
        assert_ne!(session_a, session_b);

        // B cannot reach A's session: its connection has its own agent and registry.
        let error = agent_b
            .request(&PromptRequest::new(session_a.clone(), vec!["hi".into()]))
            .await
            .unwrap_err();
        let error = error.to_string();
        assert!(
            error.contains("-32002") || error.contains(&*session_a.0),
            "{error}"
        );

        agent_a.close();
        agent_b.close();
        within("driver a", driver_a).await;
        within("driver b", driver_b).await;
        shutdown.shutdown();
        within("the server", server).await;
    });
}

#[test]
fn origins_not_allowed_are_refused() {
    smol::block_on(async {
        let options = ServerOptions::default().with_allowed_origin("https://ide.example.com");
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let addr = server.local_addr();
        let shutdown = server.shutdown_handle();
        let task = smol::spawn(server.serve(|_| async {}));

        let evil = raw_http(
            addr,
            &upgrade_request("/acp", "Origin: https://evil.example\r\n"),
        )
        .await;
        assert!(evil.starts_with("HTTP/1.1 403"), "{evil}");
        let good = raw_http(
            addr,
            &upgrade_request("/acp", "Origin: https://ide.example.com\r\n"),
        )
        .await;
        assert!(good.starts_with("HTTP/1.1 101"), "{good}");
        // Header names are case-insensitive (hyper writes `Sec-Websocket-Accept`); the value
        // is base64, whose case matters: compared exactly.
        assert_eq!(
            head_header(&good, "Sec-WebSocket-Accept"),
            Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
            "{good}"
        );
        assert!(
            head_header(&good, "Acp-Connection-Id").is_some_and(|id| !id.is_empty()),
            "{good}"
        );
        // No Origin at all: not a browser.
        let tool = raw_http(addr, &upgrade_request("/acp", "")).await;
        assert!(tool.starts_with("HTTP/1.1 101"), "{tool}");

        let other_path = raw_http(addr, &upgrade_request("/other", "")).await;
        assert!(other_path.starts_with("HTTP/1.1 404"), "{other_path}");
        let plain = raw_http(addr, "GET /acp HTTP/1.1\r\nHost: x\r\n\r\n").await;
        // Not an upgrade: a Streamable HTTP stream, which must accept SSE.
        assert!(plain.starts_with("HTTP/1.1 406"), "{plain}");
        let put = raw_http(
            addr,
            "PUT /acp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        )
        .await;
        assert!(put.starts_with("HTTP/1.1 405"), "{put}");
        let old = raw_http(
            addr,
            &upgrade_request("/acp", "").replace("Version: 13", "Version: 8"),
        )
        .await;
        assert!(old.starts_with("HTTP/1.1 426"), "{old}");
        let garbage = raw_http(addr, "\x16\x03\x01\x02\x00\r\n\r\n").await;
        assert!(garbage.starts_with("HTTP/1.1 400"), "{garbage}");

        shutdown.shutdown();
        within("the server", task).await.unwrap();
    });
}

#[test]
fn tokens_are_required_when_set_and_for_public_binds() {
    let refused = Server::bind("0.0.0.0:0".parse().unwrap(), ServerOptions::default());
    assert_eq!(
        refused.unwrap_err().kind(),
        std::io::ErrorKind::PermissionDenied
    );
    smol::block_on(async {
        let (url, shutdown, server) = start(ServerOptions::default().with_bearer_token("s3cret"));
        for connector in [
            Connector::new(&url),
            Connector::new(&url).with_bearer_token("wrong"),
        ] {
            match connector.connect().await {
                Err(ConnectError::Refused { status: 401, .. }) => {}
                other => panic!("expected 401, got {other:?}"),
            }
        }
        let (agent, driver) = connect(&Connector::new(&url).with_bearer_token("s3cret")).await;
        within("initialize", agent.initialize()).await.unwrap();
        agent.close();
        within("the client driver", driver).await;
        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// A raw WebSocket client: binary frames are ignored, a pretty-printed message with raw
/// newlines is still one message, and the answer comes back as one text frame.
#[test]
fn binary_frames_are_ignored_and_raw_newlines_stay_inside_one_message() {
    smol::block_on(async {
        let (url, shutdown, server) = start(ServerOptions::default());
        let (mut ws, _) = websocket(&url).await;
        ws.send(Message::binary(
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\"}".to_vec(),
        ))
        .await
        .unwrap();
        ws.send(Message::text(
            "{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 1,\n  \"method\": \"initialize\",\n  \"params\": {\"protocolVersion\": 1}\n}",
        ))
        .await
        .unwrap();
        let answer = loop {
            match within("the answer", ws.next()).await.unwrap().unwrap() {
                Message::Text(text) => break text.to_string(),
                _ => continue,
            }
        };
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["id"], 1, "{answer}");
        assert!(answer["result"]["protocolVersion"].is_number(), "{answer}");
        ws.close(None).await.unwrap();
        shutdown.shutdown();
        within("the server", server).await;
    });
}

#[test]
fn messages_larger_than_the_limit_close_the_connection() {
    smol::block_on(async {
        let (url, shutdown, server) =
            start(ServerOptions::default().with_max_message_size(64 * 1024));
        let remote = Connector::new(&url).connect().await.unwrap();
        let (mut reader, mut writer) = (remote.reader, remote.writer);
        use futures_lite::{AsyncReadExt, AsyncWriteExt};
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{}\"}}\n",
            "a".repeat(100 * 1024)
        );
        writer.write_all(big.as_bytes()).await.unwrap();
        writer.flush().await.unwrap();
        let mut rest = Vec::new();
        // The server closes: the reader ends, with or without an error.
        let _ = within("the close", reader.read_to_end(&mut rest)).await;
        assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
        shutdown.shutdown();
        within("the server", server).await;
    });
}

#[test]
fn idle_connections_are_closed() {
    smol::block_on(async {
        let (url, shutdown, server) =
            start(ServerOptions::default().with_idle_timeout(Some(Duration::from_millis(300))));
        let remote = Connector::new(&url).connect().await.unwrap();
        let mut reader = remote.reader;
        let mut rest = Vec::new();
        use futures_lite::AsyncReadExt;
        let _ = within("the idle close", reader.read_to_end(&mut rest)).await;
        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// Shutdown ends a connection's input: the client sees the connection close, and the server
/// returns.
#[test]
fn shutdown_closes_open_connections() {
    smol::block_on(async {
        let (url, shutdown, server) =
            start(ServerOptions::default().with_shutdown_grace(Duration::from_secs(10)));
        let (agent, driver) = connect(&Connector::new(&url)).await;
        within("initialize", agent.initialize()).await.unwrap();
        shutdown.shutdown();
        within("the server", server).await;
        within("the client driver", driver).await;
        assert!(agent.initialize().await.is_err());
        // Nobody listens any more.
        assert!(Connector::new(&url).connect().await.is_err());
    });
}

#[test]
fn connections_over_the_limit_are_answered_503() {
    smol::block_on(async {
        let (url, shutdown, server) = start(ServerOptions::default().with_max_connections(1));
        let first = Connector::new(&url).connect().await.unwrap();
        match Connector::new(&url).connect().await {
            Err(ConnectError::Refused { status: 503, .. }) => {}
            other => panic!("expected 503, got {other:?}"),
        }
        drop(first);
        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// A client that connects and says nothing is dropped after the handshake timeout, and one
/// that sends a head too large gets 431.
#[test]
fn silent_and_oversized_requests_are_dropped() {
    smol::block_on(async {
        let options = ServerOptions::default().with_handshake_timeout(Duration::from_millis(200));
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let addr = server.local_addr();
        let shutdown = server.shutdown_handle();
        let task = smol::spawn(server.serve(|_| async {}));

        use futures_lite::AsyncReadExt;
        let mut silent = smol::net::TcpStream::connect(addr).await.unwrap();
        let mut rest = Vec::new();
        let read = within("the silent client's end", silent.read_to_end(&mut rest)).await;
        assert!(read.is_err() || rest.is_empty(), "{rest:?}");

        let huge = format!("GET /acp HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
        assert!(raw_http(addr, &huge).await.starts_with("HTTP/1.1 431"));

        shutdown.shutdown();
        within("the server", task).await.unwrap();
    });
}

/// The value of the header `name` (matched case-insensitively, as header names are) in the
/// head of a raw HTTP/1.1 answer; the value as sent, without surrounding whitespace.
fn head_header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next()?;
    head.split("\r\n").skip(1).find_map(|line| {
        let (n, value) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}
