//! JSON-RPC behaviour: error codes, notifications, malformed input, `$/cancel_request`, ids.

use serde_json::{Value, json};

use super::{Ctx, describe, no_moment};
use crate::client::Caps;
use crate::report::Verdict;
use crate::turn::{Action, Trigger};
use crate::wire::{Conn, Event, Events, received, sent};

/// A request no agent implements, used to see that the agent still answers.
const BARRIER: &str = "conformance/barrier";

fn unknown_method(ctx: &mut Ctx<'_>, label: &str, method: &str) -> Verdict {
    let mut conn = match ctx.connect(label, Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let call = conn.call(method, json!({}), ctx.opts.timeout);
    let mut evidence = call.evidence();
    match &call.response {
        Some(Err(e)) if e.code == Some(-32601) => Verdict::Pass,
        Some(Err(e)) => Verdict::fail(
            format!("`{method}` was answered with {e}, not -32601 (Method not found)"),
            evidence,
        ),
        Some(Ok(_)) => Verdict::fail(
            format!("`{method}`, which no specification defines, was answered with a result"),
            evidence,
        ),
        None => {
            evidence.extend(conn.exit_evidence());
            Verdict::fail(
                format!("`{method}` was not answered: {}", describe(&None, &conn)),
                evidence,
            )
        }
    }
}

pub(super) fn method_not_found(ctx: &mut Ctx<'_>) -> Verdict {
    unknown_method(ctx, "rpc.method_not_found", "conformance/no_such_method")
}

pub(super) fn ext_method_not_found(ctx: &mut Ctx<'_>) -> Verdict {
    unknown_method(
        ctx,
        "rpc.ext_method_not_found",
        "_conformance/no_such_method",
    )
}

/// Responses among `events` whose ids the checker never sent, and response-shaped lines
/// without an id: they can only answer one of its notifications (or one of its responses).
pub(super) fn foreign_responses(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Response {
                raw, ours: false, ..
            } => Some(received(raw)),
            Event::Idless { raw, .. } => Some(idless_evidence(raw)),
            _ => None,
        })
        .collect()
}

/// Evidence of a response-shaped line without `id`.
pub(super) fn idless_evidence(raw: &str) -> String {
    format!(
        "{} (a response without `id`: not a valid JSON-RPC message)",
        received(raw)
    )
}

/// What sending notifications showed, shared by two checks.
#[derive(Clone, Debug)]
pub(crate) struct NotificationRun {
    sent: Vec<String>,
    /// Responses that can only answer one of the notifications.
    answers: Vec<String>,
    /// Whether the agent still served a request after the extension notification, and if
    /// not, why.
    served_after_ext: Result<(), String>,
    exit: Vec<String>,
}

fn notification_run(ctx: &mut Ctx<'_>) -> Result<NotificationRun, Verdict> {
    if let Some(run) = &ctx.notifications {
        return run.clone();
    }
    let run = run_notifications(ctx);
    ctx.notifications = Some(run.clone());
    run
}

fn run_notifications(ctx: &mut Ctx<'_>) -> Result<NotificationRun, Verdict> {
    let mut conn = ctx.connect("rpc.notifications", Caps::ALL)?;
    let session = ctx.open_session(&mut conn).ok();
    let mut sent_lines = Vec::new();
    let mut events = Events::default();

    sent_lines.push(conn.notify(
        "_conformance/notice",
        json!({ "note": "an extension notification nobody defines" }),
    ));
    let served_after_ext = if session.is_some() {
        let call = ctx.new_session_call(&mut conn);
        events.extend(call.events.iter().cloned());
        match &call.response {
            Some(Ok(_)) => Ok(()),
            other => Err(format!(
                "`session/new` after it: {}",
                describe(other, &conn)
            )),
        }
    } else {
        let call = conn.call(BARRIER, json!({}), ctx.opts.timeout);
        events.extend(call.events.iter().cloned());
        match &call.response {
            Some(_) => Ok(()),
            None => Err(format!("a request after it: {}", describe(&None, &conn))),
        }
    };

    sent_lines.push(conn.notify("conformance/unknown_notice", json!({})));
    let idle = session.unwrap_or_else(|| "conformance-idle-session".to_owned());
    sent_lines.push(conn.notify("session/cancel", json!({ "sessionId": idle })));
    let call = conn.call(BARRIER, json!({}), ctx.opts.timeout);
    events.extend(call.events.iter().cloned());
    events.extend(conn.listen(conn.grace));
    Ok(NotificationRun {
        sent: sent_lines.iter().map(|l| sent(l)).collect(),
        answers: foreign_responses(&events),
        served_after_ext,
        exit: conn.exit_evidence(),
    })
}

