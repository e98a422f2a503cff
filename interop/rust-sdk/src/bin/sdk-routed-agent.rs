//! An agent behind the official SDK's version router (agent-client-protocol 5.2.0, feature
//! `unstable_protocol_v2`): `Agent.protocol_router().with_v1(..).with_v2(..)`, for the protocol
//! v2 interop (docs/interop.md, "Protocol v2"). Both sides answer every prompt with one text
//! chunk naming the side that ran it, `sdk-routed-agent v1: PROMPT` or `sdk-routed-agent v2:
//! PROMPT`, so a client's output shows which version the router picked.
//!
//! The v2 side does what a v2 turn needs and no more: `session/prompt` is answered with the
//! user message's id, then `user_message`, `running`, the agent message and idle `end_turn`.
//! `session/close` is answered; `session/cancel` is ignored (turns end at once).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_client_protocol::v1::schema as v1;
use agent_client_protocol::v2::schema as v2;
use agent_client_protocol::{Agent, Client, ConnectTo, Stdio};

#[tokio::main]
async fn main() -> agent_client_protocol::Result<()> {
    Agent
        .protocol_router()
        .with_v1(v1_agent())
        .with_v2(v2_agent())
        .connect_to(Stdio::new())
        .await
}

/// The prompt's text blocks, joined by spaces.
fn v1_text(prompt: &[v1::ContentBlock]) -> String {
    let texts: Vec<&str> = prompt
        .iter()
        .filter_map(|block| match block {
            v1::ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join(" ")
}

fn v1_agent() -> impl ConnectTo<Client> {
    let next = Arc::new(AtomicU64::new(1));
    Agent
        .v1()
        .name("sdk-routed-agent-v1")
        .on_receive_request(
            async move |initialize: v1::InitializeRequest, responder, _cx| {
                responder.respond(
                    v1::InitializeResponse::new(initialize.protocol_version)
                        .agent_info(v1::Implementation::new("sdk-routed-agent", "5.2.0")),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: v1::NewSessionRequest, responder, _cx| {
                let id = next.fetch_add(1, Ordering::Relaxed);
                responder.respond(v1::NewSessionResponse::new(v1::SessionId::new(format!(
                    "sdk-v1-session-{id}"
                ))))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: v1::PromptRequest, responder, cx| {
                let text = format!("sdk-routed-agent v1: {}", v1_text(&request.prompt));
                cx.send_notification(v1::SessionNotification::new(
                    request.session_id,
                    v1::SessionUpdate::AgentMessageChunk(v1::ContentChunk::new(
                        v1::ContentBlock::Text(v1::TextContent::new(text)),
                    )),
                ))?;
                responder.respond(v1::PromptResponse::new(v1::StopReason::EndTurn))
            },
            agent_client_protocol::on_receive_request!(),
        )
}

/// The prompt's text blocks, joined by spaces.
fn v2_text(prompt: &[v2::ContentBlock]) -> String {
    let texts: Vec<&str> = prompt
        .iter()
        .filter_map(|block| match block {
            v2::ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join(" ")
}

fn v2_agent() -> impl ConnectTo<Client> {
    let next = Arc::new(AtomicU64::new(1));
    let next_message = Arc::new(AtomicU64::new(1));
    Agent
        .v2()
        .name("sdk-routed-agent-v2")
        .on_receive_request(
            async move |initialize: v2::InitializeRequest, responder, _cx| {
                responder.respond(
                    v2::InitializeResponse::new(
                        initialize.protocol_version,
                        v2::Implementation::new("sdk-routed-agent", "5.2.0"),
                    )
                    .capabilities(
                        v2::AgentCapabilities::new().session(v2::SessionCapabilities::new()),
                    ),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: v2::NewSessionRequest, responder, cx| {
                let id = v2::SessionId::new(format!(
                    "sdk-v2-session-{}",
                    next.fetch_add(1, Ordering::Relaxed)
                ));
                responder.respond(v2::NewSessionResponse::new(id.clone()))?;
                cx.send_notification(v2::UpdateSessionNotification::new(
                    id,
                    v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(
                        v2::IdleStateUpdate::new(),
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: v2::PromptRequest, responder, cx| {
                let n = next_message.fetch_add(1, Ordering::Relaxed);
                let user = v2::MessageId::new(format!("user-{n}"));
                let reply = v2::MessageId::new(format!("agent-{n}"));
                let text = format!("sdk-routed-agent v2: {}", v2_text(&request.prompt));
                let session = request.session_id;
                responder.respond(v2::PromptResponse::new(user.clone()))?;
                for update in [
                    v2::SessionUpdate::UserMessage(
                        v2::UserMessage::new(user).content(request.prompt),
                    ),
                    v2::SessionUpdate::StateUpdate(v2::StateUpdate::Running(
                        v2::RunningStateUpdate::new(),
                    )),
                    v2::SessionUpdate::AgentMessageChunk(v2::ContentChunk::new(
                        text.into(),
                        reply,
                    )),
                    v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(
                        v2::IdleStateUpdate::new().stop_reason(v2::StopReason::EndTurn),
                    )),
                ] {
                    cx.send_notification(v2::UpdateSessionNotification::new(
                        session.clone(),
                        update,
                    ))?;
                }
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: v2::CloseSessionRequest, responder, _cx| {
                responder.respond(v2::CloseSessionResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |_notification: v2::CancelSessionNotification, _cx| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
}
