//! Prompt turns: stop reasons, update ordering, cancellation.

use super::{Ctx, no_moment};
use crate::client::Caps;
use crate::report::Verdict;
use crate::turn::{Action, Trigger, TurnResult, is_stop_reason};
use crate::wire::{Event, received};

pub(super) fn stop_reason(ctx: &mut Ctx<'_>) -> Verdict {
    let basic = match ctx.basic() {
        Ok(b) => b,
        Err(v) => return v,
    };
    let turn = match (basic.session, basic.turn) {
        (Ok(_), Some(turn)) => turn,
        (Err(verdict), _) => return verdict,
        (Ok(_), None) => return Verdict::inconclusive("no turn ran"),
    };
    match &turn.response {
        Some(Ok(_)) => match turn.stop_reason() {
            Some(reason) if is_stop_reason(reason) => Verdict::Pass,
            _ => Verdict::fail(
                format!(
                    "the turn ended with {}, not one of end_turn, max_tokens, max_turn_requests, refusal, cancelled",
                    turn.outcome()
                ),
                turn.evidence(),
            ),
        },
        Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
        Some(Err(e)) => Verdict::inconclusive(format!(
            "the turn failed with {e}; an agent that needs a model may need credentials, or another --prompt"
        )),
        None => Verdict::fail(
            format!(
                "the turn did not end within {} s ({}); slow agents need a longer --turn-timeout",
                ctx.opts.turn_timeout.as_secs_f64(),
                turn.outcome()
            ),
            turn.evidence(),
        ),
    }
}

pub(super) fn updates_before_response(ctx: &mut Ctx<'_>) -> Verdict {
    let basic = match ctx.basic() {
        Ok(b) => b,
        Err(v) => return v,
    };
    let (turn, session) = match (basic.turn, basic.session) {
        (Some(turn), Ok(session)) => (turn, session),
        (_, Err(verdict)) => return verdict,
        (None, Ok(_)) => return Verdict::inconclusive("no turn ran"),
    };
    if turn.response.is_none() {
        return Verdict::inconclusive(format!("the turn did not end: {}", turn.outcome()));
    }
    late_updates(&turn, &session)
}

/// Fails when turn content for `session` followed the response.
fn late_updates(turn: &TurnResult, session: &str) -> Verdict {
    let late = turn.late_updates(session);
    if late.is_empty() {
        return Verdict::Pass;
    }
    let mut evidence = turn.evidence();
    evidence.extend(late);
    Verdict::fail(
        "session updates of the turn arrived after its `session/prompt` response",
        evidence,
    )
}

/// Runs a turn that the checker cancels with `session/cancel` at `trigger`.
fn cancelled_turn(
    ctx: &mut Ctx<'_>,
    label: &str,
    trigger: Trigger,
) -> Result<(TurnResult, String), Verdict> {
    let (mut conn, session) = ctx.connect_with_session(label, Caps::ALL)?;
    let turn = ctx.text_turn(&mut conn, &session, trigger, Action::SessionCancel);
    Ok((turn, session))
}

/// Judges a turn after `session/cancel` was sent.
fn judge_cancelled(ctx: &mut Ctx<'_>, turn: &TurnResult, session: &str) -> Verdict {
    if let Some(Err(e)) = &turn.response
        && e.code == Some(-32000)
    {
        return ctx.auth_required();
    }
    let answers = turn.answers_to_action();
    if !answers.is_empty() {
        // `session/cancel` is a notification: an answer to it is a refusal at best, and an
        // answer before the prompt's response proves the agent read the cancellation.
        let read_first = answers.iter().any(|(before, _)| *before);
        let how = match (turn.stop_reason(), &turn.response) {
            (Some("cancelled"), _) => "; the turn itself did end with `cancelled`".to_owned(),
            (_, None) => format!("; the turn never ended ({})", turn.outcome()),
            _ if read_first => format!(
                ", and the turn ended with {} instead of `cancelled` although the agent had read the cancellation (it answered it before answering the prompt)",
                turn.outcome()
            ),
            _ => format!(
                ", and the turn ended with {} instead of `cancelled`",
                turn.outcome()
            ),
        };
        // The answers in their place: before the prompt's response, or after it.
        let mut evidence = turn.evidence();
        let at = turn
            .response_raw
            .as_deref()
            .and_then(|raw| evidence.iter().position(|l| *l == received(raw)))
            .unwrap_or(evidence.len());
        let lines = |before: bool| {
            answers
                .iter()
                .filter(move |(b, _)| *b == before)
                .filter_map(|(_, e)| match e {
                    Event::Idless { raw, .. } => Some(super::rpc::idless_evidence(raw)),
                    other => other.raw().map(received),
                })
        };
        let after: Vec<String> = lines(false).collect();
        evidence.splice(at..at, lines(true));
        evidence.extend(after);
        return Verdict::fail(
            format!(
                "the agent answered the `session/cancel` notification, which gets no response{how}"
            ),
            evidence,
        );
    }
    match &turn.response {
        None => Verdict::fail(
            format!(
                "after `session/cancel` the turn never ended ({})",
                turn.outcome()
            ),
            turn.evidence(),
        ),
        Some(Ok(_)) if turn.stop_reason() == Some("cancelled") => late_updates(turn, session),
        Some(Ok(_)) if turn.witnessed => Verdict::fail(
            format!(
                "the cancelled turn ended with {} instead of `cancelled` (the agent had read the cancellation: it waited for an answer sent after it)",
                turn.outcome()
            ),
            turn.evidence(),
        ),
        Some(Ok(_)) => Verdict::inconclusive(format!(
            "the turn ended with {}, perhaps before the cancellation reached the agent; a --prompt that keeps the agent busy longer would tell",
            turn.outcome()
        )),
        Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
        Some(Err(e)) if turn.witnessed || ctx.basic_turn_completed() => Verdict::fail(
            format!("the cancelled turn was answered with {e} instead of stop reason `cancelled`"),
            turn.evidence(),
        ),
        Some(Err(e)) => Verdict::inconclusive(format!(
            "the turn failed with {e}, and so does an ordinary turn; no telling whether the cancellation caused it"
        )),
    }
}

pub(super) fn cancel(ctx: &mut Ctx<'_>) -> Verdict {
    let (turn, session) = match cancelled_turn(ctx, "prompt.cancel", Trigger::FirstActivity) {
        Ok(x) => x,
        Err(v) => return v,
    };
    if let Some(v) = no_moment(&turn, "cancel it") {
        return v;
    }
    judge_cancelled(ctx, &turn, &session)
}

pub(super) fn cancel_permission(ctx: &mut Ctx<'_>) -> Verdict {
    let (turn, session) = match cancelled_turn(ctx, "prompt.cancel.permission", Trigger::Permission)
    {
        Ok(x) => x,
        Err(v) => return v,
    };
    if turn.acted.is_none() {
        return Verdict::inconclusive(format!(
            "the agent asked for no permission during the turn ({}); a --prompt that makes it ask would tell",
            turn.outcome()
        ));
    }
    judge_cancelled(ctx, &turn, &session)
}
