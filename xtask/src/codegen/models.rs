//! `crates/acp-types/src/generated/models.rs`, the module `acp_types::models` (feature
//! `models`): the seed-era `session/set_model` and the `models` member of session answers,
//! which the current schemas dropped for a config option of category `model`. Typed from the
//! `2025-10` pin so that agents still sending `models` can be used.
//!
//! Only [`ROOTS`] and what they reference are taken from the seed schema. A referenced
//! definition that every current schema ([`CURRENT`]) has in the same shape (descriptions
//! aside) is not generated again: the module imports the crate root's type. Whatever else the
//! roots reference is generated into the module. The emitter is the one of the main schemas;
//! this file only picks the definitions and writes the method impls of the module.

use super::json::Json;
use super::model::{self, MethodKind};
use super::{emit, reformat, source};
use crate::{Mode, ensure_file_contents, project_root};

/// The pin the module is generated from.
pub const PIN: &str = "2025-10";
/// The pins whose types are the crate root (one or the other, by the `unstable` feature): a
/// definition is reused only when both have it in the same shape.
pub const CURRENT: &[&str] = &["stable", "unstable"];
/// The generated file.
pub const OUTPUT: &str = "crates/acp-types/src/generated/models.rs";
/// The seed definitions the module is made of.
pub const ROOTS: &[&str] = &[
    "ModelId",
    "ModelInfo",
    "SessionModelState",
    "SetSessionModelRequest",
    "SetSessionModelResponse",
];
/// A struct made for the module: the `models` member that the seed's session answers carry
/// (the same property in each), to read it from an answer or add it to one.
const MEMBER: &str = "SessionModels";
const MEMBER_OWNERS: &[&str] = &["NewSessionResponse", "LoadSessionResponse"];
const MEMBER_PROPERTY: &str = "models";
/// Where the emitter's method tables start; the module writes its own instead.
const METHODS_MARKER: &str = "// Methods: what each side may call";
const IMPORTS_MARKER: &str = "use serde::{Deserialize, Serialize};\n";

/// Writes (or with `--check` compares) the module; whether it changed.
pub fn run(mode: Mode) -> Result<bool, String> {
    let pin = source::pin(PIN)?;
    let seed = source::fetch(&pin)?;
    let current = CURRENT
        .iter()
        .map(|name| source::fetch(&source::pin(name)?))
        .collect::<Result<Vec<_>, _>>()?;
    let code = generate(&seed, &current, &pin.description())?;
    ensure_file_contents(&project_root().join(OUTPUT), &code, mode)
}

