//! How `acp` shows subagents, end to end: the `acp` binary against acp-test's scripted agent
//! (served in this process) starting nested subagents the way claude-agent-acp 0.101 does,
//! their updates under their own session ids. Each subagent's lines start with its title,
//! indented by depth, also when two stream at once; `--json` names every update's session
//! (and a subagent's parent); subagents past the limit, updates for sessions nobody opened or
//! announced, and those the runtime dropped are printed. The renderings are pinned with insta.
#![cfg(unix)]

mod common;

use std::process::Output;

use acp_test::{ChildStep, ScriptedAgent, Step, SubagentStep};
use acp_types::*;
use common::server::acp_against;
use common::text;
use serde_json::{Value, json};

/// `text` with the byte counts of drop reports as `N`: an update's cost includes the size of
/// the runtime's own value, which the `unstable` feature changes.
fn without_sizes(text: &str) -> String {
    let mut out = String::new();
    for (n, piece) in text.split(" bytes)").enumerate() {
        if n > 0 {
            out.push_str(" bytes)");
        }
        match piece.rfind('(') {
            Some(at)
                if piece[at + 1..].chars().all(|c| c.is_ascii_digit()) && at + 1 < piece.len() =>
            {
                out.push_str(&piece[..=at]);
                out.push('N');
            }
            _ => out.push_str(piece),
        }
    }
    out
}

fn stdout_of(out: &Output) -> String {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    stdout
}

/// A parent that starts a researcher (which starts a searcher of its own) and a claude-like
/// reviewer: three levels, as claude-agent-acp sends them.
fn nested() -> ScriptedAgent {
    let searcher = SubagentStep::claude_like("grandchild-1", "Search the web", "Two hits.");
    let researcher = SubagentStep::new("child-1")
        .title("Research the limits")
        .then([
            ChildStep::message("Reading docs/limits.md.\nIt has a table."),
            ChildStep::Update(SessionUpdate::ToolCall(
                ToolCall::new("read-1", "Read docs/limits.md")
                    .with_kind(ToolKind::Read)
                    .with_status(ToolCallStatus::Completed),
            )),
            searcher.into(),
            ChildStep::message("Done reading."),
        ]);
    let reviewer = SubagentStep::claude_like("child-2", "Review the diff", "Looks fine.");
    ScriptedAgent::new().turn([
        Step::message("I will ask two subagents."),
        researcher.into(),
        reviewer.into(),
        Step::message("Both are done."),
    ])
}

#[test]
fn nested_subagents_are_shown_under_their_parent_with_their_title() {
    let stdout = stdout_of(&acp_against(nested(), &[]));
    insta::assert_snapshot!(stdout);
}

/// Two subagents streaming at once: every line says whose it is.
#[test]
fn two_subagents_streaming_at_once_can_be_told_apart() {
    let chunk = |session: &str, text: &str| {
        Step::update_on(
            session,
            SessionUpdate::agent_message_chunk(ContentBlock::text(text)),
        )
    };
    let announce = |id: &str, title: &str| {
        Step::update(SessionUpdate::SubagentUpdate(
            SubagentUpdate::new(id)
                .with_title(title)
                .with_state(StateUpdate::Running(RunningStateUpdate::new())),
        ))
    };
    let agent = ScriptedAgent::new().turn([
        announce("a", "Frontend"),
        announce("b", "Backend"),
        chunk("a", "Looking at "),
        chunk("b", "Checking the "),
        chunk("a", "the components.\nFound 3."),
        chunk("b", "routes."),
        Step::message("Waiting for both."),
        chunk("a", " Done."),
    ]);
    let stdout = stdout_of(&acp_against(agent, &[]));
    insta::assert_snapshot!(stdout);
}

