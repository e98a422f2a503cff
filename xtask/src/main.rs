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
mod simulate;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

/// Maintainer tasks for the acp-rs workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
enum Task {
    /// Regenerate acp-types from the pinned ACP schemas (xtask/schema-pins.json), then tell what
    /// changed and what to run next
    #[command(
        long_about = codegen::ABOUT,
        override_usage = codegen::USAGE,
        after_help = codegen::AFTER_HELP
    )]
    Codegen(codegen::Args),
    /// The protocol-level changes between two schemas (pin names or files)
    #[command(long_about = codegen::schema_diff::ABOUT)]
    SchemaDiff(codegen::schema_diff::Args),
    /// Re-record the fixtures and snapshots that depend on the schema
    #[command(long_about = rerecord::ABOUT)]
    Rerecord,
    /// A whole schema update (unstable as the next stable) in a scratch copy of the workspace,
    /// with the tests it affects
    #[command(long_about = simulate::ABOUT)]
    SimulateSchemaUpdate(simulate::Args),
    /// Check that the MSRV is stated consistently and is this toolchain
    #[command(long_about = msrv::ABOUT)]
    Msrv,
    /// Build and run the stdio benchmark (docs/performance.md)
    Bench(bench::Args),
}

fn main() -> ExitCode {
    // `cargo xtask` runs this with the task's arguments; a usage error exits with 1 like any
    // other failed task (clap's own status would be 2), `--help` with 0.
    let task = match Task::try_parse() {
        Ok(task) => task,
        Err(error) => {
            let _ = error.print();
            return match error.use_stderr() {
                true => ExitCode::FAILURE,
                false => ExitCode::SUCCESS,
            };
        }
    };
    let result = match task {
        Task::Codegen(args) => codegen::run(args),
        Task::SchemaDiff(args) => codegen::schema_diff::run(args),
        Task::Rerecord => rerecord::run(),
        Task::SimulateSchemaUpdate(args) => simulate::run(args),
        Task::Msrv => msrv::run(),
        Task::Bench(args) => bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
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
    use super::Task;
    use clap::{CommandFactory, Parser};

    fn parse(list: &[&str]) -> Result<Task, clap::Error> {
        Task::try_parse_from(std::iter::once("xtask").chain(list.iter().copied()))
    }

    #[test]
    fn the_definition_is_consistent() {
        Task::command().debug_assert();
    }

    #[test]
    fn codegen_arguments() {
        for list in [
            &["codegen"][..],
            &["codegen", "--check"],
            &["codegen", "--refresh", "--accept-changed"],
            &["codegen", "--schema", "s.json", "--out", "o.rs"],
        ] {
            assert!(parse(list).is_ok(), "{list:?}");
        }
        for list in [
            &["codegen", "--chek"][..],
            &["codegen", "--check", "--schema"],
            &["codegen", "--schema", "s.json"],
            &["codegen", "--accept-changed"],
            &["codegen", "--refresh", "--check"],
        ] {
            assert!(parse(list).is_err(), "{list:?}");
        }
        let help = parse(&["codegen", "--help"]).unwrap_err().to_string();
        assert!(help.contains("Usage: cargo xtask codegen"), "{help}");
    }

    #[test]
    fn bench_arguments() {
        let Task::Bench(args) =
            parse(&["bench", "--quick", "--pair=a/b,c", "--pair", "d"]).unwrap()
        else {
            panic!("not bench");
        };
        let options = args.options();
        assert_eq!(options.reps, 1, "--quick means one repetition");
        assert_eq!(options.pairs, ["a/b", "c", "d"]);
        assert!(parse(&["bench", "--placement", "2cpu"]).is_err());
        assert!(parse(&["bench", "--reps", "-1"]).is_err());
    }
}
