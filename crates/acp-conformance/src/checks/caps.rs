//! Capabilities respected: the client's (no calls it did not advertise) and the agent's own
//! (prompt content it advertised is accepted).

use serde_json::{Value, json};

use super::Ctx;
use crate::client::Caps;
use crate::report::Verdict;
use crate::turn::{Action, Trigger};
use crate::wire::received_lines;

/// A 1×1 PNG.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
/// Two milliseconds of silence: an 8 kHz, 8-bit mono WAV.
const WAV_BASE64: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YRAAAACAgICAgICAgICAgICAgICA";

pub(super) fn client_methods(ctx: &mut Ctx<'_>) -> Verdict {
    let (mut conn, session) = match ctx.connect_with_session("caps.client_methods", Caps::NONE) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let turn = ctx.text_turn(&mut conn, &session, Trigger::Never, Action::SessionCancel);
    let calls = received_lines(
        turn.agent_requests()
            .filter(|(method, _)| {
                ["fs/", "terminal/", "elicitation/"]
                    .iter()
                    .any(|p| method.starts_with(p))
            })
            .map(|(_, raw)| raw),
    );
    if !calls.is_empty() {
        let mut evidence = vec![format!(
            "(initialize advertised clientCapabilities {})",
            Caps::NONE.to_json()
        )];
        evidence.extend(calls);
        return Verdict::fail(
            "the agent called client methods the client did not advertise",
            evidence,
        );
    }
    match &turn.response {
        Some(Ok(_)) => Verdict::Pass,
        Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
        _ => Verdict::inconclusive(format!(
            "no unadvertised call was seen, but the turn did not complete ({})",
            turn.outcome()
        )),
    }
}

/// Runs a turn whose prompt is the user's text followed by `block`, and judges whether the
/// agent accepted it.
fn content_turn(ctx: &mut Ctx<'_>, label: &str, what: &str, block: Value) -> Verdict {
    let (mut conn, session) = match ctx.connect_with_session(label, Caps::ALL) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let prompt = json!([{ "type": "text", "text": ctx.opts.prompt }, block]);
    let turn = ctx.turn(
        &mut conn,
        &session,
        prompt,
        Trigger::Never,
        Action::SessionCancel,
    );
    match &turn.response {
        Some(Ok(_)) if turn.completed() => Verdict::Pass,
        Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
        _ if ctx.basic_turn_completed() => Verdict::fail(
            format!(
                "a prompt with {what} was not accepted ({}), though a text-only prompt was",
                turn.outcome()
            ),
            turn.evidence(),
        ),
        _ => Verdict::inconclusive(format!(
            "a prompt with {what} did not complete ({}), and neither did a text-only prompt",
            turn.outcome()
        )),
    }
}

fn advertised(ctx: &mut Ctx<'_>, capability: &str) -> bool {
    ctx.agent_cap(&format!("/promptCapabilities/{capability}")) == Value::Bool(true)
}

pub(super) fn prompt_baseline(ctx: &mut Ctx<'_>) -> Verdict {
    let uri = format!("file://{}", ctx.notes_path);
    content_turn(
        ctx,
        "caps.prompt.baseline",
        "a resource link",
        json!({ "type": "resource_link", "uri": uri, "name": "notes.txt", "mimeType": "text/plain" }),
    )
}

pub(super) fn prompt_image(ctx: &mut Ctx<'_>) -> Verdict {
    if !advertised(ctx, "image") {
        return Verdict::skipped("`promptCapabilities.image` is not advertised");
    }
    content_turn(
        ctx,
        "caps.prompt.image",
        "an image",
        json!({ "type": "image", "mimeType": "image/png", "data": PNG_BASE64 }),
    )
}

pub(super) fn prompt_audio(ctx: &mut Ctx<'_>) -> Verdict {
    if !advertised(ctx, "audio") {
        return Verdict::skipped("`promptCapabilities.audio` is not advertised");
    }
    content_turn(
        ctx,
        "caps.prompt.audio",
        "audio",
        json!({ "type": "audio", "mimeType": "audio/wav", "data": WAV_BASE64 }),
    )
}

pub(super) fn prompt_embedded_context(ctx: &mut Ctx<'_>) -> Verdict {
    if !advertised(ctx, "embeddedContext") {
        return Verdict::skipped("`promptCapabilities.embeddedContext` is not advertised");
    }
    let uri = format!("file://{}", ctx.notes_path);
    content_turn(
        ctx,
        "caps.prompt.embedded_context",
        "an embedded resource",
        json!({
            "type": "resource",
            "resource": { "uri": uri, "mimeType": "text/plain", "text": "buy milk\nship the release\ncall Ada\n" },
        }),
    )
}
