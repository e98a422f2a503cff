//! v2's session methods: the baseline every agent with `capabilities.session` serves, and
//! `session/resume` with and without replay.

use serde_json::{Value, json};

use super::super::{Ctx, describe};
use super::{Turn, Until, kind, session, state, text_turn, updates};
use crate::client::RpcError;
use crate::report::Verdict;
use crate::wire::{Call, Conn, Event, Events, received_lines};

/// Update kinds that are the conversation: what a replay replays, and what must not come
/// after it.
fn is_history(kind: &str) -> bool {
    matches!(
        kind,
        "user_message_chunk"
            | "user_message"
            | "agent_message_chunk"
            | "agent_message"
            | "agent_thought_chunk"
            | "agent_thought"
            | "tool_call_update"
            | "tool_call_content_chunk"
            | "terminal_update"
            | "terminal_output_chunk"
            | "plan_update"
            | "plan_removed"
    )
}

/// `result` described for a reason: `-32601` is named for what it means here.
fn refusal(method: &str, call: &Call, conn: &Conn) -> Option<String> {
    match &call.response {
        Some(Ok(result)) if result.is_object() => None,
        Some(Err(e)) if e.code == Some(-32601) => {
            Some(format!("`{method}` is not implemented ({e})"))
        }
        other => Some(format!(
            "`{method}` did not succeed: {}",
            describe(other, conn)
        )),
    }
}

pub(in crate::checks) fn baseline(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(verdict) = super::init::speaks_v2(ctx) {
        return verdict;
    }
    let advertised = ctx
        .handshake()
        .result()
        .and_then(|r| r.get("capabilities"))
        .and_then(|c| c.get("session"))
        .is_some_and(Value::is_object);
    if !advertised {
        return Verdict::skipped("the agent does not advertise `capabilities.session`");
    }
    let (mut conn, session) = match session(ctx, "v2.session.baseline") {
        Ok(connected) => connected,
        Err(verdict) => return verdict,
    };
    let mut problems = Vec::new();
    let mut evidence = Vec::new();
    let turn = text_turn(ctx, &mut conn, &session, None, Until::Idle);
    match &turn.response {
        Some(Ok(_)) if turn.message_id().is_some() => {}
        Some(Err(e)) if e.code == Some(-32601) => {
            problems.push(format!("`session/prompt` is not implemented ({e})"));
        }
        Some(Err(e)) if e.code == Some(-32000) => return ctx.auth_required(),
        _ => problems.push("`session/prompt` was not answered with a messageId".to_owned()),
    }
    evidence.extend(turn.evidence().into_iter().take(2));
    let timeout = ctx.opts.timeout;
    let cwd = ctx.cwd();
    let list = conn.call("session/list", json!({}), timeout);
    let listed = list
        .response
        .as_ref()
        .and_then(|r| r.as_ref().ok())
        .and_then(|r| r.get("sessions"))
        .is_some_and(Value::is_array);
    match refusal("session/list", &list, &conn) {
        Some(problem) => problems.push(problem),
        None if !listed => problems.push("`session/list` answered no `sessions` array".into()),
        None => {}
    }
    evidence.extend(list.evidence());
    let resume = conn.call(
        "session/resume",
        json!({ "sessionId": session, "cwd": cwd }),
        ctx.opts.turn_timeout,
    );
    problems.extend(refusal("session/resume", &resume, &conn));
    evidence.extend(resume.evidence());
    let cancel = conn.notify("session/cancel", json!({ "sessionId": session }));
    evidence.push(crate::wire::sent(&cancel));
    let close = conn.call("session/close", json!({ "sessionId": session }), timeout);
    problems.extend(refusal("session/close", &close, &conn));
    evidence.extend(close.evidence());
    if problems.is_empty() {
        return Verdict::Pass;
    }
    problems.extend(evidence);
    Verdict::fail(
        "the agent advertises `capabilities.session` but does not serve every baseline method",
        problems,
    )
}

/// The resume scenario both resume checks judge, run once: a session with one turn, resumed
/// with `replayFrom: {type: start}`, then without `replayFrom`.
#[derive(Clone, Debug)]
pub(in crate::checks) struct ResumeRun {
    session: String,
    turn: Turn,
    /// The resume with replay.
    replay: Resumed,
    /// The resume without replay.
    plain: Resumed,
}

/// One `session/resume`.
#[derive(Clone, Debug)]
struct Resumed {
    /// Evidence of the request and its answer.
    call: Vec<String>,
    response: Option<Result<Value, RpcError>>,
    /// What came before the answer.
    before: Events,
    /// What came during the grace period after it.
    after: Events,
}

fn resume_run(ctx: &mut Ctx<'_>) -> Result<ResumeRun, Verdict> {
    if let Some(cached) = &ctx.v2_resume {
        return cached.clone();
    }
    let run = run_resume(ctx);
    ctx.v2_resume = Some(run.clone());
    run
}

fn run_resume(ctx: &mut Ctx<'_>) -> Result<ResumeRun, Verdict> {
    let (mut conn, session) = session(ctx, "v2.session.resume")?;
    let turn = text_turn(ctx, &mut conn, &session, None, Until::Idle);
    if !turn.completed() {
        return Err(super::ordinary_failed(&turn));
    }
    let (cwd, timeout) = (ctx.cwd(), ctx.opts.turn_timeout);
    let mut resume = |params: Value| {
        let call = conn.call("session/resume", params, timeout);
        let after = conn.listen(conn.grace);
        Resumed {
            call: call.evidence(),
            response: call.response.clone(),
            before: call.events,
            after,
        }
    };
    let replay = resume(json!({
        "sessionId": session,
        "cwd": cwd,
        "replayFrom": { "type": "start" },
    }));
    let plain = resume(json!({ "sessionId": session, "cwd": cwd }));
    Ok(ResumeRun {
        session,
        turn,
        replay,
        plain,
    })
}

