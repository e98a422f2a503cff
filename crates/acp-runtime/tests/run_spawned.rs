//! `client::run_spawned`: a whole connection to a spawned agent process over real pipes, run on
//! the calling thread, and its end when the agent stops reading.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use acp_runtime::process::{AgentCommand, ShutdownStep};
use futures_lite::future;

fn sh(script: &str) -> AgentCommand {
    AgentCommand::new("sh").arg("-c").arg(script)
}

/// A scripted agent in `sh`: answers initialize and session/new, then streams three chunks,
/// reads a file through the client, reports what it got, and ends the turn.
const SCRIPTED_AGENT: &str = r#"
read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}}'
read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}'
read -r line
for i in 1 2 3; do
  printf '%s\n' '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk"}}}}'
done
printf '%s\n' '{"jsonrpc":"2.0","id":"r1","method":"fs/read_text_file","params":{"sessionId":"s1","path":"/tmp/x"}}'
read -r line
case "$line" in *'"id":"r1"'*'"file text"'*) got=yes ;; *) got=no ;; esac
printf '%s\n' "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"read:$got\"}}}}"
printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
read -r line
exit 0
"#;

#[derive(Clone)]
struct FileClient;

impl acp_runtime::client::Client for FileClient {
    async fn request_permission(
        &self,
        _: acp_types::RequestPermissionRequest,
    ) -> acp_runtime::Result<acp_types::RequestPermissionResponse> {
        Ok(acp_types::RequestPermissionResponse::new(
            acp_types::RequestPermissionOutcome::Cancelled,
        ))
    }

    async fn read_text_file(
        &self,
        _: acp_types::ReadTextFileRequest,
    ) -> acp_runtime::Result<acp_types::ReadTextFileResponse> {
        Ok(acp_types::ReadTextFileResponse::new("file text"))
    }
}

#[test]
fn run_spawned_drives_a_whole_turn_over_real_pipes_on_the_calling_thread() {
    use acp_runtime::client::{self, ClientOptions};
    use acp_types::{ContentBlock, SessionUpdate, StopReason};

    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut capabilities = acp_types::ClientCapabilities::default();
        capabilities.fs.read_text_file = true;
        let options = ClientOptions::default().with_capabilities(capabilities);
        let outcome = client::run_spawned(
            FileClient,
            sh(SCRIPTED_AGENT),
            options,
            |agent| async move {
                agent.initialize().await?;
                let session = agent.new_session("/tmp").await?;
                let mut turn = session.prompt(vec!["go".into()]).await?;
                let mut texts = Vec::new();
                while let Some(update) = turn.next().await {
                    if let SessionUpdate::AgentMessageChunk(chunk) = update?
                        && let ContentBlock::Text(text) = chunk.content
                    {
                        texts.push(text.text);
                    }
                }
                let response = turn.end().await?;
                Ok::<_, acp_runtime::Error>((texts, response.stop_reason))
            },
        );
        let _ = done.send(outcome);
    });
    let ((texts, stop_reason), exit) = result
        .recv_timeout(Duration::from_secs(15))
        .expect("run_spawned did not finish")
        .unwrap();
    assert_eq!(texts, ["chunk", "chunk", "chunk", "read:yes"]);
    assert_eq!(stop_reason, StopReason::EndTurn);
    assert!(exit.status.success(), "{exit}");
}

/// An agent that answers `initialize`, then never reads again and ignores SIGTERM.
const DEAF_AFTER_INITIALIZE: &str = r#"
read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}}'
trap "" TERM; exec sleep 1000
"#;

