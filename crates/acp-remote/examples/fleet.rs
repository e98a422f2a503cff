//! Many servers behind a load balancer, from both ends (interop/loadbalancer.sh drives it):
//!
//! ```text
//! fleet agent [--chunks K] [--delay-ms D]
//!     a stdio agent for `acp-bridge serve`: each turn first says which backend it runs on
//!     ($FLEET_BACKEND), then streams K chunks (default 20), D ms apart (default 50)
//! fleet clients HOST:PORT [--clients N] [--turns T] [--token TOKEN] [--http-only] [--durable]
//!     N clients at once (default 100), alternately WebSocket and Streamable HTTP (only the
//!     latter with --http-only; asking for the durable transport with --durable), each with
//!     its own connection, one session and T turns (default 3) one after the other; prints
//!     one line per client (`client I TRANSPORT BACKEND ok|failed: ERROR`) and a summary line
//!     per backend
//! ```
//!
//! Exits 0 when every turn of every client completed, 1 otherwise (the output says which
//! failed, where, and with what error).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use acp_remote::Connector;
use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, Turn};
use acp_runtime::client::{AutoAllow, ClientOptions};
use acp_types::*;

struct Slow {
    chunks: usize,
    delay: Duration,
    backend: String,
}

impl Agent for Slow {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, _: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        turn.message(format!("backend {}", self.backend)).await?;
        for i in 0..self.chunks {
            smol::Timer::after(self.delay).await;
            turn.message(format!("chunk {i:04}")).await?;
        }
        Ok(StopReason::EndTurn.into())
    }
}

/// What became of one client.
struct Outcome {
    transport: &'static str,
    backend: String,
    turns: usize,
    error: Option<String>,
}

async fn one_client(
    url: String,
    token: Option<String>,
    turns: usize,
    transport: &'static str,
    durable: bool,
) -> Outcome {
    let mut outcome = Outcome {
        transport,
        backend: "?".into(),
        turns: 0,
        error: None,
    };
    let mut connector = Connector::new(url);
    if durable {
        connector = connector.with_durable_transport();
    }
    if let Some(token) = token {
        connector = connector.with_bearer_token(token);
    }
    // A server that drains refuses new prompts (`DRAINING_CODE`): as docs/remote.md says, the
    // client opens a new connection, which the balancer sends to another server, and goes on
    // there (this agent keeps nothing, so a new session does).
    let mut reconnects = 0;
    loop {
        match turns_on_a_connection(&connector, turns, &mut outcome).await {
            Ok(()) => break,
            Err(Failure::Draining(_)) if reconnects < 3 => reconnects += 1,
            Err(Failure::Draining(error) | Failure::Other(error)) => {
                outcome.error = Some(error);
                break;
            }
        }
    }
    outcome
}

enum Failure {
    /// A prompt refused by a draining server.
    Draining(String),
    Other(String),
}

impl From<String> for Failure {
    fn from(error: String) -> Self {
        Failure::Other(error)
    }
}

/// Opens a connection and a session, and takes turns until `outcome.turns` reaches `turns`.
async fn turns_on_a_connection(
    connector: &Connector,
    turns: usize,
    outcome: &mut Outcome,
) -> std::result::Result<(), Failure> {
    let (agent, driver) = connector
        .connect_client(AutoAllow, ClientOptions::default())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    smol::spawn(driver).detach();
    agent
        .initialize()
        .await
        .map_err(|e| format!("initialize: {e}"))?;
    let session = agent
        .new_session("/")
        .await
        .map_err(|e| format!("session/new: {e}"))?;
    let refused = |what: &str, e: acp_runtime::Error| {
        let error = format!("{what}: {e}");
        if e.code().map(|c| c.0) == Some(acp_remote::DRAINING_CODE) {
            Failure::Draining(error)
        } else {
            Failure::Other(error)
        }
    };
    while outcome.turns < turns {
        let mut turn = session
            .prompt(vec!["go".into()])
            .await
            .map_err(|e| refused("prompt", e))?;
        while let Some(update) = turn.next().await {
            if let SessionUpdate::AgentMessageChunk(chunk) =
                update.map_err(|e| format!("update: {e}"))?
                && let Some(name) = chunk
                    .content
                    .as_text()
                    .and_then(|t| t.strip_prefix("backend "))
            {
                outcome.backend = name.to_owned();
            }
        }
        let end = turn.end().await.map_err(|e| refused("turn end", e))?;
        if end.stop_reason != StopReason::EndTurn {
            return Err(format!("turn ended with {:?}", end.stop_reason).into());
        }
        outcome.turns += 1;
    }
    Ok(())
}