/// The module's formatted source, from the seed schema's text and the current schemas' texts.
pub fn generate(seed: &str, current: &[String], source: &str) -> Result<String, String> {
    let seed = parse(seed)?;
    let seed_defs = defs(&seed)?;
    let current = current
        .iter()
        .map(|t| parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    let current_defs = current.iter().map(defs).collect::<Result<Vec<_>, _>>()?;

    let member = member_def(seed_defs)?;
    // The definitions the roots (and the member) reach, in seed order.
    let mut reached: Vec<String> = Vec::new();
    let mut queue: Vec<String> = ROOTS.iter().map(|r| r.to_string()).collect();
    refs(&member, &mut queue);
    while let Some(name) = queue.pop() {
        if reached.contains(&name) {
            continue;
        }
        let def = find(seed_defs, &name)
            .ok_or_else(|| format!("the {PIN} schema has no definition `{name}`"))?;
        refs(def, &mut queue);
        reached.push(name);
    }
    let reused: Vec<&str> = seed_defs
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| reached.iter().any(|r| r == name) && !ROOTS.contains(name))
        .filter(|name| {
            let seed_shape = find(seed_defs, name).map(shape);
            current_defs
                .iter()
                .all(|defs| find(defs, name).map(shape) == seed_shape)
        })
        .collect();

    let mut sub: Vec<(String, Json)> = seed_defs
        .iter()
        .filter(|(name, _)| reached.contains(name))
        .cloned()
        .collect();
    sub.push((MEMBER.to_owned(), member));
    let mut model = model::lower(&Json::Object(vec![("$defs".into(), Json::Object(sub))]))?;
    model.items.retain(|item| {
        !reused
            .iter()
            .any(|r| model::names::rust_name(r) == item.name)
    });
    let methods = std::mem::take(&mut model.methods);

    let code = emit::emit(&model, source);
    let (types, _) = code
        .split_once(METHODS_MARKER)
        .ok_or("the emitter's output has no method section marker")?;
    let (header, items) = types
        .split_once(IMPORTS_MARKER)
        .ok_or("the emitter's output has no serde import")?;
    let mut out = format!("{header}{IMPORTS_MARKER}");
    if !reused.is_empty() {
        let names: Vec<String> = reused.iter().map(|r| model::names::rust_name(r)).collect();
        out.push_str(&format!(
            "// The same in the current schemas: the crate root's types.\nuse crate::{{{}}};\n",
            names.join(", ")
        ));
    }
    out.push_str(items);
    out.push_str("// Methods: the module's own, beside the crate's `METHODS`.\n\n");
    for m in &methods {
        let response = m
            .response
            .as_deref()
            .ok_or_else(|| format!("`{}`: only requests are expected here", m.method))?;
        if m.kind != MethodKind::Request || m.handled_by != "agent" {
            return Err(format!(
                "`{}`: only client-to-agent requests are expected",
                m.method
            ));
        }
        out.push_str(&format!(
            "impl crate::Method for {p} {{ const METHOD: &'static str = {method:?}; }}\n\
             impl crate::Request for {p} {{ type Response = {response}; }}\n\
             impl crate::ClientToAgent for {p} {{}}\n",
            p = m.params,
            method = m.method,
        ));
    }
    out.push_str("\n/// The methods of this module, as [`crate::METHODS`] lists the crate's.\npub const METHODS: &[crate::MethodInfo] = &[\n");
    for m in &methods {
        out.push_str(&format!(
            "    crate::MethodInfo {{ name: {:?}, kind: crate::MethodKind::Request, handled_by: crate::Side::Agent, params: {:?}, response: {:?} }},\n",
            m.method, m.params, m.response
        ));
    }
    out.push_str("];\n");
    reformat(&out)
}

