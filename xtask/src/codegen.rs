//! `cargo xtask codegen`: generates `crates/acp-types/src/generated/*.rs` from the pinned ACP
//! schemas.
//!
//! The pipeline is schema JSON → [`model`] (a handful of shapes) → [`emit`] (Rust text) →
//! rustfmt → [`crate::ensure_file_contents`]. `--check` compares instead of writing; otherwise
//! [`report`] tells what changed and what to run next, and [`coverage`] names what of the
//! stable schema the runtime does not account for.

pub mod coverage;
pub mod emit;
pub mod json;
pub mod model;
pub mod models;
pub mod report;
pub mod schema_diff;
#[cfg(test)]
mod schema_move;
pub mod source;
pub mod strategies;

use crate::{Mode, ensure_file_contents, project_root};
use json::Json;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// One generated types module and the proptest strategies for its round-trip test.
pub struct Output {
    /// The pin it is generated from.
    pub pin: &'static str,
    /// The types module.
    pub types: &'static str,
    /// The strategies, which name the types from `root`.
    pub strategies: &'static str,
    /// Where the types are, for the strategies: `acp_types` or a module of it.
    pub root: &'static str,
}

/// The generated files: v1 is the crate root (stable, or the unstable superset with the
/// `unstable` feature); v2 is `acp_types::v2` (feature `unstable-protocol-v2`), likewise.
pub const OUTPUTS: &[Output] = &[
    Output {
        pin: "stable",
        types: "crates/acp-types/src/generated/stable.rs",
        strategies: "crates/acp-types/tests/generated/stable_strategies.rs",
        root: "acp_types",
    },
    Output {
        pin: "unstable",
        types: "crates/acp-types/src/generated/unstable.rs",
        strategies: "crates/acp-types/tests/generated/unstable_strategies.rs",
        root: "acp_types",
    },
    Output {
        pin: "v2",
        types: "crates/acp-types/src/generated/v2.rs",
        strategies: "crates/acp-types/tests/generated/v2_strategies.rs",
        root: "acp_types::v2",
    },
    Output {
        pin: "v2-unstable",
        types: "crates/acp-types/src/generated/v2_unstable.rs",
        strategies: "crates/acp-types/tests/generated/v2_unstable_strategies.rs",
        root: "acp_types::v2",
    },
];

/// What `cargo xtask codegen --help` says the task does.
pub const ABOUT: &str = "\
Regenerates crates/acp-types/src/generated/{stable,unstable,v2,v2_unstable}.rs and the
proptest strategies
in crates/acp-types/tests/generated/ from the ACP schemas pinned in xtask/schema-pins.json
(committed under xtask/schemas/ and verified by their sha256). Only
files whose contents change are written. Then it lists the files that changed, summarizes the
protocol-level changes of each pin that moved to another schema (`cargo xtask schema-diff`),
and prints the commands to run next (`cargo xtask rerecord`, then the tests).";

/// The three ways to run `codegen`.
pub const USAGE: &str = "\
cargo xtask codegen [--check]
       cargo xtask codegen --refresh [--accept-changed]
       cargo xtask codegen [--check] --schema FILE --out FILE";

/// Said after the options in `cargo xtask codegen --help`.
pub const AFTER_HELP: &str = "\
The pinned schema files are committed under xtask/schemas/ with their sha256 in
xtask/schema-pins.json, so codegen and --check need neither the network nor Node.js.";

