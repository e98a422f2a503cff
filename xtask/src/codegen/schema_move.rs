//! Evidence that a schema move needs no hand edit and shows only what changed (issue 28): the
//! stable pin moved to a fixture schema, which is the stable schema plus a new update kind
//! (`fixture_update`), a new capability (`clientCapabilities.fixture`) and a new method
//! (`fixture/ping`, with its request and response in the envelopes' unions).
//!
//! - `a_schema_move_changes_only_what_the_schema_change_explains` (in the default suite, a
//!   second or so): the committed generated files are the generator's output for the stable
//!   pin (nothing in them was edited by hand); every top-level item of the generated types and
//!   strategies that the move adds, removes or changes names a new item; `schema-diff` lists
//!   the three; the runtime coverage check names exactly the three.
//! - `a_schema_move_end_to_end` (ignored: it builds acp-types' tests in a scratch copy, a few
//!   minutes from cold; CI runs it): the generated files are written into a copy of acp-types,
//!   its snapshots re-recorded (`INSTA_UPDATE=always`, as `cargo xtask rerecord` does), and its
//!   tests pass again with no edit; the recordings that changed are named (only the stable wire
//!   snapshot), and each changed line of it is a new type or a type whose sample the schema
//!   change explains (its strategy changed, or it contains such a type).

use super::coverage::{self, Kind};
use super::json::Json;
use super::schema_diff;
use super::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What a top-level item must mention for its change to be explained by the move.
const MARKERS: &[&str] = &["Fixture", "fixture"];

/// The stable pin's schema and the source description the generated files carry.
fn stable() -> (String, String) {
    let pin = source::pin("stable").unwrap();
    (source::fetch(&pin).unwrap(), pin.description())
}

/// The member `key` of the object `json`.
fn at<'a>(json: &'a mut Json, key: &str) -> &'a mut Json {
    match json {
        Json::Object(members) => members
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no `{key}`")),
        _ => panic!("`{key}` of a non-object"),
    }
}

/// Sets the member `key` of the object `json`, in place or last: the schema's member order is
/// the generated code's order, which `serde_json::Value` (sorted keys) would not keep.
fn set(json: &mut Json, key: &str, value: impl Into<Value>) {
    let value: Json = serde_json::from_str(&value.into().to_string()).unwrap();
    let Json::Object(members) = json else {
        panic!("setting `{key}` of a non-object")
    };
    match members.iter_mut().find(|(k, _)| k == key) {
        Some((_, old)) => *old = value,
        None => members.push((key.to_owned(), value)),
    }
}

fn items_mut(json: &mut Json) -> &mut Vec<Json> {
    match json {
        Json::Array(items) => items,
        _ => panic!("not an array"),
    }
}

fn value(json: &Json) -> Value {
    serde_json::from_str(&json.to_compact()).unwrap()
}

