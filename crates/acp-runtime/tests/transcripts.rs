//! Whole wire transcripts of the main scenario, pinned as insta snapshots: the demo agent
//! driven by a client with the built-in hosts, every message in both directions, in order.
//! What varies between runs (session ids, the scratch directory, terminal ids) is replaced by
//! stable placeholders.

mod common;

#[path = "../examples/shared/demo_agent.rs"]
mod demo_agent;

use std::sync::{Arc, Mutex};

use acp_jsonrpc::{ConnectionOptions, Observer, memory};
use acp_runtime::agent;
use acp_runtime::client::{self, AutoAllow, AutoReject, Client, ClientOptions};
use acp_runtime::fs::FsHost;
use acp_runtime::terminal::TerminalHost;
use acp_types::{ClientCapabilities, McpServer, NewSessionRequest, SystemPrompt, SystemPromptMode};
use common::within;

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Observer for Recorder {
    fn incoming(&self, line: &[u8]) {
        self.0.lock().unwrap().push(format!(
            "agent → client  {}",
            String::from_utf8_lossy(line).trim_end()
        ));
    }
    fn outgoing(&self, line: &[u8]) {
        self.0.lock().unwrap().push(format!(
            "client → agent  {}",
            String::from_utf8_lossy(line).trim_end()
        ));
    }
}

/// The demo agent's turn. With `newer`, the client also advertises `plan` and `subagents` and
/// gives a system prompt in `override` mode (schema 1.20's stable additions).
async fn demo_turn<C: Client>(permissions: C, newer: bool) -> String {
    demo_turn_with(permissions, newer, true).await
}

/// [`demo_turn`]; without `hosts`, the client serves no file system and advertises
/// `terminal` without serving it (it refuses `terminal/create`, as acpx does at its prompt).
async fn demo_turn_with<C: Client>(permissions: C, newer: bool, hosts: bool) -> String {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let project = std::env::temp_dir().join(format!("acp-transcript-{}-{run}", std::process::id()));
    let _ = std::fs::remove_dir_all(&project);
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "one\ntwo\n").unwrap();

    let (client_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (_client, agent_driver) = agent::serve(
        demo_agent::DemoAgent,
        agent_end.reader,
        agent_end.writer,
        agent::AgentOptions::default(),
    );
    smol::spawn(agent_driver).detach();
    let recorder = Recorder::default();
    let mut options = ClientOptions::default();
    if newer {
        options = options.with_plans().with_subagents();
    }
    if hosts {
        options = options
            .with_file_system(FsHost::new())
            .with_terminals(TerminalHost::new());
    } else {
        let mut refused = ClientCapabilities::default();
        refused.terminal = true;
        options = options.with_capabilities(refused);
    }
    let options = options
        .with_info("transcript-test", "0")
        .with_connection_options(ConnectionOptions::default().with_observer(recorder.clone()));
    let (agent, driver) =
        client::connect(permissions, client_end.reader, client_end.writer, options);
    let driver = smol::spawn(driver);

    agent.initialize().await.unwrap();
    let mut request =
        NewSessionRequest::new(project.display().to_string(), Vec::<McpServer>::new());
    if newer {
        request = request.with_system_prompt(SystemPrompt::new(
            SystemPromptMode::Override,
            vec!["Answer in one line.".into()],
        ));
    }
    let session = agent.new_session_with(request).await.unwrap();
    let mut turn = session
        .prompt(vec!["Summarize my notes".into()])
        .await
        .unwrap();
    while turn.next().await.is_some() {}
    turn.end().await.unwrap();
    agent.close();
    within("the client driver", driver).await.unwrap();

    let mut transcript = recorder.0.lock().unwrap().join("\n");
    transcript = transcript.replace(session.id().as_str(), "<session>");
    transcript = transcript.replace(&project.display().to_string(), "<project>");
    transcript = normalize_terminal_ids(&transcript);
    std::fs::remove_dir_all(&project).unwrap();
    transcript
}

/// `"terminalId":"term-17"` → `"terminalId":"<terminal-1>"`, numbered by first appearance.
fn normalize_terminal_ids(text: &str) -> String {
    let key = "\"terminalId\":\"";
    let mut ids: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(key) {
        let after = &rest[start + key.len()..];
        let end = after.find('"').unwrap();
        let id = after[..end].to_owned();
        if !ids.contains(&id) {
            ids.push(id);
        }
        rest = &after[end..];
    }
    let mut out = text.to_owned();
    for (i, id) in ids.iter().enumerate() {
        out = out.replace(
            &format!("{key}{id}\""),
            &format!("{key}<terminal-{}>\"", i + 1),
        );
    }
    out
}

/// Pins `transcript`: the wire form depends on the schema the types come from (see
/// `acp_types::SCHEMA`), so the unstable schema's snapshots are kept beside the stable ones.
macro_rules! assert_transcript {
    ($transcript:expr) => {
        let mut settings = insta::Settings::clone_current();
        if acp_types::SCHEMA != "stable" {
            settings.set_snapshot_suffix(acp_types::SCHEMA);
        }
        settings.bind(|| insta::assert_snapshot!($transcript));
    };
}

/// Every `tool_call` the demo agent sends has a status (clients show it: the TypeScript
/// example client prints `(undefined)` for a missing one).
fn assert_every_tool_call_has_a_status(transcript: &str) {
    let calls: Vec<&str> = transcript
        .lines()
        .filter(|line| line.contains(r#""sessionUpdate":"tool_call","#))
        .collect();
    assert!(!calls.is_empty(), "{transcript}");
    for call in calls {
        assert!(call.contains(r#""status":""#), "{call}");
    }
}

#[test]
fn prompt_turn_with_tool_calls_fs_terminal_and_permission() {
    let transcript = smol::block_on(demo_turn(AutoAllow, false));
    assert_every_tool_call_has_a_status(&transcript);
    assert_transcript!(transcript);
}

#[test]
fn prompt_turn_with_permission_rejected() {
    let transcript = smol::block_on(demo_turn(AutoReject, false));
    assert!(
        !transcript.contains("fs/write_text_file"),
        "a rejected write must not happen"
    );
    assert_transcript!(transcript);
}

#[test]
fn prompt_turn_with_system_prompt_plan_updates_and_a_subagent() {
    let transcript = smol::block_on(demo_turn(AutoAllow, true));
    assert!(transcript.contains(r#""sessionUpdate":"plan_update""#));
    assert!(!transcript.contains(r#""sessionUpdate":"plan","#));
    assert!(transcript.contains(r#""sessionUpdate":"subagent_update""#));
    assert_transcript!(transcript);
}

/// A refused `terminal/create` fails its tool call only, and the turn goes on; a client
/// without file access is told so instead of being told of an empty file.
#[test]
fn prompt_turn_with_a_refused_terminal_and_no_file_system() {
    let transcript = smol::block_on(demo_turn_with(AutoAllow, false, false));
    assert!(transcript.contains(
        r#""toolCallId":"list_dir","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Method not found"#
    ), "{transcript}");
    assert!(
        transcript.contains(r#""stopReason":"end_turn""#),
        "{transcript}"
    );
    assert!(transcript.contains("offers "), "{transcript}");
    assert!(!transcript.contains("0 lines"), "{transcript}");
    assert_every_tool_call_has_a_status(&transcript);
    assert_transcript!(transcript);
}
