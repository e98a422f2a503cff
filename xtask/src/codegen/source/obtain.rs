//! Obtaining pinned schema files from their sources (`cargo xtask codegen --refresh`): the only
//! part of codegen that needs the network. Downloads and builds go under `target/acp-schema/`;
//! every failure says what was tried and why it failed.
//!
//! - npm: `npm pack package@version`, then the file from the tarball.
//! - URL: an HTTP(S) GET, the body capped at [`MAX_SCHEMA_BYTES`].
//! - crate: the scratch project in `xtask/schema-from-crate/` (its `Cargo.toml.in` and
//!   `src/main.rs`) built against the crate at the pinned version, with the lockfile committed
//!   for that version in `xtask/schema-from-crate/locks/` (`--locked`; a version without one gets
//!   a new lockfile, which the maintainer commits). It writes the schema and method table the way
//!   upstream's generator publishes them: the crate's `schemars` derives, draft 2020-12, the root
//!   the union of the agent, client, protocol-level and proxy messages.

use super::{Pin, Source, pins_file, sha256_hex};
use crate::project_root;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The largest schema file a URL may give (today's are under 1 MiB).
pub const MAX_SCHEMA_BYTES: u64 = 64 << 20;

/// The only crate the scratch project knows how to regenerate from.
pub const SCHEMA_CRATE: &str = "agent-client-protocol-schema";

/// The bytes `source` gives now.
pub fn obtain(source: &Source) -> Result<Vec<u8>, String> {
    match source {
        Source::Npm {
            package,
            version,
            path,
        } => from_npm("npm".as_ref(), package, version, path),
        Source::Url { url } => from_url(url),
        Source::Crate {
            name,
            version,
            path,
        } => from_crate(name, version, path),
    }
}

fn cache_root() -> PathBuf {
    project_root().join("target/acp-schema")
}

/// `npm pack` with the `npm` program given (the tests give a stand-in).
fn from_npm(
    npm: &std::ffi::OsStr,
    package: &str,
    version: &str,
    path: &str,
) -> Result<Vec<u8>, String> {
    let spec = format!("{package}@{version}");
    let dir = cache_root().join("npm").join(format!(
        "{}-{version}",
        package.trim_start_matches('@').replace('/', "-")
    ));
    let file = dir.join("package").join(path);
    if !file.exists() {
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        eprintln!("obtaining {spec} with `npm pack`");
        let output = Command::new(npm)
            .args(["pack", &spec, "--pack-destination"])
            .arg(&dir)
            .output()
            .map_err(|e| {
                format!("running `npm pack {spec}` failed (is Node.js installed?): {e}")
            })?;
        if !output.status.success() {
            return Err(format!(
                "`npm pack {spec}` exited with {}:\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let tarball = String::from_utf8_lossy(&output.stdout)
            .lines()
            .rfind(|line| line.trim().ends_with(".tgz"))
            .map(|line| dir.join(line.trim()))
            .ok_or_else(|| {
                format!(
                    "`npm pack {spec}` named no tarball on its output:\n{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                )
            })?;
        let status = Command::new("tar")
            .arg("xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(&dir)
            .status()
            .map_err(|e| format!("running `tar xzf {}`: {e}", tarball.display()))?;
        if !status.success() {
            return Err(format!(
                "`tar xzf {}` exited with {status}",
                tarball.display()
            ));
        }
    }
    std::fs::read(&file).map_err(|e| format!("{spec} has no `{path}` ({}): {e}", file.display()))
}

fn from_url(url: &str) -> Result<Vec<u8>, String> {
    eprintln!("obtaining {url}");
    let response = ureq::get(url)
        .call()
        .map_err(|e| format!("GET {url} failed: {e}"))?;
    let mut bytes = Vec::new();
    response
        .into_body()
        .into_reader()
        .take(MAX_SCHEMA_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading the body of {url}: {e}"))?;
    if bytes.len() as u64 > MAX_SCHEMA_BYTES {
        return Err(format!(
            "{url} gave more than {MAX_SCHEMA_BYTES} bytes: not a schema file"
        ));
    }
    Ok(bytes)
}

/// The scratch project's committed parts.
pub fn generator_dir() -> PathBuf {
    project_root().join("xtask/schema-from-crate")
}

/// The committed lockfile of the scratch project for `version` of the crate.
pub fn lockfile(version: &str) -> PathBuf {
    generator_dir()
        .join("locks")
        .join(format!("{version}.lock"))
}

/// The scratch project's features and output directory for a published file name.
fn variant(path: &str) -> Result<(&'static str, &'static str), String> {
    let (protocol, file) = path
        .split_once('/')
        .ok_or_else(|| format!("`{path}`: a crate pin's path is `v1/…` or `v2/…`"))?;
    let unstable = match file {
        "schema.json" | "meta.json" => false,
        "schema.unstable.json" | "meta.unstable.json" => true,
        _ => {
            return Err(format!(
                "`{path}`: the crate gives schema.json, schema.unstable.json, meta.json and \
                 meta.unstable.json"
            ));
        }
    };
    Ok(match (protocol, unstable) {
        ("v1", false) => ("", "v1"),
        ("v1", true) => ("unstable", "v1-unstable"),
        ("v2", false) => ("v2", "v2"),
        ("v2", true) => ("v2,unstable", "v2-unstable"),
        _ => return Err(format!("`{path}`: the protocol directory is `v1` or `v2`")),
    })
}

fn from_crate(name: &str, version: &str, path: &str) -> Result<Vec<u8>, String> {
    if name != SCHEMA_CRATE {
        return Err(format!(
            "crate pins regenerate from `{SCHEMA_CRATE}` only, not `{name}`"
        ));
    }
    let (features, out_name) = variant(path)?;
    let project = cache_root().join("crate").join(format!("{name}-{version}"));
    let out = project.join("out").join(out_name);
    // The scratch project writes `schema.json` and `meta.json` for the variant it was built as.
    let file_name = if path.contains("/meta") {
        "meta.json"
    } else {
        "schema.json"
    };
    let produced = out.join(file_name);
    if !produced.exists() {
        build_and_run(version, &project, features, &out)?;
    }
    std::fs::read(&produced).map_err(|e| format!("reading {}: {e}", produced.display()))
}

fn build_and_run(version: &str, project: &Path, features: &str, out: &Path) -> Result<(), String> {
    let template = generator_dir().join("Cargo.toml.in");
    let manifest = std::fs::read_to_string(&template)
        .map_err(|e| format!("reading {}: {e}", template.display()))?
        .replace("@VERSION@", version);
    std::fs::create_dir_all(project.join("src"))
        .map_err(|e| format!("creating {}: {e}", project.display()))?;
    std::fs::write(project.join("Cargo.toml"), manifest)
        .map_err(|e| format!("writing {}: {e}", project.display()))?;
    std::fs::copy(
        generator_dir().join("src/main.rs"),
        project.join("src/main.rs"),
    )
    .map_err(|e| format!("copying the generator into {}: {e}", project.display()))?;
    let committed_lock = lockfile(version);
    let locked = committed_lock.exists();
    if locked {
        std::fs::copy(&committed_lock, project.join("Cargo.lock"))
            .map_err(|e| format!("copying {}: {e}", committed_lock.display()))?;
    }
    eprintln!(
        "regenerating the schema from {SCHEMA_CRATE} {version}{}",
        if features.is_empty() {
            String::new()
        } else {
            format!(" (features {features})")
        }
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .arg("run")
        .arg("--quiet")
        .arg("--manifest-path")
        .arg(project.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", cache_root().join("crate-target"));
    if locked {
        command.arg("--locked");
    }
    if !features.is_empty() {
        command.args(["--features", features]);
    }
    command.arg("--").arg(out);
    let output = command
        .output()
        .map_err(|e| format!("running `{cargo} run` in {}: {e}", project.display()))?;
    if !output.status.success() {
        return Err(format!(
            "regenerating from {SCHEMA_CRATE} {version} failed: `cargo run{}` in {} exited with \
             {}:\n{}",
            if locked { " --locked" } else { "" },
            project.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if !locked {
        if let Some(parent) = committed_lock.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        std::fs::copy(project.join("Cargo.lock"), &committed_lock)
            .map_err(|e| format!("saving {}: {e}", committed_lock.display()))?;
        eprintln!(
            "{} is new: commit it, so that the next regeneration builds the same dependencies",
            committed_lock.display()
        );
    }
    Ok(())
}

/// What `refresh` did to one pin.
#[derive(Debug, PartialEq, Eq)]
pub struct Refreshed {
    pub name: String,
    pub file: PathBuf,
    /// The sha256 pinned before, when it differs from the file's now.
    pub previous_sha256: Option<String>,
    pub sha256: String,
}

/// Obtains every pin's file from its source, writes it under `xtask/schemas/`, records its
/// sha256 in the pins file, and removes committed files no pin names any more.
///
/// A pin whose source is the same as in `committed` (the pins as last committed) must give the
/// bytes it gave then: a published file that changed under the same version is refused unless
/// `accept_changed` (after reviewing it).
pub fn refresh(committed: &[Pin], accept_changed: bool) -> Result<Vec<Refreshed>, String> {
    refresh_in(
        &pins_file(),
        &super::schemas_dir(),
        committed,
        accept_changed,
    )
}

/// [`refresh`] with the pins file and the directory of committed files given.
pub fn refresh_in(
    pins_file: &Path,
    schemas_dir: &Path,
    committed: &[Pin],
    accept_changed: bool,
) -> Result<Vec<Refreshed>, String> {
    let text = std::fs::read_to_string(pins_file)
        .map_err(|e| format!("reading {}: {e}", pins_file.display()))?;
    let pins = super::parse_pins(&text, &pins_file.display().to_string())?;
    let mut done = Vec::new();
    let mut new_shas = Vec::new();
    // Every source is obtained and checked before anything is written, so that a failure
    // leaves the committed files and the pins as they were, in step with each other.
    let mut obtained = Vec::new();
    for pin in &pins {
        let bytes = obtain(&pin.source).map_err(|e| format!("the `{}` schema: {e}", pin.name))?;
        let sha256 = sha256_hex(&bytes);
        let same_source_as_committed = committed
            .iter()
            .any(|c| c.name == pin.name && c.source == pin.source && c.sha256 == pin.sha256);
        if sha256 != pin.sha256 && same_source_as_committed && !accept_changed {
            return Err(format!(
                "the `{}` schema's source ({}) now gives other bytes (sha256 {sha256}) than \
                 when it was pinned ({}). A published file changed under the same version: \
                 review it, then run `cargo xtask codegen --refresh --accept-changed`",
                pin.name,
                pin.description(),
                pin.sha256
            ));
        }
        obtained.push((pin, bytes, sha256));
    }
    for (pin, bytes, sha256) in obtained {
        let file = schemas_dir.join(pin.source.relative_file());
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        std::fs::write(&file, &bytes).map_err(|e| format!("writing {}: {e}", file.display()))?;
        new_shas.push((pin.name.clone(), sha256.clone()));
        done.push(Refreshed {
            name: pin.name.clone(),
            file,
            previous_sha256: (sha256 != pin.sha256).then(|| pin.sha256.clone()),
            sha256,
        });
    }
    record_shas(pins_file, &new_shas)?;
    remove_unpinned(schemas_dir, &pins)?;
    Ok(done)
}

/// Rewrites the `sha256` of each named pin in the pins file, keeping everything else.
fn record_shas(file: &Path, shas: &[(String, String)]) -> Result<(), String> {
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    let mut json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", file.display()))?;
    for (name, sha) in shas {
        json["schemas"][name.as_str()]["sha256"] = serde_json::Value::String(sha.clone());
    }
    let text = serde_json::to_string_pretty(&json).expect("JSON values serialize") + "\n";
    std::fs::write(file, text).map_err(|e| format!("writing {}: {e}", file.display()))
}

/// Deletes the files under `xtask/schemas/` that no pin names (a moved pin's old file), except
/// the README.
fn remove_unpinned(schemas_dir: &Path, pins: &[Pin]) -> Result<(), String> {
    let keep: Vec<PathBuf> = pins
        .iter()
        .map(|p| schemas_dir.join(p.source.relative_file()))
        .collect();
    let mut stack = vec![schemas_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if !keep.contains(&path) && path.file_name() != Some("README.md".as_ref()) {
                std::fs::remove_file(&path)
                    .map_err(|e| format!("removing {}: {e}", path.display()))?;
                let mut parent = path.parent();
                while let Some(dir) = parent {
                    if dir == schemas_dir || std::fs::remove_dir(dir).is_err() {
                        break;
                    }
                    parent = dir.parent();
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
