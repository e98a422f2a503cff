//! A load command (not a test): N clients at once, each opening its own connection, a session
//! and one prompt turn of streamed chunks, against a server in this process.
//!
//! ```text
//! cargo run --release -p acp-remote --example load -- [N] [--mode ws|http|memory] [--chunks K]
//! ```
//!
//! `ws` goes through the WebSocket server on loopback, `http` through its Streamable HTTP
//! side; `memory` connects each client to its own agent over an in-memory pipe (the runtime
//! without a network transport), the baseline.
//! Prints the wall time, turns per second, updates per second, and the process's peak RSS
//! before and after (Linux), divided per connection. Run each mode in a process of its own:
//! the peak is the process's.

use std::time::{Duration, Instant};

use acp_remote::{Connector, Server, ServerOptions};
use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, Turn};
use acp_runtime::client::{self, AgentHandle, AutoAllow, ClientOptions};
use acp_types::*;

/// Streams `chunks` message chunks of ~100 bytes per prompt.
struct Chunky {
    chunks: usize,
}

impl Agent for Chunky {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, _: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        for i in 0..self.chunks {
            turn.message(format!("chunk {i:04} {}", "x".repeat(90)))
                .await?;
        }
        Ok(StopReason::EndTurn.into())
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// One client's whole life: initialize, a session, a turn; returns the updates received.
async fn one_turn(agent: AgentHandle) -> usize {
    agent.initialize().await.expect("initialize");
    let session = agent.new_session("/").await.expect("session/new");
    let mut turn = session.prompt(vec!["go".into()]).await.expect("prompt");
    let mut updates = 0;
    while let Some(update) = turn.next().await {
        update.expect("an update");
        updates += 1;
    }
    assert_eq!(
        turn.end().await.expect("end").stop_reason,
        StopReason::EndTurn
    );
    updates
}

fn main() {
    let mut n = 100usize;
    let mut mode = String::from("ws");
    let mut chunks = 50usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mode" => mode = args.next().expect("--mode ws|http|memory"),
            "--chunks" => {
                chunks = args
                    .next()
                    .and_then(|c| c.parse().ok())
                    .expect("--chunks K")
            }
            _ => n = arg.parse().expect("N, a number of clients"),
        }
    }
    let before = peak_rss_kib();
    let (elapsed, updates) = smol::block_on(async {
        let agent_options = AgentOptions::default().with_info("chunky", "0");
        let mut agents = Vec::new();
        if mode == "ws" || mode == "http" {
            let options = ServerOptions::default().with_max_connections(n.max(1));
            let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
            let url = if mode == "ws" {
                server.url()
            } else {
                server.http_url()
            };
            let stop = server.shutdown_handle();
            smol::spawn(server.serve_agent(move |_| Chunky { chunks }, agent_options)).detach();
            let connector = Connector::new(url);
            let start = Instant::now();
            for _ in 0..n {
                let (agent, driver) = connector
                    .connect_client(AutoAllow, ClientOptions::default())
                    .await
                    .expect("connect");
                smol::spawn(driver).detach();
                agents.push(agent);
            }
            let updates = run_all(agents).await;
            let elapsed = start.elapsed();
            stop.shutdown();
            (elapsed, updates)
        } else {
            let start = Instant::now();
            for _ in 0..n {
                let (a, b) = acp_jsonrpc::memory::pair(acp_jsonrpc::memory::DEFAULT_PIPE_CAPACITY);
                let (_client, agent_driver) =
                    agent::serve(Chunky { chunks }, a.reader, a.writer, agent_options.clone());
                smol::spawn(agent_driver).detach();
                let (agent, driver) =
                    client::connect(AutoAllow, b.reader, b.writer, ClientOptions::default());
                smol::spawn(driver).detach();
                agents.push(agent);
            }
            let updates = run_all(agents).await;
            (start.elapsed(), updates)
        }
    });
    let after = peak_rss_kib();
    println!(
        "mode {mode}: {n} connections, {chunks} chunks each: {:.3} s, {:.0} turns/s, {:.0} updates/s",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        updates as f64 / elapsed.as_secs_f64().max(f64::EPSILON),
    );
    if let (Some(before), Some(after)) = (before, after) {
        println!(
            "peak RSS {:.1} MiB (start {:.1} MiB): {:.0} KiB per connection",
            after as f64 / 1024.0,
            before as f64 / 1024.0,
            (after.saturating_sub(before)) as f64 / n.max(1) as f64,
        );
    }
    std::thread::sleep(Duration::from_millis(50));
}

/// Runs every client's turn at once.
async fn run_all(agents: Vec<AgentHandle>) -> usize {
    let tasks: Vec<_> = agents
        .into_iter()
        .map(|agent| smol::spawn(one_turn(agent)))
        .collect();
    let mut updates = 0;
    for task in tasks {
        updates += task.await;
    }
    updates
}
