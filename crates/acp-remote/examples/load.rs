//! A load command (not a test): N clients at once, each opening its own connection, a session
//! and one prompt turn of streamed chunks, against a server in this process.
//!
//! ```text
//! cargo run --release -p acp-rs-remote --example load -- [N] [--mode ws|http|http2|memory|stdio] [--chunks K] [--durable]
//! cargo build --release -p acp-rs-remote --bin acp-bridge --example load
//! target/release/examples/load [N] --mode ws|http --servers S [--chunks K]
//! target/release/examples/load --serve 127.0.0.1:PORT [--chunks K]
//! target/release/examples/load [N] --url ws://…|http://… [--pid PID] [--warmup W] [--token T] [--chunks K]
//! ```
//!
//! `--url URL` drives a server in another process instead, any implementation's (`ws://` over
//! WebSocket, `http://` over Streamable HTTP), with the same turns; given `--pid PID` (the
//! server's process), it also prints the server's RSS growth per connection, sampled from
//! `/proc/PID/status` before the clients connect and again with every connection open after
//! the turns. `--warmup W` first runs W clients' turns and closes them before that first
//! sample, so that what a server does once (code paged in on first use, allocator arenas of
//! threads it starts, a JIT compiling) is not counted per connection. `--serve ADDR` is our
//! side of that comparison: `acp_remote::Server` with this example's agent, in a process of
//! its own, until killed. interop/remote-load.sh runs it against the official SDKs' servers.
//!
//! `--servers S` (with `ws` or `http`) measures a deployment instead of one server in this
//! process: S `acp-bridge serve` processes (the binary beside this example's directory, built
//! in the same profile) behind HAProxy (`haproxy` on the PATH) with the recipe of
//! docs/deploy.md, each bridge running this example as a stdio agent per client. Besides
//! this process's (the clients') memory it prints what the servers hold per connection: the
//! bridges' RSS growth and the agent processes' private memory, sampled after the turns.
//!
//! `ws` goes through the WebSocket server on loopback, `http` through its Streamable HTTP
//! side (HTTP/1.1), `http2` through the same over HTTP/2 in the clear (h2c with prior
//! knowledge: one TCP connection per client; needs `--features http2`); `memory` connects each client to its own agent over an in-memory pipe (the runtime
//! without a network transport); `stdio` gives each client its own agent process, as editors
//! run agents: this example re-run with a hidden argument, talking over OS pipes.
//! Prints the wall time (connecting or spawning included), turns per second, updates per
//! second, the turns' latency (p50 and p99, from sending `session/prompt` to its answer),
//! and this process's peak RSS before and after (Linux), divided per connection. Run each
//! mode in a process of its own: the peak is the process's. With `stdio` the agents are
//! not in this process: each reports its own peak RSS (and its RSS before serving) on stderr
//! when its stdin closes, and their sum is printed apart.

use std::time::{Duration, Instant};

use acp_remote::{Connector, Server, ServerOptions};
use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, Turn};
use acp_runtime::client::{self, AgentHandle, AutoAllow, ClientOptions};
use acp_runtime::process::{AgentCommand, AgentProcess};
use acp_types::*;

#[path = "load/remote.rs"]
mod remote;
#[path = "load/servers.rs"]
mod servers;

/// The hidden argument with which this example re-runs itself as a stdio agent: `--serve-stdio-agent K`.
const SERVE_STDIO_AGENT: &str = "--serve-stdio-agent";
/// What a stdio agent writes on stderr at its end: `<prefix> <start KiB> <peak KiB> <private
/// KiB>`.
const AGENT_RSS: &str = "load-agent-rss";

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

/// The memory this process does not share with others (its heap, stacks, written pages), in
/// KiB: what one more agent process really costs, unlike its RSS, which also counts the
/// binary's and libc's pages that every agent process maps from the same files.
fn private_kib() -> Option<u64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = rollup.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some(field("Private_Clean:")? + field("Private_Dirty:")?)
}

