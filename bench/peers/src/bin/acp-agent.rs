//! Bench agent built on acp-runtime, written the way a user writes an agent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use acp_bench::join::{Worker, join_all};
use acp_bench::rusage::{self, Role};
use acp_bench::{FS_PATH, SESSION_ID, Scenario};
use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, ClientHandle, Turn};
use acp_types::*;

const IMPL: &str = "acp-rs";

struct BenchAgent;

impl Agent for BenchAgent {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(SESSION_ID))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let text = request
            .prompt
            .first()
            .and_then(ContentBlock::as_text)
            .unwrap_or_default();
        match Scenario::parse(text) {
            Scenario::Stream { count, size } => {
                let chunk = "x".repeat(size);
                for _ in 0..count {
                    turn.message(chunk.as_str()).await?;
                }
            }
            Scenario::Rpc { count } => {
                for _ in 0..count {
                    turn.read_text_file(FS_PATH).await?;
                }
            }
            Scenario::RpcPar { count, in_flight } => {
                // `in_flight` workers share the count: each starts a new request as soon as
                // its previous one completes.
                let started = Arc::new(AtomicU64::new(0));
                let worker = |turn: Turn, started: Arc<AtomicU64>| async move {
                    while started.fetch_add(1, Ordering::Relaxed) < count {
                        turn.read_text_file(FS_PATH).await?;
                    }
                    Result::Ok(())
                };
                let workers: Vec<Worker<'_, acp_runtime::Error>> = (0..in_flight)
                    .map(|_| Box::pin(worker(turn.clone(), started.clone())) as Worker<_>)
                    .collect();
                join_all(workers).await?;
            }
            Scenario::Hello => {}
        }
        Ok(StopReason::EndTurn.into())
    }
}

fn main() {
    let started = Instant::now();
    let result = match std::env::args().nth(1).as_deref() {
        None => agent::serve_stdio(BenchAgent),
        // The same agent behind the version router (feature `routed`): the router's cost.
        #[cfg(feature = "routed")]
        Some("--routed") => acp_runtime::router::router()
            .with_v1(BenchAgent)
            .serve_stdio(),
        Some(other) => Err(std::io::Error::other(format!("unknown argument {other}"))),
    };
    rusage::report_or_warn(Role::Agent, IMPL, started);
    if let Err(error) = result {
        eprintln!("acp-agent: {error}");
        std::process::exit(1);
    }
}