/// `--json`: each line is the update with its session id, a subagent's with its parent.
#[test]
fn json_names_the_session_of_every_update() {
    let out = acp_against(nested(), &["--json"]);
    let lines: Vec<Value> = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let sessions: Vec<String> = lines
        .iter()
        .filter(|v| v.get("stopReason").is_none())
        .map(|v| {
            let parent = v.get("parentSessionId").and_then(Value::as_str);
            let kind = v["update"]["sessionUpdate"].as_str().unwrap();
            match parent {
                Some(parent) => {
                    format!("{} (of {parent}): {kind}", v["sessionId"].as_str().unwrap())
                }
                None => format!("{}: {kind}", v["sessionId"].as_str().unwrap()),
            }
        })
        .collect();
    insta::assert_snapshot!(sessions.join("\n"));
    let chunk = lines
        .iter()
        .find(|v| v["sessionId"] == "grandchild-1")
        .unwrap();
    assert_eq!(
        chunk,
        &json!({"sessionId": "grandchild-1", "parentSessionId": "child-1",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Two hits."}}})
    );
}

/// 66 subagents still running: acp follows 64; the other two are printed as not followed,
/// with the count of their updates that were dropped (their states, on the parent, are shown
/// as any subagent's).
#[test]
fn subagents_past_the_limit_are_printed() {
    // Left running: an idle subagent whose updates were all shown would be retired to make
    // room, and the 65th followed.
    let children = (0..66).map(|n| {
        Step::from(
            SubagentStep::claude_like(format!("child-{n:02}"), format!("Task {n}"), "ok")
                .left_running(),
        )
    });
    let stdout = stdout_of(&acp_against(ScriptedAgent::new().turn(children), &[]));
    let told: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("[subagent not followed]"))
        .collect();
    // Drops are added to the last line about the subagent while acp has not printed it yet,
    // so how they split over lines depends on timing; the sums do not.
    let mut counted = std::collections::BTreeMap::<String, u64>::new();
    for line in &told {
        let subagent = line.split('`').nth(1).unwrap().to_owned();
        let count = line.split_once("): ").map_or(0, |(_, tail)| {
            tail.split(' ').next().unwrap().parse().unwrap()
        });
        *counted.entry(subagent).or_default() += count;
    }
    assert_eq!(
        counted.into_iter().collect::<Vec<_>>(),
        [("child-64".into(), 3), ("child-65".into(), 3)]
    );
    let notice = told[0]
        .split_once("): ")
        .map_or(told[0].to_owned(), |(head, _)| format!("{head})"));
    insta::assert_snapshot!(notice);
    assert!(stdout.contains("  [Task 63] ok"), "{stdout}");
    assert!(!stdout.contains("  [Task 64] ok"), "{stdout}");
}

/// Updates for 20 session ids nobody opened or announced: the runtime keeps those of 16 ids
/// (in case a session opens), which acp shows under their id (it opens no other session),
/// and drops those of the other 4, whose reports acp prints.
#[test]
fn updates_dropped_for_unknown_sessions_are_printed() {
    let steps: Vec<Step> = (0..20)
        .map(|n| {
            Step::update_on(
                format!("made-up-{n:02}"),
                SessionUpdate::agent_message_chunk(ContentBlock::text("lost")),
            )
        })
        .chain([Step::message("Done.")])
        .collect();
    let stdout = stdout_of(&acp_against(ScriptedAgent::new().turn(steps), &[]));
    insta::assert_snapshot!(without_sizes(&stdout));
    let json = stdout_of(&acp_against(
        ScriptedAgent::new().turn((0..20).map(|n| {
            Step::update_on(
                format!("made-up-{n:02}"),
                SessionUpdate::agent_message_chunk(ContentBlock::text("lost")),
            )
        })),
        &["--json"],
    ));
    let reports: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("error").is_some())
        .collect();
    assert_eq!(reports.len(), 4, "{json}");
    assert_eq!(reports[0]["error"]["kind"], "updates_dropped");
    assert_eq!(reports[0]["error"]["sessionId"], "made-up-16");
    assert_eq!(reports[0]["error"]["reason"], "unopened_ids");
}