/// The agent of `--mode stdio`: serves one client on stdin and stdout (the runtime's pipe
/// path, as for any stdio agent), then reports its RSS before serving and its peak.
fn serve_stdio_agent(chunks: usize) {
    let start = peak_rss_kib().unwrap_or(0);
    let options = AgentOptions::default().with_info("chunky", "0");
    agent::serve_stdio_with(Chunky { chunks }, options).expect("serve on stdio");
    eprintln!(
        "{AGENT_RSS} {start} {} {}",
        peak_rss_kib().unwrap_or(0),
        private_kib().unwrap_or(0)
    );
}

/// One client's whole life: initialize, a session, a turn; returns the updates received and
/// the turn's latency (from sending `session/prompt` to its answer, every update received).
async fn one_turn(agent: AgentHandle) -> (usize, Duration) {
    agent.initialize().await.expect("initialize");
    let session = agent.new_session("/").await.expect("session/new");
    let sent = Instant::now();
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
    (updates, sent.elapsed())
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().map(String::as_str) == Some(SERVE_STDIO_AGENT) {
        let chunks = raw
            .get(1)
            .and_then(|c| c.parse().ok())
            .expect("--serve-stdio-agent K");
        return serve_stdio_agent(chunks);
    }
    let mut n = 100usize;
    let mut mode = String::from("ws");
    let mut chunks = 50usize;
    let mut servers = 0usize;
    let mut durable = false;
    let mut url = None;
    let mut pid = None;
    let mut token = None;
    let mut serve_at = None;
    let mut warmup = 0usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mode" => mode = args.next().expect("--mode ws|http|http2|memory|stdio"),
            "--servers" => {
                servers = args
                    .next()
                    .and_then(|c| c.parse().ok())
                    .expect("--servers S")
            }
            // Server and clients on upstream's durable transport (ws, http, http2).
            "--durable" => durable = true,
            "--url" => url = Some(args.next().expect("--url URL")),
            "--pid" => pid = Some(args.next().and_then(|p| p.parse().ok()).expect("--pid PID")),
            "--token" => token = Some(args.next().expect("--token TOKEN")),
            "--warmup" => {
                warmup = args
                    .next()
                    .and_then(|c| c.parse().ok())
                    .expect("--warmup W")
            }
            "--serve" => serve_at = Some(args.next().expect("--serve ADDR")),
            "--chunks" => {
                chunks = args
                    .next()
                    .and_then(|c| c.parse().ok())
                    .expect("--chunks K")
            }
            _ => n = arg.parse().expect("N, a number of clients"),
        }
    }
    if let Some(addr) = serve_at {
        return serve(&addr, chunks);
    }
    let before = peak_rss_kib();
    let mut server_memory = None;
    let mut agents_rss = Vec::new();
    let mut fleet_memory = None;
    let (elapsed, setup, updates, mut latencies) = smol::block_on(async {
        let agent_options = AgentOptions::default().with_info("chunky", "0");
        let mut agents = Vec::new();
        if let Some(url) = &url {
            let connector = Connector::new(url.clone());
            let connector = match &token {
                Some(token) => connector.with_bearer_token(token),
                None => connector,
            };
            if warmup > 0 {
                let mut warm = Vec::new();
                for _ in 0..warmup {
                    let (agent, driver) = connector
                        .connect_client(AutoAllow, ClientOptions::default())
                        .await
                        .expect("connect (warm-up)");
                    smol::spawn(driver).detach();
                    warm.push(agent);
                }
                run_all(warm.clone()).await;
                for agent in &warm {
                    agent.close();
                }
                // The server's side of those connections ends once it sees them closed.
                smol::Timer::after(Duration::from_millis(300)).await;
            }
            let sampler = pid.map(remote::ServerRss::start);
            let start = Instant::now();
            for _ in 0..n {
                let (agent, driver) = connector
                    .connect_client(AutoAllow, ClientOptions::default())
                    .await
                    .expect("connect");
                smol::spawn(driver).detach();
                agents.push(agent.clone());
            }
            let setup = start.elapsed();
            let (updates, latencies) = run_all(agents.clone()).await;
            let elapsed = start.elapsed();
            // Sampled while every connection is still open.
            server_memory = sampler.map(remote::ServerRss::sample);
            for agent in &agents {
                agent.close();
            }
            (elapsed, setup, updates, latencies)
        } else if servers > 0 {
            assert!(
                mode == "ws" || mode == "http",
                "--servers needs --mode ws or http"
            );
            let fleet = servers::Fleet::start(servers, n, chunks, SERVE_STDIO_AGENT);
            let url = fleet.url(&mode);
            let connector = Connector::new(url);
            let start = Instant::now();
            for _ in 0..n {
                let (agent, driver) = connector
                    .connect_client(AutoAllow, ClientOptions::default())
                    .await
                    .expect("connect");
                smol::spawn(driver).detach();
                agents.push(agent.clone());
            }
            let setup = start.elapsed();
            let (updates, latencies) = run_all(agents.clone()).await;
            let elapsed = start.elapsed();
            // Sampled while every connection (and its agent process) is still open.
            fleet_memory = Some(fleet.memory());
            for agent in &agents {
                agent.close();
            }
            drop(agents);
            fleet.stop();
            (elapsed, setup, updates, latencies)
        } else if mode == "ws" || mode == "http" || mode == "http2" {
            let options = ServerOptions::default()
                .with_max_connections(n.max(1))
                .with_durable_transport(durable);
            let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
            let url = if mode == "ws" {
                server.url()
            } else {
                server.http_url()
            };
            let stop = server.shutdown_handle();
            smol::spawn(server.serve_agent(move |_| Chunky { chunks }, agent_options)).detach();
            let connector = Connector::new(url);
            let connector = if mode == "http2" {
                prior_knowledge(connector)
            } else {
                connector
            };
            let connector = if durable {
                connector.with_durable_transport()
            } else {
                connector
            };
            let start = Instant::now();
            for _ in 0..n {
                let (agent, driver) = connector
                    .connect_client(AutoAllow, ClientOptions::default())
                    .await
                    .expect("connect");
                smol::spawn(driver).detach();
                agents.push(agent);
            }
            let setup = start.elapsed();
            let (updates, latencies) = run_all(agents).await;
            let elapsed = start.elapsed();
            stop.shutdown();
            (elapsed, setup, updates, latencies)
        } else if mode == "stdio" {
            let me = std::env::current_exe().expect("this example's path");
            let start = Instant::now();
            let mut processes = Vec::new();
            for _ in 0..n {
                let command = AgentCommand::new(&me).args([SERVE_STDIO_AGENT, &chunks.to_string()]);
                let (agent, driver, process) =
                    client::spawn(AutoAllow, command, ClientOptions::default()).expect("spawn");
                smol::spawn(driver).detach();
                agents.push(agent.clone());
                processes.push((agent, process));
            }
            let setup = start.elapsed();
            let (updates, latencies) = run_all(agents).await;
            let elapsed = start.elapsed();
            agents_rss = agents_rss_kib(processes).await;
            (elapsed, setup, updates, latencies)
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
            let setup = start.elapsed();
            let (updates, latencies) = run_all(agents).await;
            (start.elapsed(), setup, updates, latencies)
        }
    });
    let after = peak_rss_kib();
    let target = url.unwrap_or_else(|| format!("mode {mode}"));
    println!(
        "{target}{}: {n} connections, {chunks} chunks each: {:.3} s ({:.3} s of it connecting \
         or spawning), {:.0} turns/s, {:.0} updates/s",
        if durable { " (durable)" } else { "" },
        elapsed.as_secs_f64(),
        setup.as_secs_f64(),
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
    println!(
        "turn latency (session/prompt to its answer): p50 {:.1} ms, p99 {:.1} ms",
        quantile_ms(&mut latencies, 0.5),
        quantile_ms(&mut latencies, 0.99),
    );
    if let Some(memory) = server_memory {
        memory.print(n);
    }
    if let Some(memory) = fleet_memory {
        memory.print(n);
    }
    if !agents_rss.is_empty() {
        let count = agents_rss.len() as f64;
        let sum = |f: fn(&AgentRss) -> u64| agents_rss.iter().map(f).sum::<u64>() as f64;
        let peaks = sum(|a| a.peak);
        println!(
            "agent processes: {} reported, peak RSS {:.1} MiB in all, {:.0} KiB each \
             ({:.0} KiB of it after start), {:.0} KiB private each",
            agents_rss.len(),
            peaks / 1024.0,
            peaks / count,
            sum(|a| a.peak.saturating_sub(a.start)) / count,
            sum(|a| a.private) / count,
        );
    }
    std::thread::sleep(Duration::from_millis(50));
}