/// `run_spawned` gives the connection's last flush a bounded time (client.rs), then the
/// staged shutdown takes its graces: the run ends even though the agent never reads again.
#[test]
fn run_spawned_ends_when_the_agent_stops_reading_with_data_queued() {
    use acp_runtime::client::{self, ClientOptions};

    let (grace, term_grace) = (Duration::from_millis(300), Duration::from_millis(300));
    let (done, result) = std::sync::mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        let outcome = client::run_spawned(
            FileClient,
            sh(DEAF_AFTER_INITIALIZE)
                .shutdown_grace(grace)
                .term_grace(term_grace),
            ClientOptions::default(),
            |agent| async move {
                agent.initialize().await.unwrap();
                // More than the pipe holds, to an agent that does not read: still queued
                // when `work` gives up on it and returns.
                let huge = format!("\"{}\"", "x".repeat(4 << 20));
                let params = serde_json::value::RawValue::from_string(huge).unwrap();
                future::or(
                    async {
                        let _ = agent.ext_method("_test/big", &params).await;
                    },
                    async {
                        smol::Timer::after(Duration::from_millis(200)).await;
                    },
                )
                .await;
                Ok(())
            },
        );
        let _ = done.send(outcome.map(|(_, exit)| exit));
    });
    let exit = result
        .recv_timeout(Duration::from_secs(10))
        .expect("run_spawned did not finish")
        .unwrap();
    eprintln!(
        "run_spawned against a deaf agent took {:?}",
        started.elapsed()
    );
    assert_eq!(exit.step, ShutdownStep::Killed);
}

/// A scripted v2 agent in `sh`: answers initialize (version 2) and session/new, accepts the
/// prompt, then streams the turn: the echo, `running`, text chunks (escapes, non-ASCII), one
/// with a `_meta` and an update of a kind no schema has (both for the generic decode), and
/// `idle` with `end_turn`.
#[cfg(feature = "unstable-protocol-v2")]
const SCRIPTED_V2_AGENT: &str = r#"
update() { printf '%s\n' "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\",\"update\":$1}}"; }
read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"sh","version":"1"},"capabilities":{}}}'
read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}'
read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"messageId":"u1"}}'
update '{"sessionUpdate":"user_message","messageId":"u1","content":[{"type":"text","text":"go"}]}'
update '{"sessionUpdate":"state_update","state":"running"}'
update '{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"caf\u00e9 "}}'
update '{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"\"ok\"\n"},"_meta":{"x":1}}'
update '{"sessionUpdate":"hologram","messageId":"a1"}'
update '{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"🦀"}}'
update '{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}'
read -r line
exit 0
"#;

/// `client::v2::run_spawned`: a whole v2 turn with a spawned agent on the calling thread's pipe
/// loop; the updates reach the application in order, the fast-read ones and the others alike.
#[cfg(feature = "unstable-protocol-v2")]
#[test]
fn v2_run_spawned_drives_a_whole_turn_over_real_pipes_on_the_calling_thread() {
    use acp_runtime::acp_types::v2::*;
    use acp_runtime::client::v2::{self, Conversation, State};
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<(Conversation, Vec<String>)>>);
    impl v2::Client for Recorder {
        async fn session_update(&self, notification: UpdateSessionNotification) {
            let mut seen = self.0.lock().unwrap();
            seen.0.apply(&notification.update);
            let tag = serde_json::to_value(&notification.update).unwrap()["sessionUpdate"].clone();
            seen.1.push(tag.as_str().unwrap_or("?").to_owned());
        }
    }

    let recorder = Recorder::default();
    let client = recorder.clone();
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = v2::run_spawned(
            client,
            sh(SCRIPTED_V2_AGENT),
            Default::default(),
            |agent| async move {
                let hello =
                    InitializeRequest::new(ProtocolVersion::V2, Implementation::new("t", "1"));
                agent.initialize(hello).await?;
                let session = agent.new_session(NewSessionRequest::new("/tmp")).await?;
                let prompt = PromptRequest::new(session.session_id, vec![ContentBlock::from("go")]);
                agent.prompt(prompt).await?.finished().await
            },
        );
        let _ = done.send(outcome);
    });
    let (stop, exit) = result
        .recv_timeout(Duration::from_secs(15))
        .expect("v2::run_spawned did not finish")
        .unwrap();
    assert_eq!(stop, IdleStateUpdateKind::EndTurn);
    assert!(exit.status.success(), "{exit}");
    let seen = recorder.0.lock().unwrap();
    assert_eq!(
        seen.1,
        [
            "user_message",
            "state_update",
            "agent_message_chunk",
            "agent_message_chunk",
            "hologram",
            "agent_message_chunk",
            "state_update",
        ]
    );
    let reply = &seen.0.messages()[1];
    let text: String = reply
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.as_str(),
            _ => "?",
        })
        .collect();
    assert_eq!(text, "café \"ok\"\n🦀");
    assert_eq!(
        seen.0.state(),
        Some(&State::Idle(Some(IdleStateUpdateKind::EndTurn)))
    );
}
