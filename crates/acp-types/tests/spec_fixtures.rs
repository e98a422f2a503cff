//! Every JSON example of the specification (transcribed under `fixtures/spec/`) decodes into
//! the type its method or fragment names, and encodes back to the same JSON.
//!
//! "The same JSON" allows one difference: members the example leaves out that encode with
//! their schema default (`false`, `[]`, `{}`) appear in the output. Examples that the spec got
//! wrong are marked in their `notes` and must fail to decode (or drop the bad part).

// The generated types, named bare by `for_each_type!` (the envelope types live in `rpc`).
use acp_types::de::collect_dropped;
use acp_types::{rpc::*, *};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

#[cfg(not(feature = "unstable"))]
#[path = "generated/stable_strategies.rs"]
mod strategies;
#[cfg(feature = "unstable")]
#[path = "generated/unstable_strategies.rs"]
mod strategies;
#[path = "common/support.rs"]
#[allow(dead_code)]
mod support;

type Codec = fn(&str) -> Result<Value, String>;

/// Decode-then-encode by type name, for every generated type.
fn codecs() -> HashMap<&'static str, Codec> {
    let mut map: HashMap<&'static str, Codec> = HashMap::new();
    macro_rules! register {
        ($ty:ident, $arb:ident) => {
            map.insert(stringify!($ty), |json| {
                let value: $ty = serde_json::from_str(json).map_err(|e| e.to_string())?;
                serde_json::to_value(&value).map_err(|e| e.to_string())
            });
        };
    }
    for_each_type!(register);
    map
}

fn fixture_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            fixture_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

/// Which type a fixture holds, and the JSON of that type.
fn target(fixture: &Value) -> Option<(String, Value)> {
    let kind = fixture["kind"].as_str().unwrap();
    let message = &fixture["value"];
    let method = fixture["method"].as_str().unwrap_or_default();
    let info = acp_types::METHODS.iter().find(|m| m.name == method);
    match kind {
        "fragment" => Some((fixture["type"].as_str()?.to_owned(), message.clone())),
        "error_response" => Some(("Error".to_owned(), message["error"].clone())),
        "request" | "notification" => Some((info?.params.to_owned(), message["params"].clone())),
        "response" => Some((info?.response?.to_owned(), message["result"].clone())),
        other => panic!("unknown fixture kind {other}"),
    }
}

/// `expected` is contained in `actual`, where `actual` may add members holding defaults.
fn same_modulo_defaults(expected: &Value, actual: &Value, path: &str, problems: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                match a.get(key) {
                    Some(actual_value) => same_modulo_defaults(
                        value,
                        actual_value,
                        &format!("{path}.{key}"),
                        problems,
                    ),
                    // Absent and `null` mean the same for optional members.
                    None if value.is_null() => {}
                    None => problems.push(format!("{path}.{key} was lost")),
                }
            }
            for (key, value) in a {
                if !e.contains_key(key) && !is_default(value) {
                    problems.push(format!("{path}.{key} appeared with {value}"));
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                same_modulo_defaults(e, a, &format!("{path}[{i}]"), problems);
            }
        }
        (e, a) if e == a => {}
        (e, a) => problems.push(format!("{path}: {e} became {a}")),
    }
}

fn is_default(value: &Value) -> bool {
    match value {
        Value::Bool(b) => !b,
        Value::Array(items) => items.is_empty(),
        Value::Object(members) => members.values().all(is_default),
        _ => false,
    }
}

