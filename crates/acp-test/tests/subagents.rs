//! Subagents on the client side, against acp-test's scripted agent sending a child's traffic
//! the way claude-agent-acp 0.101 does: the children's updates (under their own session ids)
//! reach the application as their own streams and, with the parent's, in arrival order; a
//! tree of 3 levels, 20 children and 2 MB of child text is delivered whole to a reader that
//! keeps up, and to one that does not, every update is delivered or reported; subagents past
//! the limit are told in the parent's stream with their dropped updates counted.

use std::collections::HashMap;

use acp_runtime::Error;
use acp_runtime::client::{AgentHandle, AutoAllow, ClientOptions, Session, TreeUpdate};
use acp_test::{ChildStep, ScriptedAgent, Step, SubagentStep};
use acp_types::*;

/// The kind of an update, as on the wire.
fn kind(update: &SessionUpdate) -> String {
    let value = serde_json::to_value(update).unwrap();
    value["sessionUpdate"].as_str().unwrap_or("?").to_owned()
}

/// One line per item of a tree stream: the session (indented by depth), then the update.
fn line(item: &TreeUpdate) -> String {
    let depth = item.session.subagent().map_or(0, |s| s.depth);
    let what = match &item.update {
        Ok(update) => kind(update),
        Err(error) => format!("error: {error}"),
    };
    format!("{}{}: {what}", "  ".repeat(depth), item.session.id())
}

async fn opened(agent: ScriptedAgent, options: ClientOptions) -> (acp_test::Pair, Session) {
    let pair = acp_test::connect(agent, AutoAllow, options.with_subagents());
    pair.agent().initialize().await.unwrap();
    let session = pair.agent().new_session("/tmp").await.unwrap();
    (pair, session)
}