/// The member struct: `models` as the seed's session answers declare it, checked to be the
/// same in each.
fn member_def(seed_defs: &[(String, Json)]) -> Result<Json, String> {
    let mut property: Option<&Json> = None;
    for owner in MEMBER_OWNERS {
        let found = find(seed_defs, owner)
            .and_then(|d| d.get("properties"))
            .and_then(|p| p.get(MEMBER_PROPERTY))
            .ok_or_else(|| format!("the {PIN} schema's `{owner}` has no `{MEMBER_PROPERTY}`"))?;
        match property {
            Some(first) if shape(first) != shape(found) => {
                return Err(format!(
                    "`{MEMBER_PROPERTY}` differs between {MEMBER_OWNERS:?} in the {PIN} schema"
                ));
            }
            _ => property = Some(found),
        }
    }
    let description = format!(
        "The `{MEMBER_PROPERTY}` member of the seed-era {} answers: decode it from a whole \
         answer (other members are ignored), or serialize it and add its member to one.",
        MEMBER_OWNERS
            .iter()
            .map(|o| format!("`{o}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    );
    Ok(Json::Object(vec![
        ("description".into(), Json::String(description)),
        ("type".into(), Json::String("object".into())),
        (
            "properties".into(),
            Json::Object(vec![(
                MEMBER_PROPERTY.into(),
                property.expect("at least one owner").clone(),
            )]),
        ),
    ]))
}

fn parse(text: &str) -> Result<Json, String> {
    serde_json::from_str(text).map_err(|e| format!("the schema is not valid JSON: {e}"))
}

fn defs(schema: &Json) -> Result<&[(String, Json)], String> {
    schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Json::as_object)
        .ok_or_else(|| "schema has no $defs".to_owned())
}

fn find<'a>(defs: &'a [(String, Json)], name: &str) -> Option<&'a Json> {
    defs.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// The definitions `schema` references, pushed onto `out`.
fn refs(schema: &Json, out: &mut Vec<String>) {
    match schema {
        Json::Object(members) => {
            for (key, value) in members {
                if key == "$ref"
                    && let Some(name) = value.as_str().and_then(|t| {
                        t.strip_prefix("#/$defs/")
                            .or_else(|| t.strip_prefix("#/definitions/"))
                    })
                {
                    out.push(name.to_owned());
                }
                refs(value, out);
            }
        }
        Json::Array(items) => items.iter().for_each(|i| refs(i, out)),
        _ => {}
    }
}

/// A definition without its prose (`description` texts), for comparing shapes. A property
/// named `description` is an object, so it stays.
fn shape(schema: &Json) -> Json {
    match schema {
        Json::Object(members) => Json::Object(
            members
                .iter()
                .filter(|(k, v)| !(k == "description" && matches!(v, Json::String(_))))
                .map(|(k, v)| (k.clone(), shape(v)))
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(shape).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(defs: &str) -> String {
        format!(r#"{{"$defs": {{{defs}}}}}"#)
    }

    const SEED: &str = r##"
        "SessionId": {"description": "old words", "type": "string"},
        "ModelId": {"type": "string"},
        "ModelInfo": {"type": "object", "required": ["modelId", "name"], "properties": {
            "modelId": {"$ref": "#/$defs/ModelId"}, "name": {"type": "string"},
            "description": {"type": ["string", "null"]}}},
        "SessionModelState": {"type": "object", "required": ["currentModelId", "availableModels"],
            "properties": {"currentModelId": {"$ref": "#/$defs/ModelId"},
            "availableModels": {"type": "array", "items": {"$ref": "#/$defs/ModelInfo"}}}},
        "SetSessionModelRequest": {"type": "object", "required": ["sessionId", "modelId"],
            "x-method": "session/set_model", "x-side": "agent", "properties": {
            "sessionId": {"$ref": "#/$defs/SessionId"}, "modelId": {"$ref": "#/$defs/ModelId"}}},
        "SetSessionModelResponse": {"type": "object", "properties": {},
            "x-method": "session/set_model", "x-side": "agent"},
        "NewSessionResponse": {"type": "object", "properties": {"models": {"anyOf": [
            {"$ref": "#/$defs/SessionModelState"}, {"type": "null"}]}}},
        "LoadSessionResponse": {"type": "object", "properties": {"models": {"anyOf": [
            {"$ref": "#/$defs/SessionModelState"}, {"type": "null"}]}}}
    "##;

    fn generated(current_session_id: &str) -> String {
        let current = schema(&format!(r#""SessionId": {current_session_id}"#));
        generate(&schema(SEED), &[current.clone(), current], "seed").unwrap()
    }

    #[test]
    fn a_definition_of_the_same_shape_is_reused() {
        let code = generated(r#"{"description": "new words", "type": "string"}"#);
        assert!(code.contains("use crate::SessionId;"), "{code}");
        assert!(!code.contains("pub struct SessionId"), "{code}");
        for item in ROOTS.iter().chain([&MEMBER]) {
            assert!(
                code.contains(&format!("pub struct {item}")),
                "{item}: {code}"
            );
        }
        assert!(code.contains(
            "impl crate::Request for SetSessionModelRequest {\n    type Response = SetSessionModelResponse;"
        ), "{code}");
        assert!(!code.contains("enum ClientRequest"), "{code}");
    }

    #[test]
    fn a_definition_of_another_shape_is_generated() {
        let code = generated(r#"{"type": "integer"}"#);
        assert!(!code.contains("use crate::SessionId"), "{code}");
        assert!(code.contains("pub struct SessionId(pub String)"), "{code}");
    }
}
