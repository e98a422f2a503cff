//! `cargo xtask rerecord`: re-records everything recorded from the wire or from the generated
//! types, the step of a schema update that used to be a hand repair of many tests.
//!
//! 1. The transcript fixtures (`fixtures/transcripts/*.jsonl`), through acp-test's ignored
//!    `regenerate_fixtures` test.
//! 2. The insta file snapshots of the crates that depend on the schema, by running their tests
//!    with `INSTA_UPDATE=always` (insta then writes each changed snapshot in place and passes),
//!    once per feature set CI tests them with ([`FEATURE_SETS`]: the default features, and
//!    acp-runtime's `unstable`, under which acp-types is generated from the unstable schema and
//!    records `@unstable` snapshots of its own). `--no-fail-fast`, so that one failing test
//!    binary does not keep the others' snapshots old.
//! 3. The doctests are run last, in each feature set, only to name those that fail: their
//!    snapshots are inline (in docs/testing.md, the READMEs and the crate docs), which insta
//!    cannot update inside a doctest, so they are updated by hand.

use crate::project_root;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// What `cargo xtask rerecord --help` says the task does.
pub const ABOUT: &str = "\
Re-records every fixture and snapshot that depends on the ACP schema, after `cargo xtask
codegen` (or any deliberate change of what goes on the wire):

  1. fixtures/transcripts/*.jsonl: acp-test's ignored test `regenerate_fixtures` (cargo test
     -p acp-rs-types -p acp-rs-test -p acp-rs-runtime --test fixtures -- --ignored --exact
     regenerate_fixtures)
  2. the insta snapshots (tests/snapshots/) of acp-types, acp-test and acp-runtime, in every
     feature set CI tests them with (.ci/run):
     INSTA_UPDATE=always cargo test --no-fail-fast -p acp-rs-types -p acp-rs-test -p acp-rs-runtime
     --lib --bins --test ... (every test target but acp-runtime's `hostile`, a stress test
     of minutes that records nothing), then the same for acp-types and acp-runtime with
     --features acp-rs-runtime/unstable (the unstable schema's snapshots, `@unstable` ones),
     and with protocol v2's feature `unstable-protocol-v2` (alone, and with `unstable` for
     acp-types)

  3. the doctests of those crates in both feature sets, only to name the ones that fail:
     their transcripts are inline (docs/testing.md, the READMEs, the crate docs), which insta
     cannot rewrite in a doctest; `cargo test --doc -p CRATE` shows the new text, to paste in
     by hand

Fails when a test still fails once everything is re-recorded (a failure that is not a
snapshot: look at it). Review everything with `git diff`.";

/// The crates (package names, as `-p` and `cargo metadata` take them) whose tests snapshot what
/// the generated types put on the wire.
pub const SNAPSHOT_CRATES: &[&str] = &["acp-rs-types", "acp-rs-test", "acp-rs-runtime"];

/// A feature set CI tests [`SNAPSHOT_CRATES`] (or some of them) with.
#[derive(Debug)]
pub struct FeatureSet {
    /// How the output names it.
    pub label: &'static str,
    /// The crates tested with it.
    pub crates: &'static [&'static str],
    /// `--features` (empty: the default features).
    pub features: &'static [&'static str],
}

/// Every feature set `.ci/run` tests the snapshot crates with; rerecord and
/// simulate-schema-update run each (`ci_feature_sets_are_all_rerecorded` keeps this in step
/// with `.ci/run`).
pub const FEATURE_SETS: &[FeatureSet] = &[
    FeatureSet {
        label: "default features",
        crates: SNAPSHOT_CRATES,
        features: &[],
    },
    // acp-types generated from the unstable schema: its `unstable_types` wire snapshot and
    // acp-runtime's `@unstable` transcripts. acp-test is left out as CI leaves it out: its
    // recorded transcripts pin the stable schema's wire form.
    FeatureSet {
        label: "--features acp-rs-runtime/unstable",
        crates: &["acp-rs-types", "acp-rs-runtime"],
        features: &["acp-rs-runtime/unstable"],
    },
    // Protocol v2, kept out of `unstable`: acp-types' v2 wire snapshots, acp-runtime's
    // router answers and acp-test's v2 pair; with `unstable` too, v2's unstable superset
    // (acp-types only); with proxy chains, the proxy router and v2 through the conductor.
    // Before v2 alone: the router's answers differ with proxy chains on (`mcpCapabilities`
    // names `acp`), and the committed ones are v2's alone, which the next set writes last.
    FeatureSet {
        label: "--features unstable-protocol-v2,unstable-proxy-chains",
        crates: &["acp-rs-runtime"],
        features: &["unstable-protocol-v2", "unstable-proxy-chains"],
    },
    FeatureSet {
        label: "--features unstable-protocol-v2",
        crates: &["acp-rs-types", "acp-rs-test", "acp-rs-runtime"],
        features: &["unstable-protocol-v2"],
    },
    FeatureSet {
        label: "--features unstable-protocol-v2,unstable",
        crates: &["acp-rs-types"],
        features: &["unstable-protocol-v2", "unstable"],
    },
];

impl FeatureSet {
    /// `-p` each crate, and `--features` if any.
    fn package_args(&self) -> Vec<String> {
        let mut args: Vec<String> = self
            .crates
            .iter()
            .flat_map(|krate| ["-p".to_owned(), (*krate).to_owned()])
            .collect();
        if !self.features.is_empty() {
            args.extend(["--features".to_owned(), self.features.join(",")]);
        }
        args
    }
}

pub fn run() -> Result<(), String> {
    // The same `-p` set as the snapshot step below, so that both resolve the same features and
    // the second build reuses the first's dependencies.
    let mut fixtures = cargo(&["test"]);
    for krate in SNAPSHOT_CRATES {
        fixtures.args(["-p", krate]);
    }
    fixtures.args([
        "--test",
        "fixtures",
        "--",
        "--ignored",
        "--exact",
        "regenerate_fixtures",
    ]);
    let fixtures = step("re-recording fixtures/transcripts/", fixtures)?;
    let mut snapshots = std::time::Duration::ZERO;
    for set in FEATURE_SETS {
        let mut command = cargo(&["test", "--no-fail-fast"]);
        command
            .args(test_selection(&project_root(), set)?)
            .env("INSTA_UPDATE", "always");
        let took = step(
            &format!(
                "re-recording the insta snapshots of {} ({})",
                set.crates.join(", "),
                set.label
            ),
            command,
        );
        snapshots += took.map_err(|e| {
            format!(
                "{e}\nthe snapshots were re-recorded, but the tests above fail for another \
                 reason (not a file snapshot): look at them"
            )
        })?;
    }
    let mut doctests = Vec::new();
    for set in FEATURE_SETS {
        doctests.extend(
            failing_doctests(set)?
                .into_iter()
                .map(|name| format!("{name} ({})", set.label)),
        );
    }
    println!(
        "rerecord: done ({fixtures:.0?} fixtures, {snapshots:.0?} snapshots). Review with `git diff`."
    );
    if !doctests.is_empty() {
        println!(
            "{} doctest(s) fail, most likely on an inline transcript that changed; insta cannot \
             rewrite a doctest, so update them by hand (`cargo test --doc -p CRATE` prints the \
             new text):",
            doctests.len()
        );
        for doctest in &doctests {
            println!("  {doctest}");
        }
    }
    Ok(())
}

/// The doctests of the crates of `set` that fail, as cargo names them. Their output is kept
/// out of the way: this only points at them.
fn failing_doctests(set: &FeatureSet) -> Result<Vec<String>, String> {
    let mut doctests = cargo(&["test", "--doc", "--no-fail-fast"]);
    doctests.args(set.package_args());
    eprintln!(
        "==> running the doctests ({}), which are updated by hand",
        set.label
    );
    let output = doctests
        .output()
        .map_err(|e| format!("running the doctests: {e}"))?;
    let failing: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("test ")?.strip_suffix(" ... FAILED"))
        .map(str::to_owned)
        .collect();
    if failing.is_empty() && !output.status.success() {
        // Not one failing doctest, yet a failure: they did not compile.
        return Err(format!(
            "the doctests did not build:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(failing)
}

/// Test targets left out: not recorded, and not about the schema. `hostile` runs misbehaving
/// agents against the client for minutes, with timers that a loaded machine stretches.
const SKIPPED_TESTS: &[&str] = &["hostile"];

/// The `cargo test` arguments that select the tests of the crates of `set` in `workspace`: `-p`
/// each, its features, their libraries and binaries, and each test target but
/// [`SKIPPED_TESTS`] (listed by `cargo metadata`, since cargo has no option to leave one out).
pub fn test_selection(workspace: &Path, set: &FeatureSet) -> Result<Vec<String>, String> {
    let output = cargo(&["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(workspace)
        .output()
        .map_err(|e| format!("running cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("reading cargo metadata: {e}"))?;
    let mut found = 0;
    let mut tests = std::collections::BTreeSet::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        if !set.crates.contains(&name) {
            continue;
        }
        found += 1;
        let enabled = enabled_features(package, set);
        for target in package["targets"].as_array().into_iter().flatten() {
            let is_test = target["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "test"));
            let target_name = target["name"].as_str().unwrap_or_default();
            // A target whose `required-features` the set does not turn on is not built in it
            // (none of the snapshot crates' tests has any today; their examples do).
            let buildable = target["required-features"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str())
                .all(|f| enabled.contains(f));
            if is_test && buildable && !SKIPPED_TESTS.contains(&target_name) {
                tests.insert(target_name.to_owned());
            }
        }
    }
    if found != set.crates.len() {
        return Err(format!(
            "cargo metadata lists {found} of the crates {:?}",
            set.crates
        ));
    }
    let mut args = set.package_args();
    args.extend(["--lib".to_owned(), "--bins".to_owned()]);
    for test in tests {
        args.extend(["--test".to_owned(), test]);
    }
    Ok(args)
}

/// The features of `package` (a `cargo metadata` package) that `set` turns on: `default`, the
/// ones `set` names for it (`acp-rs-runtime/unstable`), and the features those enable in turn.
fn enabled_features(
    package: &serde_json::Value,
    set: &FeatureSet,
) -> std::collections::BTreeSet<String> {
    let name = package["name"].as_str().unwrap_or_default();
    let mut todo: Vec<String> = vec!["default".to_owned()];
    todo.extend(set.features.iter().filter_map(|f| {
        let (krate, feature) = f.split_once('/')?;
        (krate == name).then(|| feature.to_owned())
    }));
    let mut enabled = std::collections::BTreeSet::new();
    while let Some(feature) = todo.pop() {
        if !enabled.insert(feature.clone()) {
            continue;
        }
        for next in package["features"][&feature]
            .as_array()
            .into_iter()
            .flatten()
        {
            // Plain names are features of this package; `dep:x` and `x/y` are not.
            if let Some(next) = next.as_str().filter(|n| !n.contains([':', '/'])) {
                todo.push(next.to_owned());
            }
        }
    }
    enabled
}

/// `cargo ARGS` in the workspace root, with the cargo that runs this task.
pub fn cargo(args: &[&str]) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.args(args).current_dir(project_root());
    command
}

/// Runs `command`, announcing it as `what`; returns how long it took.
pub fn step(what: &str, mut command: Command) -> Result<std::time::Duration, String> {
    eprintln!("==> {what}");
    let start = Instant::now();
    let status = command
        .status()
        .map_err(|e| format!("{what}: running {command:?}: {e}"))?;
    if !status.success() {
        return Err(format!("{what}: {command:?} failed ({status})"));
    }
    Ok(start.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `cargo test` of `.ci/run` that tests a snapshot crate (by `-p` or `--workspace`)
    /// with features is a [`FEATURE_SETS`] entry, with the same crates, so a feature set added
    /// to CI cannot leave its snapshots to a hand re-recording (issue 28).
    #[test]
    fn ci_feature_sets_are_all_rerecorded() {
        let ci = std::fs::read_to_string(project_root().join(".ci/run")).unwrap();
        let mut seen = 0;
        for line in ci.lines().map(str::trim) {
            let Some(rest) = line.strip_prefix("cargo test ") else {
                continue;
            };
            let words: Vec<&str> = rest.split_whitespace().collect();
            let value_of = |flag: &str| -> Vec<&str> {
                words
                    .windows(2)
                    .filter(|w| w[0] == flag)
                    .map(|w| w[1])
                    .collect()
            };
            let features = value_of("--features").join(",");
            let crates: Vec<&str> = if words.contains(&"--workspace") {
                let excluded = value_of("--exclude");
                SNAPSHOT_CRATES
                    .iter()
                    .copied()
                    .filter(|c| !excluded.contains(c))
                    .collect()
            } else {
                value_of("-p")
                    .into_iter()
                    .filter(|c| SNAPSHOT_CRATES.contains(c))
                    .collect()
            };
            if crates.is_empty() || words.contains(&"--ignored") {
                continue;
            }
            let set = FEATURE_SETS
                .iter()
                .find(|set| set.features.join(",") == features)
                .unwrap_or_else(|| {
                    panic!("`.ci/run` tests {crates:?} with features `{features}`: add it to FEATURE_SETS")
                });
            for krate in &crates {
                assert!(
                    set.crates.contains(krate),
                    "`.ci/run` tests {krate} with `{features}`, which rerecord leaves out: {line}"
                );
            }
            seen += 1;
        }
        assert!(
            seen >= 2,
            "the default and the unstable test runs of .ci/run"
        );
    }

    #[test]
    fn each_feature_set_selects_its_crates_and_features() {
        let selection = |set: &FeatureSet| test_selection(&project_root(), set).unwrap();
        let stable = selection(&FEATURE_SETS[0]);
        let unstable = selection(&FEATURE_SETS[1]);
        let has =
            |args: &[String], test: &str| args.windows(2).any(|w| w[0] == "--test" && w[1] == test);
        assert!(has(&stable, "wire_snapshots") && has(&unstable, "wire_snapshots"));
        assert!(!has(&stable, "hostile"));
        assert!(
            unstable
                .windows(2)
                .any(|w| w[0] == "--features" && w[1] == "acp-rs-runtime/unstable")
        );
        assert!(
            !unstable.contains(&"acp-rs-test".to_owned()),
            "{unstable:?}"
        );
    }

    #[test]
    fn required_features_are_followed_through_the_feature_table() {
        let package = serde_json::json!({
            "name": "acp-rs-runtime",
            "features": {
                "default": [],
                "unstable": ["unstable-session-fork", "acp-types/unstable"],
                "unstable-session-fork": ["dep:x", "acp-types/unstable"],
                "other": [],
            },
        });
        let enabled = enabled_features(&package, &FEATURE_SETS[1]);
        let names: Vec<&str> = enabled.iter().map(String::as_str).collect();
        assert_eq!(names, ["default", "unstable", "unstable-session-fork"]);
        assert_eq!(
            enabled_features(&package, &FEATURE_SETS[0])
                .into_iter()
                .collect::<Vec<_>>(),
            ["default"]
        );
    }
}
