//! `session/fork` against what stock agents really sent: the JSON-RPC lines that
//! interop/fork.sh recorded (`FORK_RECORD=1`) between the `fork` example and
//! claude-agent-acp 0.23.1 and opencode 1.18.33, replayed by a scripted agent. Our client
//! runs the same calls as the example; every line it sends must match the recording's
//! (method, id, session id, cwd), and every line the agent sent is sent back verbatim: their
//! initialize answers with their real capabilities, their `session/new`, `session/fork` and
//! `session/list` answers, their updates, and claude-agent-acp's refusal of a fork before any
//! turn. See docs/interop.md, "Forking sessions of stock agents".
#![cfg(feature = "unstable-session-fork")]

mod common;

use acp_runtime::client::{self, AgentHandle, AutoReject, ClientOptions, Session};
use acp_runtime::{Error, codes};
use acp_types::de::collect_dropped;
use acp_types::*;
use common::{RawPeer, within};
use serde_json::Value;

/// One recorded line: sent by our client (`->`) or by the agent (`<-`).
enum Line {
    Sent(Value),
    Received(Value),
}

fn transcript(name: &str) -> Vec<Line> {
    let path = format!(
        "{}/../../interop/fork/transcripts/{name}.trace",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|line| {
            let (arrow, json) = line.split_at(3);
            let value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{line}: {e}"));
            match arrow {
                "-> " => Line::Sent(value),
                "<- " => Line::Received(value),
                _ => panic!("not a trace line: {line}"),
            }
        })
        .collect()
}