/// The evidence of one resume: the request, what came before the answer, the answer.
fn resume_evidence(resumed: &Resumed) -> Vec<String> {
    let mut evidence = resumed.call[..1].to_vec();
    evidence.extend(received_lines(resumed.before.iter().filter_map(Event::raw)));
    evidence.extend(resumed.call[1..].iter().cloned());
    evidence.extend(
        received_lines(resumed.after.iter().filter_map(Event::raw))
            .into_iter()
            .map(|l| format!("{l} (after the answer)")),
    );
    evidence
}

pub(in crate::checks) fn replay(ctx: &mut Ctx<'_>) -> Verdict {
    let run = match resume_run(ctx) {
        Ok(run) => run,
        Err(verdict) => return verdict,
    };
    let session = run.session.as_str();
    let mut problems = Vec::new();
    let Resumed {
        response,
        before,
        after,
        ..
    } = &run.replay;
    match response {
        Some(Ok(result)) if result.is_object() => {}
        Some(Err(e)) if e.code == Some(-32601) => {
            return Verdict::skipped(format!("`session/resume` is not implemented ({e})"));
        }
        other => problems.push(format!(
            "`session/resume` with `replayFrom: start` did not succeed: {}",
            match other {
                Some(Ok(r)) => format!("result {r}"),
                Some(Err(e)) => e.to_string(),
                None => "no answer".to_owned(),
            }
        )),
    }
    let before: Vec<&Value> = updates(before, session).collect();
    let completes: Vec<usize> = (0..before.len())
        .filter(|&i| kind(before[i]) == "replay_complete")
        .collect();
    match completes.as_slice() {
        [] => problems.push("no `replay_complete` before the answer".to_owned()),
        [at] => {
            if before[at + 1..].iter().any(|u| is_history(kind(u))) {
                problems.push("replayed history came after `replay_complete`".to_owned());
            }
        }
        more => problems.push(format!(
            "`replay_complete` came {} times for one request",
            more.len()
        )),
    }
    let late: Vec<&str> = updates(after, session)
        .map(kind)
        .filter(|k| is_history(k) || *k == "replay_complete")
        .collect();
    if !late.is_empty() {
        problems.push(format!(
            "after the answer came {late:?}: a replay ends before it"
        ));
    }
    if let Some(original) = run.turn.message_id() {
        let replayed_users: Vec<&str> = before
            .iter()
            .filter(|u| matches!(kind(u), "user_message" | "user_message_chunk"))
            .filter_map(|u| u.get("messageId").and_then(Value::as_str))
            .collect();
        if !replayed_users.is_empty() && !replayed_users.contains(&original) {
            problems.push(format!(
                "the user message accepted as `{original}` was replayed as {replayed_users:?}"
            ));
        }
    }
    let replayed_anyway: Vec<&str> = updates(&run.plain.before, session)
        .chain(updates(&run.plain.after, session))
        .map(kind)
        .filter(|k| is_history(k) || *k == "replay_complete")
        .collect();
    if !replayed_anyway.is_empty() {
        problems.push(format!(
            "`session/resume` without `replayFrom` sent {replayed_anyway:?}: no replay, and no `replay_complete`, is due"
        ));
    }
    if problems.is_empty() {
        return Verdict::Pass;
    }
    problems.push("(with replayFrom: start)".to_owned());
    problems.extend(resume_evidence(&run.replay));
    problems.push("(without replayFrom)".to_owned());
    problems.extend(resume_evidence(&run.plain));
    Verdict::fail("`session/resume` does not replay as v2 says", problems)
}

pub(in crate::checks) fn resume_state(ctx: &mut Ctx<'_>) -> Verdict {
    let run = match resume_run(ctx) {
        Ok(run) => run,
        Err(verdict) => return verdict,
    };
    let session = run.session.as_str();
    let mut problems = Vec::new();
    for (what, resume) in [("with replay", &run.replay), ("without replay", &run.plain)] {
        match &resume.response {
            Some(Ok(_)) => {}
            Some(Err(e)) if e.code == Some(-32601) => {
                return Verdict::skipped(format!("`session/resume` is not implemented ({e})"));
            }
            _ => {
                problems.push(format!("`session/resume` {what} did not succeed"));
                continue;
            }
        }
        let before: Vec<&Value> = updates(&resume.before, session).collect();
        let last_history = before.iter().rposition(|u| is_history(kind(u)));
        let synced = before
            .iter()
            .enumerate()
            .any(|(i, u)| state(u).is_some() && last_history.is_none_or(|last| i > last));
        if !synced {
            problems.push(format!(
                "`session/resume` {what} was answered without a current `state_update` for the session after the replay"
            ));
        }
    }
    if problems.is_empty() {
        return Verdict::Pass;
    }
    problems.push("(with replayFrom: start)".to_owned());
    problems.extend(resume_evidence(&run.replay));
    problems.push("(without replayFrom)".to_owned());
    problems.extend(resume_evidence(&run.plain));
    Verdict::fail(
        "`session/resume` does not synchronize the session's current state",
        problems,
    )
}
