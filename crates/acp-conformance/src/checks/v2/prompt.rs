//! v2's prompt lifecycle: acceptance with a `messageId`, the echo, the foreground states,
//! idempotent retries, and cancellation.

use serde_json::Value;

use super::super::Ctx;
use super::{
    Turn, Until, kind, ordinary, prompt_params, run_turn, session, state, text_turn, turn_end,
    updates,
};
use crate::report::Verdict;

/// The key of the checker's idempotent prompt: 1 to 255 characters, as v2 allows.
const KEY: &str = "acp-conformance-retry-1";

/// The `messageId`s of the user messages echoed in `turn` for `session`.
fn echoed<'a>(turn: &'a Turn, session: &'a str) -> Vec<&'a str> {
    updates(&turn.events, session)
        .filter(|u| matches!(kind(u), "user_message" | "user_message_chunk"))
        .filter_map(|u| u.get("messageId").and_then(Value::as_str))
        .collect()
}

pub(in crate::checks) fn lifecycle(ctx: &mut Ctx<'_>) -> Verdict {
    let (session, turn) = match ordinary(ctx) {
        Ok(ordinary) => ordinary,
        Err(verdict) => return verdict,
    };
    let evidence = turn.evidence();
    let message_id = match &turn.response {
        None => {
            return Verdict::fail(
                format!(
                    "`session/prompt` was not answered ({})",
                    turn.missing.as_deref().unwrap_or("no response")
                ),
                evidence,
            );
        }
        Some(Err(e)) if e.code == Some(-32000) => return ctx.auth_required(),
        Some(Err(e)) => {
            return Verdict::inconclusive(format!(
                "the prompt was refused with {e}; rerun with a --prompt the agent accepts"
            ));
        }
        Some(Ok(_)) => match turn.message_id() {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => {
                return Verdict::fail(
                    "the prompt was answered without a `messageId` (a non-empty string)",
                    evidence,
                );
            }
        },
    };
    let mut problems = Vec::new();
    if !echoed(&turn, &session).contains(&message_id.as_str()) {
        problems.push(format!(
            "no `user_message` echoed the prompt with messageId `{message_id}`"
        ));
    }
    let updates: Vec<&Value> = updates(&turn.events, &session).collect();
    let states: Vec<&str> = updates.iter().filter_map(|u| state(u)).collect();
    match turn_end(&updates) {
        None => problems.push(format!(
            "the turn never ended `idle` ({}; states: {states:?})",
            turn.missing.as_deref().unwrap_or("no idle after `running`")
        )),
        Some(end)
            if !updates[..end]
                .iter()
                .any(|u| matches!(state(u), Some("running" | "requires_action"))) =>
        {
            problems.push(format!(
                "foreground work was not reported `running` or `requires_action` before the `idle` that ended it (states: {states:?})"
            ));
        }
        Some(_) => {}
    }
    if problems.is_empty() {
        return Verdict::Pass;
    }
    problems.extend(evidence);
    Verdict::fail("the prompt's lifecycle is not v2's", problems)
}

pub(in crate::checks) fn idempotency(ctx: &mut Ctx<'_>) -> Verdict {
    let (mut conn, session) = match session(ctx, "v2.prompt.idempotency") {
        Ok(connected) => connected,
        Err(verdict) => return verdict,
    };
    let first = text_turn(ctx, &mut conn, &session, Some(KEY), Until::Idle);
    let Some(first_id) = first.message_id().map(str::to_owned) else {
        return match &first.response {
            Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
            _ => Verdict::inconclusive(format!(
                "the first prompt (with an idempotencyKey) was not accepted: {}",
                first
                    .evidence()
                    .get(1)
                    .cloned()
                    .unwrap_or_else(|| "no response".to_owned())
            )),
        };
    };
    if !first.idle {
        return Verdict::inconclusive(
            "the first prompt's turn did not end `idle`, so a retry cannot be told from a second turn",
        );
    }
    let retry = text_turn(ctx, &mut conn, &session, Some(KEY), Until::Answer);
    let mut evidence = vec!["(the first attempt)".to_owned()];
    evidence.extend(first.evidence());
    evidence.push("(the retry, same idempotencyKey)".to_owned());
    evidence.extend(retry.evidence());
    match &retry.response {
        Some(Ok(_)) => {}
        other => {
            return Verdict::fail(
                format!(
                    "the retry of an accepted prompt was not answered with its messageId: {}",
                    match other {
                        Some(Err(e)) => e.to_string(),
                        _ => retry
                            .missing
                            .clone()
                            .unwrap_or_else(|| "no response".into()),
                    }
                ),
                evidence,
            );
        }
    }
    if retry.message_id() != Some(first_id.as_str()) {
        return Verdict::fail(
            format!(
                "the retry was answered messageId {:?}, the first attempt `{first_id}`",
                retry.message_id()
            ),
            evidence,
        );
    }
    let inserted: Vec<&str> = echoed(&retry, &session)
        .into_iter()
        .filter(|id| *id != first_id)
        .collect();
    let ran = updates(&retry.events, &session).any(|u| state(u) == Some("running"));
    if !inserted.is_empty() || ran {
        return Verdict::fail(
            if inserted.is_empty() {
                "the retry ran another turn (`running` again)".to_owned()
            } else {
                format!("the retry inserted another user message ({inserted:?})")
            },
            evidence,
        );
    }
    Verdict::Pass
}

pub(in crate::checks) fn cancel(ctx: &mut Ctx<'_>) -> Verdict {
    let (mut conn, session) = match session(ctx, "v2.prompt.cancel") {
        Ok(connected) => connected,
        Err(verdict) => return verdict,
    };
    let params = prompt_params(&session, &ctx.opts.prompt, None);
    let limits = (ctx.opts.turn_timeout, ctx.opts.grace);
    let turn = run_turn(
        &mut conn,
        &session,
        params,
        Until::IdleCancelledAtPermission,
        limits,
    );
    let mut evidence = turn.evidence();
    match &turn.response {
        Some(Ok(_)) => {}
        Some(Err(e)) if e.code == Some(-32000) => return ctx.auth_required(),
        other => {
            return Verdict::inconclusive(format!(
                "the prompt was not accepted: {}",
                match other {
                    Some(Err(e)) => e.to_string(),
                    _ => turn.missing.clone().unwrap_or_else(|| "no response".into()),
                }
            ));
        }
    }
    let Some(cancel) = &turn.cancel else {
        return Verdict::inconclusive(
            "the turn asked no permission, so there was no moment at which the agent provably reads `session/cancel` before it ends",
        );
    };
    evidence.insert(
        2,
        format!(
            "{} (sent at the permission request, which was then answered `cancelled`)",
            crate::wire::sent(cancel)
        ),
    );
    let updates: Vec<&Value> = updates(&turn.events, &session).collect();
    // The agent waited for the permission answer, sent after `session/cancel`: it read the
    // cancellation before its turn could end.
    match turn_end(&updates).map(|end| updates[end].get("stopReason")) {
        Some(Some(reason)) if reason == "cancelled" => Verdict::Pass,
        Some(reason) => Verdict::fail(
            format!(
                "the cancelled turn ended `idle` with stopReason {}, not `cancelled`",
                reason.map_or("(none)".to_owned(), Value::to_string)
            ),
            evidence,
        ),
        None => Verdict::fail(
            format!(
                "the cancelled turn never ended `idle` ({})",
                turn.missing.as_deref().unwrap_or("no idle")
            ),
            evidence,
        ),
    }
}
