//! Maintainer tasks for the workspace, run as `cargo xtask <task>`.
//!
//! - `cargo xtask codegen [--check] [--schema FILE --out FILE]`: regenerate `acp-types` from the
//!   pinned ACP schemas (see `xtask/schema-pins.json`), then say what changed and what to run
//!   next.
//! - `cargo xtask schema-diff [--json] OLD NEW`: the protocol-level changes between two schemas
//!   (pin names or files), for reviewing a schema update.
//! - `cargo xtask rerecord`: re-record the fixtures and snapshots that depend on the schema.
//! - `cargo xtask simulate-schema-update`: the whole schema update, unstable as the next stable,
//!   in a scratch copy of the workspace; CI runs it.
//! - `cargo xtask msrv`: the MSRV is stated consistently, and CI's toolchain is it.
//! - `cargo xtask bench [...]`: build and run the stdio benchmark (see `docs/performance.md`).
//!
//! `cargo xtask --help` and `cargo xtask <task> --help` print the usage.

mod bench;
mod codegen;
mod msrv;
mod rerecord;
mod schema_diff;
mod simulate;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Ok(())
        }
        Some("codegen") => match codegen_args(&args[1..]) {
            Ok(CodegenArgs::Help) => {
                print!("{CODEGEN_ABOUT}{CODEGEN_USAGE}");
                Ok(())
            }
            Ok(CodegenArgs::Run) => codegen::run(&args[1..]),
            Err(e) => Err(e),
        },
        // `schema-diff` parses its own arguments, `--help` included.
        Some("schema-diff") => schema_diff::run(&args[1..]),
        // These parse their own arguments, `--help` included.
        Some("rerecord") => rerecord::run(&args[1..]),
        Some("simulate-schema-update") => simulate::run(&args[1..]),
        Some("msrv") => msrv::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some(other) => Err(format!("unknown task `{other}`\n\n{USAGE}")),
        None => Err(format!("no task given\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "\
Maintainer tasks for the acp-rs workspace.

Usage: cargo xtask <TASK> [ARGS]

Tasks:
  codegen                 regenerate acp-types from the pinned ACP schemas
                          (xtask/schema-pins.json), then tell what changed and what to run next
  schema-diff             the protocol-level changes between two schemas (pin names or files)
  rerecord                re-record the fixtures and snapshots that depend on the schema
  simulate-schema-update  a whole schema update (unstable as the next stable) in a scratch copy
                          of the workspace, with the tests it affects
  msrv                    check that the MSRV is stated consistently and is this toolchain
  bench                   build and run the stdio benchmark (docs/performance.md)

Run `cargo xtask <TASK> --help` for the arguments of a task.
";

/// What `cargo xtask codegen --help` prints before [`CODEGEN_USAGE`].
const CODEGEN_ABOUT: &str = "\
Regenerates crates/acp-types/src/generated/{stable,unstable}.rs and the proptest strategies
in crates/acp-types/tests/generated/ from the ACP schemas pinned in xtask/schema-pins.json
(committed under xtask/schemas/ and verified by their sha256). Only
files whose contents change are written. Then it lists the files that changed, summarizes the
protocol-level changes of each pin that moved to another schema (`cargo xtask schema-diff`),
and prints the commands to run next (`cargo xtask rerecord`, then the tests).

";

/// The arguments of `codegen`; also shown after an argument error.
const CODEGEN_USAGE: &str = "\
Usage: cargo xtask codegen [--check]
       cargo xtask codegen --refresh [--accept-changed]
       cargo xtask codegen [--check] --schema FILE --out FILE

The pinned schema files are committed under xtask/schemas/ with their sha256 in
xtask/schema-pins.json, so codegen and --check need neither the network nor Node.js.

Options:
  --check           write nothing; fail if a generated file is not up to date
  --refresh         first obtain every pinned file again from its source (npm package, URL, or
                    the schema crate at a version, regenerated), write it under xtask/schemas/
                    and record its sha256 in the pins; this is how a pin moves
  --accept-changed  with --refresh: accept a source that now gives other bytes than when it
                    was pinned under the same version (after reviewing them)
  --schema FILE  generate the types from this schema file instead of the pins
  --out FILE     where the types generated from --schema go (required with --schema)
  -h, --help     this help
";

/// What the arguments of `codegen` ask for.
#[derive(Debug, PartialEq, Eq)]
enum CodegenArgs {
    Help,
    Run,
}

/// Validates the arguments of `codegen` before it runs: `-h`/`--help` anywhere asks for the
/// usage, and an unknown argument or a missing value is an error that shows it. The arguments
/// themselves are read by [`codegen::run`].
fn codegen_args(args: &[String]) -> Result<CodegenArgs, String> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(CodegenArgs::Help),
            "--check" | "--refresh" | "--accept-changed" => {}
            "--schema" | "--out" => {
                if iter.next().is_none() {
                    return Err(format!("{arg} needs a file\n\n{CODEGEN_USAGE}"));
                }
            }
            other => {
                return Err(format!(
                    "unknown codegen argument `{other}`\n\n{CODEGEN_USAGE}"
                ));
            }
        }
    }
    Ok(CodegenArgs::Run)
}