/// The recorded request of `method` (its params).
fn recorded_params(lines: &[Line], method: &str) -> Value {
    lines
        .iter()
        .find_map(|line| match line {
            Line::Sent(v) if v["method"] == method => Some(v["params"].clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {method} in the transcript"))
}

/// The scripted agent: answers as the real one did, checking that our client asks the same.
async fn replay(mut peer: RawPeer, lines: Vec<Line>) {
    for line in lines {
        match line {
            Line::Sent(want) => {
                let got = peer.recv().await;
                for pointer in ["/method", "/id", "/params/sessionId", "/params/cwd"] {
                    assert_eq!(
                        got.pointer(pointer),
                        want.pointer(pointer),
                        "{pointer} of {got}, recorded {want}"
                    );
                }
            }
            Line::Received(message) => peer.send(message).await,
        }
    }
}

/// Our client on one end, the replay on the other; `work` gets the handle and the recorded
/// cwd of the session.
fn run<F: std::future::Future<Output = ()>>(
    name: &str,
    work: impl FnOnce(AgentHandle, String) -> F,
) {
    let lines = transcript(name);
    let cwd = recorded_params(&lines, "session/new")["cwd"]
        .as_str()
        .expect("cwd")
        .to_owned();
    smol::block_on(async {
        let (peer, endpoint) = RawPeer::new();
        let (agent, driver) = client::connect(
            AutoReject,
            endpoint.reader,
            endpoint.writer,
            ClientOptions::default().with_info("acp-fork-example", "0.1.0"),
        );
        smol::spawn(driver).detach();
        let agent_side = smol::spawn(replay(peer, lines));
        within(name, work(agent, cwd)).await;
        within("the rest of the transcript", agent_side).await;
    });
}

/// Initializes and checks the advertised session capabilities and the agent's name.
async fn initialize(agent: &AgentHandle, name: &str, version: &str) {
    let init = agent.initialize().await.unwrap();
    let info = init.agent_info.expect("agentInfo");
    assert_eq!((info.name.as_str(), info.version.as_str()), (name, version));
    let caps = &init.agent_capabilities.session_capabilities;
    assert!(caps.fork.is_some(), "sessionCapabilities.fork");
    assert!(caps.list.is_some(), "sessionCapabilities.list");
    assert!(caps.resume.is_some(), "sessionCapabilities.resume");
}

/// The session's whole answer decodes as `T` with nothing dropped by a lenient field.
fn whole<T: serde::de::DeserializeOwned>(session: &Session) -> T {
    let raw = session.answer().expect("the answer is kept");
    let (decoded, dropped) = collect_dropped(|| serde_json::from_str::<T>(raw.get()));
    assert!(dropped.is_empty(), "dropped: {dropped:?}");
    decoded.expect("the answer decodes")
}

/// One turn: every update decodes; returns their number.
async fn turn(session: &Session, text: &str) -> usize {
    let mut turn = session.prompt(vec![text.into()]).await.unwrap();
    let mut updates = 0;
    while let Some(update) = turn.next().await {
        update.unwrap();
        updates += 1;
    }
    assert_eq!(turn.end().await.unwrap().stop_reason, StopReason::EndTurn);
    updates
}

#[test]
fn claude_agent_acp_forks_after_a_local_turn() {
    run("claude", |agent, cwd| async move {
        initialize(&agent, "@zed-industries/claude-agent-acp", "0.23.1").await;
        let session = agent.new_session(&cwd).await.unwrap();
        let answer: NewSessionResponse = whole(&session);
        assert_eq!(answer.modes.expect("modes").available_modes.len(), 4);
        // `/context` is answered by Claude Code itself; the turn saves the session to disk,
        // which its fork resumes from. The available commands came before it.
        assert!(turn(&session, "/context").await >= 2);

        let fork = session.fork().await.unwrap();
        assert_ne!(fork.id(), session.id());
        let answer: ForkSessionResponse = whole(&fork);
        assert_eq!(&answer.session_id, fork.id());
        let modes = answer.modes.expect("modes");
        assert_eq!(modes.current_mode_id.as_str(), "default");
        assert_eq!(modes.available_modes.len(), 4);
        let options = answer.config_options.expect("configOptions");
        assert_eq!(options.len(), 2);
        assert_eq!(
            fork.modes()
                .expect("the fork's modes")
                .available_modes
                .len(),
            4
        );
        assert_eq!(fork.cwd(), std::path::Path::new(&cwd));
        // The fork prompts like any other session.
        assert!(turn(&fork, "/context").await >= 2);

        // Claude lists the original only: the fork's transcript is not listed.
        let listed = agent.list_all_sessions(Some(cwd.as_ref())).await.unwrap();
        let ids: Vec<&SessionId> = listed.iter().map(|s| &s.session_id).collect();
        assert_eq!(ids, [session.id()]);
    });
}

#[test]
fn claude_agent_acp_refuses_a_fork_before_any_turn() {
    run("claude-fresh", |agent, cwd| async move {
        initialize(&agent, "@zed-industries/claude-agent-acp", "0.23.1").await;
        let session = agent.new_session(&cwd).await.unwrap();
        let error = session.fork().await.map(drop).unwrap_err();
        assert_eq!(error.code(), Some(codes::RESOURCE_NOT_FOUND), "{error}");
        let Error::Rpc(error) = error else {
            unreachable!()
        };
        // It names the id it made up for the fork, not the session asked for.
        assert!(error.message.starts_with("Resource not found: "));
        assert!(!error.message.contains(session.id().as_str()));
        // The connection and the session go on.
        assert_eq!(session.try_next_update().map(|u| u.is_ok()), Some(true));
    });
}

#[test]
fn opencode_forks_a_fresh_session() {
    run("opencode", |agent, cwd| async move {
        initialize(&agent, "OpenCode", "1.18.33").await;
        let session = agent.new_session(&cwd).await.unwrap();
        let _: NewSessionResponse = whole(&session);

        let fork = session.fork().await.unwrap();
        assert_ne!(fork.id(), session.id());
        assert!(fork.id().as_str().starts_with("ses_"));
        let answer: ForkSessionResponse = whole(&fork);
        assert_eq!(&answer.session_id, fork.id());
        // No modes: opencode offers its modes and models as config options only.
        assert!(answer.modes.is_none());
        let options = answer.config_options.expect("configOptions");
        let ids: Vec<&str> = options.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["model", "mode"]);
        assert_eq!(fork.config_options().expect("the fork's options").len(), 2);

        // Both are listed, the fork titled as such.
        let listed = agent.list_all_sessions(Some(cwd.as_ref())).await.unwrap();
        assert_eq!(listed.len(), 2);
        let listed_fork = listed
            .iter()
            .find(|s| &s.session_id == fork.id())
            .expect("fork listed");
        assert!(
            listed_fork
                .title
                .as_deref()
                .unwrap_or_default()
                .ends_with("(fork #1)")
        );
        assert!(listed.iter().any(|s| &s.session_id == session.id()));
    });
}

/// Every answer and update in the transcripts decodes as its type, with nothing dropped by a
/// lenient field.
#[test]
fn every_recorded_answer_and_update_decodes_whole() {
    fn check<T: serde::de::DeserializeOwned>(what: &str, value: &Value) {
        let (decoded, dropped) = collect_dropped(|| T::deserialize(value));
        decoded.unwrap_or_else(|e| panic!("{what}: {e}: {value}"));
        assert!(dropped.is_empty(), "{what}: dropped {dropped:?}");
    }
    for name in ["claude", "claude-fresh", "opencode"] {
        let lines = transcript(name);
        let mut methods = std::collections::HashMap::new();
        let mut answers = 0;
        for line in &lines {
            match line {
                Line::Sent(v) => {
                    methods.insert(
                        v["id"].to_string(),
                        v["method"].as_str().unwrap().to_owned(),
                    );
                }
                Line::Received(v) if v["method"] == "session/update" => {
                    check::<SessionNotification>(name, &v["params"]);
                }
                Line::Received(v) if v.get("result").is_some() => {
                    answers += 1;
                    let result = &v["result"];
                    match methods[&v["id"].to_string()].as_str() {
                        "initialize" => check::<InitializeResponse>(name, result),
                        "session/new" => check::<NewSessionResponse>(name, result),
                        "session/fork" => check::<ForkSessionResponse>(name, result),
                        "session/prompt" => check::<PromptResponse>(name, result),
                        "session/list" => check::<ListSessionsResponse>(name, result),
                        other => panic!("{name}: an answer to {other}"),
                    }
                }
                Line::Received(v) => assert!(v.get("error").is_some(), "{name}: {v}"),
            }
        }
        assert!(answers >= 2, "{name}: {answers} answers");
    }
}
