//! `spawn_agent`: a recorded connection to an agent process. The process is this crate's
//! `acp-test-agent`, which plays the agent side of a fixture on its stdio, so the client's
//! side here must follow the fixture; its exit status says whether it did.

mod scenarios;

use std::path::PathBuf;

use acp_runtime::process::AgentCommand;
use acp_test::{Normalizer, ScriptedClient, TempDir, Transcript};
use scenarios::Ctx;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/transcripts")
        .join(format!("{name}.jsonl"))
}

fn fake_agent(fixture_name: &str, dir: &TempDir) -> AgentCommand {
    AgentCommand::new(env!("CARGO_BIN_EXE_acp-test-agent"))
        .arg(fixture(fixture_name))
        .arg("--tmp")
        .arg(dir.path())
}

#[test]
fn a_client_drives_an_agent_process_through_a_fixture() {
    smol::block_on(async {
        let scenario = scenarios::terminal_scenario();
        let dir = TempDir::new();
        let client = (scenario.client)(dir.path());
        let pair = acp_test::spawn_agent(
            fake_agent(scenario.name, &dir),
            client.clone(),
            client.options(),
        )
        .unwrap()
        .with_normalizer(Normalizer::new().tool_call_ids(false))
        .with_temp_dir(&dir);
        let ctx = Ctx {
            agent: pair.agent().clone(),
            client,
            dir: dir.path().to_path_buf(),
        };
        (scenario.drive)(ctx).await;
        let (transcript, exit) = pair.finish_with_exit().await;
        let exit = exit.expect("a process");
        assert!(
            exit.status.success(),
            "the fake agent reported a difference: {}",
            exit.stderr_tail
        );
        // Recorded at the client's end of a pipe, the conversation is the fixture's.
        assert_eq!(
            transcript,
            Transcript::load(fixture(scenario.name)).unwrap()
        );
        acp_test::insta::assert_snapshot!(transcript.outline());
    });
}

#[test]
fn a_client_that_strays_from_the_fixture_gets_the_difference() {
    smol::block_on(async {
        let dir = TempDir::new();
        let client = ScriptedClient::new();
        let pair = acp_test::spawn_agent(
            fake_agent("prompt_chunks", &dir).arg("--timeout").arg("2"),
            client.clone(),
            client.options(),
        )
        .unwrap()
        .with_temp_dir(&dir);
        pair.agent().initialize().await.unwrap();
        let session = pair.agent().new_session(dir.path()).await.unwrap();
        // The fixture says "Hello".
        let error = session
            .prompt(vec!["Good morning".into()])
            .await
            .unwrap()
            .end()
            .await
            .unwrap_err();
        let (_, exit) = pair.finish_with_exit().await;
        let exit = exit.unwrap();
        assert_eq!(exit.status.code, Some(1));
        for expected in [
            "entry 5 differs from what the client sent",
            r#"-        "text": "Hello","#,
            r#"+        "text": "Good morning","#,
        ] {
            assert!(
                exit.stderr_tail.contains(expected),
                "{expected:?} not in:\n{}",
                exit.stderr_tail
            );
        }
        assert!(error.to_string().contains("the agent exited"), "{error}");
    });
}

/// `client::run_spawned` (the connection in an epoll loop on the calling thread) against a
/// real process: the fake agent exits 0 only if the conversation matched the fixture.
#[test]
fn run_spawned_drives_an_agent_process_on_the_calling_thread() {
    let scenario = scenarios::terminal_scenario();
    let dir = TempDir::new();
    let client = (scenario.client)(dir.path());
    let options = client.options();
    let ctx_dir = dir.path().to_path_buf();
    let client_for_ctx = client.clone();
    let ((), exit) = acp_runtime::client::run_spawned(
        client,
        fake_agent(scenario.name, &dir),
        options,
        move |agent| async move {
            let ctx = Ctx {
                agent,
                client: client_for_ctx,
                dir: ctx_dir,
            };
            (scenario.drive)(ctx).await;
            Ok(())
        },
    )
    .unwrap();
    assert!(
        exit.status.success(),
        "the fake agent reported a difference: {}",
        exit.stderr_tail
    );
}

/// A crashed agent under `run_spawned`: the call fails with its status and stderr.
#[test]
fn run_spawned_reports_a_crashed_agent() {
    let command = AgentCommand::new("sh").args(["-c", "echo 'fatal: no key' >&2; exit 3"]);
    let client = ScriptedClient::new();
    let options = client.options();
    let error = acp_runtime::client::run_spawned(client, command, options, |agent| async move {
        agent.initialize().await
    })
    .unwrap_err();
    let acp_runtime::Error::AgentExited {
        status,
        stderr_tail,
    } = error
    else {
        panic!("{error:?}");
    };
    assert_eq!(status.code, Some(3), "{status}");
    assert!(stderr_tail.contains("fatal: no key"), "{stderr_tail}");
}

#[test]
fn bad_arguments_exit_with_2_and_help_with_0() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_acp-test-agent"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let transcript = fixture("prompt_chunks");
    let transcript = transcript.to_str().unwrap();
    for args in [
        &[][..],
        &[transcript, "--timeout", "soon"],
        &[transcript, "--timeout", "-1"],
        &[transcript, "--tmp"],
        &[transcript, "--no-such-flag"],
        &["/nonexistent/transcript.jsonl"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let help = run(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["--tmp", "--unordered", "--timeout"] {
        assert!(help.contains(flag), "{help}");
    }
}
