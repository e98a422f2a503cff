//! Bench client on the official `agent-client-protocol` 5.0 SDK.
//!
//! Follows the crate's `yolo_one_shot_client` example: `Client.v1()` with an
//! `on_receive_notification` handler for session updates and an
//! `on_receive_request` handler for `fs/read_text_file`, connected to the
//! agent process through `AcpAgent` (which spawns it, and on completion closes
//! its stdin and waits for it to exit), and the requests sent from the
//! `connect_with` foreground with `block_task()`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use acp::schema::ProtocolVersion;
use acp::v1::ConnectionTo;
use acp::v1::schema::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, InitializeRequest, NewSessionRequest,
    PromptRequest, ReadTextFileRequest, ReadTextFileResponse, SessionNotification, SessionUpdate,
    StopReason, TextContent,
};
use acp::{AcpAgent, AcpAgentConfig, Agent};
use acp_bench::rusage::{self, Role};
use acp_bench::{ClientArgs, FS_CONTENT, SESSION_CWD, ms_since, result_line};
use acp5 as acp;
use tokio::sync::Notify;

const IMPL: &str = "official5";

#[derive(Default)]
struct Counts {
    updates: AtomicU64,
    rpcs: AtomicU64,
    changed: Notify,
}

#[tokio::main]
async fn main() {
    let started = Instant::now();
    let args = ClientArgs::from_env();
    match run(&args, started).await {
        Ok(line) => {
            println!("{line}");
            rusage::report_or_warn(Role::Client, IMPL, started);
        }
        Err(e) => {
            eprintln!("official5-client: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: &ClientArgs, started: Instant) -> Result<String, acp::Error> {
    let expected_updates = args.scenario().expected_updates();
    let counts = Arc::new(Counts::default());
    let agent = AcpAgent::new(AcpAgentConfig::new(&args.agent_program).args(&args.agent_args));
    let prompt = args.prompt.clone();

    let (prompt_ms, total_ms) = acp::Client
        .v1()
        .name("official5-bench-client")
        .on_receive_notification(
            {
                let counts = counts.clone();
                async move |notification: SessionNotification, _cx| {
                    if let SessionUpdate::AgentMessageChunk(_) = notification.update {
                        counts.updates.fetch_add(1, Ordering::Relaxed);
                        counts.changed.notify_one();
                    }
                    Ok(())
                }
            },
            acp::on_receive_notification!(),
        )
        .on_receive_request(
            {
                let counts = counts.clone();
                async move |_request: ReadTextFileRequest, responder, _cx| {
                    counts.rpcs.fetch_add(1, Ordering::Relaxed);
                    responder.respond(ReadTextFileResponse::new(FS_CONTENT))
                }
            },
            acp::on_receive_request!(),
        )
        .connect_with(agent, {
            let counts = counts.clone();
            async move |cx: ConnectionTo<Agent>| {
                cx.send_request(
                    InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
                        ClientCapabilities::new()
                            .fs(FileSystemCapabilities::new().read_text_file(true))
                            .terminal(false),
                    ),
                )
                .block_task()
                .await?;
                let session = cx
                    .send_request(NewSessionRequest::new(SESSION_CWD))
                    .block_task()
                    .await?;

                let tp = Instant::now();
                let response = cx
                    .send_request(PromptRequest::new(
                        session.session_id,
                        vec![ContentBlock::Text(TextContent::new(prompt))],
                    ))
                    .block_task()
                    .await?;
                if response.stop_reason != StopReason::EndTurn {
                    return Err(acp::Error::internal_error()
                        .data(format!("stop reason {:?}", response.stop_reason)));
                }
                while counts.updates.load(Ordering::Relaxed) < expected_updates {
                    counts.changed.notified().await;
                }
                Ok((ms_since(tp), ms_since(started)))
            }
        })
        .await?;

    Ok(result_line(
        IMPL,
        &args.prompt,
        counts.updates.load(Ordering::Relaxed),
        counts.rpcs.load(Ordering::Relaxed),
        prompt_ms,
        total_ms,
    ))
}
