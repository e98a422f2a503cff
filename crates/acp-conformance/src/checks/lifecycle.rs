//! Session lifecycle methods an agent may advertise: `session/list`, `session/resume`,
//! `session/close`, `session/delete`, and `logout`. Each check is skipped unless the agent
//! advertises the capability.

use std::path::Path;

use serde_json::{Value, json};

use super::{Ctx, describe, no_moment};
use crate::client::Caps;
use crate::report::Verdict;
use crate::turn::{Action, Trigger};
use crate::wire::{Call, Conn, Event, is_turn_content, received, received_lines};

/// A directory no session is created in, for a `session/list` filter that matches nothing.
const NO_SUCH_CWD: &str = "/nonexistent/acp-conformance/no-sessions-here";

/// `Ok` when the capability at `pointer` of `agentCapabilities` is advertised (present and not
/// `null`), or the verdict that skips the check, naming it in dotted form.
fn advertised(ctx: &mut Ctx<'_>, pointer: &str) -> Result<(), Verdict> {
    let name = pointer.trim_start_matches('/').replace('/', ".");
    match ctx.agent_cap(pointer) {
        Value::Null => Err(Verdict::skipped(format!("`{name}` is not advertised"))),
        _ => Ok(()),
    }
}

/// The failure for a call that got no result, or the result.
fn result_of<'c>(
    ctx: &mut Ctx<'_>,
    call: &'c Call,
    conn: &Conn,
    what: &str,
) -> Result<&'c Value, Verdict> {
    match &call.response {
        Some(Ok(result)) => Ok(result),
        Some(Err(e)) if e.code == Some(-32000) => Err(ctx.auth_required()),
        other => {
            let mut evidence = call.evidence();
            evidence.extend(conn.exit_evidence());
            Err(Verdict::fail(
                format!(
                    "{what} was not answered with a result: {}",
                    describe(other, conn)
                ),
                evidence,
            ))
        }
    }
}

/// Passes when `call` of `method` got a result that is an object.
fn object_result(ctx: &mut Ctx<'_>, call: &Call, conn: &Conn, method: &str, what: &str) -> Verdict {
    match result_of(ctx, call, conn, what) {
        Ok(result) if result.is_object() => Verdict::Pass,
        Ok(_) => Verdict::fail(
            format!("the `{method}` result is not an object"),
            call.evidence(),
        ),
        Err(v) => v,
    }
}

/// What is wrong with a `session/list` result, if anything; else its sessions.
fn listed_sessions(result: &Value) -> Result<Vec<(String, String)>, String> {
    let Some(sessions) = result.get("sessions").and_then(Value::as_array) else {
        return Err("the result has no `sessions` array".to_owned());
    };
    if let Some(cursor) = result.get("nextCursor")
        && !cursor.is_null()
        && !cursor.is_string()
    {
        return Err(format!("`nextCursor` is not a string: {cursor}"));
    }
    let mut listed = Vec::new();
    for info in sessions {
        let id = info.get("sessionId").and_then(Value::as_str);
        let cwd = info.get("cwd").and_then(Value::as_str);
        match (id, cwd) {
            (Some(id), Some(cwd)) if Path::new(cwd).is_absolute() => {
                listed.push((id.to_owned(), cwd.to_owned()))
            }
            (Some(_), Some(_)) => {
                return Err(format!("a listed session's `cwd` is not absolute: {info}"));
            }
            _ => {
                return Err(format!(
                    "a listed session lacks a `sessionId` or `cwd` string: {info}"
                ));
            }
        }
    }
    Ok(listed)
}

/// `session/list` with `params`: its sessions, or the verdict.
fn list(
    ctx: &mut Ctx<'_>,
    conn: &mut Conn,
    params: Value,
    evidence: &mut Vec<String>,
) -> Result<Vec<(String, String)>, Verdict> {
    let call = conn.call("session/list", params, ctx.opts.timeout);
    evidence.extend(call.evidence());
    let result =
        result_of(ctx, &call, conn, "`session/list`").map_err(|v| with_evidence(v, evidence))?;
    listed_sessions(result)
        .map_err(|why| Verdict::fail(format!("`session/list`: {why}"), evidence.clone()))
}

/// A failure with `evidence` in front of its own.
fn with_evidence(verdict: Verdict, evidence: &[String]) -> Verdict {
    match verdict {
        Verdict::Fail {
            reason,
            evidence: own,
        } => {
            let mut all = evidence.to_vec();
            all.extend(own.into_iter().filter(|l| !evidence.contains(l)));
            Verdict::Fail {
                reason,
                evidence: all,
            }
        }
        other => other,
    }
}

