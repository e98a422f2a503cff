//! `cargo xtask simulate-schema-update`: proves that a schema update needs only the documented
//! commands. In a scratch copy of the workspace, the `stable` pin is pointed at the unstable
//! schema (a superset with new methods, types, fields and variants: a realistic next stable),
//! then `cargo xtask codegen` and `cargo xtask rerecord` run there, and the tests of the crates
//! that depend on the schema must pass.
//!
//! The copy and its build live under `target/schema-update/` (`workspace/`, and `target/` as its
//! `CARGO_TARGET_DIR`, kept between runs so that a second run rebuilds only our crates); the real
//! tree and its build are never touched.

use crate::codegen::source;
use crate::project_root;
use crate::rerecord::{FEATURE_SETS, SNAPSHOT_CRATES, step, test_selection};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// What `cargo xtask simulate-schema-update --help` says the task does.
pub const ABOUT: &str = "\
Simulates a schema update in a scratch copy of the workspace (target/schema-update/): points
the `stable` pin at the unstable schema, runs `cargo xtask codegen` and `cargo xtask rerecord`
there, then requires the tests of acp-types, acp-test and acp-runtime to pass in every feature
set CI tests them with (doctests aside: their transcripts are inline and updated by hand) and the rest of the workspace to build. The
real tree is never touched. Needs no network: the pinned schema files are committed.";

/// The arguments of `simulate-schema-update`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Copy the last commit (HEAD) instead of the work tree as it is
    #[arg(long)]
    head: bool,
}

pub fn run(Args { head }: Args) -> Result<(), String> {
    let start = Instant::now();
    let root = project_root();
    let scratch = root.join("target/schema-update");
    let workspace = scratch.join("workspace");
    let target = scratch.join("target");

    // The pinned files are committed; verify them here, before the copy is made.
    for pin in ["stable", "unstable"] {
        source::fetch(&source::pin(pin)?)?;
    }
    eprintln!("==> copying the workspace to {}", workspace.display());
    if workspace.exists() {
        std::fs::remove_dir_all(&workspace)
            .map_err(|e| format!("removing {}: {e}", workspace.display()))?;
    }
    if head {
        export_head(&root, &workspace)?;
    } else {
        copy_work_tree(&root, &workspace)?;
    }
    point_stable_at_unstable(&workspace.join("xtask/schema-pins.json"))?;
    let recorded_before = recordings(&workspace)?;

    let in_copy = |args: &[&str]| {
        let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        command
            .args(args)
            .current_dir(&workspace)
            .env("CARGO_TARGET_DIR", &target)
            // The copy is not a git repository; keep git from finding the real one above it.
            .env("GIT_CEILING_DIRECTORIES", &scratch)
            // A build from scratch that nobody debugs: no debuginfo and no incremental state,
            // which roughly halves its time on CI's two cores.
            .env("CARGO_INCREMENTAL", "0")
            .env("CARGO_PROFILE_DEV_DEBUG", "0");
        command
    };
    let mut timings: Vec<(&str, Duration)> = Vec::new();
    timings.push((
        "cargo xtask codegen",
        step(
            "cargo xtask codegen (stable := the unstable schema)",
            in_copy(&["xtask", "codegen"]),
        )?,
    ));
    timings.push((
        "cargo xtask rerecord",
        step("cargo xtask rerecord", in_copy(&["xtask", "rerecord"]))?,
    ));
    // Without INSTA_UPDATE now: the recordings must hold as they are, in every feature set CI
    // tests.
    let mut again = Duration::ZERO;
    for set in FEATURE_SETS {
        let mut tests = in_copy(&["test", "-q"]);
        tests.args(test_selection(&workspace, set)?);
        again += step(
            &format!(
                "the tests of {} ({}), again",
                set.crates.join(", "),
                set.label
            ),
            tests,
        )?;
    }
    timings.push(("the tests, again", again));
    timings.push((
        "the rest builds",
        step(
            "the rest of the workspace builds (cargo build --workspace --all-targets)",
            in_copy(&["build", "-q", "--workspace", "--all-targets"]),
        )?,
    ));
    let steps: Vec<String> = timings
        .iter()
        .map(|(what, took)| format!("{what} {:.0}s", took.as_secs_f64()))
        .collect();
    let recorded_after = recordings(&workspace)?;
    let changed: Vec<&String> = recorded_after
        .iter()
        .filter(|(path, text)| recorded_before.get(*path) != Some(text))
        .map(|(path, _)| path)
        .collect();
    println!(
        "simulate-schema-update: passed in {:.0}s ({}). Re-recorded {} of {} fixtures and \
         snapshots:",
        start.elapsed().as_secs_f64(),
        steps.join(", "),
        changed.len(),
        recorded_after.len()
    );
    for path in changed {
        println!("  {path}");
    }
    Ok(())
}

