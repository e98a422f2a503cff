//! Answers without an `id` (error objects an agent writes in reply to a notification or to a
//! line it could not parse) are not valid JSON-RPC messages, but they are answers: the checks
//! about answering notifications, `$/cancel_request`, parse errors and `session/cancel` see
//! them, and say what is wrong with them. (Before, they counted only as stray output for
//! `transport.stdout_clean`: the first two checks passed, `rpc.parse_error` reported no
//! answer at all, and `prompt.cancel` was inconclusive.)

mod common;

use acp_conformance::{Report, Verdict};
use common::{BROKEN, check};

/// The reason and evidence of a failed check.
fn failure<'a>(report: &'a Report, id: &str) -> (&'a str, &'a [String]) {
    let result = report.get(id).unwrap_or_else(|| panic!("{id} did not run"));
    match &result.verdict {
        Verdict::Fail { reason, evidence } => (reason, evidence),
        other => panic!("{id} should fail, got {other:?}"),
    }
}

fn mentions_idless(evidence: &[String]) -> bool {
    evidence
        .iter()
        .any(|l| l.starts_with("< ") && l.contains("a response without `id`"))
}

#[test]
fn idless_answers_to_notifications_are_answers() {
    let report = check(
        &[BROKEN, "--bug", "notification-reply-idless"],
        &["rpc.notifications_unanswered", "rpc.cancel_request"],
    );
    let (reason, evidence) = failure(&report, "rpc.notifications_unanswered");
    assert_eq!(reason, "the agent answered notifications");
    assert!(mentions_idless(evidence), "{evidence:#?}");
    let (reason, evidence) = failure(&report, "rpc.cancel_request");
    assert!(reason.contains("`$/cancel_request` notification was answered"));
    assert!(mentions_idless(evidence), "{evidence:#?}");
}

#[test]
fn an_idless_parse_error_is_an_answer_without_the_null_id() {
    let report = check(
        &[BROKEN, "--bug", "parse-error-idless"],
        &["rpc.parse_error"],
    );
    let (reason, evidence) = failure(&report, "rpc.parse_error");
    assert!(!reason.contains("no error answer"), "{reason}");
    assert!(reason.contains("-32700"), "{reason}");
    assert!(reason.contains("without `id`"), "{reason}");
    assert!(mentions_idless(evidence), "{evidence:#?}");
}

#[test]
fn refusing_session_cancel_fails_the_cancelled_turn() {
    let report = check(&[BROKEN, "--bug", "cancel-refused"], &["prompt.cancel"]);
    let (reason, evidence) = failure(&report, "prompt.cancel");
    assert!(
        reason.contains("answered the `session/cancel` notification"),
        "{reason}"
    );
    assert!(
        reason.contains("\"end_turn\" instead of `cancelled`"),
        "{reason}"
    );
    // The refusal is shown before the prompt's response: it proves the agent read the
    // cancellation before it ended the turn.
    let refusal = evidence
        .iter()
        .position(|l| l.contains("this turn cannot be cancelled"))
        .expect("the refusal in the evidence");
    let response = evidence
        .iter()
        .position(|l| l.contains("\"stopReason\":\"end_turn\""))
        .expect("the response in the evidence");
    assert!(refusal < response, "{evidence:#?}");
}
