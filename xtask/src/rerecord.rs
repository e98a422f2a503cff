//! `cargo xtask rerecord`: re-records everything recorded from the wire or from the generated
//! types, the step of a schema update that used to be a hand repair of many tests.
//!
//! 1. The transcript fixtures (`fixtures/transcripts/*.jsonl`), through acp-test's ignored
//!    `regenerate_fixtures` test.
//! 2. The insta file snapshots of the crates that depend on the schema, by running their tests
//!    with `INSTA_UPDATE=always` (insta then writes each changed snapshot in place and passes).
//!    `--no-fail-fast`, so that one failing test binary does not keep the others' snapshots
//!    old.
//! 3. The doctests are run last, only to name those that fail: their snapshots are inline (in
//!    docs/testing.md, the READMEs and the crate docs), which insta cannot update inside a
//!    doctest, so they are updated by hand.

use crate::project_root;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// What `cargo xtask rerecord --help` prints.
pub const USAGE: &str = "\
Re-records every fixture and snapshot that depends on the ACP schema, after `cargo xtask
codegen` (or any deliberate change of what goes on the wire):

  1. fixtures/transcripts/*.jsonl: acp-test's ignored test `regenerate_fixtures` (cargo test
     -p acp-types -p acp-test -p acp-runtime --test fixtures -- --ignored --exact
     regenerate_fixtures)
  2. the insta snapshots (tests/snapshots/) of acp-types, acp-test and acp-runtime:
     INSTA_UPDATE=always cargo test --no-fail-fast -p acp-types -p acp-test -p acp-runtime
     --lib --bins --test ... (every test target but acp-runtime's `hostile`, a stress test
     of minutes that records nothing)

  3. the doctests of those crates, only to name the ones that fail: their transcripts are
     inline (docs/testing.md, the READMEs, the crate docs), which insta cannot rewrite in a
     doctest; `cargo test --doc -p CRATE` shows the new text, to paste in by hand

Fails when a test still fails once everything is re-recorded (a failure that is not a
snapshot: look at it). Review everything with `git diff`.

Usage: cargo xtask rerecord

Options:
  -h, --help  this help
";

/// The crates whose tests snapshot what the generated types put on the wire.
pub const SNAPSHOT_CRATES: &[&str] = &["acp-types", "acp-test", "acp-runtime"];

pub fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        None => {}
        Some("-h" | "--help") => {
            print!("{USAGE}");
            return Ok(());
        }
        Some(other) => return Err(format!("unknown rerecord argument `{other}`\n\n{USAGE}")),
    }
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
    let mut snapshots = cargo(&["test", "--no-fail-fast"]);
    snapshots
        .args(test_selection(&project_root())?)
        .env("INSTA_UPDATE", "always");
    let snapshots = step(
        &format!(
            "re-recording the insta snapshots of {}",
            SNAPSHOT_CRATES.join(", ")
        ),
        snapshots,
    );
    let snapshots = snapshots.map_err(|e| {
        format!(
            "{e}\nthe snapshots were re-recorded, but the tests above fail for another reason \
             (not a file snapshot): look at them"
        )
    })?;
    let doctests = failing_doctests()?;
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

/// The doctests of [`SNAPSHOT_CRATES`] that fail, as cargo names them. Their output is kept
/// out of the way: this only points at them.
fn failing_doctests() -> Result<Vec<String>, String> {
    let mut doctests = cargo(&["test", "--doc", "--no-fail-fast"]);
    for krate in SNAPSHOT_CRATES {
        doctests.args(["-p", krate]);
    }
    eprintln!("==> running the doctests, which are updated by hand");
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

/// The `cargo test` arguments that select the tests of [`SNAPSHOT_CRATES`] in `workspace`: `-p` each, their
/// libraries and binaries, and each test target but [`SKIPPED_TESTS`] (listed by
/// `cargo metadata`, since cargo has no option to leave one out).
pub fn test_selection(workspace: &Path) -> Result<Vec<String>, String> {
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
    let mut args = Vec::new();
    let mut tests = std::collections::BTreeSet::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        if !SNAPSHOT_CRATES.contains(&name) {
            continue;
        }
        args.extend(["-p".to_owned(), name.to_owned()]);
        for target in package["targets"].as_array().into_iter().flatten() {
            let is_test = target["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "test"));
            let target_name = target["name"].as_str().unwrap_or_default();
            if is_test && !SKIPPED_TESTS.contains(&target_name) {
                tests.insert(target_name.to_owned());
            }
        }
    }
    if args.len() != 2 * SNAPSHOT_CRATES.len() {
        return Err(format!(
            "cargo metadata lists {} of the crates {SNAPSHOT_CRATES:?}",
            args.len() / 2
        ));
    }
    args.extend(["--lib".to_owned(), "--bins".to_owned()]);
    for test in tests {
        args.extend(["--test".to_owned(), test]);
    }
    Ok(args)
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
