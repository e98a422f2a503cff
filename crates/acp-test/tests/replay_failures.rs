//! What a failed replay reports: the diff, the order hint, extra messages, silence.

use std::path::PathBuf;
use std::time::Duration;

use acp_test::{Direction, Entry, Replay, ScriptedAgent, Step, Transcript};
use serde_json::json;

fn prompt_chunks() -> Transcript {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/transcripts/prompt_chunks.jsonl");
    Transcript::load(path).unwrap()
}

fn agent(chunks: [&str; 3]) -> ScriptedAgent {
    ScriptedAgent::new().turn([
        Step::thought("The user greets me; a short answer will do."),
        Step::message(chunks[0]),
        Step::message(chunks[1]),
        Step::message(chunks[2]),
    ])
}

const CHUNKS: [&str; 3] = ["Hello", "! How can", " I help?"];

#[test]
fn the_fixture_passes_as_recorded() {
    let actual = smol::block_on(Replay::new(prompt_chunks()).against_agent(agent(CHUNKS))).unwrap();
    assert_eq!(actual, prompt_chunks());
}

#[test]
fn a_different_message_fails_with_a_diff() {
    let replay = Replay::new(prompt_chunks());
    let error = smol::block_on(replay.against_agent(agent(["Hello", "! How can", " we help?"])))
        .unwrap_err();
    acp_test::insta::assert_snapshot!(error.report());
}

#[test]
fn another_order_fails_with_a_hint_unless_unordered() {
    let swapped = ["! How can", "Hello", " I help?"];
    let error =
        smol::block_on(Replay::new(prompt_chunks()).against_agent(agent(swapped))).unwrap_err();
    assert!(
        error
            .report()
            .contains("The message matches entry 8 further on: the order differs."),
        "{error}"
    );
    smol::block_on(
        Replay::new(prompt_chunks())
            .unordered()
            .against_agent(agent(swapped)),
    )
    .unwrap();
}

#[test]
fn a_message_after_the_end_fails() {
    let mut shorter: Vec<Entry> = prompt_chunks().into_iter().collect();
    shorter.pop(); // the prompt's response
    let replay = Replay::new(shorter.into_iter().collect());
    let error = smol::block_on(replay.against_agent(agent(CHUNKS))).unwrap_err();
    assert!(
        error
            .report()
            .contains("the agent sent a message after the end of the transcript"),
        "{error}"
    );
    assert!(
        error.report().contains(r#""stopReason": "end_turn""#),
        "{error}"
    );
}

#[test]
fn silence_fails_after_the_timeout() {
    let mut longer = prompt_chunks();
    longer.push(Entry::new(
        Direction::AgentToClient,
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "<session:1>",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Bye"}}}}),
    ));
    let replay = Replay::new(longer).timeout(Duration::from_millis(200));
    let error = smol::block_on(replay.against_agent(agent(CHUNKS))).unwrap_err();
    assert!(
        error
            .report()
            .contains("nothing from the agent within 200ms; entry 11 was expected"),
        "{error}"
    );
}

#[test]
fn a_client_replay_names_the_client() {
    let replay = Replay::new(prompt_chunks());
    let client = acp_test::ScriptedClient::new();
    let options = client.options();
    let error = smol::block_on(replay.against_client(client, options, |agent| async move {
        agent.initialize().await.unwrap();
        // The transcript opens a session next; this client prompts nowhere instead.
        let _ = agent.logout().await;
    }))
    .unwrap_err();
    assert!(
        error.report().contains("the kit plays the agent"),
        "{error}"
    );
}
