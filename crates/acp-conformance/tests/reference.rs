//! Every check passes against agents that keep the rules: the reference agent (built on
//! acp-runtime) and the broken agent with no bug selected (raw stdio).

mod common;

use acp_conformance::checks;
use common::{BROKEN, REFERENCE, check, not_passed};

#[test]
fn every_check_passes_against_the_reference_agent() {
    let report = check(&[REFERENCE], &[]);
    assert_eq!(report.results.len(), checks().len());
    assert!(not_passed(&report).is_empty(), "{:#?}", not_passed(&report));
    assert_eq!(
        report.agent.name.as_deref(),
        Some("conformance-reference-agent")
    );
    assert_eq!(report.summary().must_failed, 0);
}

#[test]
fn every_check_passes_against_the_broken_agent_without_a_bug() {
    let report = check(&[BROKEN], &[]);
    assert_eq!(report.results.len(), checks().len());
    assert!(not_passed(&report).is_empty(), "{:#?}", not_passed(&report));
}

#[test]
fn an_agent_that_needs_authentication_is_reported_as_such() {
    let report = check(
        &[BROKEN, "--require-auth"],
        &["session", "prompt.stop_reason"],
    );
    assert!(report.agent.auth_required);
    assert_eq!(report.agent.auth_methods, ["token"]);
    for result in &report.results {
        match &result.verdict {
            acp_conformance::Verdict::Inconclusive { reason } => {
                assert!(reason.contains("--auth METHOD"), "{}: {reason}", result.id)
            }
            other => panic!("{}: {other:?}", result.id),
        }
    }
    assert!(
        report
            .render(false)
            .contains("REQUIRED; rerun with --auth METHOD (advertised: token)")
    );
}

#[test]
fn with_auth_the_checks_run_after_authenticate() {
    let mut options = common::options(&[BROKEN, "--require-auth"], &[]);
    options.auth = Some("token".to_owned());
    let report = acp_conformance::run(&options).unwrap();
    assert!(not_passed(&report).is_empty(), "{:#?}", not_passed(&report));
    assert!(!report.agent.auth_required);
}
