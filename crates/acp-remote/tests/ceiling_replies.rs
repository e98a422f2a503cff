//! Hostile peers against `serve_agent` (issue 33): Streamable HTTP clients that POST requests
//! and never read the answers. What the runtime queues for each client (its answers waiting
//! for the writer, once the client's stream queue is full) draws on the server's memory
//! ceiling, so that 128 such clients hold the ceiling plus a fixed overhead each, not 128
//! reply budgets, measured as the process's resident memory (after handing freed memory back
//! to the system) while a legitimate client is served.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use acp_remote::{Connector, ServerOptions};
use common::http_client::post;
use common::{Project, connect_client, full_turn, resident, serve, within};
use futures_lite::AsyncWriteExt;
use smol::net::TcpStream;

const MIB: usize = 1 << 20;

/// The ceiling of the server: low, so that the attack reaches it with small answers.
const CEILING: usize = 32 * MIB;

/// Each connection's stream budget: small, so that what waits is the runtime's answers.
const STREAM_BUDGET: usize = 64 * 1024;

/// The size of each answer a hostile client asks for.
const ANSWER: usize = 64 * 1024;

/// The answers each hostile client asks for: 2 MiB, far below a connection's reply budget (32
/// MiB), so that only the ceiling bounds them together.
const REQUESTS: usize = 32;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;

/// Waits until the resident memory stops growing (the attack has taken what it can).
async fn settled() -> usize {
    let mut last = resident();
    for _ in 0..40 {
        smol::Timer::after(Duration::from_millis(250)).await;
        let now = resident();
        if now.abs_diff(last) < MIB {
            return now;
        }
        last = now;
    }
    last
}

/// Opens a Streamable HTTP connection and POSTs [`REQUESTS`] requests for an answer of
/// [`ANSWER`] bytes on one kept-alive socket (pipelined), opening no stream and reading
/// nothing: the socket, kept open.
async fn never_reading(addr: SocketAddr) -> TcpStream {
    let answer = post(addr, &[], INITIALIZE).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let conn = answer.header("acp-connection-id").unwrap().to_owned();
    let mut posts = String::new();
    for id in 1..=REQUESTS {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"_test/pad","params":{{"bytes":{ANSWER}}}}}"#
        );
        posts.push_str(&format!(
            "POST /acp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Acp-Connection-Id: {conn}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
    }
    let mut stream = TcpStream::connect(addr).await.unwrap();
    within("the requests", stream.write_all(posts.as_bytes()))
        .await
        .unwrap();
    stream
}

/// 128 Streamable HTTP clients each POST 32 requests for a 64 KiB answer (2 MiB of answers
/// each) and never open their stream. Once a connection's stream queue is full (64 KiB
/// here), the runtime keeps its answers. Before, up to the connection's own reply budget (32
/// MiB), beside the ceiling: 256 MiB here, 4 GiB at 128 × 32 MiB. Now they draw on the
/// ceiling too: a connection whose answer does not fit under the share rule reads no more
/// until its peer has taken that answer (never), so the connections together hold the
/// ceiling plus, each, the answer it paused on.
#[test]
fn answers_of_peers_that_never_read_stay_within_the_ceiling() {
    smol::block_on(async {
        let options = ServerOptions::default()
            .with_max_connections(160)
            .with_memory_ceiling(CEILING)
            .with_stream_budget(STREAM_BUDGET);
        let (addr, _handle, _task) = serve(options);
        let project = Project::new("ceiling-replies");
        let url = format!("http://{addr}/acp");
        // Warm up: one connection's worth of runtime state, so that the baseline has it.
        let (agent, _driver) = connect_client(Connector::new(url.clone())).await;
        full_turn(&agent, &project).await;
        let before = resident();
        let mut sockets = Vec::new();
        for _ in 0..128 {
            sockets.push(never_reading(addr).await);
        }
        let held = settled().await.saturating_sub(before);
        eprintln!(
            "128 connections that never read 2 MiB of answers: {} MiB",
            held / MIB
        );
        // The ceiling, plus per connection: the answer it paused on (64 KiB), what its
        // writer is handing over (one more), and its own small state (runtime, HTTP, socket).
        let overhead = 128 * 384 * 1024;
        assert!(
            held < CEILING + overhead,
            "128 connections that never read hold {} MiB (bound {} MiB)",
            held / MIB,
            (CEILING + overhead) / MIB
        );
        // A legitimate client is served meanwhile.
        let (agent, _driver) = connect_client(Connector::new(url)).await;
        full_turn(&agent, &project).await;
        drop(sockets);
    });
}
