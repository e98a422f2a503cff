//! Protocol v2's checks (`--protocol 2`, feature `unstable-protocol-v2`): their list, and the
//! client steps they share: a prompt turn followed from `session/prompt` to the session's
//! `idle`, and one ordinary turn, run once.
//!
//! Every connection of a v2 run asks for version 2 in `initialize`, and the agent's messages
//! are judged by v2's schema (`wire/classify.rs`).

mod init;
mod prompt;
mod session;
mod updates;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::list::{Check, check};
use super::{Ctx, rpc, transport};
use crate::client::{Caps, Permission, RpcError};
use crate::report::Level::Must;
use crate::report::Verdict;
use crate::wire::{Conn, Event, Events, received, sent};
pub(super) use session::ResumeRun;

/// Every v2 check, in the order they run. The last three judge what all the others saw.
pub(super) static CHECKS: &[Check] = &[
    check(
        "v2.init.version",
        Must,
        "v2 initialization.mdx › Version Negotiation; schema.json (v2) › InitializeResponse",
        "Asked for version 2, the agent answers 2 with its `info` and `capabilities`, in the shapes of v2's schema.",
        init::version,
    ),
    check(
        "v2.init.version.future",
        Must,
        "schema.json (v2) › InitializeResponse.protocolVersion",
        "Asked for a version it cannot support (999), the agent answers the highest version it supports at or below it (2), not the requested one and not an error.",
        init::version_future,
    ),
    check(
        "v2.init.unsupported",
        Must,
        "schema.json (v2) › InitializeResponse.protocolVersion; UnsupportedProtocolVersionErrorData",
        "Asked for a version below every version it supports, the agent answers error -32022 with data `{requested, supported}`: the version asked for, and the versions it does support.",
        init::unsupported,
    ),
    check(
        "v2.rpc.null_id",
        Must,
        "v2 overview.mdx › JSON-RPC (request ids)",
        "A request whose id is `null` is not a v2 request: it is answered -32600 with id `null`, never served, and the agent carries on.",
        init::null_id,
    ),
    check(
        "v2.session.baseline",
        Must,
        "schema.json (v2) › SessionCapabilities",
        "With `capabilities.session`, the baseline methods work: `session/new`, `session/prompt`, `session/list`, `session/resume`, `session/cancel`, `session/close`.",
        session::baseline,
    ),
    check(
        "v2.prompt.lifecycle",
        Must,
        "v2 prompt-lifecycle.mdx › Prompt Accepted; schema.json (v2) › PromptResponse, StateUpdate",
        "A prompt is answered `{messageId}`, the user message is echoed with that id, foreground work is reported `running` (or `requires_action`) and ends `idle`.",
        prompt::lifecycle,
    ),
    check(
        "v2.prompt.idempotency",
        Must,
        "schema.json (v2) › PromptRequest.idempotencyKey",
        "A retry with the `idempotencyKey` of an accepted prompt returns the original `messageId` without inserting another message or running another turn.",
        prompt::idempotency,
    ),
    check(
        "v2.prompt.cancel",
        Must,
        "schema.json (v2) › IdleStateUpdateKind (cancelled); v2 prompt-lifecycle.mdx › Cancellation",
        "After `session/cancel`, the turn ends `idle` with stopReason `cancelled`, even when a permission request was pending (which the client answers `cancelled`).",
        prompt::cancel,
    ),
    check(
        "v2.updates.upsert",
        Must,
        "schema.json (v2) › ToolCallUpdate (patch semantics; status)",
        "Tool call upserts applied as the schema says (omitted = unchanged, `null` = reset to the default) never move a tool call back to `pending` once it has another status.",
        updates::upsert,
    ),
    check(
        "v2.updates.terminal_output",
        Must,
        "schema.json (v2) › TerminalOutputChunk.data",
        "Each `terminal_output_chunk` carries its bytes independently base64-encoded, and a character split between chunks is split as bytes: not replaced (U+FFFD) or lost at the boundary.",
        updates::terminal_output,
    ),
    check(
        "v2.session.resume.replay",
        Must,
        "schema.json (v2) › ResumeSessionRequest.replayFrom; ReplayComplete; PromptResponse.messageId",
        "`session/resume` with `replayFrom: {type: start}` replays the retained history before answering, then `replay_complete` exactly once, before the answer; a replayed user message keeps its `messageId`; without `replayFrom`, no replay and no `replay_complete`.",
        session::replay,
    ),
    check(
        "v2.session.resume.state",
        Must,
        "schema.json (v2) › ResumeSessionResponse (current-state synchronization)",
        "`session/resume` sends a current `state_update` for the session after any replay and before its answer, with or without replay.",
        session::resume_state,
    ),
    check(
        "v2.rpc.response_ids",
        Must,
        "v2 overview.mdx › JSON-RPC",
        "Every response the agent sends carries the id of a request the client sent, and every request is answered once.",
        rpc::response_ids,
    ),
    check(
        "v2.schema.agent_messages",
        Must,
        "schema.json (v2)",
        "Every request and notification the agent sends is a v2 method (or a `_` extension) with params that match v2's schema, naming sessions that exist.",
        transport::agent_messages,
    ),
    check(
        "v2.transport.stdout_clean",
        Must,
        "transports.mdx › stdio",
        "The agent writes nothing to stdout but JSON-RPC messages, one per line, in UTF-8.",
        transport::stdout_clean,
    ),
];

