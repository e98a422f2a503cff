//! docs/conformance.md and the pinned verdicts of fixtures/conformance/ stay in step with the
//! checks.

use std::collections::BTreeSet;
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
}

fn ids() -> BTreeSet<&'static str> {
    acp_conformance::checks().iter().map(|c| c.id).collect()
}

/// The ids of protocol v2's checks (none without the feature `unstable-protocol-v2`).
fn v2_ids() -> BTreeSet<&'static str> {
    acp_conformance::checks_for(acp_conformance::Protocol::V2)
        .iter()
        .map(|c| c.id)
        .collect()
}

#[cfg(feature = "unstable-protocol-v2")]
#[test]
fn the_documentation_lists_every_v2_check_with_its_level_and_spec_reference() {
    let doc = std::fs::read_to_string(repo().join("docs/conformance.md")).unwrap();
    let checks = acp_conformance::checks_for(acp_conformance::Protocol::V2);
    assert_eq!(v2_ids().len(), checks.len(), "duplicate ids");
    for check in checks {
        assert!(check.id.starts_with("v2."), "{}", check.id);
        assert!(ids().is_disjoint(&v2_ids()));
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", check.id)))
            .unwrap_or_else(|| panic!("docs/conformance.md has no row for {}", check.id));
        assert!(
            row.contains(&format!("| {} | {} |", check.level.as_str(), check.spec)),
            "the row of {} does not give level {} and spec `{}`",
            check.id,
            check.level.as_str(),
            check.spec
        );
    }
}

#[test]
fn the_documentation_lists_every_check_with_its_level_and_spec_reference() {
    let doc = std::fs::read_to_string(repo().join("docs/conformance.md")).unwrap();
    for check in acp_conformance::checks() {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", check.id)))
            .unwrap_or_else(|| panic!("docs/conformance.md has no row for {}", check.id));
        assert!(
            row.contains(&format!("| {} | {} |", check.level.as_str(), check.spec)),
            "the row of {} does not give level {} and spec `{}`",
            check.id,
            check.level.as_str(),
            check.spec
        );
    }
}

#[test]
fn checks_have_unique_ids_and_spec_references() {
    let checks = acp_conformance::checks();
    assert_eq!(ids().len(), checks.len(), "duplicate ids");
    for c in checks {
        assert!(c.spec.contains(".mdx"), "{}: {}", c.id, c.spec);
        assert!(!c.requirement.is_empty());
    }
}

#[test]
fn the_pinned_verdicts_cover_exactly_the_checks() {
    let dir = repo().join("fixtures/conformance");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let pinned: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let verdicts = pinned["verdicts"].as_object().expect("a verdicts object");
        let pinned_ids: BTreeSet<&str> = verdicts.keys().map(String::as_str).collect();
        let expected = match pinned["protocol"].as_u64() {
            None | Some(1) => ids(),
            Some(2) if cfg!(feature = "unstable-protocol-v2") => v2_ids(),
            // Without protocol v2 built in, there is no list to compare a v2 pin with.
            Some(2) => pinned_ids.clone(),
            Some(other) => panic!("{}: protocol {other}", path.display()),
        };
        assert_eq!(
            pinned_ids,
            expected,
            "{} must be re-pinned (CONFORMANCE_UPDATE=1 bash interop/conformance.sh)",
            path.display()
        );
        for verdict in verdicts.values() {
            assert!(
                ["pass", "fail", "skipped", "inconclusive"].contains(&verdict.as_str().unwrap()),
                "{}: {verdict}",
                path.display()
            );
        }
        files += 1;
    }
    assert_eq!(
        files, 6,
        "one pinned file per SDK example agent (three v1, one v2) and per v2 agent of ours (two)"
    );
}
