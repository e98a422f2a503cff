//! v2's `initialize`: the version answered, `-32022` and its data, and the rule on `null`
//! request ids.

use acp_types::de::collect_dropped;
use acp_types::v2::{InitializeResponse, UNSUPPORTED_PROTOCOL_VERSION};
use serde_json::{Value, json};

use super::super::{Ctx, describe};
use crate::client::Caps;
use crate::report::Verdict;
use crate::wire::Event;

/// A version no agent supports yet.
const FUTURE: u64 = 999;

pub(in crate::checks) fn version(ctx: &mut Ctx<'_>) -> Verdict {
    let h = ctx.handshake();
    let mut evidence = h.call_evidence.clone();
    let result = match &h.response {
        None => {
            evidence.extend(h.exit.iter().cloned());
            return Verdict::fail(
                format!("`initialize` was not answered ({})", h.missing),
                evidence,
            );
        }
        Some(Err(error)) => {
            return Verdict::fail(
                format!("asked for version 2, the agent answered {error}"),
                evidence,
            );
        }
        Some(Ok(result)) => result,
    };
    match result.get("protocolVersion").and_then(Value::as_u64) {
        Some(2) => {}
        Some(1) => {
            return Verdict::skipped(
                "asked for version 2, the agent answered 1: it does not speak v2 (a v1 agent may)",
            );
        }
        other => {
            return Verdict::fail(
                format!(
                    "asked for version 2, the agent answered protocolVersion {}",
                    other.map_or("(none)".to_owned(), |v| v.to_string())
                ),
                evidence,
            );
        }
    }
    let mut problems = Vec::new();
    for field in ["info", "capabilities"] {
        if !result.get(field).is_some_and(Value::is_object) {
            problems.push(format!("`{field}` is not an object"));
        }
    }
    let (decoded, dropped) =
        collect_dropped(|| serde_json::from_value::<InitializeResponse>(result.clone()));
    if let Err(error) = decoded {
        problems.push(format!("the result does not match v2's schema: {error}"));
    }
    problems.extend(
        dropped
            .iter()
            .map(|d| format!("a value that does not match v2's schema: {}", d.value)),
    );
    if problems.is_empty() {
        return Verdict::Pass;
    }
    problems.append(&mut evidence);
    Verdict::fail("the v2 `initialize` result is not well formed", problems)
}

/// Whether the agent speaks v2 at all (it answered the first `initialize` with 2), or the
/// verdict that a check of v2 cannot proceed.
pub(super) fn speaks_v2(ctx: &mut Ctx<'_>) -> Result<(), Verdict> {
    let answered = ctx
        .handshake()
        .result()
        .and_then(|r| r.get("protocolVersion"))
        .and_then(Value::as_u64);
    match answered {
        Some(2) => Ok(()),
        Some(1) => Err(Verdict::skipped("the agent does not speak v2")),
        _ => Err(Verdict::inconclusive(
            "the version 2 `initialize` did not succeed",
        )),
    }
}

pub(in crate::checks) fn version_future(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(verdict) = speaks_v2(ctx) {
        return verdict;
    }
    let mut conn = match ctx.spawn("v2.init.version.future", Caps::NONE) {
        Ok(conn) => conn,
        Err(verdict) => return verdict,
    };
    let params = ctx.init_params_of(FUTURE.into(), Caps::NONE);
    let call = conn.call("initialize", params, ctx.opts.timeout);
    let evidence = call.evidence();
    match &call.response {
        Some(Ok(result)) => match result.get("protocolVersion").and_then(Value::as_u64) {
            Some(2) => Verdict::Pass,
            Some(FUTURE) => Verdict::fail(
                format!("asked for version {FUTURE}, the agent echoed it"),
                evidence,
            ),
            Some(v) => Verdict::fail(
                format!(
                    "asked for version {FUTURE}, the agent answered {v}, though it speaks 2 (the highest version at or below the request is due)"
                ),
                evidence,
            ),
            None => Verdict::fail("the answer has no usable protocolVersion", evidence),
        },
        other => Verdict::fail(
            format!(
                "asked for version {FUTURE}, the agent did not answer with 2: {}",
                describe(other, &conn)
            ),
            evidence,
        ),
    }
}

