//! Generator tests: small schemas written for the constructs (snapshots of the emitted code),
//! and the three pinned schemas generating code that compiles.

use super::*;

fn fixture(name: &str) -> String {
    let path = project_root().join("fixtures/codegen").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn struct_field_presences() {
    insta::assert_snapshot!(
        generate(&fixture("structs.json"), "fixtures/codegen/structs.json").unwrap()
    );
}

#[test]
fn unions_and_enums() {
    insta::assert_snapshot!(
        generate(&fixture("unions.json"), "fixtures/codegen/unions.json").unwrap()
    );
}

#[test]
fn method_tables() {
    insta::assert_snapshot!(
        generate(&fixture("methods.json"), "fixtures/codegen/methods.json").unwrap()
    );
}

#[test]
fn unrecognised_shapes_stop_with_the_schema_path() {
    let error = generate(&fixture("unsupported.json"), "unsupported").unwrap_err();
    assert_eq!(
        error,
        "#/$defs/Broken/properties/inline: inline object types are not supported; use a $ref"
    );
}

#[test]
fn docs_become_valid_rustdoc() {
    let known = ["Flags"].into_iter().collect();
    let doc = "```\ncode\n```\n```rust\nfn x() {}\n```\nSee [`Flags`], [`Gone`] and [`Gone`](https://x.y), https://a.b/c.";
    assert_eq!(
        emit::rustdoc(doc, &known),
        "```text\ncode\n```\n```text\nfn x() {}\n```\nSee [`Flags`], `Gone` and [`Gone`](https://x.y), <https://a.b/c>."
    );
}

/// The methods of a pinned schema, as (name, kind, side) from its `x-method`/`x-side` types:
/// derived from the schema itself, so that the count follows the pin. A name can be both a
/// request and a notification (unstable's `mcp/message`), so the name alone is not the key.
fn schema_methods(schema: &Json) -> Vec<(String, model::MethodKind, String)> {
    let mut methods: Vec<_> = schema
        .get("$defs")
        .unwrap()
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(name, def)| {
            let method = def.get("x-method").and_then(Json::as_str)?;
            let side = def.get("x-side").and_then(Json::as_str)?;
            let kind = if name.ends_with("Request") {
                model::MethodKind::Request
            } else if name.ends_with("Notification") {
                model::MethodKind::Notification
            } else {
                return None;
            };
            Some((method.to_owned(), kind, side.to_owned()))
        })
        .collect();
    methods.sort_by(|a, b| (&a.0, &a.2, a.1 as u8).cmp(&(&b.0, &b.2, b.1 as u8)));
    methods
}

/// The method list of each generated module's schema (v1 and v2) is exactly what its generated tables
/// hold.
#[test]
fn method_tables_match_the_schemas() {
    for output in OUTPUTS {
        let (pin_name, types_file) = (output.pin, output.types);
        let pin = source::pin(pin_name).unwrap();
        let text = source::fetch(&pin).unwrap();
        let schema: Json = serde_json::from_str(&text).unwrap();
        let in_schema = schema_methods(&schema);
        assert!(
            !in_schema.is_empty(),
            "{pin_name}: no methods in the schema"
        );
        let model = lower(&text).unwrap();
        let mut in_model: Vec<_> = model
            .methods
            .iter()
            .map(|m| (m.method.clone(), m.kind, m.handled_by.clone()))
            .collect();
        in_model.sort_by(|a, b| (&a.0, &a.2, a.1 as u8).cmp(&(&b.0, &b.2, b.1 as u8)));
        assert_eq!(in_model, in_schema, "{pin_name}");
        let generated = std::fs::read_to_string(project_root().join(types_file)).unwrap();
        for (method, _, _) in &in_model {
            assert!(
                generated.contains(&format!("name: {method:?}")),
                "{pin_name}: {method} missing from METHODS"
            );
        }
    }
}

