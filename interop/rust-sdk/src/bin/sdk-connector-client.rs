//! A client on the official SDK's version connector (agent-client-protocol 5.2.0, feature
//! `unstable_protocol_v2`): `Client.protocol_connector().with_v1(..).with_v2(..)`, for the
//! protocol v2 interop (docs/interop.md, "Protocol v2"):
//!
//! ```text
//! sdk-connector-client PROMPT -- AGENT [ARGS...]
//! ```
//!
//! The connector starts the agent and tries v2; when the agent answers a lower version it goes
//! on with the v1 side (on the same connection when the SDK judges that correct, else on a
//! fresh agent process). Whichever side runs prints `protocol: v1` or `protocol: v2`, opens a
//! session in the current directory, sends PROMPT, and prints `agent: TEXT` (the agent's text,
//! joined) and `stop reason: REASON`. Permission requests get their `allow_once` option.
//! Exit status: 0 after a turn, 1 on any failure, 2 on a usage error.

use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as v1;
use agent_client_protocol::v2::schema as v2;
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client, ConnectTo, Error};
use tokio::sync::mpsc::unbounded_channel;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (prompt, agent) = match args.iter().position(|a| a == "--") {
        Some(1) if args.len() > 2 => (args[0].clone(), args[2..].to_vec()),
        _ => {
            eprintln!("usage: sdk-connector-client PROMPT -- AGENT [ARGS...]");
            std::process::exit(2);
        }
    };
    let v1_prompt = prompt.clone();
    let result = Client
        .protocol_connector()
        .with_v1(move || V1Turn(v1_prompt.clone()))
        .with_v2(move || V2Turn(prompt.clone()))
        .connect_to(move || AcpAgent::new(AcpAgentConfig::new(&agent[0]).args(&agent[1..])))
        .await;
    if let Err(e) = result {
        eprintln!("sdk-connector-client: {e:?}");
        std::process::exit(1);
    }
}

/// The v1 side: initialize, one session, one prompt.
struct V1Turn(String);

impl ConnectTo<Agent> for V1Turn {
    async fn connect_to(self, agent: impl ConnectTo<Client>) -> Result<(), Error> {
        let text = Arc::new(Mutex::new(String::new()));
        let prompt = self.0;
        Client
            .v1()
            .name("sdk-connector-client-v1")
            .on_receive_notification(
                {
                    let text = text.clone();
                    async move |notification: v1::SessionNotification, _cx| {
                        if let v1::SessionUpdate::AgentMessageChunk(chunk) = notification.update
                            && let v1::ContentBlock::Text(chunk) = chunk.content
                        {
                            text.lock().unwrap().push_str(&chunk.text);
                        }
                        Ok(())
                    }
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: v1::RequestPermissionRequest, responder, _cx| {
                    let outcome = match request
                        .options
                        .iter()
                        .find(|option| option.kind == v1::PermissionOptionKind::AllowOnce)
                    {
                        Some(option) => v1::RequestPermissionOutcome::Selected(
                            v1::SelectedPermissionOutcome::new(option.option_id.clone()),
                        ),
                        None => v1::RequestPermissionOutcome::Cancelled,
                    };
                    responder.respond(v1::RequestPermissionResponse::new(outcome))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(agent, async move |cx| {
                let init = cx
                    .send_request(v1::InitializeRequest::new(ProtocolVersion::V1))
                    .block_task()
                    .await?;
                println!("protocol: v1 ({:?})", init.protocol_version);
                let cwd = std::env::current_dir().map_err(Error::into_internal_error)?;
                let session = cx
                    .send_request(v1::NewSessionRequest::new(cwd))
                    .block_task()
                    .await?;
                let response = cx
                    .send_request(v1::PromptRequest::new(
                        session.session_id,
                        vec![v1::ContentBlock::Text(v1::TextContent::new(prompt))],
                    ))
                    .block_task()
                    .await?;
                println!("agent: {}", text.lock().unwrap());
                println!("stop reason: {:?}", response.stop_reason);
                Ok(())
            })
            .await
    }
}

/// The v2 side: initialize, one session, one prompt, then wait for idle.
struct V2Turn(String);

impl ConnectTo<Agent> for V2Turn {
    async fn connect_to(self, agent: impl ConnectTo<Client>) -> Result<(), Error> {
        let (updates, mut received) = unbounded_channel::<v2::UpdateSessionNotification>();
        let prompt = self.0;
        Client
            .v2()
            .name("sdk-connector-client-v2")
            .on_receive_notification(
                async move |notification: v2::UpdateSessionNotification, _cx| {
                    updates.send(notification).map_err(Error::into_internal_error)
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: v2::RequestPermissionRequest, responder, _cx| {
                    let outcome = match request
                        .options
                        .iter()
                        .find(|option| option.kind == v2::PermissionOptionKind::AllowOnce)
                    {
                        Some(option) => v2::RequestPermissionOutcome::Selected(
                            v2::SelectedPermissionOutcome::new(option.option_id.clone()),
                        ),
                        None => v2::CancelledPermissionOutcome::new().into(),
                    };
                    responder.respond(v2::RequestPermissionResponse::new(outcome))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(agent, async move |cx| {
                let init = cx
                    .send_request(v2::InitializeRequest::new(
                        ProtocolVersion::V2,
                        v2::Implementation::new("sdk-connector-client", "5.2.0"),
                    ))
                    .block_task()
                    .await?;
                println!("protocol: v2 ({:?})", init.protocol_version);
                let cwd = std::env::current_dir().map_err(Error::into_internal_error)?;
                let session = cx
                    .send_request(v2::NewSessionRequest::new(cwd))
                    .block_task()
                    .await?
                    .session_id;
                cx.send_request(v2::PromptRequest::new(
                    session.clone(),
                    vec![v2::ContentBlock::from(prompt)],
                ))
                .block_task()
                .await?;
                // The turn's text: chunks and whole agent messages, until idle after running.
                let mut text = String::new();
                let mut running = false;
                let stop_reason = loop {
                    let Some(notification) = received.recv().await else {
                        return Err(Error::internal_error().data("the agent left mid-turn"));
                    };
                    if notification.session_id != session {
                        continue;
                    }
                    match notification.update {
                        v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(idle)) if running => {
                            break idle.stop_reason;
                        }
                        v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(_)) => {}
                        v2::SessionUpdate::StateUpdate(_) => running = true,
                        v2::SessionUpdate::AgentMessageChunk(chunk) => {
                            if let v2::ContentBlock::Text(chunk) = chunk.content {
                                text.push_str(&chunk.text);
                            }
                        }
                        _ => {}
                    }
                };
                println!("agent: {text}");
                println!("stop reason: {stop_reason:?}");
                Ok(())
            })
            .await
    }
}