/// `--serve ADDR`: our server (WebSocket and Streamable HTTP on one port) with this example's
/// agent, in a process of its own, until killed: what `--url` compares with other servers.
fn serve(addr: &str, chunks: usize) {
    let addr = addr.parse().expect("--serve ADDR, e.g. 127.0.0.1:7331");
    // No connection or per-peer cap below what a load run opens (every client is on loopback).
    let options = ServerOptions::default()
        .with_max_connections(100_000)
        .with_max_sockets_per_peer(400_000);
    let server = Server::bind(addr, options).expect("bind");
    println!("listening on {} and {}", server.url(), server.http_url());
    let agent_options = AgentOptions::default().with_info("chunky", "0");
    smol::block_on(server.serve_agent(move |_| Chunky { chunks }, agent_options)).expect("serve");
}

#[cfg(feature = "http2")]
fn prior_knowledge(connector: Connector) -> Connector {
    connector.with_http2_prior_knowledge()
}

#[cfg(not(feature = "http2"))]
fn prior_knowledge(_: Connector) -> Connector {
    panic!("--mode http2 needs --features http2")
}

/// Runs every client's turn at once; returns the updates received and each turn's latency.
async fn run_all(agents: Vec<AgentHandle>) -> (usize, Vec<Duration>) {
    let tasks: Vec<_> = agents
        .into_iter()
        .map(|agent| smol::spawn(one_turn(agent)))
        .collect();
    let mut updates = 0;
    let mut latencies = Vec::with_capacity(tasks.len());
    for task in tasks {
        let (received, latency) = task.await;
        updates += received;
        latencies.push(latency);
    }
    (updates, latencies)
}

