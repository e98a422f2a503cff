//! `schema-diff` tests: two small schemas written to cover every kind of change (snapshots of
//! the text and JSON reports), the arguments, and the pinned stable and unstable schemas.

use super::*;
use crate::project_root;

fn fixture(name: &str) -> String {
    let path = project_root().join("fixtures/codegen").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture_diff() -> Diff {
    diff_texts(&fixture("diff_old.json"), &fixture("diff_new.json")).unwrap()
}

#[test]
fn every_kind_of_change_in_text() {
    insta::assert_snapshot!(fixture_diff().render("diff_old.json", "diff_new.json"));
}

#[test]
fn every_kind_of_change_in_json() {
    let value = fixture_diff().to_json("diff_old.json", "diff_new.json");
    insta::assert_snapshot!(serde_json::to_string_pretty(&value).unwrap());
}

#[test]
fn a_schema_against_itself_has_no_changes() {
    let text = fixture("diff_new.json");
    let diff = diff_texts(&text, &text).unwrap();
    assert!(diff.is_empty());
    assert!(
        diff.render("a", "b")
            .ends_with("\nno protocol-level changes\n")
    );
}

#[test]
fn a_schema_without_defs_is_an_error() {
    let err = diff_texts("{}", &fixture("diff_new.json")).unwrap_err();
    assert_eq!(err, "the old schema: schema has no $defs or definitions");
}

/// `schema-diff`'s arguments, as clap parses them under `cargo xtask`.
fn parse(list: &[&str]) -> Result<Args, clap::Error> {
    use clap::{Args as _, FromArgMatches};
    let command = Args::augment_args(clap::Command::new("schema-diff"));
    let matches =
        command.try_get_matches_from(std::iter::once("schema-diff").chain(list.iter().copied()))?;
    Args::from_arg_matches(&matches)
}

#[test]
fn arguments() {
    assert_eq!(
        parse(&["--json", "stable", "x.json"]).unwrap(),
        Args {
            json: true,
            old: "stable".into(),
            new: "x.json".into()
        }
    );
    assert!(parse(&["stable"]).is_err(), "two schemas, OLD and NEW");
    assert!(parse(&["--jsn", "a", "b"]).is_err());
}

fn shape(kind: &'static str, side: &str) -> MethodShape {
    MethodShape {
        kind,
        side: side.to_owned(),
    }
}

/// Known facts of the pinned stable → unstable update (the pins are fetched like codegen's).
#[test]
fn pinned_stable_to_unstable() {
    let schema = |name: &str| source::fetch(&source::pin(name).unwrap()).unwrap();
    let diff = diff_texts(&schema("stable"), &schema("unstable")).unwrap();
    let added = |method: &str| {
        diff.methods_added
            .iter()
            .find(|(m, _)| m == method)
            .map(|(_, shapes)| shapes.clone())
    };
    assert_eq!(added("session/fork"), Some(vec![shape("request", "agent")]));
    // One name, both a request (handled by the client) and a notification (by the agent).
    assert_eq!(
        added("mcp/message"),
        Some(vec![
            shape("notification", "agent"),
            shape("request", "client")
        ])
    );
    assert!(
        diff.methods_removed.is_empty(),
        "{:?}",
        diff.methods_removed
    );
    assert!(diff.types_removed.is_empty(), "{:?}", diff.types_removed);
    assert!(diff.types_added.contains(&"ForkSessionRequest".to_owned()));
    assert!(
        diff.types_added
            .contains(&"MessageMcpNotification".to_owned())
    );
    let report = diff.render("stable", "unstable");
    assert!(
        report.contains("\n  + session/fork (request, handled by agent)\n"),
        "{report}"
    );
    // The new method's request and response both show in the envelopes' unions (issue 28:
    // the response went unreported).
    let added_to = |union: &str| &diff.variants[union].0;
    assert!(added_to("ClientRequest.params").contains(&"SessionOptionsRequest".to_owned()));
    assert!(added_to("AgentResponse.result").contains(&"SessionOptionsResponse".to_owned()));
    assert!(added_to("AgentResponse.result").contains(&"ForkSessionResponse".to_owned()));
    assert!(
        !diff.fields.contains_key("ClientRequest"),
        "the params union is compared by its arms, not as one type: {:?}",
        diff.fields.get("ClientRequest")
    );
}

/// A response union is compared like a request union: the `result` of the `Result` arm of a
/// response envelope is a list of variants, nested unions flattened; an optional field
/// (`anyOf: [$ref, null]`) stays a field whose type changes.
#[test]
fn envelope_unions_are_compared_by_their_arms() {
    let schema = |requests: &[&str], responses: &[&str], opt: &str| {
        let arms = |names: &[&str]| -> Vec<Value> {
            names
                .iter()
                .map(|n| json!({ "title": n, "allOf": [{ "$ref": format!("#/$defs/{n}") }] }))
                .collect()
        };
        json!({ "$defs": {
            "ClientRequest": { "type": "object", "properties": {
                "id": { "type": "integer" },
                "params": { "anyOf": [{ "anyOf": arms(requests) }, { "type": "null" }] },
                "opt": { "anyOf": [{ "$ref": format!("#/$defs/{opt}") }, { "type": "null" }] },
            } },
            "AgentResponse": { "anyOf": [
                { "title": "Result", "type": "object", "properties": {
                    "id": { "type": "integer" },
                    "result": { "anyOf": arms(responses) },
                } },
                { "title": "Error", "type": "object", "properties": { "error": {} } },
            ] },
        } })
        .to_string()
    };
    let old = schema(&["ARequest", "BRequest"], &["AResponse", "BResponse"], "A");
    let new = schema(
        &["ARequest", "BRequest", "CRequest"],
        &["AResponse", "BResponse", "CResponse"],
        "B",
    );
    let diff = diff_texts(&old, &new).unwrap();
    assert_eq!(
        diff.variants.get("AgentResponse.result"),
        Some(&(vec!["CResponse".to_owned()], vec![]))
    );
    assert_eq!(
        diff.variants.get("ClientRequest.params"),
        Some(&(vec!["CRequest".to_owned()], vec![]))
    );
    assert_eq!(
        diff.fields.get("ClientRequest"),
        Some(&vec![(
            "opt".to_owned(),
            FieldChange::Type {
                old: "A | null".into(),
                new: "B | null".into()
            }
        )])
    );
    assert!(!diff.variants.contains_key("ClientRequest.opt"));
    let report = diff.render("old", "new");
    assert!(
        report.contains("\n  AgentResponse.result\n    + CResponse\n"),
        "{report}"
    );
}

/// Known facts of the Oct 2025 (0.4.9) → stable update.
#[test]
fn pinned_2025_10_to_stable() {
    let schema = |name: &str| source::fetch(&source::pin(name).unwrap()).unwrap();
    let diff = diff_texts(&schema("2025-10"), &schema("stable")).unwrap();
    assert_eq!(
        diff.methods_removed,
        vec![(
            "session/set_model".to_owned(),
            vec![shape("request", "agent")]
        )]
    );
    assert!(
        diff.methods_added
            .iter()
            .any(|(m, s)| m == "session/list" && s == &[shape("request", "agent")])
    );
    let fields = &diff.fields["ClientCapabilities"];
    assert!(fields.contains(&(
        "fs".to_owned(),
        FieldChange::Type {
            old: "FileSystemCapability".into(),
            new: "FileSystemCapabilities".into()
        }
    )));
    assert!(
        diff.capabilities_added
            .contains(&"ClientCapabilities.elicitation".to_owned())
    );
}