pub(super) fn list_sessions(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = advertised(ctx, "/sessionCapabilities/list") {
        return v;
    }
    let (mut conn, _session) = match ctx.connect_with_session("session.list", Caps::ALL) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let mut evidence = Vec::new();
    if let Err(v) = list(ctx, &mut conn, json!({}), &mut evidence) {
        return v;
    }
    let cwd = ctx.cwd();
    let matching = match list(ctx, &mut conn, json!({ "cwd": cwd }), &mut evidence) {
        Ok(s) => s,
        Err(v) => return v,
    };
    if let Some((id, other)) = matching.iter().find(|(_, c)| *c != cwd) {
        return Verdict::fail(
            format!(
                "`session/list` filtered by `cwd` {cwd} listed session `{id}` of `cwd` {other}"
            ),
            evidence,
        );
    }
    match list(ctx, &mut conn, json!({ "cwd": NO_SUCH_CWD }), &mut evidence) {
        Ok(none) if none.is_empty() => Verdict::Pass,
        Ok(some) => Verdict::fail(
            format!(
                "`session/list` filtered by a `cwd` no session has listed {} session(s) instead of an empty array",
                some.len()
            ),
            evidence,
        ),
        Err(v) => v,
    }
}

pub(super) fn resume(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = advertised(ctx, "/sessionCapabilities/resume") {
        return v;
    }
    let (mut conn, session) = match ctx.connect_with_session("session.resume", Caps::ALL) {
        Ok(x) => x,
        Err(v) => return v,
    };
    // A turn gives the session a history that must not be replayed.
    let turn = ctx.text_turn(&mut conn, &session, Trigger::Never, Action::SessionCancel);
    let mut evidence = Vec::new();
    if !turn.completed() {
        evidence.push(format!(
            "(the turn before it ended with {})",
            turn.outcome()
        ));
    }
    let params = json!({ "sessionId": session, "cwd": ctx.cwd(), "mcpServers": [] });
    // In the same process first; an agent that cannot resume a session active on this
    // connection gets a second chance in a fresh process, as after an editor restart.
    let mut call = conn.call("session/resume", params.clone(), ctx.opts.turn_timeout);
    evidence.extend(call.evidence());
    let mut resumed_on = conn;
    if !matches!(call.response, Some(Ok(_))) {
        drop(resumed_on);
        resumed_on = match ctx.connect("session.resume (fresh process)", Caps::ALL) {
            Ok(c) => c,
            Err(v) => return v,
        };
        call = resumed_on.call("session/resume", params, ctx.opts.turn_timeout);
        evidence.push("(then, in a fresh agent process:)".to_owned());
        evidence.extend(call.evidence());
    }
    let result = match result_of(
        ctx,
        &call,
        &resumed_on,
        "`session/resume` of a session that just had a turn",
    ) {
        Ok(r) => r,
        Err(v) => return with_evidence(v, &evidence),
    };
    if !result.is_object() {
        return Verdict::fail("the `session/resume` result is not an object", evidence);
    }
    let replayed = received_lines(
        call.events
            .iter()
            .filter(|e| {
                e.session_update()
                    .is_some_and(|(s, kind)| s == session && is_turn_content(kind))
            })
            .filter_map(|e| e.raw()),
    );
    if replayed.is_empty() {
        return Verdict::Pass;
    }
    evidence.extend(replayed);
    Verdict::fail(
        "the agent replayed conversation history before answering `session/resume`",
        evidence,
    )
}

pub(super) fn close(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = advertised(ctx, "/sessionCapabilities/close") {
        return v;
    }
    let (mut conn, session) = match ctx.connect_with_session("session.close", Caps::ALL) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let call = conn.call(
        "session/close",
        json!({ "sessionId": session }),
        ctx.opts.timeout,
    );
    object_result(
        ctx,
        &call,
        &conn,
        "session/close",
        "`session/close` of an active session",
    )
}

pub(super) fn delete(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = advertised(ctx, "/sessionCapabilities/delete") {
        return v;
    }
    let (mut conn, session) = match ctx.connect_with_session("session.delete", Caps::ALL) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let call = conn.call(
        "session/delete",
        json!({ "sessionId": session }),
        ctx.opts.timeout,
    );
    let mut evidence = call.evidence();
    match &call.response {
        Some(Ok(_)) => {}
        Some(Err(e)) if e.code == Some(-32000) => return ctx.auth_required(),
        Some(Err(e)) => {
            return Verdict::inconclusive(format!(
                "deleting the session just created was refused with {e}; deleting an active session is implementation-defined"
            ));
        }
        None => {
            evidence.extend(conn.exit_evidence());
            return Verdict::fail(
                format!(
                    "`session/delete` was not answered: {}",
                    describe(&None, &conn)
                ),
                evidence,
            );
        }
    }
    if ctx.agent_cap("/sessionCapabilities/list").is_null() {
        return Verdict::Pass;
    }
    match list(ctx, &mut conn, json!({}), &mut evidence) {
        Ok(listed) if listed.iter().any(|(id, _)| *id == session) => Verdict::fail(
            format!("session `{session}` was deleted, yet `session/list` still lists it"),
            evidence,
        ),
        Ok(_) => Verdict::Pass,
        Err(v) => v,
    }
}