/// The `q`-quantile (0 to 1) of `latencies`, nearest rank, in milliseconds.
fn quantile_ms(latencies: &mut [Duration], q: f64) -> f64 {
    if latencies.is_empty() {
        return 0.0;
    }
    latencies.sort_unstable();
    let rank = ((q * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len());
    latencies[rank - 1].as_secs_f64() * 1000.0
}

/// What a stdio agent reported at its end, in KiB.
struct AgentRss {
    /// Its peak RSS before serving (the binary loaded, nothing done).
    start: u64,
    peak: u64,
    /// Its private memory at the end.
    private: u64,
}

/// Closes each client's connection (the agent's stdin), waits for its process, and collects
/// what it reported.
async fn agents_rss_kib(processes: Vec<(AgentHandle, AgentProcess)>) -> Vec<AgentRss> {
    let exits: Vec<_> = processes
        .into_iter()
        .map(|(agent, process)| {
            smol::spawn(async move {
                agent.close();
                process.shutdown().await
            })
        })
        .collect();
    let mut reported = Vec::new();
    for exit in exits {
        let exit = exit.await;
        let line = exit
            .stderr_tail
            .lines()
            .find_map(|l| l.strip_prefix(AGENT_RSS));
        let numbers: Vec<u64> = line
            .into_iter()
            .flat_map(str::split_whitespace)
            .filter_map(|n| n.parse().ok())
            .collect();
        if let [start, peak, private] = numbers[..] {
            reported.push(AgentRss {
                start,
                peak,
                private,
            });
        }
    }
    reported
}