/// A v2 prompt turn, followed from `session/prompt` until the session is `idle` and the
/// prompt answered.
#[derive(Clone, Debug)]
pub(super) struct Turn {
    /// The `session/prompt` request as sent.
    pub sent: String,
    /// Its response, unless none came in time.
    pub response: Option<Result<Value, RpcError>>,
    /// The response line.
    pub response_raw: Option<String>,
    /// Everything else the agent sent until the turn ended, and during the grace period after
    /// (its requests already answered).
    pub events: Events,
    /// Whether the turn ended: an `idle` state update for the session after `running` or
    /// `requires_action`, or one with a stop reason (see [`turn_end`]).
    pub idle: bool,
    /// Why the turn did not end, when it did not.
    pub missing: Option<String>,
    /// The `session/cancel` sent at the permission request, if one came.
    pub cancel: Option<String>,
}

impl Turn {
    /// The `messageId` the prompt was accepted with.
    pub fn message_id(&self) -> Option<&str> {
        match &self.response {
            Some(Ok(result)) => result.get("messageId").and_then(Value::as_str),
            _ => None,
        }
    }

    /// Evidence: the prompt, its answer, and what the agent sent (the first lines).
    pub fn evidence(&self) -> Vec<String> {
        let mut evidence = vec![sent(&self.sent)];
        match (&self.response_raw, &self.missing) {
            (Some(raw), _) => evidence.push(received(raw)),
            (None, Some(why)) => evidence.push(format!("(no response: {why})")),
            (None, None) => evidence.push("(no response)".to_owned()),
        }
        evidence.extend(crate::wire::received_lines(
            self.events.iter().filter_map(Event::raw),
        ));
        evidence.extend(self.events.note());
        if let Some(why) = self
            .missing
            .as_ref()
            .filter(|_| self.response_raw.is_some())
        {
            evidence.push(format!("(the turn did not end: {why})"));
        }
        evidence
    }

    /// Whether the prompt was accepted and the turn ended `idle`.
    pub fn completed(&self) -> bool {
        self.message_id().is_some() && self.idle
    }
}

/// The `update` objects of the `session/update`s for `session` among `events`.
pub(super) fn updates<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    session: &'a str,
) -> impl Iterator<Item = &'a Value> {
    events.into_iter().filter_map(move |event| match event {
        Event::Notification { method, params, .. }
            if method == "session/update"
                && params.get("sessionId").and_then(Value::as_str) == Some(session) =>
        {
            params.get("update")
        }
        _ => None,
    })
}

/// The `sessionUpdate` kind of an update object (`""` when it has none).
pub(super) fn kind(update: &Value) -> &str {
    update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The `state` of a `state_update` (`None` for another update).
pub(super) fn state(update: &Value) -> Option<&str> {
    (kind(update) == "state_update")
        .then(|| update.get("state").and_then(Value::as_str))
        .flatten()
}

/// Whether an `idle` update says that foreground work ended: it carries a stop reason.
pub(super) fn ends_work(update: &Value) -> bool {
    update.get("stopReason").is_some_and(|r| !r.is_null())
}

/// The index, among `updates`, of the `idle` that ends the turn: the first after `running` or
/// `requires_action`, or the first with a stop reason.
pub(super) fn turn_end(updates: &[&Value]) -> Option<usize> {
    let mut active = false;
    updates.iter().position(|u| match state(u) {
        Some("running" | "requires_action") => {
            active = true;
            false
        }
        Some("idle") => active || ends_work(u),
        _ => false,
    })
}

/// The `session/prompt` params of a text prompt, with an idempotency key if given.
pub(super) fn prompt_params(session: &str, text: &str, key: Option<&str>) -> Value {
    let mut params = json!({
        "sessionId": session,
        "prompt": [{ "type": "text", "text": text }],
    });
    if let Some(key) = key {
        params["idempotencyKey"] = key.into();
    }
    params
}

/// How far [`run_turn`] follows a prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Until {
    /// Until the prompt is answered and the session reports `idle`.
    Idle,
    /// The same, sending `session/cancel` when the agent asks permission (before answering it
    /// `cancelled`, as a client that cancelled must).
    IdleCancelledAtPermission,
    /// Until the prompt is answered (a retry, which runs nothing).
    Answer,
}

