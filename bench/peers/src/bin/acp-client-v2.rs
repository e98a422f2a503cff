//! Bench client on acp-runtime's protocol v2 side (`client::v2::run_spawned`), written the way a
//! user writes one: the scenario mapped to v2 as `bench/README.md` ("Protocol v2") describes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use acp_bench::rusage::{self, Role};
use acp_bench::{
    ClientArgs, PERMISSION_OPTION, SESSION_CWD, SHUTDOWN_GRACE, ms_since, result_line,
};
use acp_runtime::acp_types::v2::*;
use acp_runtime::client::v2;
use acp_runtime::process::AgentCommand;
use acp_runtime::{Error, Result};

const IMPL: &str = "acp-rs-v2";

#[derive(Clone, Default)]
struct BenchClient {
    updates: Arc<AtomicU64>,
    answered: Arc<AtomicU64>,
}

impl v2::Client for BenchClient {
    async fn request_permission(
        &self,
        _: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        self.answered.fetch_add(1, Ordering::Relaxed);
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(PERMISSION_OPTION)),
        ))
    }

    async fn session_update(&self, notification: UpdateSessionNotification) {
        if matches!(notification.update, SessionUpdate::AgentMessageChunk(_)) {
            self.updates.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn main() {
    let started = Instant::now();
    let args = ClientArgs::from_env();
    match run(&args, started) {
        Ok(line) => {
            println!("{line}");
            rusage::report_or_warn(Role::Client, IMPL, started);
        }
        Err(error) => {
            eprintln!("acp-client-v2: {error}");
            std::process::exit(1);
        }
    }
}

/// On `v2::run_spawned`, v1's pipe loop: the connection runs on this thread, next to the code
/// consuming it, with no reactor thread to wake per exchange.
fn run(args: &ClientArgs, started: Instant) -> Result<String> {
    let bench = BenchClient::default();
    let command = AgentCommand::new(&args.agent_program)
        .args(&args.agent_args)
        .shutdown_grace(SHUTDOWN_GRACE);
    let (line, exit) = v2::run_spawned(
        bench.clone(),
        command,
        Default::default(),
        |agent| async move {
            let hello = InitializeRequest::new(ProtocolVersion::V2, Implementation::new(IMPL, "0"));
            agent.initialize(hello).await?;
            prompt(&agent, args, &bench, started).await
        },
    )?;
    if !exit.status.success() {
        return Err(Error::Internal(format!("agent: {exit}")));
    }
    Ok(line)
}

async fn prompt(
    agent: &v2::Agent,
    args: &ClientArgs,
    bench: &BenchClient,
    started: Instant,
) -> Result<String> {
    let session = agent
        .new_session(NewSessionRequest::new(SESSION_CWD))
        .await?;
    let prompt_started = Instant::now();
    let turn = agent
        .prompt(PromptRequest::new(
            session.session_id,
            vec![ContentBlock::from(args.prompt.as_str())],
        ))
        .await?;
    // Every update before `idle` has reached `session_update` when this resolves.
    let stop = turn.finished().await?;
    let prompt_ms = ms_since(prompt_started);
    let total_ms = ms_since(started);
    if stop != IdleStateUpdateKind::EndTurn {
        return Err(Error::Internal(format!("stop reason {stop:?}")));
    }
    Ok(result_line(
        IMPL,
        &args.prompt,
        bench.updates.load(Ordering::Relaxed),
        bench.answered.load(Ordering::Relaxed),
        prompt_ms,
        total_ms,
    ))
}
