//! A client on the official SDK's `Client.v1()` (agent-client-protocol 5.2.0, schema 1.17), for
//! the system-prompt interop (docs/interop.md):
//!
//! ```text
//! sdk-client [--system-prompt TEXT] [--mode append|override|OTHER] -- AGENT [ARGS...]
//! ```
//!
//! It starts the agent, initializes (no client capabilities), prints the agent's
//! `sessionCapabilities.systemPrompt`, opens a session in the current directory with the
//! system prompt (whatever the agent advertised: the SDK does not check it, and neither does
//! this client, so that the agent's own check shows), runs one prompt, and prints the agent's
//! text and the stop reason. Permission requests get their `allow_once` option.
//!
//! Exit status: 0 after a turn, 3 when `session/new` was answered with an error (printed as
//! `session/new error CODE: MESSAGE`), 1 on any other failure, 2 on a usage error.

use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, SystemPrompt, SystemPromptMode,
    TextContent,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent};

struct Args {
    system_prompt: Option<String>,
    mode: SystemPromptMode,
    agent: Vec<String>,
}

fn parse() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        system_prompt: None,
        mode: SystemPromptMode::Append,
        agent: Vec::new(),
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--system-prompt" => parsed.system_prompt = args.next(),
            "--mode" => {
                parsed.mode = match args.next().as_deref() {
                    Some("append") => SystemPromptMode::Append,
                    Some("override") => SystemPromptMode::Override,
                    Some(other) => SystemPromptMode::Other(other.to_owned()),
                    None => return Err("--mode needs a value".into()),
                }
            }
            "--" => {
                parsed.agent = args.collect();
                break;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if parsed.agent.is_empty() {
        return Err(
            "usage: sdk-client [--system-prompt TEXT] [--mode MODE] -- AGENT [ARGS...]".into(),
        );
    }
    Ok(parsed)
}

/// How the turn ended, for the exit status.
enum Outcome {
    Turn,
    Refused,
}

#[tokio::main]
async fn main() {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("sdk-client: {e}");
            std::process::exit(2);
        }
    };
    match run(args).await {
        Ok(Outcome::Turn) => {}
        Ok(Outcome::Refused) => std::process::exit(3),
        Err(e) => {
            eprintln!("sdk-client: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: Args) -> agent_client_protocol::Result<Outcome> {
    let agent = AcpAgent::new(AcpAgentConfig::new(&args.agent[0]).args(&args.agent[1..]));
    let text = Arc::new(Mutex::new(String::new()));
    let cwd = std::env::current_dir().expect("a current directory");

    agent_client_protocol::Client
        .v1()
        .name("sdk-client")
        .on_receive_notification(
            {
                let text = text.clone();
                async move |notification: SessionNotification, _cx| {
                    if let SessionUpdate::AgentMessageChunk(chunk) = notification.update
                        && let ContentBlock::Text(chunk) = chunk.content
                    {
                        text.lock().unwrap().push_str(&chunk.text);
                    }
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let outcome = match request
                    .options
                    .iter()
                    .find(|option| option.kind == PermissionOptionKind::AllowOnce)
                {
                    Some(option) => RequestPermissionOutcome::Selected(
                        SelectedPermissionOutcome::new(option.option_id.clone()),
                    ),
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let name = init
                .agent_info
                .as_ref()
                .map_or("?", |info| info.name.as_str());
            println!(
                "initialized: agent {name}, protocol {:?}, sessionCapabilities.systemPrompt: {:?}",
                init.protocol_version, init.agent_capabilities.session_capabilities.system_prompt
            );

            let mut request = NewSessionRequest::new(cwd);
            if let Some(system_prompt) = args.system_prompt {
                request = request.system_prompt(
                    SystemPrompt::new(vec![ContentBlock::Text(TextContent::new(system_prompt))])
                        .mode(args.mode),
                );
            }
            let session = match cx.send_request(request).block_task().await {
                Ok(session) => session,
                Err(e) => {
                    println!("session/new error {}: {}", i32::from(e.code), e.message);
                    return Ok(Outcome::Refused);
                }
            };
            println!("session: {}", session.session_id);
            let response = cx
                .send_request(PromptRequest::new(
                    session.session_id,
                    vec![ContentBlock::Text(TextContent::new("Summarize my notes"))],
                ))
                .block_task()
                .await?;
            println!("agent: {}", text.lock().unwrap());
            println!("stop reason: {:?}", response.stop_reason);
            Ok(Outcome::Turn)
        })
        .await
}