/// Sends `session/prompt` with `params` and follows the turn as far as `until` says (an error
/// answer ends it at once), or `timeout`; then listens for `grace`. The agent's requests are
/// answered as the fake client does.
pub(super) fn run_turn(
    conn: &mut Conn,
    session: &str,
    params: Value,
    until: Until,
    (timeout, grace): (Duration, Duration),
) -> Turn {
    let (id, sent) = conn.request("session/prompt", params);
    let deadline = Instant::now() + timeout;
    let mut turn = Turn {
        sent,
        response: None,
        response_raw: None,
        events: Events::default(),
        idle: false,
        missing: None,
        cancel: None,
    };
    // Whether foreground work was reported since the prompt was sent: the `idle` after it
    // ends the turn (an `idle` before it is a snapshot of the state the prompt found).
    let mut active = false;
    loop {
        let done = match &turn.response {
            Some(Ok(_)) => turn.idle || until == Until::Answer,
            Some(Err(_)) => true,
            None => false,
        };
        if done {
            break;
        }
        match conn.next_event(deadline) {
            Event::Response {
                id: rid,
                result,
                raw,
                ..
            } if rid == id => {
                turn.response = Some(result);
                turn.response_raw = Some(raw);
            }
            Event::Request {
                id,
                method,
                params,
                raw,
            } => {
                if until == Until::IdleCancelledAtPermission
                    && turn.cancel.is_none()
                    && method == "session/request_permission"
                {
                    let cancel = conn.notify("session/cancel", json!({ "sessionId": session }));
                    conn.client.permission = Permission::Cancelled;
                    turn.cancel = Some(cancel);
                }
                conn.answer(&id, &method, &params);
                turn.events.push(Event::Request {
                    id,
                    method,
                    params,
                    raw,
                });
            }
            Event::Timeout => {
                conn.expire("the turn to end `idle`", timeout);
                turn.missing = Some(conn.ended().unwrap_or("no idle in time").to_owned());
                break;
            }
            Event::Eof => {
                turn.missing = Some(
                    conn.ended()
                        .unwrap_or("the agent's output ended")
                        .to_owned(),
                );
                break;
            }
            event => {
                if let Some((s, "state_update")) = event.session_update()
                    && s == session
                    && let Event::Notification { params, .. } = &event
                    && let Some(update) = params.get("update")
                {
                    match state(update) {
                        Some("running" | "requires_action") => active = true,
                        Some("idle") if active || ends_work(update) => turn.idle = true,
                        _ => {}
                    }
                }
                turn.events.push(event);
            }
        }
    }
    turn.events.extend(conn.listen(grace));
    turn
}

/// A connection initialized for v2 with one new session, or the verdict that the check
/// cannot proceed.
pub(super) fn session(ctx: &mut Ctx<'_>, label: &str) -> Result<(Conn, String), Verdict> {
    ctx.connect_with_session(label, Caps::NONE)
}

/// A text turn of the user's `--prompt` on `session`, followed as far as `until` says.
pub(super) fn text_turn(
    ctx: &Ctx<'_>,
    conn: &mut Conn,
    session: &str,
    key: Option<&str>,
    until: Until,
) -> Turn {
    let params = prompt_params(session, &ctx.opts.prompt, key);
    let limits = (ctx.opts.turn_timeout, ctx.opts.grace);
    run_turn(conn, session, params, until, limits)
}

/// The ordinary turn several checks judge, run once: its session and the turn.
pub(super) fn ordinary(ctx: &mut Ctx<'_>) -> Result<(String, Turn), Verdict> {
    if let Some(cached) = &ctx.v2_ordinary {
        return cached.clone();
    }
    let result = session(ctx, "v2.ordinary").map(|(mut conn, session)| {
        let turn = text_turn(ctx, &mut conn, &session, None, Until::Idle);
        (session, turn)
    });
    ctx.v2_ordinary = Some(result.clone());
    result
}

/// The verdict for a check that needs the ordinary turn to have completed, when it did not.
pub(super) fn ordinary_failed(turn: &Turn) -> Verdict {
    Verdict::inconclusive(format!(
        "the ordinary turn did not complete ({}), so there is nothing to judge",
        match (&turn.response, &turn.missing) {
            (Some(Err(e)), _) => format!("the prompt was answered {e}"),
            (_, Some(why)) => why.clone(),
            _ => "no `idle`".to_owned(),
        }
    ))
}
