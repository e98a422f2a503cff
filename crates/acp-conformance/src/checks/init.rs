//! `initialize`: the answer, version negotiation, capabilities, identity.

use acp_types::{InitializeResponse, de::collect_dropped};
use serde_json::Value;

use super::{Ctx, describe};
use crate::client::Caps;
use crate::report::Verdict;

/// Asked for version 1 by the checker.
const SUPPORTED: u64 = 1;
/// A version no agent can support yet.
const FUTURE: u64 = 999;

pub(super) fn response(ctx: &mut Ctx<'_>) -> Verdict {
    let h = ctx.handshake();
    let mut evidence = h.call_evidence.clone();
    evidence.extend(h.exit.iter().cloned());
    match &h.response {
        None => Verdict::fail(
            format!("`initialize` was not answered ({})", h.missing),
            evidence,
        ),
        Some(Err(error)) => {
            Verdict::fail(format!("`initialize` was answered with {error}"), evidence)
        }
        Some(Ok(result)) if !result.is_object() => {
            Verdict::fail("the `initialize` result is not an object", evidence)
        }
        Some(Ok(result)) => match result.get("protocolVersion") {
            None => Verdict::fail("the `initialize` result has no protocolVersion", evidence),
            Some(v) if v.as_u64().is_none_or(|v| v > u64::from(u16::MAX)) => Verdict::fail(
                format!("protocolVersion {v} is not a version number (an integer from 0 to 65535)"),
                evidence,
            ),
            Some(_) => Verdict::Pass,
        },
    }
}

pub(super) fn version_same(ctx: &mut Ctx<'_>) -> Verdict {
    let h = ctx.handshake();
    let Some(result) = h.result() else {
        return Verdict::inconclusive("`initialize` did not succeed");
    };
    match result.get("protocolVersion").and_then(Value::as_u64) {
        Some(SUPPORTED) => Verdict::Pass,
        Some(other) => Verdict::fail(
            format!(
                "asked for version {SUPPORTED}, which every ACP agent speaks, it answered {other}"
            ),
            h.call_evidence,
        ),
        None => Verdict::inconclusive("the answer has no usable protocolVersion"),
    }
}

pub(super) fn version_future(ctx: &mut Ctx<'_>) -> Verdict {
    let latest = ctx
        .handshake()
        .result()
        .and_then(|r| r.get("protocolVersion"))
        .and_then(Value::as_u64);
    let mut conn = match ctx.spawn("init.version.future", Caps::ALL) {
        Ok(conn) => conn,
        Err(verdict) => return verdict,
    };
    let call = conn.call(
        "initialize",
        Ctx::init_params(FUTURE.into(), Caps::ALL),
        ctx.opts.timeout,
    );
    let mut evidence = call.evidence();
    let answered = match &call.response {
        Some(Ok(result)) => result.get("protocolVersion").and_then(Value::as_u64),
        _ => {
            evidence.extend(conn.exit_evidence());
            return Verdict::fail(
                format!(
                    "asked for version {FUTURE}, the agent did not answer with its latest version: {}",
                    describe(&call.response, &conn)
                ),
                evidence,
            );
        }
    };
    match answered {
        Some(FUTURE) => Verdict::fail(
            format!(
                "asked for version {FUTURE}, the agent echoed it instead of answering with the latest version it supports"
            ),
            evidence,
        ),
        Some(v) if v > FUTURE => Verdict::fail(
            format!("asked for version {FUTURE}, the agent answered an even newer version {v}"),
            evidence,
        ),
        Some(v) => match latest {
            Some(latest) if v < latest => Verdict::fail(
                format!(
                    "asked for version {FUTURE}, the agent answered {v}, though it speaks {latest}"
                ),
                evidence,
            ),
            _ => Verdict::Pass,
        },
        None => Verdict::fail(
            "the answer to a version 999 `initialize` has no usable protocolVersion",
            evidence,
        ),
    }
}

pub(super) fn capabilities(ctx: &mut Ctx<'_>) -> Verdict {
    let h = ctx.handshake();
    let Some(result) = h.result() else {
        return Verdict::inconclusive("`initialize` did not succeed");
    };
    let mut problems = Vec::new();
    for (field, want_object) in [
        ("agentCapabilities", true),
        ("authMethods", false),
        ("agentInfo", true),
    ] {
        match result.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(_)) if want_object => {}
            Some(Value::Array(_)) if !want_object => {}
            Some(v) => problems.push(format!(
                "`{field}` must be {}, got {v}",
                if want_object { "an object" } else { "an array" }
            )),
        }
    }
    let (decoded, dropped) =
        collect_dropped(|| serde_json::from_value::<InitializeResponse>(result.clone()));
    if let Err(error) = decoded {
        problems.push(format!("the result does not match the schema: {error}"));
    }
    for d in dropped {
        problems.push(format!(
            "a value that does not match the schema: {}",
            d.value
        ));
    }
    if problems.is_empty() {
        Verdict::Pass
    } else {
        let mut evidence = problems;
        evidence.extend(h.call_evidence);
        Verdict::fail("the `initialize` result is not well formed", evidence)
    }
}

pub(super) fn agent_info(ctx: &mut Ctx<'_>) -> Verdict {
    let h = ctx.handshake();
    let Some(result) = h.result() else {
        return Verdict::inconclusive("`initialize` did not succeed");
    };
    let info = result.get("agentInfo");
    let name = info.and_then(|i| i.get("name")).and_then(Value::as_str);
    let version = info.and_then(|i| i.get("version")).and_then(Value::as_str);
    match (name, version) {
        (Some(_), Some(_)) => Verdict::Pass,
        _ => Verdict::fail(
            "`agentInfo` with a string `name` and `version` is missing",
            h.call_evidence,
        ),
    }
}
