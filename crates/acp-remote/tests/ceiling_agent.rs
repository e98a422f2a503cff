//! Hostile peers against `serve_agent` (issue 33): what the runtime keeps for each client
//! draws on the server's memory ceiling, so that 128 hostile clients hold the ceiling plus a
//! fixed overhead each, not 128 of each per-connection budget, measured as the process's
//! resident memory (after handing freed memory back to the system) while a legitimate client
//! is served: the answers waiting for clients that never read them (Streamable HTTP), and
//! what the sessions of clients that open many large ones keep (WebSocket).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use acp_remote::{Connector, ServerOptions};
use common::http_client::post;
use common::raw_ws::{frame, next_message, raw_websocket};
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

/// The cases that measure the process's memory run one at a time.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn measuring() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

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
    let _measuring = measuring();
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

/// The size of the MCP server list each hostile session carries.
const SESSION: usize = 64 * 1024;

/// The sessions each hostile client opens: 512 KiB, far below a connection's session budget
/// (16 MiB), so that only the ceiling bounds them together.
const SESSIONS: usize = 8;

/// 128 WebSockets each open 8 sessions whose `mcpServers` carry 64 KiB (512 KiB each), and
/// keep them. Before, each connection's sessions were bounded by its own session budget
/// alone (16 MiB), beside the ceiling: 64 MiB here, 2 GiB at 128 × 16 MiB. Now they draw on
/// the ceiling too: a session that does not fit under the share rule is refused (`-32602`)
/// before the agent is called, and a legitimate client's small session still opens.
#[test]
fn sessions_of_many_connections_stay_within_the_ceiling() {
    let _measuring = measuring();
    smol::block_on(async {
        let options = ServerOptions::default()
            .with_max_connections(160)
            .with_memory_ceiling(CEILING);
        let (addr, _handle, _task) = serve(options);
        let project = Project::new("ceiling-sessions");
        let (agent, _driver) = connect_client(Connector::new(format!("ws://{addr}/acp"))).await;
        full_turn(&agent, &project).await;
        let session = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"session/new","params":{{"cwd":"/tmp","mcpServers":[{{"name":"x","command":"/bin/true","args":["{}"],"env":[]}}]}}}}"#,
            "a".repeat(SESSION)
        );
        let before = resident();
        let (mut opened, mut refused) = (0, 0);
        let mut sockets = Vec::new();
        for _ in 0..128 {
            let mut stream = raw_websocket(addr).await;
            stream
                .write_all(&frame(true, 0x1, INITIALIZE.as_bytes()))
                .await
                .unwrap();
            let mut buffer = Vec::new();
            within("initialize", next_message(&mut stream, &mut buffer))
                .await
                .expect("the initialize answer");
            for _ in 0..SESSIONS {
                stream
                    .write_all(&frame(true, 0x1, session.as_bytes()))
                    .await
                    .unwrap();
                let (answer, _) = within("session/new", next_message(&mut stream, &mut buffer))
                    .await
                    .expect("the session/new answer");
                let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
                if answer.get("result").is_some() {
                    opened += 1;
                } else {
                    assert_eq!(answer["error"]["code"], -32602, "{answer}");
                    refused += 1;
                }
            }
            sockets.push(stream);
        }
        let held = settled().await.saturating_sub(before);
        eprintln!(
            "128 connections opening 8 sessions of 64 KiB: {} MiB, {opened} opened, {refused} refused",
            held / MIB
        );
        // The ceiling, plus per connection its own small state (runtime, WebSocket, socket).
        let overhead = 128 * 256 * 1024;
        assert!(
            held < CEILING + overhead,
            "128 connections' sessions hold {} MiB (bound {} MiB)",
            held / MIB,
            (CEILING + overhead) / MIB
        );
        // 64 KiB sessions in the ceiling's general part (28 MiB): at most about 440 open.
        assert!(opened <= 448, "{opened} sessions of 64 KiB opened");
        assert!(refused > 0);
        // A legitimate client is served meanwhile, its session included.
        let (agent, _driver) = connect_client(Connector::new(format!("ws://{addr}/acp"))).await;
        full_turn(&agent, &project).await;
        drop(sockets);
    });
}