fn clients(args: &[String]) -> bool {
    let mut args = args.iter();
    let host = args.next().expect("HOST:PORT").clone();
    let (mut n, mut turns, mut token, mut http_only, mut durable) =
        (100usize, 3usize, None, false, false);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value").clone();
        match arg.as_str() {
            "--clients" => n = value().parse().expect("a number of clients"),
            "--turns" => turns = value().parse().expect("a number of turns"),
            "--token" => token = Some(value()),
            "--http-only" => http_only = true,
            "--durable" => durable = true,
            other => panic!("unknown option {other}"),
        }
    }
    let start = Instant::now();
    let outcomes: Vec<Outcome> = smol::block_on(async {
        let tasks: Vec<_> = (0..n)
            .map(|i| {
                let (scheme, transport) = if i % 2 == 0 && !http_only {
                    ("ws", "websocket")
                } else {
                    ("http", "streamable-http")
                };
                let url = format!("{scheme}://{host}/acp");
                smol::spawn(one_client(url, token.clone(), turns, transport, durable))
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await);
        }
        outcomes
    });
    let elapsed = start.elapsed();
    let mut per_backend: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (i, o) in outcomes.iter().enumerate() {
        let entry = per_backend.entry(o.backend.clone()).or_default();
        match &o.error {
            None => {
                entry.0 += 1;
                println!("client {i} {} {} ok", o.transport, o.backend);
            }
            Some(error) => {
                entry.1 += 1;
                println!(
                    "client {i} {} {} failed after {} turns: {error}",
                    o.transport, o.backend, o.turns
                );
            }
        }
    }
    let done: usize = outcomes.iter().map(|o| o.turns).sum();
    for (backend, (ok, failed)) in &per_backend {
        println!("backend {backend}: {ok} ok, {failed} failed");
    }
    println!(
        "{n} clients, {done} turns completed of {} in {:.2}s ({:.0} turns/s)",
        n * turns,
        elapsed.as_secs_f64(),
        done as f64 / elapsed.as_secs_f64()
    );
    outcomes.iter().all(|o| o.error.is_none())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("agent") => {
            let (mut chunks, mut delay) = (20, 50);
            let mut rest = args[1..].iter();
            while let Some(arg) = rest.next() {
                let value = rest.next().and_then(|v| v.parse().ok()).expect("a number");
                match arg.as_str() {
                    "--chunks" => chunks = value,
                    "--delay-ms" => delay = value,
                    other => panic!("unknown option {other}"),
                }
            }
            let backend = std::env::var("FLEET_BACKEND").unwrap_or_else(|_| "?".into());
            let agent = Slow {
                chunks: chunks as usize,
                delay: Duration::from_millis(delay),
                backend,
            };
            agent::serve_stdio_with(agent, AgentOptions::default().with_info("fleet", "0"))
                .expect("serve on stdio");
            std::process::ExitCode::SUCCESS
        }
        Some("clients") => {
            if clients(&args[1..]) {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!(
                "usage: fleet agent [--chunks K] [--delay-ms D] | fleet clients HOST:PORT [--clients N] [--turns T] [--token T] [--http-only] [--durable]"
            );
            std::process::ExitCode::from(2)
        }
    }
}
