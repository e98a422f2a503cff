//! Bench client on the official `agent-client-protocol` 5.2 SDK's protocol v2 API.
//!
//! Follows the crate's `v2_one_shot_client` example: `Client.v2()` with an
//! `on_receive_notification` handler for session updates and an `on_receive_request` handler
//! for `session/request_permission`, connected to the agent process through `AcpAgent`, the
//! requests sent from the `connect_with` foreground with `block_task()`, and the prompt over
//! once `state_update` `idle` follows the turn's first other state (bench/README.md,
//! "Protocol v2").

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use acp::schema::ProtocolVersion;
use acp::v2::schema::{
    ContentBlock, Implementation, InitializeRequest, NewSessionRequest, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionUpdate, StateUpdate, StopReason, TextContent,
    UpdateSessionNotification,
};
use acp::v2::{ConnectionTo, Responder};
use acp::{AcpAgent, AcpAgentConfig, Agent};
use acp_bench::rusage::{self, Role};
use acp_bench::{ClientArgs, PERMISSION_OPTION, SESSION_CWD, ms_since, result_line};
use acp5 as acp;
use tokio::sync::Notify;

const IMPL: &str = "sdk52-v2";

#[derive(Default)]
struct Counts {
    updates: AtomicU64,
    rpcs: AtomicU64,
    /// A state other than `idle` was seen: the turn is under way.
    active: AtomicBool,
    /// The turn's `idle` arrived, with `end_turn`.
    ended: AtomicBool,
    /// The turn's `idle` arrived with another stop reason.
    failed: AtomicBool,
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
            eprintln!("sdk52-v2-client: {e}");
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
        .v2()
        .name("sdk52-v2-bench-client")
        .on_receive_notification(
            {
                let counts = counts.clone();
                async move |notification: UpdateSessionNotification, _cx: ConnectionTo<Agent>| {
                    match notification.update {
                        SessionUpdate::AgentMessageChunk(_) => {
                            counts.updates.fetch_add(1, Ordering::Relaxed);
                        }
                        SessionUpdate::StateUpdate(StateUpdate::Idle(idle)) => {
                            if counts.active.load(Ordering::Relaxed) {
                                let done = if idle.stop_reason == Some(StopReason::EndTurn) {
                                    &counts.ended
                                } else {
                                    &counts.failed
                                };
                                done.store(true, Ordering::Relaxed);
                            }
                        }
                        SessionUpdate::StateUpdate(_) => {
                            counts.active.store(true, Ordering::Relaxed);
                        }
                        _ => {}
                    }
                    counts.changed.notify_one();
                    Ok(())
                }
            },
            acp::on_receive_notification!(),
        )
        .on_receive_request(
            {
                let counts = counts.clone();
                async move |_request: RequestPermissionRequest,
                            responder: Responder<RequestPermissionResponse>,
                            _cx: ConnectionTo<Agent>| {
                    counts.rpcs.fetch_add(1, Ordering::Relaxed);
                    responder.respond(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                            PERMISSION_OPTION,
                        )),
                    ))
                }
            },
            acp::on_receive_request!(),
        )
        .connect_with(agent, {
            let counts = counts.clone();
            async move |cx: ConnectionTo<Agent>| {
                cx.send_request(InitializeRequest::new(
                    ProtocolVersion::V2,
                    Implementation::new("sdk52-v2-bench-client", "0.0.0"),
                ))
                .block_task()
                .await?;
                let session = cx
                    .send_request(NewSessionRequest::new(SESSION_CWD))
                    .block_task()
                    .await?;

                let tp = Instant::now();
                cx.send_request(PromptRequest::new(
                    session.session_id,
                    vec![ContentBlock::Text(TextContent::new(prompt))],
                ))
                .block_task()
                .await?;
                loop {
                    let changed = counts.changed.notified();
                    if counts.failed.load(Ordering::Relaxed) {
                        return Err(acp::Error::internal_error().data("the turn did not end_turn"));
                    }
                    if counts.ended.load(Ordering::Relaxed)
                        && counts.updates.load(Ordering::Relaxed) >= expected_updates
                    {
                        break;
                    }
                    changed.await;
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
