//! Bench agent on the official `agent-client-protocol` 5.0 SDK.
//!
//! Follows the crate's `simple_agent` example and its "event loop and
//! concurrency" documentation: `Agent.v1()` with one `on_receive_request`
//! handler per request type, connected to `Stdio`. Handlers run on the
//! connection's dispatch loop, so the prompt handler moves the turn into
//! `ConnectionTo::spawn` and answers the prompt from there; requests it sends
//! meanwhile are awaited with `block_task()` outside the dispatch loop.

use std::time::Instant;

use acp::v1::ConnectionTo;
use acp::v1::schema::{
    AgentCapabilities, ContentBlock, ContentChunk, InitializeRequest, InitializeResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, ReadTextFileRequest,
    SessionId, SessionNotification, SessionUpdate, StopReason, TextContent,
};
use acp::{Client, Stdio};
use acp_bench::rusage::{self, Role};
use acp_bench::{FS_PATH, SESSION_ID, Scenario};
use acp5 as acp;
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;

const IMPL: &str = "official5";

#[tokio::main]
async fn main() {
    let started = Instant::now();
    let result = acp::Agent
        .v1()
        .name("official5-bench-agent")
        .on_receive_request(
            async move |initialize: InitializeRequest, responder, _cx| {
                responder.respond(
                    InitializeResponse::new(initialize.protocol_version)
                        .agent_capabilities(AgentCapabilities::new()),
                )
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: NewSessionRequest, responder, _cx| {
                responder.respond(NewSessionResponse::new(SESSION_ID))
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                // Run the turn outside the dispatch loop so that responses to
                // the turn's own requests can be received meanwhile.
                cx.spawn({
                    let cx = cx.clone();
                    async move {
                        let text = match request.prompt.first() {
                            Some(ContentBlock::Text(t)) => t.text.as_str(),
                            _ => "",
                        };
                        turn(&cx, &request.session_id, Scenario::parse(text)).await?;
                        responder.respond(PromptResponse::new(StopReason::EndTurn))
                    }
                })
            },
            acp::on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await;
    if let Err(e) = result {
        eprintln!("official5-agent: {e}");
        std::process::exit(1);
    }
    rusage::report_or_warn(Role::Agent, IMPL, started);
}

async fn turn(
    cx: &ConnectionTo<Client>,
    session_id: &SessionId,
    scenario: Scenario,
) -> Result<(), acp::Error> {
    match scenario {
        Scenario::Hello => {}
        Scenario::Stream { count, .. } => {
            let text = scenario.chunk_text();
            for _ in 0..count {
                cx.send_notification(SessionNotification::new(
                    session_id.clone(),
                    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(
                        TextContent::new(text.clone()),
                    ))),
                ))?;
            }
        }
        Scenario::Rpc { count } => {
            for _ in 0..count {
                cx.send_request(read_request(session_id))
                    .block_task()
                    .await?;
            }
        }
        Scenario::RpcPar { count, in_flight } => {
            let mut pending = FuturesUnordered::new();
            let mut sent = 0;
            while sent < count.min(in_flight) {
                pending.push(cx.send_request(read_request(session_id)).block_task());
                sent += 1;
            }
            while let Some(response) = pending.next().await {
                response?;
                if sent < count {
                    pending.push(cx.send_request(read_request(session_id)).block_task());
                    sent += 1;
                }
            }
        }
    }
    Ok(())
}

fn read_request(session_id: &SessionId) -> ReadTextFileRequest {
    ReadTextFileRequest::new(session_id.clone(), FS_PATH)
}
