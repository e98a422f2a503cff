//! Maintainer tasks for the workspace, run as `cargo xtask <task>`.
//!
//! - `cargo xtask codegen [--check] [--schema FILE --out FILE]`: regenerate `acp-types` from the
//!   pinned ACP schemas (see `xtask/schema-pins.json`).
//! - `cargo xtask bench [...]`: build and run the stdio benchmark (see `docs/performance.md`).

mod bench;
mod codegen;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("codegen") => codegen::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str =
    "usage: cargo xtask <codegen [--check] [--schema FILE --out FILE] | bench [--help]>";

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
    Write,
    Check,
}

/// Makes `path` hold exactly `contents`. Writes only when the contents differ, so that file
/// timestamps (and cargo's rebuilds) move only on real changes. In `Mode::Check` a difference is
/// an error that says how to fix it.
pub fn ensure_file_contents(path: &Path, contents: &str, mode: Mode) -> Result<(), String> {
    if let Ok(old) = std::fs::read_to_string(path)
        && normalize_newlines(&old) == normalize_newlines(contents)
    {
        return Ok(());
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
            std::fs::write(path, contents).map_err(|e| format!("writing {shown}: {e}"))
        }
    }
}

fn normalize_newlines(s: &str) -> String {
    s.replace("\r\n", "\n")
}
