//! `acp-bridge serve --agent ID`: the agent command comes from an ACP agent registry (here an
//! npx entry, with a stand-in `npx` on PATH that runs `cat`), resolved once at startup.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use async_tungstenite::tungstenite::Message;
use common::websocket;
use futures_lite::StreamExt;

const BRIDGE: &str = env!("CARGO_BIN_EXE_acp-bridge");

#[test]
fn serve_runs_a_registry_agent() {
    let dir = std::env::temp_dir().join(format!("acp-bridge-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let npx = dir.join("npx");
    std::fs::write(&npx, "#!/bin/sh\nexec cat\n").unwrap();
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
    let registry = dir.join("registry.json");
    std::fs::write(
        &registry,
        r#"{"version": "1.0.0", "agents": [{"id": "echo", "name": "Echo", "version": "1.0.0",
            "description": "cat", "distribution": {"npx": {"package": "echo@1.0.0"}}}]}"#,
    )
    .unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
    let mut child = Command::new(BRIDGE)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--agent",
            "echo",
            "--registry",
        ])
        .arg(&registry)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(
        first.starts_with(&format!(
            "acp-bridge: serving {} --yes echo@1.0.0 at ws://",
            npx.display()
        )),
        "{first}"
    );
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("ws://"))
        .unwrap()
        .to_owned();
    std::thread::spawn(move || for _ in stderr.lines() {});
    smol::block_on(async {
        let (mut ws, _) = websocket(&url).await;
        ws.send(Message::text("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"))
            .await
            .unwrap();
        match ws.next().await {
            Some(Ok(Message::Text(text))) => {
                assert_eq!(text.as_str(), "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}")
            }
            other => panic!("{other:?}"),
        }
    });
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(dir);
}
