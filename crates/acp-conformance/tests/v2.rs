//! Protocol v2 (`--protocol 2`): every v2 check passes against the reference agent (its v2
//! side on acp-runtime, through the version router: `--router`) and against `broken-agent-v2`
//! without a bug; each bug of `broken-agent-v2` fails the checks about the rule it breaks.

#![cfg(feature = "unstable-protocol-v2")]

mod common;
// The bug table's pieces, shared by broken.rs and v2.rs only: outside `common`, which every
// test file compiles.
#[path = "common/bugs.rs"]
mod bugs;

use acp_conformance::{Protocol, Report, Verdict, checks_for, run};
use bugs::{assert_every_bug_is_tested, assert_every_check_is_failed, assert_report_fails, bugs};
use common::{REFERENCE, not_passed};

const BROKEN_V2: &str = env!("CARGO_BIN_EXE_broken-agent-v2");

fn check_v2(command: &[&str], only: &[&str]) -> Report {
    let mut options = common::options(command, only);
    options.protocol = Protocol::V2;
    run(&options).expect("the agent starts")
}

#[test]
fn every_v2_check_passes_against_the_broken_agent_without_a_bug() {
    let report = check_v2(&[BROKEN_V2], &[]);
    assert_eq!(report.results.len(), checks_for(Protocol::V2).len());
    assert!(not_passed(&report).is_empty(), "{:#?}", not_passed(&report));
    assert_eq!(report.agent.name.as_deref(), Some("broken-agent-v2"));
    assert_eq!(report.agent.protocol_version, Some(2.into()));
}

#[test]
fn every_v2_check_passes_against_the_reference_agent_but_the_refusal_it_has_no_reason_for() {
    let report = check_v2(&[REFERENCE, "--router"], &[]);
    let not_passed = not_passed(&report);
    // It serves v1 too (the router), so no version is below the ones it supports.
    assert_eq!(not_passed.len(), 1, "{not_passed:#?}");
    assert!(matches!(
        &report.get("v2.init.unsupported").unwrap().verdict,
        Verdict::Skipped { reason } if reason.contains("serves version 1 too")
    ));
}

#[test]
fn through_the_router_the_v1_checks_pass_but_a_v1_initialize_asking_above_2() {
    let report = common::check(&[REFERENCE, "--router"], &[]);
    let not_passed = not_passed(&report);
    assert_eq!(not_passed.len(), 1, "{not_passed:#?}");
    // The router takes every request for 2 or above to the v2 side, which refuses v1's
    // params (no `info`): what upstream's router rules prescribe, at odds with v1's rule that
    // an agent answers its latest version to any version it does not support.
    match &report.get("init.version.future").unwrap().verdict {
        Verdict::Fail { reason, .. } => assert!(reason.contains("-32602"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// Runs `fails` and `context` against `broken-agent-v2` with `bug`: every check in `fails`
/// must fail, every one in `context` pass.
fn assert_fails(bug: &str, fails: &[&str], context: &[&str]) {
    let only: Vec<&str> = fails.iter().chain(context).copied().collect();
    let report = check_v2(&[BROKEN_V2, "--bug", bug], &only);
    assert_report_fails(&report, bug, fails, context);
}

bugs! {
    v1_shapes: "v1-shapes" fails ["v2.init.version"];
    echo_version: "echo-version" fails ["v2.init.version.future"] given ["v2.init.version"];
    above_request: "above-request" fails ["v2.init.unsupported"] given ["v2.init.version"];
    unsupported_without_data: "unsupported-without-data" fails ["v2.init.unsupported"];
    null_id_served: "null-id-served" fails ["v2.rpc.null_id"] given ["v2.rpc.response_ids"];
    no_session_list: "no-session-list" fails ["v2.session.baseline"];
    no_echo: "no-echo" fails ["v2.prompt.lifecycle"] given ["v2.updates.upsert"];
    no_running: "no-running" fails ["v2.prompt.lifecycle"];
    retry_runs_again: "retry-runs-again" fails ["v2.prompt.idempotency"] given ["v2.prompt.lifecycle"];
    cancel_ignored: "cancel-ignored" fails ["v2.prompt.cancel"] given ["v2.prompt.lifecycle"];
    status_null: "status-null" fails ["v2.updates.upsert"] given ["v2.prompt.lifecycle", "v2.schema.agent_messages"];
    terminal_lossy: "terminal-lossy" fails ["v2.updates.terminal_output"] given ["v2.schema.agent_messages"];
    terminal_base64_split: "terminal-base64-split" fails ["v2.updates.terminal_output"];
    replay_after_answer: "replay-after-answer" fails ["v2.session.resume.replay", "v2.session.resume.state"];
    replay_new_ids: "replay-new-ids" fails ["v2.session.resume.replay"] given ["v2.session.resume.state"];
    replay_without_cursor: "replay-without-cursor" fails ["v2.session.resume.replay"] given ["v2.session.resume.state"];
    resume_no_state: "resume-no-state" fails ["v2.session.resume.state"] given ["v2.session.resume.replay"];
    duplicate_response: "duplicate-response" fails ["v2.rpc.response_ids"] given ["v2.session.baseline"];
    bad_update: "bad-update" fails ["v2.schema.agent_messages"] given ["v2.session.baseline"];
    stdout_log: "stdout-log" fails ["v2.transport.stdout_clean"] given ["v2.init.version"];
}

#[test]
fn every_v2_check_is_failed_by_some_bug() {
    assert_every_check_is_failed(&checks_for(Protocol::V2), TABLE);
}

#[test]
fn every_bug_of_the_broken_v2_agent_is_tested() {
    assert_every_bug_is_tested(BROKEN_V2, TABLE.iter().map(|(bug, _)| *bug));
}

#[test]
fn a_v1_only_agent_is_told_apart_from_a_broken_v2_one() {
    // The v1 broken agent answers version 1 to a request for 2, as v1 allows: it does not
    // speak v2, which is no failure of a v2 rule. Only the checks of everything it sent judge
    // it (and it keeps those rules).
    let report = check_v2(&[common::BROKEN], &[]);
    for result in &report.results {
        let expected = if result.id.starts_with("v2.rpc.response_ids")
            || result.id.starts_with("v2.schema")
            || result.id.starts_with("v2.transport")
        {
            matches!(result.verdict, Verdict::Pass)
        } else {
            matches!(&result.verdict, Verdict::Skipped { reason } if reason.contains("does not speak v2"))
        };
        assert!(expected, "{}: {:?}", result.id, result.verdict);
    }
}