/// The recorded files of the workspace at `root`, by relative path: the transcript fixtures
/// and the insta snapshots of the crates whose tests ran.
fn recordings(root: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut dirs = vec![root.join("fixtures/transcripts")];
    dirs.extend(
        SNAPSHOT_CRATES
            .iter()
            .map(|krate| root.join("crates").join(krate).join("tests/snapshots")),
    );
    let mut files = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry
                .map_err(|e| format!("reading {}: {e}", dir.display()))?
                .path();
            let bytes =
                std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
            let name = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            files.insert(name, bytes);
        }
    }
    Ok(files)
}

/// Copies into `to` the files of the work tree at `from` that git tracks or would track (so not
/// `target/` nor anything ignored), as they are now, committed or not.
fn copy_work_tree(from: &Path, to: &Path) -> Result<(), String> {
    let output = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(from)
        .output()
        .map_err(|e| format!("running git ls-files: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "git ls-files failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    for name in output.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).map_err(|e| format!("a file name: {e}"))?;
        let source = from.join(name);
        // Listed but deleted in the work tree.
        if !source.is_file() {
            continue;
        }
        copy_file(&source, &to.join(name))?;
    }
    Ok(())
}

/// Writes the files of the last commit of the repository at `from` into `to`.
fn export_head(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("creating {}: {e}", to.display()))?;
    let mut archive = Command::new("git")
        .args(["archive", "--format=tar", "HEAD"])
        .current_dir(from)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("running git archive: {e}"))?;
    let tar = Command::new("tar")
        .arg("-x")
        .current_dir(to)
        .stdin(archive.stdout.take().expect("stdout is piped"))
        .status()
        .map_err(|e| format!("running tar: {e}"))?;
    let archived = archive
        .wait()
        .map_err(|e| format!("waiting for git archive: {e}"))?;
    if !archived.success() || !tar.success() {
        return Err(format!(
            "git archive HEAD | tar -x failed ({archived}, {tar})"
        ));
    }
    Ok(())
}

fn copy_file(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}

/// Makes the `stable` pin of the pins file at `path` name the unstable schema.
fn point_stable_at_unstable(path: &Path) -> Result<(), String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut pins: Value =
        serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))?;
    let unstable = pins["schemas"]["unstable"].clone();
    if !unstable.is_object() {
        return Err(format!("{}: no `unstable` pin", path.display()));
    }
    pins["schemas"]["stable"] = unstable;
    let text = serde_json::to_string_pretty(&pins).expect("JSON values serialize");
    std::fs::write(path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stable_pin_is_pointed_at_the_unstable_schema() {
        let dir = project_root().join("target/xtask-simulate-test");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("schema-pins.json");
        std::fs::copy(project_root().join("xtask/schema-pins.json"), &file).unwrap();
        point_stable_at_unstable(&file).unwrap();
        let pins = source::parse_pins(&std::fs::read_to_string(&file).unwrap(), "test").unwrap();
        let find = |name: &str| pins.iter().find(|p| p.name == name).unwrap().clone();
        let (stable, unstable) = (find("stable"), find("unstable"));
        assert_eq!(stable.description(), unstable.description());
        assert_eq!(stable.sha256, unstable.sha256);
        assert_eq!(pins.len(), 5, "no pin added or lost");
    }
}
