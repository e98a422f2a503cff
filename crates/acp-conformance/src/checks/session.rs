//! Session setup: `session/new`, `session/load`, modes and config options.

use std::collections::HashSet;
use std::time::Instant;

use serde_json::{Value, json};

use super::{Ctx, describe};
use crate::client::Caps;
use crate::report::Verdict;
use crate::turn::{Action, Trigger, text_prompt};
use crate::wire::{Conn, Event, is_turn_content, received, received_lines, sent};

pub(super) fn new(ctx: &mut Ctx<'_>) -> Verdict {
    let basic = match ctx.basic() {
        Ok(b) => b,
        Err(v) => return v,
    };
    let call = &basic.new_call;
    match &call.response {
        Some(Ok(result)) => match result.get("sessionId") {
            Some(Value::String(id)) if !id.is_empty() => Verdict::Pass,
            _ => Verdict::fail(
                "the `session/new` result has no sessionId string",
                call.evidence.clone(),
            ),
        },
        Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
        Some(Err(e)) => Verdict::fail(
            format!("`session/new` was refused with {e}"),
            call.evidence.clone(),
        ),
        None => Verdict::fail("no answer to `session/new` in time", call.evidence.clone()),
    }
}

pub(super) fn unique_ids(ctx: &mut Ctx<'_>) -> Verdict {
    let mut conn = match ctx.connect("session.new.unique_ids", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let mut seen = HashSet::new();
    let mut evidence = Vec::new();
    for _ in 0..3 {
        let call = ctx.new_session_call(&mut conn);
        let id = match ctx.session_of(&call, &conn) {
            Ok(id) => id,
            Err(v) => return v,
        };
        evidence.extend(call.raw.as_deref().map(received));
        if !seen.insert(id.clone()) {
            return Verdict::fail(
                format!("two `session/new` calls were answered with the same session id `{id}`"),
                evidence,
            );
        }
    }
    Verdict::Pass
}

pub(super) fn relative_cwd(ctx: &mut Ctx<'_>) -> Verdict {
    let mut conn = match ctx.connect("session.new.relative_cwd", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let call = conn.call(
        "session/new",
        json!({ "cwd": "relative/project", "mcpServers": [] }),
        ctx.opts.timeout,
    );
    match &call.response {
        Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
        Some(Err(_)) => Verdict::Pass,
        Some(Ok(_)) => Verdict::fail("a relative working directory was accepted", call.evidence()),
        None => Verdict::fail(
            format!(
                "no error for a relative working directory: {}",
                describe(&None, &conn)
            ),
            call.evidence(),
        ),
    }
}

pub(super) fn unknown_id(ctx: &mut Ctx<'_>) -> Verdict {
    let mut conn = match ctx.connect("session.unknown_id", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let call = conn.call(
        "session/prompt",
        json!({
            "sessionId": "conformance-no-such-session",
            "prompt": text_prompt(&ctx.opts.prompt),
        }),
        ctx.opts.turn_timeout,
    );
    match &call.response {
        Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
        Some(Err(_)) => Verdict::Pass,
        Some(Ok(_)) => Verdict::fail(
            "a prompt for a session that was never created was accepted",
            call.evidence(),
        ),
        None => Verdict::fail(
            format!(
                "a prompt for a session that was never created got no error: {}",
                describe(&None, &conn)
            ),
            call.evidence(),
        ),
    }
}

/// What a `session/load` exchange showed.
struct Load {
    evidence: Vec<String>,
    response: Option<Result<Value, crate::client::RpcError>>,
    replayed: usize,
    late: Vec<String>,
}

fn load(ctx: &Ctx<'_>, conn: &mut Conn, session: &str) -> Load {
    let (id, line) = conn.request(
        "session/load",
        json!({ "sessionId": session, "cwd": ctx.cwd(), "mcpServers": [] }),
    );
    let deadline = Instant::now() + ctx.opts.turn_timeout;
    let mut result = Load {
        evidence: vec![sent(&line)],
        response: None,
        replayed: 0,
        late: Vec::new(),
    };
    let replay = |e: &Event| {
        e.session_update()
            .is_some_and(|(s, kind)| s == session && is_turn_content(kind))
    };
    loop {
        match conn.next_event(deadline) {
            Event::Response {
                id: rid,
                result: r,
                raw,
                ..
            } if rid == id => {
                result.response = Some(r);
                result.evidence.push(received(&raw));
                break;
            }
            Event::Request {
                id, method, params, ..
            } => {
                conn.answer(&id, &method, &params);
            }
            e @ Event::Notification { .. } if replay(&e) => result.replayed += 1,
            Event::Eof => break,
            Event::Timeout => {
                conn.expire("the response to `session/load`", ctx.opts.turn_timeout);
                break;
            }
            _ => {}
        }
    }
    if result.response.is_none() {
        result.evidence.extend(conn.exit_evidence());
    }
    if result.response.is_some() {
        let after = conn.listen(conn.grace);
        result.late = received_lines(after.iter().filter(|e| replay(e)).filter_map(Event::raw));
        result.evidence.extend(after.note());
    }
    result
}

pub(super) fn load_replay(ctx: &mut Ctx<'_>) -> Verdict {
    if ctx.agent_cap("/loadSession") != Value::Bool(true) {
        return Verdict::skipped("`loadSession` is not advertised");
    }
    let (mut conn, session) = match ctx.connect_with_session("session.load.replay", Caps::ALL) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let turn = ctx.text_turn(&mut conn, &session, Trigger::Never, Action::SessionCancel);
    if !turn.completed() {
        return Verdict::inconclusive(format!(
            "the turn that was to give the session a history did not complete: {}",
            turn.outcome()
        ));
    }
    // Loading in the same process first; an agent that cannot load an active session gets a
    // second chance in a fresh process, as after an editor restart.
    let mut outcome = load(ctx, &mut conn, &session);
    drop(conn);
    if !matches!(outcome.response, Some(Ok(_))) {
        let mut fresh = match ctx.connect("session.load.replay (fresh process)", Caps::ALL) {
            Ok(c) => c,
            Err(v) => return v,
        };
        let second = load(ctx, &mut fresh, &session);
        let mut evidence = outcome.evidence;
        evidence.push("(then, in a fresh agent process:)".to_owned());
        evidence.extend(second.evidence.iter().cloned());
        outcome = Load { evidence, ..second };
    }
    match &outcome.response {
        Some(Err(e)) if e.code == Some(-32000) => ctx.auth_required(),
        Some(Err(e)) => Verdict::fail(
            format!("loading a session that just had a turn was refused with {e}"),
            outcome.evidence,
        ),
        None => Verdict::fail("no answer to `session/load` in time", outcome.evidence),
        Some(Ok(_)) if !outcome.late.is_empty() => {
            let mut evidence = outcome.evidence;
            evidence.extend(outcome.late);
            Verdict::fail(
                "replayed history arrived after the `session/load` response",
                evidence,
            )
        }
        Some(Ok(_)) if outcome.replayed == 0 => Verdict::fail(
            "the session had a turn, but `session/load` replayed nothing before answering",
            outcome.evidence,
        ),
        Some(Ok(_)) => Verdict::Pass,
    }
}

/// The ordinary run's `session/new` result, or why there is none.
fn basic_session_result(ctx: &mut Ctx<'_>, basic: &super::BasicRun) -> Result<Value, Verdict> {
    match &basic.new_call.response {
        Some(Ok(result)) => Ok(result.clone()),
        Some(Err(e)) if e.code == Some(-32000) => Err(ctx.auth_required()),
        _ => Err(Verdict::inconclusive("`session/new` did not succeed")),
    }
}

/// The `modes` of the ordinary run's `session/new` result, with its evidence.
fn advertised_modes(ctx: &mut Ctx<'_>) -> Result<(Value, Vec<String>), Verdict> {
    let basic = ctx.basic()?;
    let result = basic_session_result(ctx, &basic)?;
    match result.get("modes") {
        None | Some(Value::Null) => Err(Verdict::skipped("`session/new` advertised no modes")),
        Some(modes) => Ok((modes.clone(), basic.new_call.evidence.clone())),
    }
}

pub(super) fn modes_consistent(ctx: &mut Ctx<'_>) -> Verdict {
    let (modes, evidence) = match advertised_modes(ctx) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let mut problems = Vec::new();
    let available = modes.get("availableModes").and_then(Value::as_array);
    let mut ids = HashSet::new();
    match available {
        None => problems.push("`availableModes` is not an array".to_owned()),
        Some(list) if list.is_empty() => problems.push("`availableModes` is empty".to_owned()),
        Some(list) => {
            for mode in list {
                match (
                    mode.get("id").and_then(Value::as_str),
                    mode.get("name").and_then(Value::as_str),
                ) {
                    (Some(id), Some(_)) => {
                        if !ids.insert(id) {
                            problems.push(format!("mode id `{id}` appears twice"));
                        }
                    }
                    _ => problems.push(format!("mode {mode} lacks a string id or name")),
                }
            }
        }
    }
    match modes.get("currentModeId").and_then(Value::as_str) {
        None => problems.push("`currentModeId` is missing".to_owned()),
        Some(current) if available.is_some() && !ids.contains(current) => problems.push(format!(
            "`currentModeId` `{current}` is not one of the available modes"
        )),
        Some(_) => {}
    }
    if problems.is_empty() {
        Verdict::Pass
    } else {
        let reason = problems.join("; ");
        Verdict::fail(reason, evidence)
    }
}

/// A connection with a fresh session and that session's `session/new` result.
fn session_with_result(ctx: &mut Ctx<'_>, label: &str) -> Result<(Conn, String, Value), Verdict> {
    let mut conn = ctx.connect(label, Caps::ALL)?;
    let call = ctx.new_session_call(&mut conn);
    let session = ctx.session_of(&call, &conn)?;
    let result = match call.response {
        Some(Ok(r)) => r,
        _ => Value::Null,
    };
    Ok((conn, session, result))
}

pub(super) fn modes_set(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = advertised_modes(ctx) {
        return v;
    }
    let (mut conn, session, result) = match session_with_result(ctx, "session.modes.set") {
        Ok(x) => x,
        Err(v) => return v,
    };
    let current = result
        .pointer("/modes/currentModeId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let ids: Vec<&str> = result
        .pointer("/modes/availableModes")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(|m| m.get("id")?.as_str()).collect())
        .unwrap_or_default();
    let Some(target) = ids.iter().find(|id| **id != current).or(ids.first()) else {
        return Verdict::inconclusive("this session advertised no usable mode");
    };
    let call = conn.call(
        "session/set_mode",
        json!({ "sessionId": session, "modeId": target }),
        ctx.opts.timeout,
    );
    match &call.response {
        Some(Ok(_)) => Verdict::Pass,
        other => Verdict::fail(
            format!(
                "switching to the advertised mode `{target}` failed: {}",
                describe(other, &conn)
            ),
            call.evidence(),
        ),
    }
}

pub(super) fn modes_unknown(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = advertised_modes(ctx) {
        return v;
    }
    let (mut conn, session, _) = match session_with_result(ctx, "session.modes.unknown") {
        Ok(x) => x,
        Err(v) => return v,
    };
    let call = conn.call(
        "session/set_mode",
        json!({ "sessionId": session, "modeId": "conformance-no-such-mode" }),
        ctx.opts.timeout,
    );
    match &call.response {
        Some(Err(_)) => Verdict::Pass,
        Some(Ok(_)) => Verdict::fail(
            "a mode that was never advertised was accepted",
            call.evidence(),
        ),
        None => Verdict::fail(
            format!("no error for an unknown mode: {}", describe(&None, &conn)),
            call.evidence(),
        ),
    }
}

/// The values of a select option, flattening groups.
fn select_values(option: &Value) -> Option<Vec<&str>> {
    let options = option.get("options")?.as_array()?;
    let mut values = Vec::new();
    for entry in options {
        match entry.get("options").and_then(Value::as_array) {
            Some(group) => values.extend(group.iter().filter_map(|o| o.get("value")?.as_str())),
            None => values.extend(entry.get("value").and_then(Value::as_str)),
        }
    }
    Some(values)
}

/// Problems of one `configOptions` array.
fn config_problems(options: &Value) -> Vec<String> {
    let Some(list) = options.as_array() else {
        return vec![format!("`configOptions` is not an array: {options}")];
    };
    let mut problems = Vec::new();
    let mut ids = HashSet::new();
    for option in list {
        let Some(id) = option.get("id").and_then(Value::as_str) else {
            problems.push(format!("an option has no string id: {option}"));
            continue;
        };
        if !ids.insert(id) {
            problems.push(format!("option id `{id}` appears twice"));
        }
        let current = option.get("currentValue");
        match option.get("type").and_then(Value::as_str) {
            Some("select") => match (current.and_then(Value::as_str), select_values(option)) {
                (_, None) => problems.push(format!("select option `{id}` has no `options` array")),
                (None, _) => problems.push(format!("select option `{id}` has no string currentValue")),
                (Some(value), Some(values)) if !values.contains(&value) => problems.push(format!(
                    "select option `{id}` has currentValue `{value}`, which is not one of its values {values:?}"
                )),
                _ => {}
            },
            Some("boolean") if !current.is_some_and(Value::is_boolean) => {
                problems.push(format!("boolean option `{id}` has no boolean currentValue"))
            }
            None => problems.push(format!("option `{id}` has no type")),
            _ => {}
        }
    }
    problems
}

/// Every `configOptions` array the ordinary run saw: in the `session/new` result and in
/// `config_option_update` notifications.
fn seen_config(ctx: &mut Ctx<'_>) -> Result<(Vec<Value>, Vec<String>), Verdict> {
    let basic = ctx.basic()?;
    let result = basic_session_result(ctx, &basic)?;
    let mut all: Vec<Value> = result.get("configOptions").into_iter().cloned().collect();
    all.retain(|v| !v.is_null());
    all.extend(basic.updates.iter().filter_map(|u| {
        (u.pointer("/update/sessionUpdate")? == "config_option_update")
            .then(|| u.pointer("/update/configOptions").cloned())
            .flatten()
    }));
    if all.is_empty() {
        return Err(Verdict::skipped("the session advertised no config options"));
    }
    Ok((all, basic.new_call.evidence.clone()))
}

pub(super) fn config_consistent(ctx: &mut Ctx<'_>) -> Verdict {
    let (all, evidence) = match seen_config(ctx) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let problems: Vec<String> = all.iter().flat_map(config_problems).collect();
    if problems.is_empty() {
        Verdict::Pass
    } else {
        Verdict::fail(problems.join("; "), evidence)
    }
}

pub(super) fn config_boolean_gated(ctx: &mut Ctx<'_>) -> Verdict {
    let (all, mut evidence) = match seen_config(ctx) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let booleans: Vec<String> = all
        .iter()
        .filter_map(Value::as_array)
        .flatten()
        .filter(|o| o.get("type").and_then(Value::as_str) == Some("boolean"))
        .map(|o| o.to_string())
        .collect();
    if booleans.is_empty() {
        Verdict::Pass
    } else {
        evidence.extend(booleans.into_iter().map(|o| format!("boolean option: {o}")));
        Verdict::fail(
            "a `boolean` config option was sent to a client that did not advertise `session.configOptions.boolean`",
            evidence,
        )
    }
}

pub(super) fn config_set(ctx: &mut Ctx<'_>) -> Verdict {
    if let Err(v) = seen_config(ctx) {
        return v;
    }
    let (mut conn, session, result) = match session_with_result(ctx, "session.config.set") {
        Ok(x) => x,
        Err(v) => return v,
    };
    let options = result
        .get("configOptions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let candidate = options.iter().find_map(|o| {
        if o.get("type").and_then(Value::as_str) != Some("select") {
            return None;
        }
        let id = o.get("id")?.as_str()?;
        let current = o.get("currentValue").and_then(Value::as_str);
        let other = select_values(o)?
            .into_iter()
            .find(|v| Some(*v) != current)?;
        Some((id.to_owned(), other.to_owned()))
    });
    let Some((config, value)) = candidate else {
        return Verdict::skipped("no select option with a second value to switch to");
    };
    let call = conn.call(
        "session/set_config_option",
        json!({ "sessionId": session, "configId": config, "value": value }),
        ctx.opts.timeout,
    );
    match &call.response {
        Some(Ok(result)) => {
            let updated = result
                .get("configOptions")
                .and_then(Value::as_array)
                .and_then(|l| {
                    l.iter()
                        .find(|o| o.get("id").and_then(Value::as_str) == Some(&config))
                })
                .and_then(|o| o.get("currentValue"))
                .and_then(Value::as_str);
            if updated == Some(value.as_str()) {
                Verdict::Pass
            } else {
                Verdict::fail(
                    format!(
                        "the answer does not hold the complete option state with `{config}` set to `{value}`"
                    ),
                    call.evidence(),
                )
            }
        }
        other => Verdict::fail(
            format!(
                "setting `{config}` to its advertised value `{value}` failed: {}",
                describe(other, &conn)
            ),
            call.evidence(),
        ),
    }
}