pub(super) fn notifications_unanswered(ctx: &mut Ctx<'_>) -> Verdict {
    let run = match notification_run(ctx) {
        Ok(r) => r,
        Err(v) => return v,
    };
    if run.answers.is_empty() {
        Verdict::Pass
    } else {
        let mut evidence = run.sent;
        evidence.extend(run.answers);
        Verdict::fail("the agent answered notifications", evidence)
    }
}

pub(super) fn ext_notification_ignored(ctx: &mut Ctx<'_>) -> Verdict {
    let run = match notification_run(ctx) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match run.served_after_ext {
        Ok(()) => Verdict::Pass,
        Err(why) => {
            let mut evidence = vec![run.sent[0].clone()];
            evidence.extend(run.exit);
            Verdict::fail(
                format!(
                    "after an unknown extension notification the agent stopped serving ({why})"
                ),
                evidence,
            )
        }
    }
}

/// Sends an invalid line and judges the answer: an error with `want_code` and id `null` or
/// `reply_id`, and the agent still serving afterwards.
fn invalid_line(
    ctx: &mut Ctx<'_>,
    label: &str,
    line: &str,
    reply_id: Option<Value>,
    want_code: i64,
) -> Verdict {
    let mut conn = match ctx.connect(label, Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    conn.send_invalid(line, reply_id.clone());
    let barrier = conn.call(BARRIER, json!({}), ctx.opts.timeout);
    let mut events = barrier.events.clone();
    events.extend(conn.listen(conn.grace));
    // (whether the answer has no `id` at all, the answer, the line)
    let replies: Vec<(bool, &Result<Value, crate::client::RpcError>, &str)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Response {
                id, result, raw, ..
            } if id.is_null() || reply_id.as_ref() == Some(id) => {
                Some((false, result, raw.as_str()))
            }
            Event::Idless { result, raw } => Some((true, result, raw.as_str())),
            _ => None,
        })
        .collect();
    let mut evidence = vec![sent(line)];
    evidence.extend(replies.iter().map(|(idless, _, raw)| {
        if *idless {
            idless_evidence(raw)
        } else {
            received(raw)
        }
    }));
    if barrier.response.is_none() {
        evidence.extend(conn.exit_evidence());
        return Verdict::fail(
            format!(
                "the agent stopped serving after the invalid line ({})",
                describe(&None, &conn)
            ),
            evidence,
        );
    }
    match replies.first() {
        None => Verdict::fail(
            format!("the invalid line got no error answer (want {want_code})"),
            evidence,
        ),
        Some((false, Err(e), _)) if e.code == Some(want_code) => Verdict::Pass,
        Some((true, Err(e), _)) if e.code == Some(want_code) => Verdict::fail(
            format!(
                "the invalid line was answered with {e}, but in an error object without `id`: JSON-RPC 2.0 requires the member, `null` when the request's id cannot be read"
            ),
            evidence,
        ),
        Some((true, Err(e), _)) => Verdict::fail(
            format!(
                "the invalid line was answered with {e}, not {want_code}, in an error object without `id` (JSON-RPC 2.0 requires the member, `null` when the request's id cannot be read)"
            ),
            evidence,
        ),
        Some((false, Err(e), _)) => Verdict::fail(
            format!("the invalid line was answered with {e}, not {want_code}"),
            evidence,
        ),
        Some((_, Ok(_), _)) => {
            Verdict::fail("the invalid line was answered with a result", evidence)
        }
    }
}

pub(super) fn parse_error(ctx: &mut Ctx<'_>) -> Verdict {
    invalid_line(
        ctx,
        "rpc.parse_error",
        r#"{"jsonrpc":"2.0","id":"conformance-parse","method":"session/new","params":{"cwd":"#,
        None,
        -32700,
    )
}

pub(super) fn invalid_request(ctx: &mut Ctx<'_>) -> Verdict {
    invalid_line(
        ctx,
        "rpc.invalid_request",
        r#"{"jsonrpc":"2.0","id":"conformance-invalid","params":{}}"#,
        Some(Value::from("conformance-invalid")),
        -32600,
    )
}