/// Each pinned schema (stable, unstable, v2, v2-unstable, and the Oct 2025 one the seeds
/// describe) generates code that compiles together with acp-types' hand-written support and
/// the helpers that apply to it: `helpers.rs` to v1 and v2, `helpers_v1.rs` to v1 (the v2
/// types build, though v2 support itself comes later); none to the seed-era 2025-10 pin.
#[test]
fn every_pinned_schema_generates_compiling_code() {
    // One small crate per schema, in one throwaway workspace: the generated code names
    // `crate::...`, so each needs its own crate root with acp-types' hand-written support.
    let workspace = project_root().join("target/codegen-check");
    let support = project_root().join("crates/acp-types/src");
    let mut members = Vec::new();
    for pin in source::load_pins().unwrap() {
        let text = source::fetch(&pin).unwrap();
        let code = generate(&text, &pin.name).unwrap();
        // The helpers that apply: the v2 pins name v2 protocol files, and the seed-era 2025-10
        // pin only gives acp-types its model types (`models`), none of the helpers' shapes.
        let helpers: &[&str] = match pin.name.as_str() {
            "2025-10" => &[],
            name if name.starts_with("v2") => &["helpers"],
            _ => &["helpers", "helpers_v1"],
        };
        let helpers: String = helpers
            .iter()
            .map(|h| format!("#[path = {:?}] mod {h};\n", support.join(format!("{h}.rs"))))
            .collect();
        let name = format!("schema-{}", pin.name);
        let dir = workspace.join(&name);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/generated.rs"), code).unwrap();
        std::fs::write(
            dir.join("src/lib.rs"),
            format!(
                "#[path = {:?}] mod methods;\n#[path = {:?}] pub mod support;\nmod generated;\n\
                 {helpers}pub use generated::*;\npub use methods::*;\n\
                 pub use support::{{Meta, Patch, de}};\n",
                support.join("methods.rs"),
                support.join("support/mod.rs"),
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\
                 [dependencies]\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\
                 serde_json = {{ version = \"1\", features = [\"raw_value\"] }}\n"
            ),
        )
        .unwrap();
        members.push(format!("{name:?}"));
    }
    assert_eq!(
        members.len(),
        5,
        "stable, unstable, v2, v2-unstable and 2025-10 are pinned"
    );
    std::fs::write(
        workspace.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\n",
            members.join(", ")
        ),
    )
    .unwrap();
    let status = std::process::Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--workspace", "--manifest-path"])
        .arg(workspace.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", workspace.join("target"))
        .status()
        .unwrap();
    assert!(
        status.success(),
        "generated code does not compile; see the errors above"
    );
}

/// A keyword the generator does not know stops it with the keyword's schema path; a keyword it
/// knowingly ignores is counted, and only the ones with meaning the types lack are announced.
#[test]
fn unknown_keywords_stop_the_generator_and_ignored_ones_are_named() {
    let schema = |extra: &str| {
        format!(
            r#"{{"$defs": {{"Thing": {{"type": "object", "x-scope": {{}}, "properties": {{
                "a": {{"type": "string", "minLength": 1{extra}}}
            }}}}}}}}"#
        )
    };
    let error = lower(&schema(r#", "x-brand-new": true"#)).unwrap_err();
    assert_eq!(
        error,
        "#/$defs/Thing/properties/a: the keyword `x-brand-new` is unknown to the generator; \
         teach it (xtask/src/codegen/model.rs) or list it as ignored, with the reason \
         (xtask/src/codegen/model/keywords.rs)"
    );
    let model = lower(&schema("")).unwrap();
    assert_eq!(
        model.ignored.iter().collect::<Vec<_>>(),
        [(&"minLength", &1), (&"x-scope", &1)]
    );
    assert_eq!(ignored_note(&model), "", "neither changes the types");
}

/// Every pinned schema's keywords are read or ignored without loss: no pin announces a
/// keyword whose meaning the generated types lack (v2's `x-state` upserts type patch fields,
/// `contentEncoding` is said in the field's doc; `x-scope` and `propertyNames` change no type).
#[test]
fn no_pinned_schema_has_keywords_the_types_miss() {
    for pin in ["stable", "unstable", "v2", "v2-unstable"] {
        let text = source::fetch(&source::pin(pin).unwrap()).unwrap();
        assert_eq!(ignored_note(&lower(&text).unwrap()), "", "{pin}");
    }
}

/// v2's `x-state` upserts make every optional field of the upserted definitions a patch
/// (absent = unchanged, `null` = clear), whether or not its description says so, also when
/// the upsert names a value deep inside the message (`subject.toolCall` of a permission
/// request); an unknown action stops the generator with its path.
#[test]
fn x_state_upserts_type_their_fields_as_patches() {
    let text = source::fetch(&source::pin("v2").unwrap()).unwrap();
    let code = generate(&text, "v2").unwrap();
    let field = |owner: &str, field: &str| {
        let start = code.find(&format!("pub struct {owner} {{")).unwrap();
        let body = &code[start..start + code[start..].find("\n}").unwrap()];
        let line = body
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("pub {field}:")))
            .unwrap_or_else(|| panic!("{owner}.{field}"));
        line.trim().to_owned()
    };
    assert_eq!(
        field("ToolCallUpdate", "title"),
        "pub title: Patch<String>,"
    );
    assert_eq!(
        field("ToolCallUpdate", "kind"),
        "pub kind: Patch<ToolKind>,"
    );
    assert_eq!(
        field("ToolCallUpdate", "raw_input"),
        "pub raw_input: Patch<serde_json::Value>,"
    );
    assert_eq!(
        field("TerminalUpdate", "exit_status"),
        "pub exit_status: Patch<TerminalExitStatus>,"
    );
    assert_eq!(
        field("AgentMessage", "content"),
        "pub content: Patch<Vec<ContentBlock>>,"
    );
    // Not upserted: optional stays optional.
    assert!(field("PromptRequest", "idempotency_key").starts_with("pub idempotency_key: Option<"));

    let unknown = r#"{"$defs": {"Thing": {"type": "object", "properties": {},
        "x-state": {"session": [{"action": "teleport", "target": "x"}]}}}}"#;
    assert_eq!(
        lower(unknown).unwrap_err(),
        "#/$defs/Thing/x-state/session/0: the `x-state` action `teleport` is unknown to the \
         generator; teach it (xtask/src/codegen/model/state.rs)"
    );
}