/// `old` plus a new update kind, capability and method, each appended after what exists.
fn moved(old: &str) -> String {
    let mut schema: Json = serde_json::from_str(old).unwrap();
    let defs = at(&mut schema, "$defs");
    let meta = value(at(at(at(defs, "LogoutRequest"), "properties"), "_meta"));

    // The update kind: a variant of SessionUpdate carrying a new payload type.
    set(
        defs,
        "FixtureUpdate",
        json!({
            "description": "A fixture update: a note from the agent.",
            "type": "object",
            "properties": {
                "_meta": meta,
                "note": { "description": "The note.", "type": "string" },
            },
            "required": ["note"],
        }),
    );
    let arms = items_mut(at(at(defs, "SessionUpdate"), "oneOf"));
    let mut arm = arms
        .iter()
        .find(|a| {
            a.get("properties")
                .and_then(|p| p.get("sessionUpdate"))
                .and_then(|t| t.get("const"))
                .and_then(Json::as_str)
                == Some("plan_removed")
        })
        .unwrap()
        .clone();
    set(&mut arm, "description", "A fixture update.");
    set(
        at(&mut arm, "properties"),
        "sessionUpdate",
        json!({ "type": "string", "const": "fixture_update" }),
    );
    set(
        &mut arm,
        "allOf",
        json!([{ "$ref": "#/$defs/FixtureUpdate" }]),
    );
    arms.push(arm);

    // The capability: `clientCapabilities.fixture`, an object like `plan`.
    let mut capability = at(defs, "PlanCapabilities").clone();
    set(
        &mut capability,
        "description",
        "Capabilities for receiving fixture updates.",
    );
    set(defs, "FixtureCapabilities", value(&capability));
    let properties = at(at(defs, "ClientCapabilities"), "properties");
    let mut field = at(properties, "plan").clone();
    set(
        &mut field,
        "description",
        "Whether the Client takes `fixture_update` updates.",
    );
    set(
        &mut field,
        "anyOf",
        json!([{ "$ref": "#/$defs/FixtureCapabilities" }, { "type": "null" }]),
    );
    set(properties, "fixture", value(&field));

    // The method: `fixture/ping`, a request the agent handles, shaped like `logout`, with its
    // request and response in the envelopes' unions.
    for kind in ["Request", "Response"] {
        let mut def = at(defs, &format!("Logout{kind}")).clone();
        set(
            &mut def,
            "description",
            format!("The fixture ping's {}.", kind.to_lowercase()),
        );
        set(&mut def, "x-method", "fixture/ping");
        set(defs, &format!("FixturePing{kind}"), value(&def));
        let union = if kind == "Request" {
            let params = at(at(at(defs, "ClientRequest"), "properties"), "params");
            &mut items_mut(at(params, "anyOf"))[0]
        } else {
            let result = &mut items_mut(at(at(defs, "AgentResponse"), "anyOf"))[0];
            at(at(result, "properties"), "result")
        };
        let union = items_mut(at(union, "anyOf"));
        let mut arm = union
            .iter()
            .find(|a| a.get("title").and_then(Json::as_str) == Some(&format!("Logout{kind}")))
            .unwrap()
            .clone();
        set(&mut arm, "title", format!("FixturePing{kind}"));
        set(&mut arm, "description", "The fixture ping.");
        set(
            &mut arm,
            "allOf",
            json!([{ "$ref": format!("#/$defs/FixturePing{kind}") }]),
        );
        union.push(arm);
    }
    schema.to_compact()
}

/// The generated types and strategies for a schema.
struct Generated {
    types: String,
    strategies: String,
}

fn generate_both(text: &str, description: &str) -> Generated {
    let model = lower(text).unwrap();
    Generated {
        types: reformat(&emit::emit(&model, description)).unwrap(),
        strategies: reformat(&strategies::emit(&model, description, OUTPUTS[0].root).unwrap())
            .unwrap(),
    }
}

/// The top-level items of rustfmt'd code, each with its docs and attributes: an item ends at a
/// closing line at column 0 (`}`, `};`, `});`) or a one-line item ending in `;`.
fn items(code: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    for line in code.lines() {
        if line.trim().is_empty() && current.is_empty() {
            continue;
        }
        current.push_str(line);
        current.push('\n');
        let at_column_0 = !line.starts_with(char::is_whitespace);
        // A section comment (`// Methods: ...`) is an item of its own, not the next one's.
        let section = current == format!("{line}\n") && line.starts_with("// ");
        let ends = section
            || at_column_0
                && (line.starts_with('}')
                    || (line.ends_with(';') && !line.starts_with("#") && !line.starts_with("//")));
        if ends {
            items.push(std::mem::take(&mut current));
        }
    }
    if !current.trim().is_empty() {
        items.push(current);
    }
    items
}

/// What an item declares: its first line that is neither docs nor an attribute.
fn item_head(item: &str) -> &str {
    item.lines()
        .find(|l| !l.starts_with("///") && !l.starts_with("#[") && !l.starts_with("//!"))
        .unwrap_or_default()
}

/// The items only in `old` and only in `new` (as multisets).
fn changed_items(old: &str, new: &str) -> (Vec<String>, Vec<String>) {
    let count = |code: &str| {
        let mut counts: BTreeMap<String, isize> = BTreeMap::new();
        for item in items(code) {
            *counts.entry(item).or_default() += 1;
        }
        counts
    };
    let (old, new) = (count(old), count(new));
    let only = |a: &BTreeMap<String, isize>, b: &BTreeMap<String, isize>| {
        a.iter()
            .filter(|(item, n)| b.get(*item).copied().unwrap_or(0) < **n)
            .map(|(item, _)| item.clone())
            .collect::<Vec<_>>()
    };
    (only(&old, &new), only(&new, &old))
}

