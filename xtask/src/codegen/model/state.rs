//! v2's `x-state`: which definitions a message *upserts* into the peer's session state, so that
//! their optional fields are typed as [`Patch`](super::Presence::Patch) (absent = unchanged,
//! `null` = clear) rather than by the wording of their descriptions.
//!
//! An action is `{action, target, id?, field?, value?}`: `upsert` merges `value` (a dotted path
//! into the message; absent: the whole message) into the entity `target`; `append`, `replace`
//! and `remove` change state without patch fields, so they leave the types alone. An action
//! the generator does not know stops it with its schema path, like an unknown keyword.

use super::super::json::Json;
use std::collections::BTreeSet;

/// The actions of an `x-state` entry; only `upsert` changes the generated types.
const ACTIONS: &[&str] = &["upsert", "append", "replace", "remove"];

/// The names of the definitions some `x-state` upsert merges into session state.
pub fn upserted(defs: &[(String, Json)]) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    for (name, def) in defs {
        visit(defs, def, Some(name), &format!("#/$defs/{name}"), &mut out)?;
    }
    Ok(out)
}

/// Finds `x-state` in `schema` and its union arms (where v2 puts one per `SessionUpdate` kind).
fn visit(
    defs: &[(String, Json)],
    schema: &Json,
    own_name: Option<&str>,
    path: &str,
    out: &mut BTreeSet<String>,
) -> Result<(), String> {
    if let Some(state) = schema.get("x-state") {
        let upserts = actions(state, &format!("{path}/x-state"))?;
        for value_path in upserts {
            let mut targets = resolve(defs, schema, value_path.unwrap_or(""));
            if value_path.is_none()
                && let Some(name) = own_name
            {
                targets.insert(name.to_owned());
            }
            if targets.is_empty() {
                return Err(format!(
                    "{path}/x-state: the upserted value `{}` names no definition",
                    value_path.unwrap_or("(the message)")
                ));
            }
            out.extend(targets);
        }
    }
    for key in ["anyOf", "oneOf"] {
        for (i, arm) in schema
            .get(key)
            .and_then(Json::as_array)
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            visit(defs, arm, None, &format!("{path}/{key}/{i}"), out)?;
        }
    }
    Ok(())
}

/// The `value` paths of the upserts among `state`'s actions (`None`: the whole message).
fn actions<'a>(state: &'a Json, path: &str) -> Result<Vec<Option<&'a str>>, String> {
    let scopes = state
        .as_object()
        .ok_or_else(|| format!("{path}: `x-state` is not an object"))?;
    let mut upserts = Vec::new();
    for (scope, list) in scopes {
        let list = list
            .as_array()
            .ok_or_else(|| format!("{path}/{scope}: not a list of actions"))?;
        for (i, action) in list.iter().enumerate() {
            let kind = action.get("action").and_then(Json::as_str).unwrap_or("");
            if !ACTIONS.contains(&kind) {
                return Err(format!(
                    "{path}/{scope}/{i}: the `x-state` action `{kind}` is unknown to the \
                     generator; teach it (xtask/src/codegen/model/state.rs)"
                ));
            }
            if kind == "upsert" {
                upserts.push(action.get("value").and_then(Json::as_str));
            }
        }
    }
    Ok(upserts)
}

/// The definitions `dotted` (property names; empty: the schema itself) leads to from `schema`,
/// through `$ref`s, single-`$ref` `allOf`s and the arms of unions (a path may go on in
/// several arms, as `subject.toolCall` does in the permission subject's `tool_call` arm).
fn resolve(defs: &[(String, Json)], schema: &Json, dotted: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let segments: Vec<&str> = dotted.split('.').filter(|s| !s.is_empty()).collect();
    walk(defs, schema, &segments, &mut out, 0);
    out
}

fn walk(
    defs: &[(String, Json)],
    schema: &Json,
    segments: &[&str],
    out: &mut BTreeSet<String>,
    depth: usize,
) {
    // Schemas refer to each other; the paths v2 uses are a few levels deep.
    if depth > 16 {
        return;
    }
    if let Some(name) = schema.get("$ref").and_then(Json::as_str).and_then(def_name) {
        if segments.is_empty() {
            out.insert(name.to_owned());
        }
        if let Some((_, def)) = defs.iter().find(|(n, _)| n == name) {
            walk(defs, def, segments, out, depth + 1);
        }
        return;
    }
    if let Some((first, rest)) = segments.split_first()
        && let Some(property) = schema
            .get("properties")
            .and_then(Json::as_object)
            .and_then(|props| props.iter().find(|(n, _)| n == first))
    {
        walk(defs, &property.1, rest, out, depth + 1);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for arm in schema.get(key).and_then(Json::as_array).unwrap_or(&[]) {
            walk(defs, arm, segments, out, depth + 1);
        }
    }
}

fn def_name(target: &str) -> Option<&str> {
    target
        .strip_prefix("#/$defs/")
        .or_else(|| target.strip_prefix("#/definitions/"))
}
