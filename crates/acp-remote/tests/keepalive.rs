//! WebSocket keep-alive over real sockets: a peer that stops answering is given up within the
//! interval plus the timeout, on the server and on our client; a quiet peer that answers pings
//! is kept.

mod common;

use std::io;
use std::time::{Duration, Instant};

use acp_remote::{Connector, Server, ServerOptions};
use common::within;
use futures_lite::{AsyncBufReadExt, AsyncWriteExt, StreamExt};

const INTERVAL: Duration = Duration::from_millis(100);
/// Generous beside the interval: a busy machine may delay a pong by a few hundred ms.
const TIMEOUT: Duration = Duration::from_secs(1);

fn keepalive() -> Option<(Duration, Duration)> {
    Some((INTERVAL, TIMEOUT))
}

/// A server whose handler reads lines until the end and reports each one and how it ended.
fn echo_server() -> (
    std::net::SocketAddr,
    acp_remote::ShutdownHandle,
    smol::channel::Receiver<Result<String, io::Error>>,
) {
    let options = ServerOptions::default().with_websocket_keepalive(keepalive());
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
    let addr = server.local_addr();
    let handle = server.shutdown_handle();
    let (events, received) = smol::channel::unbounded();
    smol::spawn(server.serve(move |connection| {
        let events = events.clone();
        async move {
            let mut reader = connection.reader;
            let _writer = connection.writer;
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line).await {
                    Ok(0) => {
                        let _ = events.send(Ok("end".into())).await;
                        return;
                    }
                    Ok(_) => {
                        let _ = events.send(Ok(line)).await;
                    }
                    Err(error) => {
                        let _ = events.send(Err(error)).await;
                        return;
                    }
                }
            }
        }
    }))
    .detach();
    (addr, handle, received)
}

#[test]
fn the_server_gives_up_a_client_that_answers_no_ping() {
    smol::block_on(async {
        let (addr, _handle, events) = echo_server();
        let tcp = smol::net::TcpStream::connect(addr).await.unwrap();
        // A WebSocket client that is never polled again after the handshake: it reads no ping
        // and answers none, as a peer that vanished.
        let (_ws, _) = async_tungstenite::client_async(format!("ws://{addr}/acp"), tcp)
            .await
            .unwrap();
        let start = Instant::now();
        let ended = within("the keep-alive timeout", events.recv())
            .await
            .unwrap();
        let error = ended.expect_err("the read fails");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        assert!(error.to_string().contains("keep-alive"), "{error}");
        // Within the interval plus the timeout (and what a busy machine adds), not at the idle
        // timeout of ten minutes.
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
    });
}

#[test]
fn our_client_gives_up_a_server_that_answers_no_ping() {
    smol::block_on(async {
        let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let silent = smol::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            // Accepts, then never reads again.
            let ws = async_tungstenite::accept_async(tcp).await.unwrap();
            smol::Timer::after(Duration::from_secs(30)).await;
            drop(ws);
        });
        let remote = Connector::new(format!("ws://{addr}/acp"))
            .with_websocket_keepalive(keepalive())
            .connect()
            .await
            .unwrap();
        let mut reader = remote.reader;
        let mut line = String::new();
        let error = within("the keep-alive timeout", reader.read_line(&mut line))
            .await
            .expect_err("the read fails");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        drop(silent);
    });
}

#[test]
fn a_quiet_connection_whose_peers_answer_pings_is_kept() {
    smol::block_on(async {
        let (addr, _handle, events) = echo_server();
        let remote = Connector::new(format!("ws://{addr}/acp"))
            .with_websocket_keepalive(keepalive())
            .connect()
            .await
            .unwrap();
        let (mut reader, mut writer) = (remote.reader, remote.writer);
        // Both sides wait in a read for several timeouts, sending nothing but pings and pongs.
        let mut line = String::new();
        let read =
            futures_lite::future::or(async { Some(reader.read_line(&mut line).await) }, async {
                smol::Timer::after(TIMEOUT * 5 / 2).await;
                None
            })
            .await;
        assert!(read.is_none(), "the client's read ended: {read:?}");
        assert!(events.try_recv().is_err(), "the server's read ended");
        // Still open both ways.
        writer
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n")
            .await
            .unwrap();
        writer.flush().await.unwrap();
        let line = within("the line", events.recv()).await.unwrap().unwrap();
        assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n");
    });
}

#[test]
fn a_third_party_client_that_reads_is_kept() {
    smol::block_on(async {
        let (addr, _handle, events) = echo_server();
        let tcp = smol::net::TcpStream::connect(addr).await.unwrap();
        let (mut ws, _) = async_tungstenite::client_async(format!("ws://{addr}/acp"), tcp)
            .await
            .unwrap();
        // The WebSocket library answers the server's pings as it reads.
        let mut pings = 0;
        let until = Instant::now() + TIMEOUT * 5 / 2;
        while Instant::now() < until {
            let next = futures_lite::future::or(async { ws.next().await.map(Some) }, async {
                smol::Timer::at(until).await;
                None
            })
            .await;
            match next {
                Some(Some(Ok(async_tungstenite::tungstenite::Message::Ping(_)))) => pings += 1,
                None => break,
                other => panic!("{other:?}"),
            }
        }
        assert!(pings >= 2, "{pings} pings");
        assert!(events.try_recv().is_err(), "the server's read ended");
    });
}