/// The workspace root (the parent of this crate's directory).
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// How generated files are written: for real, or only compared (`--check`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Write the files that differ.
    Write,
    /// Write nothing; a file that differs is an error (`--check`).
    Check,
}

/// Makes `path` hold exactly `contents`; returns whether it had to change. Writes only when the
/// contents differ, so that file timestamps (and cargo's rebuilds) move only on real changes. In
/// `Mode::Check` a difference is an error that says how to fix it.
pub fn ensure_file_contents(path: &Path, contents: &str, mode: Mode) -> Result<bool, String> {
    if let Ok(old) = std::fs::read_to_string(path)
        && normalize_newlines(&old) == normalize_newlines(contents)
    {
        return Ok(false);
    }
    let shown = path
        .strip_prefix(project_root())
        .unwrap_or(path)
        .display()
        .to_string();
    match mode {
        Mode::Check => Err(format!(
            "{shown} is not up to date with the schema and the generator; \
             run `cargo xtask codegen` and commit the result"
        )),
        Mode::Write => {
            eprintln!("updated {shown}");
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("creating {}: {e}", parent.display()))?;
            }
            std::fs::write(path, contents).map_err(|e| format!("writing {shown}: {e}"))?;
            Ok(true)
        }
    }
}

fn normalize_newlines(s: &str) -> String {
    s.replace("\r\n", "\n")
}

#[cfg(test)]
mod args_tests {
    use super::{CodegenArgs, codegen_args};

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn codegen_help_wins_wherever_it_is() {
        for list in [&["--help"][..], &["-h"], &["--check", "--help"]] {
            assert_eq!(codegen_args(&args(list)), Ok(CodegenArgs::Help), "{list:?}");
        }
    }

    #[test]
    fn codegen_known_arguments_run() {
        for list in [
            &[][..],
            &["--check"],
            &["--schema", "s.json", "--out", "o.rs"],
        ] {
            assert_eq!(codegen_args(&args(list)), Ok(CodegenArgs::Run), "{list:?}");
        }
    }

    #[test]
    fn codegen_unknown_argument_or_missing_value_shows_the_usage() {
        let err = codegen_args(&args(&["--chek"])).unwrap_err();
        assert!(
            err.starts_with("unknown codegen argument `--chek`"),
            "{err}"
        );
        assert!(err.contains("Usage: cargo xtask codegen"), "{err}");
        let err = codegen_args(&args(&["--check", "--schema"])).unwrap_err();
        assert!(err.starts_with("--schema needs a file"), "{err}");
        assert!(err.contains("Usage: cargo xtask codegen"), "{err}");
    }
}
