//! Bench client built on acp-runtime, written the way a user writes a client.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use acp_bench::rusage::{self, Role};
use acp_bench::{ClientArgs, FS_CONTENT, SESSION_CWD, SHUTDOWN_GRACE, ms_since, result_line};
use acp_runtime::client::{self, Client, ClientOptions};
use acp_runtime::process::AgentCommand;
use acp_runtime::{Error, Result};
use acp_types::*;

const IMPL: &str = "acp-rs";

#[derive(Clone, Default)]
struct BenchClient {
    answered: Arc<AtomicU64>,
}

impl Client for BenchClient {
    async fn request_permission(
        &self,
        _: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::Cancelled,
        ))
    }

    async fn read_text_file(&self, _: ReadTextFileRequest) -> Result<ReadTextFileResponse> {
        self.answered.fetch_add(1, Ordering::Relaxed);
        Ok(ReadTextFileResponse::new(FS_CONTENT))
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
            eprintln!("acp-client: {error}");
            std::process::exit(1);
        }
    }
}

fn run(args: &ClientArgs, started: Instant) -> Result<String> {
    let bench = BenchClient::default();
    let mut capabilities = ClientCapabilities::default();
    capabilities.fs.read_text_file = true;
    let options = ClientOptions::default().with_capabilities(capabilities);
    let command = AgentCommand::new(&args.agent_program)
        .args(&args.agent_args)
        .shutdown_grace(SHUTDOWN_GRACE);

    // The connection runs on this thread, next to the code consuming it.
    let (line, exit) = client::run_spawned(bench.clone(), command, options, |agent| async move {
        agent.initialize().await?;
        let session = agent.new_session(SESSION_CWD).await?;
        let prompt_started = Instant::now();
        let mut turn = session.prompt(vec![args.prompt.as_str().into()]).await?;
        let mut updates = 0u64;
        while let Some(update) = turn.next().await {
            if matches!(update?, SessionUpdate::AgentMessageChunk(_)) {
                updates += 1;
            }
        }
        let response = turn.end().await?;
        let prompt_ms = ms_since(prompt_started);
        let total_ms = ms_since(started);
        if response.stop_reason != StopReason::EndTurn {
            return Err(Error::Internal(format!(
                "stop reason {}",
                response.stop_reason
            )));
        }
        let rpcs = bench.answered.load(Ordering::Relaxed);
        Ok(result_line(
            IMPL,
            &args.prompt,
            updates,
            rpcs,
            prompt_ms,
            total_ms,
        ))
    })?;
    if !exit.status.success() {
        return Err(Error::Internal(format!("agent: {exit}")));
    }
    Ok(line)
}
