//! Every check can fail: each bug of the broken agent breaks one rule, and the checks about
//! that rule (and only those, among the ones run) must fail.

mod common;
// The bug table's pieces, shared by broken.rs and v2.rs only: outside `common`, which every
// test file compiles.
#[path = "common/bugs.rs"]
mod bugs;

use acp_conformance::checks;
use bugs::{assert_every_bug_is_tested, assert_every_check_is_failed, assert_report_fails, bugs};
use common::{BROKEN, check};

/// Runs `fails` and `context` against the broken agent with `bug`: every check in `fails`
/// must fail, every one in `context` (run for the traffic the aggregate checks judge) pass.
fn assert_fails(bug: &str, fails: &[&str], context: &[&str]) {
    let only: Vec<&str> = fails.iter().chain(context).copied().collect();
    let report = check(&[BROKEN, "--bug", bug], &only);
    assert_report_fails(&report, bug, fails, context);
}

/// The misbehaviours that attack the checker itself, tested in tests/hostile.rs.
const HOSTILE: &[&str] = &[
    "flood-garbage",
    "flood-long-line",
    "flood-notifications",
    "flood-requests-deaf",
    "silent",
    "deaf",
];

bugs! {
    init_error: "init-error" fails ["init.response"];
    old_version: "old-version" fails ["init.version.same"];
    echo_version: "echo-version" fails ["init.version.future"];
    bad_caps: "bad-caps" fails ["init.capabilities"];
    no_agent_info: "no-agent-info" fails ["init.agent_info"];
    session_new_error: "session-new-error" fails ["session.new"];
    same_session_id: "same-session-id" fails ["session.new.unique_ids"];
    accept_relative_cwd: "accept-relative-cwd" fails ["session.new.relative_cwd"];
    unknown_session_accepted: "unknown-session-accepted" fails ["session.unknown_id"];
    no_replay: "no-replay" fails ["session.load.replay"];
    replay_after_load: "replay-after-load" fails ["session.load.replay"];
    bad_current_mode: "bad-current-mode" fails ["session.modes.consistent"];
    set_mode_fails: "set-mode-fails" fails ["session.modes.set"];
    accept_unknown_mode: "accept-unknown-mode" fails ["session.modes.unknown"];
    bad_config: "bad-config" fails ["session.config.consistent"];
    boolean_config: "boolean-config" fails ["session.config.boolean_gated"];
    set_config_fails: "set-config-fails" fails ["session.config.set"];
    list_ignores_cwd: "list-ignores-cwd" fails ["session.list"];
    resume_replays: "resume-replays" fails ["session.resume"];
    close_fails: "close-fails" fails ["session.close", "session.close.cancels"];
    close_keeps_turn: "close-keeps-turn" fails ["session.close.cancels"] given ["session.close"];
    delete_keeps_listing: "delete-keeps-listing" fails ["session.delete"] given ["session.delete.unknown"];
    delete_unknown_error: "delete-unknown-error" fails ["session.delete.unknown"] given ["session.delete"];
    logout_fails: "logout-fails" fails ["auth.logout"];
    bad_stop_reason: "bad-stop-reason" fails ["prompt.stop_reason"];
    late_update: "late-update" fails ["prompt.updates_before_response"];
    cancel_error: "cancel-error" fails ["prompt.cancel", "prompt.cancel.permission"];
    cancel_ignored: "cancel-ignored" fails ["prompt.cancel", "prompt.cancel.permission"];
    cancel_refused: "cancel-refused" fails ["prompt.cancel"] given ["prompt.stop_reason", "rpc.notifications_unanswered"];
    ignore_caps: "ignore-caps" fails ["caps.client_methods"];
    elicit_unadvertised: "elicit-unadvertised" fails ["caps.elicitation"] given ["prompt.stop_reason"];
    reject_resource_link: "reject-resource-link" fails ["caps.prompt.baseline"];
    reject_images: "reject-images" fails ["caps.prompt.image"];
    reject_audio: "reject-audio" fails ["caps.prompt.audio"];
    reject_resource: "reject-resource" fails ["caps.prompt.embedded_context"];
    wrong_unknown_code: "wrong-unknown-code" fails ["rpc.method_not_found"];
    ext_method_result: "ext-method-result" fails ["rpc.ext_method_not_found"] given ["rpc.method_not_found"];
    notification_reply: "notification-reply" fails ["rpc.notifications_unanswered", "rpc.cancel_request", "rpc.response_ids"];
    notification_reply_idless: "notification-reply-idless" fails ["rpc.notifications_unanswered", "rpc.cancel_request", "transport.stdout_clean"] given ["rpc.response_ids"];
    crash_on_ext_notification: "crash-on-ext-notification" fails ["rpc.ext_notification_ignored"];
    no_parse_error: "no-parse-error" fails ["rpc.parse_error"] given ["rpc.invalid_request"];
    parse_error_idless: "parse-error-idless" fails ["rpc.parse_error"] given ["rpc.invalid_request"];
    crash_on_malformed: "crash-on-malformed" fails ["rpc.parse_error"];
    invalid_request_silent: "invalid-request-silent" fails ["rpc.invalid_request"] given ["rpc.parse_error"];
    invalid_params_accepted: "invalid-params-accepted" fails ["rpc.invalid_params"];
    system_prompt_any_mode: "system-prompt-any-mode" fails ["session.system_prompt.mode"] given ["session.system_prompt.append"];
    system_prompt_refused: "system-prompt-refused" fails ["session.system_prompt.append"];
    plan_update_unadvertised: "plan-update-unadvertised" fails ["caps.plan_and_subagents"] given ["prompt.stop_reason"];
    reply_stray_response: "reply-stray-response" fails ["rpc.stray_response"];
    cancel_request_unanswered: "cancel-request-unanswered" fails ["rpc.cancel_request"];
    no_exit: "no-exit" fails ["transport.exit_on_eof"];
    duplicate_response: "duplicate-response" fails ["rpc.response_ids"] given ["session.new"];
    bad_update: "bad-update" fails ["schema.agent_messages"] given ["session.new"];
    stdout_log: "stdout-log" fails ["transport.stdout_clean"] given ["init.response"];
}

#[test]
fn every_check_is_failed_by_some_bug() {
    assert_every_check_is_failed(&checks(), TABLE);
}

#[test]
fn every_bug_of_the_broken_agent_is_tested() {
    let tested = TABLE
        .iter()
        .map(|(bug, _)| *bug)
        .chain(HOSTILE.iter().copied());
    assert_every_bug_is_tested(BROKEN, tested);
}
