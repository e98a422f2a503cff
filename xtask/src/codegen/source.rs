//! Where the schemas come from: the pins in `xtask/schema-pins.json`, fetched with `npm pack`
//! into `target/acp-schema/` and verified by sha256 before use. Nothing of the package is
//! committed.

use super::json::Json;
use crate::project_root;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One pinned schema file inside a published npm package.
#[derive(Clone, Debug)]
pub struct Pin {
    pub name: String,
    pub package: String,
    pub version: String,
    pub path: String,
    pub sha256: String,
}

pub fn pins_file() -> PathBuf {
    project_root().join("xtask/schema-pins.json")
}

pub fn load_pins() -> Result<Vec<Pin>, String> {
    let file = pins_file();
    let text =
        std::fs::read_to_string(&file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    parse_pins(&text, &file.display().to_string())
}

/// The pins in `text`, a pins file's contents; `origin` names it in errors.
pub fn parse_pins(text: &str, origin: &str) -> Result<Vec<Pin>, String> {
    let json: Json = serde_json::from_str(text).map_err(|e| format!("parsing {origin}: {e}"))?;
    let schemas = json
        .get("schemas")
        .and_then(Json::as_object)
        .ok_or_else(|| format!("{origin}: missing `schemas` object"))?;
    schemas
        .iter()
        .map(|(name, entry)| {
            let field = |key: &str| {
                entry
                    .get(key)
                    .and_then(Json::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{origin}: schema `{name}` lacks `{key}`"))
            };
            Ok(Pin {
                name: name.clone(),
                package: field("package")?,
                version: field("version")?,
                path: field("path")?,
                sha256: field("sha256")?,
            })
        })
        .collect()
}

pub fn pin(name: &str) -> Result<Pin, String> {
    load_pins()?
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("no schema named `{name}` in {}", pins_file().display()))
}

impl Pin {
    /// How generated files name their source: `package@version path`.
    pub fn description(&self) -> String {
        format!("{}@{} {}", self.package, self.version, self.path)
    }
}

/// Where the package `package@version` is unpacked (under `package/`).
pub fn cache_dir(package: &str, version: &str) -> PathBuf {
    project_root().join("target/acp-schema").join(format!(
        "{}-{}",
        package.trim_start_matches('@').replace('/', "-"),
        version
    ))
}

/// Returns the text of the pinned schema, downloading the package on first use.
pub fn fetch(pin: &Pin) -> Result<String, String> {
    let cache_dir = cache_dir(&pin.package, &pin.version);
    let schema_path = cache_dir.join("package").join(&pin.path);
    if !schema_path.exists() {
        download(pin, &cache_dir)?;
    }
    let bytes = std::fs::read(&schema_path)
        .map_err(|e| format!("reading {}: {e}", schema_path.display()))?;
    let actual = hex(&Sha256::digest(&bytes));
    if actual != pin.sha256 {
        return Err(format!(
            "sha256 mismatch for {}@{} {}: the pin says {} but the file has {actual}. \
             If the package really changed, review the new schema and update {}; \
             to retry a corrupted download, delete {}",
            pin.package,
            pin.version,
            pin.path,
            pin.sha256,
            pins_file().display(),
            cache_dir.display()
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("{} is not UTF-8: {e}", schema_path.display()))
}

fn download(pin: &Pin, cache_dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(cache_dir)
        .map_err(|e| format!("creating {}: {e}", cache_dir.display()))?;
    let spec = format!("{}@{}", pin.package, pin.version);
    eprintln!("fetching {spec} with npm pack");
    let output = Command::new("npm")
        .args(["pack", &spec, "--silent", "--pack-destination"])
        .arg(cache_dir)
        .output()
        .map_err(|e| format!("running `npm pack {spec}` (is Node.js installed?): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`npm pack {spec}` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let tarball_name = String::from_utf8_lossy(&output.stdout)
        .trim()
        .lines()
        .last()
        .unwrap_or("")
        .to_owned();
    let tarball = cache_dir.join(&tarball_name);
    let status = Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(cache_dir)
        .status()
        .map_err(|e| format!("running tar: {e}"))?;
    if !status.success() {
        return Err(format!("extracting {} failed", tarball.display()));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
