//! An agent on the official SDK's `Agent.v1()` (agent-client-protocol 5.2.0, schema 1.17), for
//! the system-prompt interop (docs/interop.md): it advertises `sessionCapabilities.systemPrompt`
//! as `{}` (append only; `--override` adds `{"mode": {"override": {}}}`, `--no-system-prompt`
//! advertises nothing), keeps the system prompt each `session/new` carried, and answers every
//! prompt with one text chunk that shows it. It logs each `session/new` to stderr.
//!
//! It checks nothing itself: the SDK hands the request over as it came, so whatever reaches a
//! session here is what the client sent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::Stdio;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, ContentBlock, ContentChunk, Implementation, InitializeRequest,
    InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    SessionCapabilities, SessionId, SessionNotification, SessionSystemPromptCapabilities,
    SessionSystemPromptModeCapabilities, SessionSystemPromptOverrideCapabilities, SessionUpdate,
    StopReason, SystemPrompt, SystemPromptMode, TextContent,
};

#[tokio::main]
async fn main() -> agent_client_protocol::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let advertised = if args.iter().any(|a| a == "--no-system-prompt") {
        None
    } else if args.iter().any(|a| a == "--override") {
        Some(
            SessionSystemPromptCapabilities::new().mode(
                SessionSystemPromptModeCapabilities::new()
                    .override_(SessionSystemPromptOverrideCapabilities::new()),
            ),
        )
    } else {
        Some(SessionSystemPromptCapabilities::new())
    };
    let sessions: Arc<Mutex<HashMap<SessionId, Option<SystemPrompt>>>> = Arc::default();
    let next = Arc::new(AtomicU64::new(1));

    agent_client_protocol::Agent
        .v1()
        .name("sdk-agent")
        .on_receive_request(
            async move |initialize: InitializeRequest, responder, _cx| {
                let mut caps = SessionCapabilities::new();
                if let Some(advertised) = advertised.clone() {
                    caps = caps.system_prompt(advertised);
                }
                responder.respond(
                    InitializeResponse::new(initialize.protocol_version)
                        .agent_info(Implementation::new("sdk-agent", "5.2.0"))
                        .agent_capabilities(AgentCapabilities::new().session_capabilities(caps)),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: NewSessionRequest, responder, _cx| {
                    let id = SessionId::new(format!(
                        "sdk-session-{}",
                        next.fetch_add(1, Ordering::Relaxed)
                    ));
                    eprintln!(
                        "sdk-agent: session/new {id}, system prompt: {}",
                        shown(request.system_prompt.as_ref())
                    );
                    sessions
                        .lock()
                        .unwrap()
                        .insert(id.clone(), request.system_prompt);
                    responder.respond(NewSessionResponse::new(id))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                let prompt = sessions.lock().unwrap().get(&request.session_id).cloned();
                let text = match prompt {
                    Some(prompt) => format!("sdk-agent: system prompt {}", shown(prompt.as_ref())),
                    None => "sdk-agent: unknown session".to_owned(),
                };
                cx.send_notification(SessionNotification::new(
                    request.session_id,
                    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(
                        TextContent::new(text),
                    ))),
                ))?;
                responder.respond(PromptResponse::new(StopReason::EndTurn))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// `none`, or the mode and the text blocks: `append "Be terse."`.
fn shown(prompt: Option<&SystemPrompt>) -> String {
    let Some(prompt) = prompt else {
        return "none".to_owned();
    };
    let mode = match &prompt.mode {
        SystemPromptMode::Append => "append".to_owned(),
        SystemPromptMode::Override => "override".to_owned(),
        SystemPromptMode::Other(other) => other.clone(),
        _ => format!("{:?}", prompt.mode),
    };
    let text: Vec<String> = prompt
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => format!("{:?}", text.text),
            other => format!("{other:?}"),
        })
        .collect();
    format!("{mode} {}", text.join(" "))
}
