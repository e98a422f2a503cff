//! Bench agent on acp-runtime's protocol v2 side (`agent::v2`), written the way a user writes
//! one: the scenario mapped to v2 as `bench/README.md` ("Protocol v2") describes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use acp_bench::join::{Worker, join_all};
use acp_bench::rusage::{self, Role};
use acp_bench::{PERMISSION_OPTION, PERMISSION_TITLE, SESSION_ID, Scenario};
use acp_runtime::Result;
use acp_runtime::acp_types::v2::*;
use acp_runtime::agent::v2::{self, Turn};

const IMPL: &str = "acp-rs-v2";

struct BenchAgent;

impl v2::Agent for BenchAgent {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &v2::Client,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(SESSION_ID))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<IdleStateUpdateKind> {
        let text = match request.prompt.first() {
            Some(ContentBlock::Text(text)) => text.text.as_str(),
            _ => "",
        };
        match Scenario::parse(text) {
            Scenario::Stream { count, size } => {
                let chunk = "x".repeat(size);
                for _ in 0..count {
                    turn.say(chunk.as_str()).await?;
                }
            }
            Scenario::Rpc { count } => {
                for _ in 0..count {
                    ask(&turn).await?;
                }
            }
            Scenario::RpcPar { count, in_flight } => {
                // `in_flight` workers share the count: each starts a new request as soon as
                // its previous one completes (the turn is borrowed: v2's `Turn` is one value).
                let started = AtomicU64::new(0);
                let workers: Vec<Worker<'_, acp_runtime::Error>> = (0..in_flight)
                    .map(|_| Box::pin(worker(&turn, &started, count)) as Worker<_>)
                    .collect();
                join_all(workers).await?;
            }
            Scenario::Hello => {}
        }
        Ok(IdleStateUpdateKind::EndTurn)
    }
}

/// The v2 stand-in for one `fs/read_text_file`: a permission request with one option.
async fn ask(turn: &Turn) -> Result<()> {
    let options = vec![PermissionOption::new(
        PERMISSION_OPTION,
        "Allow",
        PermissionOptionKind::AllowOnce,
    )];
    let request =
        RequestPermissionRequest::new(turn.session().id().clone(), PERMISSION_TITLE, options);
    turn.request_permission(request).await?;
    Ok(())
}

/// Asks until `count` requests were started, by this worker and the others sharing `started`.
async fn worker(turn: &Turn, started: &AtomicU64, count: u64) -> Result<()> {
    while started.fetch_add(1, Ordering::Relaxed) < count {
        ask(turn).await?;
    }
    Ok(())
}

fn main() {
    let started = Instant::now();
    let result = v2::serve_stdio(BenchAgent, Default::default());
    rusage::report_or_warn(Role::Agent, IMPL, started);
    if let Err(error) = result {
        eprintln!("acp-agent-v2: {error}");
        std::process::exit(1);
    }
}
