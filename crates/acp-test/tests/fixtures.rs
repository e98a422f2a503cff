//! The scenario transcripts under `fixtures/transcripts/`, replayed against this runtime in
//! both directions: the kit plays the client against the scripted agent served by
//! `acp_runtime::agent::serve`, and plays the agent against `acp_runtime::client::connect`
//! with the scripted client and the scenario's drive.
//!
//! To record the fixtures again (after a deliberate change of the runtime's wire behaviour),
//! run `cargo test -p acp-rs-test --test fixtures -- --ignored regenerate_fixtures` and review the
//! diff of `fixtures/transcripts/`.

mod scenarios;

use std::path::PathBuf;

use acp_test::{Normalizer, Replay, TempDir, Transcript};
use scenarios::{Ctx, Scenario};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/transcripts")
        .join(format!("{name}.jsonl"))
}

async fn record(scenario: &Scenario) -> Transcript {
    let dir = TempDir::new();
    let agent = (scenario.agent)(dir.path());
    let client = (scenario.client)(dir.path());
    // The scripted agents' tool call ids are deterministic: the fixtures keep them readable
    // (`call_1`). Replays normalize them anyway, so an agent with other ids still matches.
    let pair = acp_test::connect_scripted(agent, &client)
        .with_normalizer(Normalizer::new().tool_call_ids(false))
        .with_temp_dir(&dir);
    let ctx = Ctx {
        agent: pair.agent().clone(),
        client,
        dir: dir.path().to_path_buf(),
    };
    (scenario.drive)(ctx).await;
    pair.finish().await
}

fn against_our_agent(scenario: Scenario) {
    let dir = TempDir::new();
    let replay = Replay::load(fixture(scenario.name)).unwrap().temp_dir(&dir);
    let agent = (scenario.agent)(dir.path());
    smol::block_on(replay.against_agent(agent)).unwrap();
}

fn against_our_client(scenario: Scenario) {
    let dir = TempDir::new();
    let mut replay = Replay::load(fixture(scenario.name)).unwrap().temp_dir(&dir);
    if scenario.client_order_varies {
        replay = replay.unordered();
    }
    let client = (scenario.client)(dir.path());
    let options = client.options();
    let drive = scenario.drive;
    let path = dir.path().to_path_buf();
    let scripted = client.clone();
    smol::block_on(replay.against_client(client, options, move |agent| {
        drive(Ctx {
            agent,
            client: scripted,
            dir: path,
        })
    }))
    .unwrap();
}

macro_rules! fixtures {
    ($($name:ident => $scenario:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn replayed_against_our_agent() {
                    super::against_our_agent(super::scenarios::$scenario());
                }

                #[test]
                fn replayed_against_our_client() {
                    super::against_our_client(super::scenarios::$scenario());
                }
            }
        )*

        const ALL: &[fn() -> Scenario] = &[$(scenarios::$scenario),*];
    };
}

fixtures! {
    initialize => initialize_scenario,
    version_negotiation => version_negotiation_scenario,
    session_new_and_load => session_new_and_load_scenario,
    prompt_chunks => prompt_chunks_scenario,
    plan => plan_scenario,
    tool_call_permission => tool_call_permission_scenario,
    diff => diff_scenario,
    terminal => terminal_scenario,
    cancel_pending_permission => cancel_pending_permission_scenario,
    session_modes => session_modes_scenario,
    config_options => config_options_scenario,
    slash_commands => slash_commands_scenario,
    errors => errors_scenario,
}

/// Every fixture file has a scenario (and so two tests), and every scenario a fixture.
#[test]
fn every_fixture_is_replayed() {
    let dir = fixture("x").parent().unwrap().to_path_buf();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".jsonl"))
        .collect();
    files.sort();
    let mut names: Vec<String> = ALL.iter().map(|s| format!("{}.jsonl", s().name)).collect();
    names.sort();
    assert_eq!(files, names);
}

/// Records every scenario into its fixture. Run it after a deliberate change of the wire
/// behaviour, then review the diff (see the top of this file).
#[test]
#[ignore = "writes fixtures/transcripts/; run on purpose"]
fn regenerate_fixtures() {
    for scenario in ALL {
        let scenario = scenario();
        let transcript = smol::block_on(record(&scenario));
        transcript.save(fixture(scenario.name)).unwrap();
    }
}
