//! The client's system prompt (`systemPrompt` on `session/new`, stable since schema 1.17):
//! checked only against an agent that advertises `sessionCapabilities.systemPrompt`.

use serde_json::{Value, json};

use super::{Ctx, describe};
use crate::client::Caps;
use crate::report::Verdict;
use crate::wire::Conn;

/// A mode no agent supports: `_`-prefixed modes are reserved for implementations, and this
/// one names the checker.
const UNKNOWN_MODE: &str = "_acp_conformance_unknown";

/// Whether the agent advertised `sessionCapabilities.systemPrompt`, and `mode.override`.
fn advertised(ctx: &mut Ctx<'_>) -> Option<bool> {
    let system_prompt = ctx.agent_cap("/sessionCapabilities/systemPrompt");
    if !system_prompt.is_object() {
        return None;
    }
    Some(
        system_prompt
            .pointer("/mode/override")
            .is_some_and(Value::is_object),
    )
}

fn new_with_prompt(ctx: &Ctx<'_>, conn: &mut Conn, mode: &str) -> crate::wire::Call {
    conn.call(
        "session/new",
        json!({
            "cwd": ctx.cwd(),
            "mcpServers": [],
            "systemPrompt": {
                "mode": mode,
                "content": [{ "type": "text", "text": "Answer as briefly as you can." }],
            },
        }),
        ctx.opts.timeout,
    )
}

pub(super) fn append(ctx: &mut Ctx<'_>) -> Verdict {
    if advertised(ctx).is_none() {
        return Verdict::skipped("`sessionCapabilities.systemPrompt` is not advertised");
    }
    let mut conn = match ctx.connect("session.system_prompt.append", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let call = new_with_prompt(ctx, &mut conn, "append");
    match (&call.response, ctx.session_of(&call, &conn)) {
        (_, Ok(_)) => Verdict::Pass,
        // Authentication required, no answer, or no session id: the verdict `session_of` gives.
        (Some(Err(e)), Err(verdict)) if e.code == Some(-32000) => verdict,
        (Some(Ok(_)) | None, Err(verdict)) => verdict,
        (Some(Err(_)), Err(_)) => Verdict::fail(
            format!(
                "`session/new` with a text system prompt in `append` mode was refused: {}",
                describe(&call.response, &conn)
            ),
            call.evidence(),
        ),
    }
}

pub(super) fn unsupported_mode(ctx: &mut Ctx<'_>) -> Verdict {
    let Some(takes_override) = advertised(ctx) else {
        return Verdict::skipped("`sessionCapabilities.systemPrompt` is not advertised");
    };
    let mut conn = match ctx.connect("session.system_prompt.mode", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let mut modes = vec![UNKNOWN_MODE];
    if !takes_override {
        modes.push("override");
    }
    for mode in modes {
        let call = new_with_prompt(ctx, &mut conn, mode);
        match &call.response {
            Some(Err(e)) if e.code == Some(-32000) => return ctx.auth_required(),
            Some(Err(_)) => {}
            Some(Ok(_)) => {
                return Verdict::fail(
                    format!(
                        "a system prompt in mode `{mode}`, which the agent does not advertise, opened a session instead of an error"
                    ),
                    call.evidence(),
                );
            }
            None => {
                return Verdict::fail(
                    format!(
                        "no answer to a system prompt in mode `{mode}`: {}",
                        describe(&None, &conn)
                    ),
                    call.evidence(),
                );
            }
        }
    }
    Verdict::Pass
}
