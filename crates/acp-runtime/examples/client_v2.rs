//! A one-shot protocol v2 client: starts the agent command given after `--`, sends one prompt,
//! allows what the agent asks, and prints the conversation once the prompt's work is idle.
//!
//! ```text
//! cargo run -p acp-rs-runtime --features unstable-protocol-v2 --example client_v2 -- \
//!     "Look around" -- target/debug/examples/agent_v2
//! ```

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use acp_runtime::acp_types::v2::*;
use acp_runtime::client::v2::{self, Author, Conversation};
use smol::Unblock;

/// Allows the first option of every permission request, and keeps the conversation.
#[derive(Clone, Default)]
struct OneShot {
    chat: Arc<Mutex<Conversation>>,
}

impl v2::Client for OneShot {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> acp_runtime::Result<RequestPermissionResponse> {
        let outcome = match request.options.first() {
            Some(option) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                option.option_id.clone(),
            )),
            None => RequestPermissionOutcome::Cancelled(CancelledPermissionOutcome::new()),
        };
        Ok(RequestPermissionResponse::new(outcome))
    }

    async fn session_update(&self, update: UpdateSessionNotification) {
        self.chat.lock().unwrap().apply(&update.update);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args
        .iter()
        .position(|a| a == "--")
        .ok_or("usage: client_v2 PROMPT -- AGENT [ARGS]")?;
    let prompt = args[..split].join(" ");
    let (program, program_args) = args[split + 1..].split_first().ok_or("no agent command")?;
    let mut child = Command::new(program)
        .args(program_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let reader = futures_lite::io::BufReader::new(Unblock::new(child.stdout.take().unwrap()));
    let writer = Unblock::new(child.stdin.take().unwrap());
    let client = OneShot::default();
    let (agent, driver) = v2::connect(client.clone(), reader, writer, Default::default());
    smol::spawn(driver).detach();
    let stop = smol::block_on(async {
        let init = agent
            .initialize(InitializeRequest::new(
                ProtocolVersion::V2,
                Implementation::new("acp-rs-client-v2", env!("CARGO_PKG_VERSION")),
            ))
            .await?;
        eprintln!("agent: {} {}", init.info.name, init.info.version);
        let cwd = std::env::current_dir()?.display().to_string();
        let session = agent.new_session(NewSessionRequest::new(cwd)).await?;
        let turn = agent
            .prompt(PromptRequest::new(
                session.session_id.clone(),
                vec![ContentBlock::from(prompt)],
            ))
            .await?;
        let stop = turn.finished().await?;
        agent
            .close_session(CloseSessionRequest::new(session.session_id))
            .await?;
        Ok::<_, Box<dyn std::error::Error>>(stop)
    })?;
    for message in client.chat.lock().unwrap().messages() {
        let who = match message.author {
            Author::User => "user",
            Author::Agent => "agent",
            Author::Thought => "thought",
        };
        let text: String = message
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        println!("{who}: {text}");
    }
    for call in client.chat.lock().unwrap().tool_calls() {
        println!("tool call {}: {:?} {:?}", call.id, call.title, call.status);
    }
    println!("stop: {stop:?}");
    agent.close();
    let _ = child.wait();
    Ok(())
}