pub(in crate::checks) fn unsupported(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(verdict) = speaks_v2(ctx) {
        return verdict;
    }
    // Version 1 is below v2; an agent that also serves v1 (through a router) supports every
    // version a client can ask for, and has nothing to refuse.
    let mut conn = match ctx.spawn("v2.init.unsupported", Caps::NONE) {
        Ok(conn) => conn,
        Err(verdict) => return verdict,
    };
    let params = ctx.init_params_of(1.into(), Caps::NONE);
    let call = conn.call("initialize", params, ctx.opts.timeout);
    let evidence = call.evidence();
    let error = match &call.response {
        Some(Ok(result)) => {
            return match result.get("protocolVersion").and_then(Value::as_u64) {
                Some(1) => Verdict::skipped(
                    "the agent serves version 1 too, so there is no version below its own to ask for",
                ),
                other => Verdict::fail(
                    format!(
                        "asked for version 1, the agent answered {} instead of 1 or error -32022",
                        other.map_or("no usable protocolVersion".to_owned(), |v| v.to_string())
                    ),
                    evidence,
                ),
            };
        }
        Some(Err(error)) => error,
        None => {
            return Verdict::fail(
                format!(
                    "asked for version 1, no answer: {}",
                    describe(&call.response, &conn)
                ),
                evidence,
            );
        }
    };
    if error.code != Some(i64::from(UNSUPPORTED_PROTOCOL_VERSION)) {
        return Verdict::fail(
            format!(
                "asked for version 1, which it does not serve, the agent answered {error} instead of -32022"
            ),
            evidence,
        );
    }
    let data = error.raw.get("data");
    let requested = data
        .and_then(|d| d.get("requested"))
        .and_then(Value::as_u64);
    let supported: Option<Vec<u64>> = data
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .and_then(|versions| versions.iter().map(Value::as_u64).collect());
    match (requested, supported) {
        (Some(1), Some(supported)) if supported.contains(&2) && !supported.contains(&1) => {
            Verdict::Pass
        }
        (Some(1), Some(supported)) => Verdict::fail(
            format!(
                "the -32022 data lists {supported:?} as supported: it must name 2, which the agent speaks, and not 1, which it refused"
            ),
            evidence,
        ),
        _ => Verdict::fail(
            "the -32022 error lacks its data `{requested: 1, supported: [...]}` (integers)",
            evidence,
        ),
    }
}

pub(in crate::checks) fn null_id(ctx: &mut Ctx<'_>) -> Verdict {
    let mut conn = match ctx.connect("v2.rpc.null_id", Caps::NONE) {
        Ok(conn) => conn,
        Err(verdict) => return verdict,
    };
    let line = json!({
        "jsonrpc": "2.0",
        "id": null,
        "method": "session/new",
        "params": { "cwd": ctx.cwd(), "mcpServers": [] },
    })
    .to_string();
    conn.send_invalid(&line, None);
    let barrier = ctx.new_session_call(&mut conn);
    let mut events = barrier.events.clone();
    events.extend(conn.listen(conn.grace));
    let mut evidence = vec![crate::wire::sent(&line)];
    evidence.extend(barrier.evidence());
    let answer = events.iter().find_map(|event| match event {
        Event::Response {
            id: Value::Null,
            result,
            raw,
            ..
        } => Some((result, raw)),
        _ => None,
    });
    let answer = match answer {
        Some((result, raw)) => {
            evidence.insert(1, crate::wire::received(raw));
            result
        }
        None => {
            return Verdict::fail(
                "a request with id `null` got no answer with id `null` (-32600 is due)",
                evidence,
            );
        }
    };
    match answer {
        Err(error) if error.code == Some(-32600) => {}
        Err(error) => {
            return Verdict::fail(
                format!("a request with id `null` was answered {error} instead of -32600"),
                evidence,
            );
        }
        Ok(_) => {
            return Verdict::fail(
                "a request with id `null` was served (a v2 request id is never `null`)",
                evidence,
            );
        }
    }
    match &barrier.response {
        Some(Ok(_)) => Verdict::Pass,
        other => Verdict::fail(
            format!(
                "after the `null` id, the agent did not serve `session/new`: {}",
                describe(other, &conn)
            ),
            evidence,
        ),
    }
}