#[test]
fn a_claude_like_child_is_its_own_stream_in_order() {
    smol::block_on(async {
        let agent = ScriptedAgent::new().turn([
            Step::message("Delegating."),
            SubagentStep::claude_like("child-0", "Explore the repo", "Three crates.").into(),
            Step::message("Done."),
        ]);
        let (pair, session) = opened(agent, ClientOptions::default()).await;
        let mut turn = session.prompt(vec!["go".into()]).await.unwrap();
        let mut lines = Vec::new();
        while let Some(item) = turn.next_in_tree().await {
            lines.push(line(&item));
        }
        assert_eq!(
            turn.end().await.unwrap().stop_reason,
            StopReason::EndTurn,
            "{lines:#?}"
        );
        insta::assert_snapshot!(lines.join("\n"), @r"
        session-1: agent_message_chunk
        session-1: subagent_update
          child-0: agent_message_chunk
          child-0: session_message
          child-0: config_option_update
        session-1: subagent_update
        session-1: agent_message_chunk
        ");
        let child = &session.subagents()[0];
        assert_eq!(child.parent_id(), Some(session.id().clone()));
        let subagent = child.subagent().unwrap();
        assert_eq!(subagent.title.as_deref(), Some("Explore the repo"));
        assert!(matches!(subagent.state, Some(StateUpdate::Idle(_))));
        // The child's own options are tracked like any session's.
        assert_eq!(child.config_options().unwrap()[0].id.as_str(), "model");
        assert!(pair.agent().session(child.id()).is_some());
        // Its parent drives it: nothing is sent for it.
        let refused = child.prompt(vec!["hi".into()]).await.unwrap_err();
        assert!(
            matches!(&refused, Error::Invalid(m) if m.contains("subagent")),
            "{refused}"
        );
        let refused = child.cancel().await.unwrap_err();
        assert!(
            matches!(&refused, Error::Invalid(m) if m.contains("cancel")),
            "{refused}"
        );
        pair.finish().await;
    });
}

/// Three levels: 4 children, each with 2 children, each of those with 1: 20 subagents, each
/// sending `chunks` numbered chunks of `chunk` bytes (2 MB in all by default).
/// With `running`, no child is reported idle at its end (so none can be retired).
fn nested(chunks: usize, chunk: usize, running: bool) -> (ScriptedAgent, HashMap<String, usize>) {
    let mut sent = HashMap::new();
    let mut child = |id: String, inner: Vec<SubagentStep>| {
        let mut steps: Vec<ChildStep> = (0..chunks)
            .map(|n| ChildStep::message(format!("{n:08}{}", "x".repeat(chunk - 8))))
            .collect();
        // Each grandchild's announcement (and idle state) arrive on this child.
        let per_grandchild = if running { 1 } else { 2 };
        *sent.entry(id.clone()).or_default() += chunks + per_grandchild * inner.len();
        steps.extend(inner.into_iter().map(ChildStep::from));
        let step = SubagentStep::new(id.clone())
            .title(format!("Task {id}"))
            .then(steps);
        if running { step.left_running() } else { step }
    };
    let mut top = Vec::new();
    for a in 0..4 {
        let mut middle = Vec::new();
        for b in 0..2 {
            let leaf = child(format!("c{a}-{b}-0"), vec![]);
            middle.push(child(format!("c{a}-{b}"), vec![leaf]));
        }
        top.push(child(format!("c{a}"), middle));
    }
    let mut steps = vec![Step::message("Starting 20 subagents.")];
    steps.extend(top.into_iter().map(Step::from));
    steps.push(Step::message("All done."));
    (ScriptedAgent::new().turn(steps), sent)
}

/// What one session's stream held: updates, their text bytes, and what was reported dropped.
#[derive(Default, Debug)]
struct Seen {
    updates: usize,
    text: usize,
    dropped: u64,
    next_chunk: usize,
}

fn take(seen: &mut HashMap<String, Seen>, item: TreeUpdate) {
    let entry = seen.entry(item.session.id().to_string()).or_default();
    match item.update {
        Ok(SessionUpdate::AgentMessageChunk(chunk)) => {
            let text = chunk.content.as_text().unwrap().to_owned();
            if item.session.parent_id().is_some() {
                // In order: the numbers follow each other within a session (a drop skips).
                let n: usize = text[..8].parse().unwrap();
                assert!(n >= entry.next_chunk, "{n} after {}", entry.next_chunk);
                entry.next_chunk = n + 1;
            }
            entry.updates += 1;
            entry.text += text.len();
        }
        Ok(_) => entry.updates += 1,
        Err(Error::UpdatesDropped { updates, .. }) => entry.dropped += updates,
        Err(other) => panic!("{other}"),
    }
}

#[test]
fn three_levels_twenty_children_and_two_megabytes_are_all_delivered() {
    smol::block_on(async {
        let (agent, sent) = nested(10, 10_000, false);
        let (pair, session) = opened(agent, ClientOptions::default()).await;
        let mut turn = session.prompt(vec!["go".into()]).await.unwrap();
        let mut seen = HashMap::new();
        while let Some(item) = turn.next_in_tree().await {
            take(&mut seen, item);
        }
        turn.end().await.unwrap();
        assert_eq!(pair.agent().subagent_count(), 20);
        let mut text = 0;
        for (id, updates) in &sent {
            let got = &seen[id];
            assert_eq!((got.updates, got.dropped), (*updates, 0), "{id}");
            text += got.text;
        }
        assert_eq!(text, 20 * 10 * 10_000);
        let depths: Vec<usize> = session.subagents()[0].subagents()[0].subagents()[0]
            .subagent()
            .map(|s| vec![s.depth])
            .unwrap();
        assert_eq!(depths, [3]);
        assert!(pair.agent().take_dropped_updates().is_empty());
        pair.finish().await;
    });
}

/// A reader that takes only the parent's updates during the turn: the children's queues
/// fill their shared budget, and what they could not keep is reported in their streams.
#[test]
fn a_reader_that_falls_behind_gets_every_child_update_or_its_report() {
    smol::block_on(async {
        let (agent, sent) = nested(10, 10_000, false);
        let options = ClientOptions::default().with_subagent_update_budget(256 * 1024);
        let (pair, session) = opened(agent, options).await;
        let mut turn = session.prompt(vec!["go".into()]).await.unwrap();
        while let Some(item) = turn.next().await {
            item.unwrap();
        }
        turn.end().await.unwrap();
        assert!(pair.agent().buffered_subagent_bytes() <= 256 * 1024 + 20_000);
        let mut seen = HashMap::new();
        while let Some(item) = session.try_next_in_tree() {
            take(&mut seen, item);
        }
        let (mut delivered, mut dropped) = (0, 0);
        for (id, updates) in &sent {
            let got = seen
                .get(id.as_str())
                .map_or((0, 0), |s| (s.updates, s.dropped));
            assert_eq!(got.0 + got.1 as usize, *updates, "{id}");
            delivered += got.0;
            dropped += got.1;
        }
        assert!(dropped > 0 && delivered > 0, "{delivered} {dropped}");
        pair.finish().await;
    });
}

/// With room for 5 subagents (all still running), the other 15 (and the children of those)
/// are told in the parent's stream, with every one of their updates counted there.
#[test]
fn subagents_past_the_limit_are_told_with_their_updates() {
    smol::block_on(async {
        // Left running, no subagent can be retired to make room, however fast they are read.
        let (agent, sent) = nested(3, 100, true);
        let options = ClientOptions::default().with_max_subagents(5);
        let (pair, session) = opened(agent, options).await;
        let mut turn = session.prompt(vec!["go".into()]).await.unwrap();
        let mut delivered: HashMap<String, usize> = HashMap::new();
        let mut told: HashMap<String, u64> = HashMap::new();
        while let Some(item) = turn.next_in_tree().await {
            let id = item.session.id().to_string();
            match item.update {
                Ok(_) => *delivered.entry(id).or_default() += 1,
                Err(Error::SubagentNotFollowed {
                    session_id,
                    subagent,
                    limit,
                    updates,
                    ..
                }) => {
                    assert_eq!((limit, session_id.as_str()), (5, id.as_str()));
                    *told.entry(subagent).or_default() += updates;
                }
                Err(other) => panic!("{other}"),
            }
        }
        turn.end().await.unwrap();
        assert_eq!(pair.agent().subagent_count(), 5);
        // Drops are added to the entry that told the subagent while it waits, so whether a
        // notice with 0 updates is seen depends on timing; that every one is counted does not.
        assert!(!told.is_empty());
        for (id, updates) in &sent {
            let got = delivered.get(id).copied().unwrap_or(0)
                + told.get(id).copied().unwrap_or(0) as usize;
            assert_eq!(got, *updates, "{id}");
        }
        assert!(pair.agent().take_dropped_updates().is_empty());
        pair.finish().await;
    });
}

/// Closing the connection ends every child's stream once what waits is taken.
#[test]
fn children_streams_end_with_the_connection() {
    smol::block_on(async {
        let (agent, _) = nested(1, 100, false);
        let (pair, session) = opened(agent, ClientOptions::default()).await;
        session
            .prompt(vec!["go".into()])
            .await
            .unwrap()
            .end()
            .await
            .unwrap();
        let agent: AgentHandle = pair.agent().clone();
        let child = session.subagents()[0].clone();
        pair.finish().await;
        let mut left = 0;
        while child.next_update().await.is_some() {
            left += 1;
        }
        assert_eq!(left, 1 + 2 * 2);
        drop(agent);
    });
}

/// With room for 2 subagents, children that went idle and whose updates were all taken are
/// retired to make room for new ones (their streams end), and followed again, with what their
/// parent said of them, when they speak again.
#[test]
fn idle_subagents_make_room_and_come_back() {
    smol::block_on(async {
        let child = |id: &str, title: &str| Step::from(SubagentStep::claude_like(id, title, "ok"));
        let agent = ScriptedAgent::new()
            .turn([child("c0", "First"), child("c1", "Second")])
            .turn([child("c2", "Third"), child("c3", "Fourth")])
            .turn([Step::update_on(
                "c0",
                SessionUpdate::agent_message_chunk(ContentBlock::text("again")),
            )]);
        let options = ClientOptions::default().with_max_subagents(2);
        let (pair, session) = opened(agent, options).await;
        let mut turns = Vec::new();
        for _ in 0..3 {
            let mut turn = session.prompt(vec!["go".into()]).await.unwrap();
            let mut lines = Vec::new();
            while let Some(item) = turn.next_in_tree().await {
                assert!(item.update.is_ok(), "{:?}", item.update);
                if let Some(subagent) = item.session.subagent() {
                    lines.push(format!("{}: {:?}", item.session.id(), subagent.title));
                }
            }
            turn.end().await.unwrap();
            turns.push(lines);
            let ids: Vec<String> = session
                .subagents()
                .iter()
                .map(|s| s.id().to_string())
                .collect();
            assert_eq!(pair.agent().subagent_count(), ids.len().min(2), "{ids:?}");
        }
        assert_eq!(turns[1].len(), 6, "{:?}", turns[1]);
        assert_eq!(turns[2], [r#"c0: Some("First")"#]);
        let ids: Vec<String> = session
            .subagents()
            .iter()
            .map(|s| s.id().to_string())
            .collect();
        assert!(ids.contains(&"c0".to_owned()) && ids.len() == 2, "{ids:?}");
        pair.finish().await;
    });
}
