//! Bench agent on the official `agent-client-protocol` 5.2 SDK's protocol v2 API.
//!
//! Follows the crate's `simple_agent_v2` example: `Agent.v2()` with one `on_receive_request`
//! handler per request type, connected to `Stdio`. The prompt is answered with its user
//! message id at once (accepted), and the turn runs in `ConnectionTo::spawn`: the
//! `user_message` echo, `state_update` `running`, the workload, `state_update` `idle`. The
//! scenario's `fs/read_text_file` requests become `session/request_permission` requests (v2
//! has no `fs/*`), each followed by `requires_action` and then `running` once answered, as the
//! protocol asks of an agent blocked on the user (bench/README.md, "Protocol v2").

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use acp::v2::schema::{
    AgentCapabilities, ContentBlock, ContentChunk, IdleStateUpdate, Implementation,
    InitializeRequest, InitializeResponse, MessageId, NewSessionRequest, NewSessionResponse,
    PermissionOption, PermissionOptionKind, PromptRequest, PromptResponse,
    RequestPermissionRequest, RequiresActionStateUpdate, RunningStateUpdate, SessionCapabilities,
    SessionId, SessionUpdate, StateUpdate, StopReason, TextContent, UpdateSessionNotification,
    UserMessage,
};
use acp::v2::{ConnectionTo, Responder};
use acp::{Client, Stdio};
use acp_bench::rusage::{self, Role};
use acp_bench::{PERMISSION_OPTION, PERMISSION_TITLE, SESSION_ID, Scenario};
use acp5 as acp;
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;

const IMPL: &str = "sdk52-v2";

/// Message ids, unique within the process.
static NEXT_MESSAGE: AtomicU64 = AtomicU64::new(0);

fn message_id(kind: &str) -> MessageId {
    MessageId::new(format!(
        "{kind}-{}",
        NEXT_MESSAGE.fetch_add(1, Ordering::Relaxed)
    ))
}

#[tokio::main]
async fn main() {
    let started = Instant::now();
    let result = acp::Agent
        .v2()
        .name("sdk52-v2-bench-agent")
        .on_receive_request(
            async move |initialize: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _cx: ConnectionTo<Client>| {
                responder.respond(
                    InitializeResponse::new(
                        initialize.protocol_version,
                        Implementation::new("sdk52-v2-bench-agent", "0.0.0"),
                    )
                    .capabilities(AgentCapabilities::new().session(SessionCapabilities::new())),
                )
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let session_id = SessionId::new(SESSION_ID);
                responder.respond(NewSessionResponse::new(session_id.clone()))?;
                update(
                    &cx,
                    &session_id,
                    SessionUpdate::StateUpdate(StateUpdate::Idle(IdleStateUpdate::new())),
                )
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let user_message = message_id("user");
                responder.respond(PromptResponse::new(user_message.clone()))?;
                // Run the turn outside the dispatch loop so that responses to the turn's own
                // requests can be received meanwhile.
                cx.spawn({
                    let cx = cx.clone();
                    async move { turn(&cx, request, user_message).await }
                })
            },
            acp::on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await;
    if let Err(e) = result {
        eprintln!("sdk52-v2-agent: {e}");
        std::process::exit(1);
    }
    rusage::report_or_warn(Role::Agent, IMPL, started);
}

fn update(
    cx: &ConnectionTo<Client>,
    session_id: &SessionId,
    update: SessionUpdate,
) -> Result<(), acp::Error> {
    cx.send_notification(UpdateSessionNotification::new(session_id.clone(), update))
}

async fn turn(
    cx: &ConnectionTo<Client>,
    request: PromptRequest,
    user_message: MessageId,
) -> Result<(), acp::Error> {
    let session_id = &request.session_id;
    let text = match request.prompt.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        _ => String::new(),
    };
    update(
        cx,
        session_id,
        SessionUpdate::UserMessage(UserMessage::new(user_message).content(request.prompt)),
    )?;
    let running = || SessionUpdate::StateUpdate(StateUpdate::Running(RunningStateUpdate::new()));
    update(cx, session_id, running())?;
    let scenario = Scenario::parse(&text);
    match scenario {
        Scenario::Hello => {}
        Scenario::Stream { count, .. } => {
            let chunk = scenario.chunk_text();
            let reply = message_id("agent");
            for _ in 0..count {
                update(
                    cx,
                    session_id,
                    SessionUpdate::AgentMessageChunk(ContentChunk::new(
                        ContentBlock::Text(TextContent::new(chunk.clone())),
                        reply.clone(),
                    )),
                )?;
            }
        }
        Scenario::Rpc { count } => {
            for _ in 0..count {
                ask(cx, session_id).await?;
            }
        }
        Scenario::RpcPar { count, in_flight } => {
            let mut pending = FuturesUnordered::new();
            let mut sent = 0;
            while sent < count.min(in_flight) {
                pending.push(ask(cx, session_id));
                sent += 1;
            }
            while let Some(answered) = pending.next().await {
                answered?;
                if sent < count {
                    pending.push(ask(cx, session_id));
                    sent += 1;
                }
            }
        }
    }
    update(
        cx,
        session_id,
        SessionUpdate::StateUpdate(StateUpdate::Idle(
            IdleStateUpdate::new().stop_reason(StopReason::EndTurn),
        )),
    )
}

/// The v2 stand-in for one `fs/read_text_file`: a permission request with one option, the
/// `requires_action` it causes, and `running` again once it is answered.
async fn ask(cx: &ConnectionTo<Client>, session_id: &SessionId) -> Result<(), acp::Error> {
    let options = vec![PermissionOption::new(
        PERMISSION_OPTION,
        "Allow",
        PermissionOptionKind::AllowOnce,
    )];
    let asked = cx.send_request(RequestPermissionRequest::new(
        session_id.clone(),
        PERMISSION_TITLE,
        options,
    ));
    update(
        cx,
        session_id,
        SessionUpdate::StateUpdate(StateUpdate::RequiresAction(RequiresActionStateUpdate::new())),
    )?;
    asked.block_task().await?;
    update(
        cx,
        session_id,
        SessionUpdate::StateUpdate(StateUpdate::Running(RunningStateUpdate::new())),
    )
}
