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
#[cfg(test)]
mod schema_move;
pub mod source;
pub mod strategies;

use crate::{Mode, ensure_file_contents, project_root};
use json::Json;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Generated files: pin name → the types module, and the proptest strategies for its test.
pub const OUTPUTS: &[(&str, &str, &str)] = &[
    (
        "stable",
        "crates/acp-types/src/generated/stable.rs",
        "crates/acp-types/tests/generated/stable_strategies.rs",
    ),
    (
        "unstable",
        "crates/acp-types/src/generated/unstable.rs",
        "crates/acp-types/tests/generated/unstable_strategies.rs",
    ),
];

pub fn run(args: &[String]) -> Result<(), String> {
    let mut mode = Mode::Write;
    let mut schema_file = None;
    let mut out_file = None;
    let mut refresh = false;
    let mut accept_changed = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--check" => mode = Mode::Check,
            "--refresh" => refresh = true,
            "--accept-changed" => accept_changed = true,
            "--schema" => {
                schema_file = Some(PathBuf::from(iter.next().ok_or("--schema needs a file")?))
            }
            "--out" => out_file = Some(PathBuf::from(iter.next().ok_or("--out needs a file")?)),
            other => return Err(format!("unknown codegen argument `{other}`")),
        }
    }
    if let Some(schema_file) = schema_file {
        let text = std::fs::read_to_string(&schema_file)
            .map_err(|e| format!("reading {}: {e}", schema_file.display()))?;
        let model = lower(&text)?;
        eprint!("{}", ignored_note(&model));
        let code = reformat(&emit::emit(&model, &schema_file.display().to_string()))?;
        let out = out_file.ok_or("--schema needs --out FILE too")?;
        return ensure_file_contents(&out, &code, mode).map(drop);
    }
    if accept_changed && !refresh {
        return Err("--accept-changed only goes with --refresh".into());
    }
    if refresh && mode == Mode::Check {
        return Err("--refresh writes the pinned files; it does not go with --check".into());
    }
    let mut refreshed = Vec::new();
    if refresh {
        refreshed = source::obtain::refresh(&report::committed_pins(), accept_changed)?;
    }
    let mut changed = Vec::new();
    let mut moved = Vec::new();
    let mut stable_text = String::new();
    for (pin_name, types_file, strategies_file) in OUTPUTS {
        let pin = source::pin(pin_name)?;
        let text = source::fetch(&pin)?;
        if *pin_name == "stable" {
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
        let strategies = reformat(&strategies::emit(&model, &description)?)?;
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
