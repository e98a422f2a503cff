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