/// The arguments of `codegen`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write nothing; fail if a generated file is not up to date
    #[arg(long, conflicts_with = "refresh")]
    check: bool,
    /// First obtain every pinned file again from its source (npm package, URL, or the schema
    /// crate at a version, regenerated), write it under xtask/schemas/ and record its sha256 in
    /// the pins; this is how a pin moves
    #[arg(long)]
    refresh: bool,
    /// With --refresh: accept a source that now gives other bytes than when it was pinned under
    /// the same version (after reviewing them)
    #[arg(long, requires = "refresh")]
    accept_changed: bool,
    /// Generate the types from this schema file instead of the pins
    #[arg(long, value_name = "FILE", requires = "out")]
    schema: Option<PathBuf>,
    /// Where the types generated from --schema go (required with --schema)
    #[arg(long, value_name = "FILE", requires = "schema")]
    out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<(), String> {
    let mode = match args.check {
        true => Mode::Check,
        false => Mode::Write,
    };
    let (refresh, accept_changed) = (args.refresh, args.accept_changed);
    let (schema_file, out_file) = (args.schema, args.out);
    if let Some(schema_file) = schema_file {
        let text = std::fs::read_to_string(&schema_file)
            .map_err(|e| format!("reading {}: {e}", schema_file.display()))?;
        let model = lower(&text)?;
        eprint!("{}", ignored_note(&model));
        let code = reformat(&emit::emit(&model, &schema_file.display().to_string()))?;
        let out = out_file.ok_or("--schema needs --out FILE too")?;
        return ensure_file_contents(&out, &code, mode).map(drop);
    }
    // clap already refused --accept-changed without --refresh, and --refresh with --check.
    let mut refreshed = Vec::new();
    if refresh {
        refreshed = source::obtain::refresh(&report::committed_pins(), accept_changed)?;
    }
    let mut changed = Vec::new();
    let mut moved = Vec::new();
    let mut stable_text = String::new();
    for output in OUTPUTS {
        let (pin_name, types_file, strategies_file) = (output.pin, output.types, output.strategies);
        let pin = source::pin(pin_name)?;
        let text = source::fetch(&pin)?;
        if pin_name == "stable" {
            stable_text = text.clone();
        }
        let description = pin.description();
        let types_path = project_root().join(types_file);
        if let Some(before) = report::generated_from(&types_path)
            && before != description
        {
            moved.push(report::Moved {
                pin: pin.clone(),
                before,
            });
        }
        let model = lower(&text)?;
        eprint!("{}", ignored_note(&model));
        let code = reformat(&emit::emit(&model, &description))?;
        if ensure_file_contents(&types_path, &code, mode)? {
            changed.push(types_file.to_string());
        }
        let strategies = reformat(&strategies::emit(&model, &description, output.root)?)?;
        if ensure_file_contents(&project_root().join(strategies_file), &strategies, mode)? {
            changed.push(strategies_file.to_string());
        }
    }
    // `acp_types::models` (feature `models`), from the seed-era pin: see models.rs.
    if models::run(mode)? {
        changed.push(models::OUTPUT.to_string());
    }
    if mode == Mode::Write {
        print!("{}", report::render_refreshed(&refreshed));
        print!("{}", report::render(&changed, &moved));
        // What the runtime does not handle of the stable schema (xtask/runtime-coverage.json);
        // xtask's test `the_runtime_covers_the_stable_schema` fails on the same list.
        print!(
            "{}",
            coverage::check_workspace(&project_root(), &stable_text)?.render()
        );
    }
    Ok(())
}

/// What the generator says about the keywords of `model`'s schema that carry meaning it does
/// not generate (see [`model::keywords`]); empty when there are none.
pub fn ignored_note(model: &model::Model) -> String {
    let mut out = String::new();
    for (keyword, count) in &model.ignored {
        if let Some(model::keywords::Treatment::Ignored {
            announce: true,
            why,
        }) = model::keywords::treatment(keyword)
        {
            out.push_str(&format!(
                "note: the schema uses `{keyword}` ({count}x), which the generator ignores: {why}\n"
            ));
        }
    }
    out
}

/// Schema text → formatted Rust source (the tests' shortcut).
#[cfg(test)]
pub fn generate(schema_text: &str, source_description: &str) -> Result<String, String> {
    reformat(&emit::emit(&lower(schema_text)?, source_description))
}

/// Schema text → model.
pub fn lower(schema_text: &str) -> Result<model::Model, String> {
    let schema: Json = serde_json::from_str(schema_text)
        .map_err(|e| format!("the schema is not valid JSON: {e}"))?;
    model::lower(&schema)
}

/// Formats Rust source with the toolchain's rustfmt.
pub fn reformat(text: &str) -> Result<String, String> {
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--config", "max_width=100"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running rustfmt (rustup component add rustfmt): {e}"))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = text.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .map_err(|e| format!("waiting for rustfmt: {e}"))?;
    writer
        .join()
        .expect("writer thread")
        .map_err(|e| format!("feeding rustfmt: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "rustfmt rejected the generated code:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    String::from_utf8(output.stdout).map_err(|e| format!("rustfmt output is not UTF-8: {e}"))
}

#[cfg(test)]
mod tests;
