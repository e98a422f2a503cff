//! The bug table of a broken agent: a test per bug that the checks about its rule fail, and
//! what tells that every check is failed by some bug and every bug is tested.

use std::collections::BTreeSet;

use acp_conformance::{CheckInfo, Report, Verdict};

/// One test per bug, named `$test`, calling the file's `assert_fails(bug, fails, context)`,
/// and `TABLE`: which checks each bug fails.
macro_rules! bugs {
    ($($test:ident: $bug:literal fails [$($fail:literal),+] $(given [$($context:literal),+])?;)+) => {
        /// Which checks each bug fails.
        const TABLE: &[(&str, &[&str])] = &[$(($bug, &[$($fail),+])),+];
        $(
            #[test]
            fn $test() {
                assert_fails($bug, &[$($fail),+], &[$($($context),+)?]);
            }
        )+
    };
}
pub(crate) use bugs;

/// Asserts, of a run with `bug`, that every check in `fails` failed with evidence and every
/// one in `context` (run for the traffic the aggregate checks judge) passed.
pub fn assert_report_fails(report: &Report, bug: &str, fails: &[&str], context: &[&str]) {
    for id in fails {
        let result = report.get(id).unwrap_or_else(|| panic!("{id} did not run"));
        match &result.verdict {
            Verdict::Fail { evidence, .. } => {
                assert!(!evidence.is_empty(), "{id} failed without evidence")
            }
            other => panic!("with bug `{bug}`, {id} should fail, got {other:?}"),
        }
    }
    for id in context {
        let result = report.get(id).unwrap_or_else(|| panic!("{id} did not run"));
        assert_eq!(result.verdict, Verdict::Pass, "with bug `{bug}`, {id}");
    }
}

/// Asserts that every one of `checks` is failed by some bug of `table`.
pub fn assert_every_check_is_failed(checks: &[CheckInfo], table: &[(&str, &[&str])]) {
    let covered: BTreeSet<&str> = table.iter().flat_map(|(_, f)| f.iter().copied()).collect();
    let missing: Vec<&str> = checks
        .iter()
        .map(|c| c.id)
        .filter(|id| !covered.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "no bug makes these checks fail: {missing:?}"
    );
}

/// Asserts that the bugs `broken --list` names are exactly `tested`.
pub fn assert_every_bug_is_tested<'a>(broken: &str, tested: impl IntoIterator<Item = &'a str>) {
    let listed = std::process::Command::new(broken)
        .arg("--list")
        .output()
        .unwrap_or_else(|e| panic!("{broken} --list: {e}"));
    let listed = String::from_utf8(listed.stdout).unwrap();
    let listed: BTreeSet<&str> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed, tested.into_iter().collect::<BTreeSet<&str>>());
}