/// Each type's strategy function and the strategies it calls, from a strategies file.
fn strategy_graph(strategies: &str) -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut graph = BTreeMap::new();
    for item in items(strategies) {
        let Some(rest) = item.split("pub fn arb_").nth(1) else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let calls = item
            .split("arb_")
            .skip(2)
            .map(|s| {
                s.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .collect();
        graph.insert(name, (item, calls));
    }
    graph
}

/// The types whose sample the move may change: those whose strategy changed, and those whose
/// strategy calls one of them, to any depth; and the types the move adds.
fn explained_samples(old: &str, new: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (old, new) = (strategy_graph(old), strategy_graph(new));
    let added: BTreeSet<String> = new
        .keys()
        .filter(|t| !old.contains_key(*t))
        .cloned()
        .collect();
    let mut changed: BTreeSet<String> = new
        .iter()
        .filter(|(t, (item, _))| old.get(*t).is_some_and(|(before, _)| before != item))
        .map(|(t, _)| t.clone())
        .collect();
    loop {
        let more: Vec<String> = new
            .iter()
            .filter(|(t, (_, calls))| {
                !changed.contains(*t)
                    && !added.contains(*t)
                    && calls
                        .iter()
                        .any(|c| changed.contains(c) || added.contains(c))
            })
            .map(|(t, _)| t.clone())
            .collect();
        if more.is_empty() {
            break;
        }
        changed.extend(more);
    }
    (changed, added)
}

#[test]
fn a_schema_move_changes_only_what_the_schema_change_explains() {
    let (old_text, description) = stable();
    let new_text = moved(&old_text);
    let old = generate_both(&old_text, &description);

    // No hand edit: the committed files are exactly the generator's output.
    let committed = |path: &str| std::fs::read_to_string(project_root().join(path)).unwrap();
    assert!(
        old.types == committed(OUTPUTS[0].types)
            && old.strategies == committed(OUTPUTS[0].strategies),
        "the committed stable files are not the generator's output: run `cargo xtask codegen`"
    );

    // Every changed item of the generated code names a new item of the schema.
    let new = generate_both(&new_text, &description);
    for (what, before, after) in [
        ("types", &old.types, &new.types),
        ("strategies", &old.strategies, &new.strategies),
    ] {
        let (removed, added) = changed_items(before, after);
        assert!(!added.is_empty(), "{what}: the move changed nothing");
        let explained = |item: &String| MARKERS.iter().any(|m| item.contains(m));
        for item in &added {
            assert!(
                explained(item),
                "{what}: a change the schema change does not explain:\n{item}"
            );
        }
        // A removed item is the old text of a changed one: its new text names a new item.
        for item in &removed {
            assert!(
                added
                    .iter()
                    .any(|a| item_head(a) == item_head(item) && explained(a)),
                "{what}: an item the move removed, with no explained new text:\n{item}"
            );
        }
        eprintln!(
            "{what}: the move changed {} of {} items ({} new)",
            added.len(),
            items(after).len(),
            added.len() - removed.len()
        );
    }

    // The diff names the three.
    let diff = schema_diff::diff_texts(&old_text, &new_text).unwrap();
    let names = |list: &[(String, Vec<schema_diff::MethodShape>)]| {
        list.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>()
    };
    assert_eq!(names(&diff.methods_added), ["fixture/ping"]);
    assert_eq!(diff.capabilities_added, ["ClientCapabilities.fixture"]);
    let added_variants = |union: &str| diff.variants[union].0.clone();
    assert_eq!(
        added_variants("SessionUpdate"),
        ["sessionUpdate=\"fixture_update\""]
    );
    assert_eq!(
        added_variants("ClientRequest.params"),
        ["FixturePingRequest"]
    );
    assert_eq!(
        added_variants("AgentResponse.result"),
        ["FixturePingResponse"]
    );

    // The runtime coverage check names exactly the three new items.
    let before = coverage::check_workspace(&project_root(), &old_text).unwrap();
    assert!(before.is_complete(), "{}", before.render());
    let after = coverage::check_workspace(&project_root(), &new_text).unwrap();
    assert_eq!(
        after.missing,
        [
            (Kind::Method, "fixture/ping".to_owned()),
            (Kind::Variant, "SessionUpdate.fixture_update".to_owned()),
            (Kind::Capability, "ClientCapabilities.fixture".to_owned()),
        ]
    );
    let report = after.render();
    assert!(report.contains("\n  method fixture/ping\n"), "{report}");

    // What the wire snapshot may show: the new types, and the few whose samples contain a
    // changed strategy.
    let (changed, added) = explained_samples(&old.strategies, &new.strategies);
    assert_eq!(
        added.iter().collect::<Vec<_>>(),
        [
            "FixtureCapabilities",
            "FixturePingRequest",
            "FixturePingResponse",
            "FixtureUpdate"
        ]
    );
    assert!(changed.contains("SessionUpdate") && changed.contains("ClientCapabilities"));
    let all = strategy_graph(&new.strategies).len();
    assert!(
        changed.len() * 4 < all,
        "{} of {all} samples may change: {changed:?}",
        changed.len()
    );
}

/// A recording directory's files, by name.
fn recordings(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The type a wire snapshot line is about (`Type: json`).
fn line_type(line: &str) -> Option<&str> {
    line.split_once(": ").map(|(t, _)| t)
}

#[test]
#[ignore = "builds acp-types' tests in a scratch copy (minutes from cold); CI runs it"]
fn a_schema_move_end_to_end() {
    let root = project_root();
    let scratch = root.join("target/schema-move");
    let workspace = scratch.join("workspace");
    let _ = std::fs::remove_dir_all(&workspace);
    // acp-types as it is committed (with the spec examples its tests decode), in a workspace
    // of its own with the real lockfile.
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z", "crates/acp-types", "fixtures/spec"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(listed.status.success());
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).unwrap();
        let to = workspace.join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root.join(name), to).unwrap();
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest
        .lines()
        .find(|l| l.starts_with("members = ["))
        .unwrap();
    std::fs::write(
        workspace.join("Cargo.toml"),
        manifest.replace(members, "members = [\"crates/acp-types\"]"),
    )
    .unwrap();
    std::fs::copy(root.join("Cargo.lock"), workspace.join("Cargo.lock")).unwrap();
    let snapshots = workspace.join("crates/acp-types/tests/snapshots");
    let before = recordings(&snapshots);

    // codegen: the stable pin moved to the fixture schema.
    let (old_text, description) = stable();
    let new = generate_both(&moved(&old_text), &description);
    let (types_file, strategies_file) = (OUTPUTS[0].types, OUTPUTS[0].strategies);
    for (file, text) in [(types_file, &new.types), (strategies_file, &new.strategies)] {
        assert!(ensure_file_contents(&workspace.join(file), text, crate::Mode::Write).unwrap());
    }

    // rerecord, then the tests again without INSTA_UPDATE: no edit by hand in between.
    let cargo = |update: bool| {
        let mut command = std::process::Command::new(env!("CARGO"));
        command
            .args(["test", "-q", "-p", "acp-rs-types", "--no-fail-fast"])
            .current_dir(&workspace)
            .env("CARGO_TARGET_DIR", scratch.join("target"))
            .env("GIT_CEILING_DIRECTORIES", &scratch)
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .env("CARGO_PROFILE_TEST_DEBUG", "0")
            .env_remove("INSTA_UPDATE");
        if update {
            command.env("INSTA_UPDATE", "always");
        }
        let status = command.status().unwrap();
        assert!(
            status.success(),
            "cargo test -p acp-rs-types (update: {update})"
        );
    };
    cargo(true);
    cargo(false);

    // Every recording that changed is named: only the stable wire snapshot.
    let after = recordings(&snapshots);
    let changed: Vec<&String> = after
        .iter()
        .filter(|(name, text)| before.get(*name) != Some(text))
        .map(|(name, _)| name)
        .collect();
    eprintln!("recordings changed by the move: {changed:?}");
    assert_eq!(changed, ["wire_snapshots__stable_types.snap"]);

    // Each changed line is a new type, or a type whose sample the change explains.
    let name = "wire_snapshots__stable_types.snap";
    let old_lines: BTreeSet<&str> = before[name].lines().collect();
    let new_lines: BTreeSet<&str> = after[name].lines().collect();
    let removed: Vec<&str> = old_lines.difference(&new_lines).copied().collect();
    let added: Vec<&str> = new_lines.difference(&old_lines).copied().collect();
    let old = generate_both(&old_text, &description);
    let (explained, new_types) = explained_samples(&old.strategies, &new.strategies);
    for line in removed.iter().chain(&added) {
        let ty = line_type(line).unwrap_or_default();
        assert!(
            explained.contains(ty) || new_types.contains(ty),
            "a snapshot line the schema change does not explain: {line}"
        );
    }
    let total = after[name]
        .lines()
        .filter(|l| line_type(l).is_some())
        .count();
    eprintln!(
        "the stable wire snapshot: {} lines removed, {} added, of {total}; {} samples could \
         change ({explained:?}), {} types are new",
        removed.len(),
        added.len(),
        explained.len(),
        new_types.len()
    );
    assert_eq!(
        added.len() - removed.len(),
        new_types.len(),
        "one new line per new type"
    );
}
