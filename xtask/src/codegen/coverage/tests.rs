//! The coverage check: on small schemas and tables, and on the committed table against the
//! stable pin.

use super::*;
use crate::codegen::source;
use crate::project_root;
use serde_json::json;

fn schema() -> String {
    json!({ "$defs": {
        "NewSessionRequest": { "x-method": "session/new", "x-side": "agent", "type": "object" },
        "NewSessionResponse": { "x-method": "session/new", "x-side": "agent", "type": "object" },
        "SessionUpdate": { "oneOf": [
            { "type": "object", "required": ["sessionUpdate"],
              "properties": { "sessionUpdate": { "const": "plan" } } },
            { "type": "object", "required": ["sessionUpdate"],
              "properties": { "sessionUpdate": { "const": "brand_new" } } },
            { "description": "catch-all", "type": "object" },
        ] },
        "ClientCapabilities": { "type": "object", "properties": {
            "_meta": {}, "fs": {}, "shiny": {},
        } },
    } })
    .to_string()
}

fn names() -> RuntimeNames {
    let mut names = RuntimeNames::default();
    names.add_file(
        "pub(crate) fn client_method(x: u8) -> Rule {\n}\nfn helper() {}\n",
        true,
    );
    names.add_file(
        "pub trait Agent: Send + 'static {\n    fn new_session(\n}\n\
         impl<T> std::fmt::Debug for SessionClient<T> {\n    pub fn plan(&self) {}\n}\n\
         pub fn free(x: impl Into<u8>) {\n    fn nested() {}\n}\n",
        false,
    );
    names
}

#[test]
fn the_runtime_names_are_read_from_rules_and_impl_blocks() {
    let names = names();
    assert_eq!(
        names.rules.iter().collect::<Vec<_>>(),
        ["client_method", "helper"]
    );
    assert_eq!(
        names.methods.iter().collect::<Vec<_>>(),
        ["Agent::new_session", "SessionClient::plan"]
    );
}

#[test]
fn every_new_item_is_named_and_so_are_stale_entries_and_unknown_names() {
    let table = Table::parse(
        &json!({
            "unions": ["SessionUpdate"],
            "methods": { "session/new": { "by": ["Agent::new_session"] } },
            "variants": {
                "SessionUpdate.plan": { "by": ["SessionClient::plan", "rules::gone"] },
                "SessionUpdate.removed": { "decision": "was dropped" },
            },
            "capabilities": {
                "ClientCapabilities.fs": { "by": ["rules::client_method"] },
                "ClientCapabilities.shiny": { "by": ["rules::shiny"], "pending": "being done" },
            },
        })
        .to_string(),
    )
    .unwrap();
    let report = check(&schema(), &table, &names()).unwrap();
    assert_eq!(
        report.missing,
        [(Kind::Variant, "SessionUpdate.brand_new".to_owned())]
    );
    assert_eq!(
        report.stale,
        [(Kind::Variant, "SessionUpdate.removed".to_owned())]
    );
    assert_eq!(
        report.unknown_names,
        [(
            (Kind::Variant, "SessionUpdate.plan".to_owned()),
            "rules::gone".to_owned()
        )]
    );
    assert_eq!(report.pending.len(), 1, "pending names are not checked");
    assert!(!report.is_complete());
    let text = report.render();
    assert!(
        text.contains("do not account for 1 item(s)") || text.contains("does not account for 1"),
        "{text}"
    );
    assert!(
        text.contains("\n  variant SessionUpdate.brand_new\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  rules::gone (for the variant SessionUpdate.plan)\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  capability ClientCapabilities.shiny: being done\n"),
        "{text}"
    );
}

#[test]
fn an_entry_needs_a_name_or_a_decision() {
    let table = Table::parse(
        &json!({
            "unions": ["SessionUpdate"],
            "methods": { "session/new": {} },
            "variants": {
                "SessionUpdate.plan": { "decision": "d" },
                "SessionUpdate.brand_new": { "decision": "d" },
            },
            "capabilities": {
                "ClientCapabilities.fs": { "decision": "d" },
                "ClientCapabilities.shiny": { "decision": "d" },
            },
        })
        .to_string(),
    )
    .unwrap();
    let report = check(&schema(), &table, &names()).unwrap();
    assert_eq!(report.empty, [(Kind::Method, "session/new".to_owned())]);
    assert!(report.missing.is_empty() && report.stale.is_empty());
    assert!(!report.is_complete());
}

/// The committed table accounts for every method, `SessionUpdate` and `ToolCallContent`
/// variant and capability flag of the stable pin, with names the runtime defines.
#[test]
fn the_runtime_covers_the_stable_schema() {
    let text = source::fetch(&source::pin("stable").unwrap()).unwrap();
    let report = check_workspace(&project_root(), &text).unwrap();
    assert!(report.is_complete(), "{}", report.render());
    let schema: Json = serde_json::from_str(&text).unwrap();
    let items = schema_items(
        &schema,
        &["SessionUpdate".to_owned(), "ToolCallContent".to_owned()],
    )
    .unwrap();
    assert!(items.contains(&(Kind::Variant, "SessionUpdate.plan_update".to_owned())));
    assert!(items.contains(&(Kind::Method, "session/new".to_owned())));
    assert!(items.contains(&(Kind::Capability, "ClientCapabilities.plan".to_owned())));
}
