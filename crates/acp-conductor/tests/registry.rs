//! `acp-conductor agent --agent ID`: the chain's agent comes from an ACP agent registry (an
//! npx entry, with a stand-in `npx` on PATH that runs this very binary as the agent), after a
//! pass-through proxy; and the usage errors of the option.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use acp_runtime::prelude::*;
use acp_runtime::process::AgentCommand;

const MODE: &str = "ACP_REGISTRY_TEST_AGENT";
const CONDUCTOR: &str = env!("CARGO_BIN_EXE_acp-conductor");

struct Echo;

impl Agent for Echo {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, _: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        turn.message(ContentBlock::from("from the registry agent"))
            .await?;
        Ok(StopReason::EndTurn.into())
    }
}

fn main() {
    if std::env::var_os(MODE).is_some() {
        agent::serve_stdio(Echo).unwrap();
        return;
    }
    let dir = std::env::temp_dir().join(format!("acp-conductor-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let npx = dir.join("npx");
    let me = std::env::current_exe().unwrap();
    std::fs::write(&npx, format!("#!/bin/sh\nexec '{}'\n", me.display())).unwrap();
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
    let registry = dir.join("registry.json");
    std::fs::write(
        &registry,
        r#"{"version": "1.0.0", "agents": [{"id": "echo", "name": "Echo", "version": "1.0.0",
            "description": "d", "distribution": {"npx": {"package": "echo@1.0.0"}}}]}"#,
    )
    .unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());

    println!("test the_chains_agent_comes_from_the_registry");
    let command = AgentCommand::new(CONDUCTOR)
        .args(["agent", "--agent", "echo", "--registry"])
        .arg(&registry)
        .arg(format!("{CONDUCTOR} pass-through"))
        .env("PATH", &path)
        .env(MODE, "1");
    // MODE is inherited by the proxy too, which is the conductor binary and ignores it.
    let (text, exit) = client::run_spawned(
        AutoAllow,
        command,
        ClientOptions::default(),
        |agent| async move {
            agent.initialize().await?;
            let session = agent.new_session(std::env::temp_dir()).await?;
            let mut turn = session.prompt(vec!["hi".into()]).await?;
            let mut text = String::new();
            while let Some(update) = turn.next().await {
                if let SessionUpdate::AgentMessageChunk(chunk) = update?
                    && let Some(t) = chunk.content.as_text()
                {
                    text.push_str(t);
                }
            }
            assert_eq!(turn.end().await?.stop_reason, StopReason::EndTurn);
            Ok(text)
        },
    )
    .unwrap();
    assert_eq!(text, "from the registry agent");
    assert!(exit.status.success(), "conductor: {exit}");

    println!("test registry_usage_errors");
    let out = Command::new(CONDUCTOR)
        .args(["agent", "--agent", "ecko", "--registry"])
        .arg(&registry)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "acp-conductor: no agent `ecko` in the registry; did you mean `echo`?\n"
    );
    let out = Command::new(CONDUCTOR)
        .args(["proxy", "--agent", "echo", "--registry"])
        .arg(&registry)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`proxy` has none"));
    let _ = std::fs::remove_dir_all(dir);
}