pub(super) fn delete_unknown(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = advertised(ctx, "/sessionCapabilities/delete") {
        return v;
    }
    let mut conn = match ctx.connect("session.delete.unknown", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let call = conn.call(
        "session/delete",
        json!({ "sessionId": "conformance-no-such-session" }),
        ctx.opts.timeout,
    );
    match result_of(
        ctx,
        &call,
        &conn,
        "`session/delete` of a session that never existed",
    ) {
        Ok(_) => Verdict::Pass,
        Err(v) => v,
    }
}

pub(super) fn logout(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = advertised(ctx, "/auth/logout") {
        return v;
    }
    let mut conn = match ctx.connect("auth.logout", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let call = conn.call("logout", json!({}), ctx.opts.timeout);
    object_result(ctx, &call, &conn, "logout", "`logout`")
}

pub(super) fn close_cancels(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = advertised(ctx, "/sessionCapabilities/close") {
        return v;
    }
    let (mut conn, session) = match ctx.connect_with_session("session.close.cancels", Caps::ALL) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let turn = ctx.text_turn(
        &mut conn,
        &session,
        Trigger::FirstActivity,
        Action::CloseSession,
    );
    if let Some(v) = no_moment(&turn, "close the session") {
        return v;
    }
    let mut evidence = turn.evidence();
    // Whether `session/close` was answered before the prompt: then the agent handled it
    // before it ended the turn.
    let close_first = turn.acted_id.as_ref().is_some_and(|acted| {
        turn.before
            .iter()
            .any(|e| matches!(e, Event::Response { id, .. } if id == acted))
    });
    let mut close = turn
        .acted_response()
        .map(|(result, raw)| (result.clone(), raw.to_owned()));
    if close.is_none() && turn.response.is_some() {
        let acted = turn.acted_id.clone();
        close = conn
            .listen(ctx.opts.timeout)
            .into_iter()
            .find_map(|e| match e {
                Event::Response {
                    id, result, raw, ..
                } if Some(&id) == acted.as_ref() => Some((result, raw)),
                _ => None,
            });
    }
    // The answer to `session/close` in its place: before the prompt's response, or after it.
    let at = match turn.response_raw.as_deref() {
        Some(raw) if close_first => evidence
            .iter()
            .position(|l| *l == received(raw))
            .unwrap_or(evidence.len()),
        _ => evidence.len(),
    };
    match &close {
        Some((_, raw)) => evidence.insert(at, received(raw)),
        None => evidence.push("(no response to `session/close`)".to_owned()),
    }
    let proof = turn.witnessed || close_first;
    match (&turn.response, &close) {
        (Some(Err(e)), _) if e.code == Some(-32000) => ctx.auth_required(),
        (None, _) => Verdict::fail(
            format!(
                "after `session/close` the turn never ended ({})",
                turn.outcome()
            ),
            evidence,
        ),
        (_, None) => Verdict::fail("`session/close` was never answered", evidence),
        (_, Some((Err(e), _))) => Verdict::fail(
            format!("`session/close` of the session with a running turn was refused with {e}"),
            evidence,
        ),
        (Some(Ok(_)), _) if turn.stop_reason() == Some("cancelled") => Verdict::Pass,
        (Some(Ok(_)), _) if proof => Verdict::fail(
            format!(
                "the turn of the closed session ended with {} instead of `cancelled` (the agent had handled `session/close` first)",
                turn.outcome()
            ),
            evidence,
        ),
        (Some(Ok(_)), _) => Verdict::inconclusive(format!(
            "the turn ended with {}, perhaps before `session/close` reached the agent; a --prompt that keeps the agent busy longer would tell",
            turn.outcome()
        )),
        (Some(Err(e)), _) if proof || ctx.basic_turn_completed() => Verdict::fail(
            format!(
                "the turn of the closed session was answered with {e} instead of stop reason `cancelled`"
            ),
            evidence,
        ),
        (Some(Err(e)), _) => Verdict::inconclusive(format!(
            "the turn failed with {e}, and so does an ordinary turn; no telling whether closing caused it"
        )),
    }
}