#[test]
fn spec_examples_decode_and_encode_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/spec");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    assert!(files.len() > 150, "fixtures missing: {}", files.len());
    let codecs = codecs();
    let mut report = String::new();
    let mut failures = Vec::new();
    for file in &files {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let fixture: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let notes = fixture["notes"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let spec_is_wrong = notes.contains("does not validate against schema");
        let spec_drops_members = notes.contains("drops");
        let method = fixture["method"].as_str().unwrap_or_default();

        if method.starts_with('_') {
            let params = serde_json::value::to_raw_value(&fixture["value"]["params"]).unwrap();
            let decoded = acp_types::ClientRequest::decode(method, Some(&params)).unwrap();
            assert!(
                matches!(decoded, acp_types::ClientRequest::Extension(_)),
                "{name}"
            );
            writeln!(report, "{name}: extension {method}").unwrap();
            continue;
        }
        let Some((type_name, json)) = target(&fixture) else {
            writeln!(report, "{name}: not an instance of a schema type").unwrap();
            continue;
        };
        if fixture["kind"] == "response" && json.is_null() {
            let codec = codecs.get(type_name.as_str()).unwrap();
            assert!(codec("null").is_err() && codec("{}").is_ok(), "{name}");
            writeln!(report, "{name}: {type_name} (spec example sends `null`; decode_response accepts it as {{}})").unwrap();
            continue;
        }
        let codec = codecs
            .get(type_name.as_str())
            .unwrap_or_else(|| panic!("{name}: no type {type_name}"));
        let (result, dropped) = collect_dropped(|| codec(&json.to_string()));
        match (result, spec_is_wrong) {
            (Ok(encoded), false) => {
                let mut problems = Vec::new();
                same_modulo_defaults(&json, &encoded, "", &mut problems);
                if !dropped.is_empty() {
                    problems.push(format!("dropped {dropped:?}"));
                }
                if spec_drops_members {
                    assert!(
                        !problems.is_empty(),
                        "{name}: notes say members are dropped, none were"
                    );
                    writeln!(report, "{name}: {type_name} (drops non-schema members)").unwrap();
                } else if problems.is_empty() {
                    writeln!(report, "{name}: {type_name}").unwrap();
                } else {
                    failures.push(format!("{name} as {type_name}: {problems:?}"));
                }
            }
            (Ok(_), true) if !dropped.is_empty() => {
                writeln!(
                    report,
                    "{name}: {type_name} (spec example invalid: lenient field dropped it)"
                )
                .unwrap();
            }
            (Ok(encoded), true) => {
                // Forward compatibility: an unknown tag is kept whole, so the example survives.
                let mut problems = Vec::new();
                same_modulo_defaults(&json, &encoded, "", &mut problems);
                if problems.is_empty() {
                    writeln!(
                        report,
                        "{name}: {type_name} (spec example invalid: kept as an unknown variant)"
                    )
                    .unwrap();
                } else {
                    failures.push(format!(
                        "{name}: marked invalid but decodes as {type_name}: {problems:?}"
                    ));
                }
            }
            (Err(error), true) => {
                writeln!(
                    report,
                    "{name}: {type_name} (spec example invalid: {error})"
                )
                .unwrap();
            }
            (Err(error), false) => failures.push(format!("{name} as {type_name}: {error}")),
        }

        // The method tables decode the same params.
        if let Some(direction) = fixture["direction"].as_str() {
            let params = fixture["value"]
                .get("params")
                .map(|p| serde_json::value::to_raw_value(p).unwrap());
            let kind = fixture["kind"].as_str().unwrap();
            let decoded = match (kind, direction) {
                ("request", "client_to_agent") => {
                    Some(acp_types::ClientRequest::decode(method, params.as_deref()).map(|_| ()))
                }
                ("request", "agent_to_client") => {
                    Some(acp_types::AgentRequest::decode(method, params.as_deref()).map(|_| ()))
                }
                ("notification", "client_to_agent") => Some(
                    acp_types::ClientNotification::decode(method, params.as_deref()).map(|_| ()),
                ),
                ("notification", "agent_to_client") => Some(
                    acp_types::AgentNotification::decode(method, params.as_deref()).map(|_| ()),
                ),
                _ => None,
            };
            if let Some(decoded) = decoded
                && decoded.is_err()
                && !spec_is_wrong
            {
                failures.push(format!("{name}: method table refuses it: {decoded:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixtures failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    insta::assert_snapshot!("spec_fixture_outcomes", report);
}