pub(super) fn invalid_params(ctx: &mut Ctx<'_>) -> Verdict {
    let mut conn = match ctx.connect("rpc.invalid_params", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let call = conn.call(
        "session/new",
        json!({ "cwd": 42, "mcpServers": "none" }),
        ctx.opts.timeout,
    );
    let mut evidence = call.evidence();
    let verdict = match &call.response {
        Some(Err(e)) if e.code == Some(-32602) => Verdict::Pass,
        Some(Err(e)) if e.code == Some(-32000) => return ctx.auth_required(),
        Some(Err(e)) => {
            return Verdict::fail(
                format!("params of the wrong shape were answered with {e}, not -32602"),
                evidence,
            );
        }
        Some(Ok(_)) => {
            return Verdict::fail("params of the wrong shape were accepted", evidence);
        }
        None => {
            evidence.extend(conn.exit_evidence());
            return Verdict::fail(
                format!(
                    "params of the wrong shape got no answer ({})",
                    describe(&None, &conn)
                ),
                evidence,
            );
        }
    };
    still_serving(ctx, &mut conn, evidence).unwrap_or(verdict)
}

/// `Some(failure)` when the agent no longer answers a request.
fn still_serving(ctx: &Ctx<'_>, conn: &mut Conn, mut evidence: Vec<String>) -> Option<Verdict> {
    let barrier = conn.call(BARRIER, json!({}), ctx.opts.timeout);
    if barrier.response.is_some() {
        return None;
    }
    evidence.extend(barrier.evidence());
    evidence.extend(conn.exit_evidence());
    Some(Verdict::fail(
        format!("the agent stopped serving ({})", describe(&None, conn)),
        evidence,
    ))
}

pub(super) fn stray_response(ctx: &mut Ctx<'_>) -> Verdict {
    let mut conn = match ctx.connect("rpc.stray_response", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let line = r#"{"jsonrpc":"2.0","id":"conformance-stray","result":{}}"#;
    conn.send_line(line);
    let barrier = conn.call(BARRIER, json!({}), ctx.opts.timeout);
    let mut events = barrier.events.clone();
    events.extend(conn.listen(conn.grace));
    let answers = foreign_responses(&events);
    let mut evidence = vec![sent(line)];
    if !answers.is_empty() {
        evidence.extend(answers);
        return Verdict::fail("the agent answered a response", evidence);
    }
    if barrier.response.is_none() {
        evidence.extend(barrier.evidence());
        evidence.extend(conn.exit_evidence());
        return Verdict::fail(
            format!(
                "the agent stopped serving after a response it did not ask for ({})",
                describe(&None, &conn)
            ),
            evidence,
        );
    }
    Verdict::Pass
}

pub(super) fn cancel_request(ctx: &mut Ctx<'_>) -> Verdict {
    let (mut conn, session) = match ctx.connect_with_session("rpc.cancel_request", Caps::ALL) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let turn = ctx.text_turn(
        &mut conn,
        &session,
        Trigger::FirstActivity,
        Action::CancelRequest,
    );
    if let Some(v) = no_moment(&turn, "cancel it") {
        return v;
    }
    let answers: Vec<String> = turn
        .before
        .iter()
        .chain(&turn.after)
        .filter_map(|e| match e {
            Event::Response {
                id,
                raw,
                ours: false,
                ..
            } if id.is_null() => Some(received(raw)),
            Event::Idless { raw, .. } => Some(idless_evidence(raw)),
            _ => None,
        })
        .collect();
    if !answers.is_empty() {
        let mut evidence = turn.evidence();
        evidence.extend(answers);
        return Verdict::fail("the `$/cancel_request` notification was answered", evidence);
    }
    match &turn.response {
        None => {
            let mut evidence = turn.evidence();
            evidence.extend(conn.exit_evidence());
            Verdict::fail(
                format!(
                    "the cancelled request was never answered ({})",
                    turn.outcome()
                ),
                evidence,
            )
        }
        Some(Ok(_)) => Verdict::Pass,
        Some(Err(e)) if e.code == Some(-32800) => Verdict::Pass,
        Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
        Some(Err(e)) if turn.witnessed || ctx.basic_turn_completed() => Verdict::fail(
            format!(
                "the cancelled request was answered with {e}, which is neither a result nor -32800"
            ),
            turn.evidence(),
        ),
        Some(Err(e)) => Verdict::inconclusive(format!(
            "the turn failed with {e}, and so does an ordinary turn"
        )),
    }
}

pub(super) fn response_ids(ctx: &mut Ctx<'_>) -> Verdict {
    let logs = ctx.logs();
    let total: usize = logs.iter().map(|log| log.unsolicited.total).sum();
    if total == 0 {
        return Verdict::Pass;
    }
    let evidence: Vec<String> = logs
        .iter()
        .flat_map(|log| {
            log.unsolicited
                .evidence()
                .map(move |line| format!("[{}] {line}", log.label))
        })
        .collect();
    Verdict::fail(
        format!("{total} response(s) matched no request of the client"),
        evidence,
    )
}
