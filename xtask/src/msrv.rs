//! `cargo xtask msrv`: the minimum supported Rust version is stated once (`rust-version` in the
//! workspace `Cargo.toml`) and everything else agrees with it: every member inherits it,
//! `rust-toolchain.toml` pins that very version (so every CI build, test and lint runs on the
//! MSRV), and the READMEs say it. No toolchain is downloaded: the check is that CI's own
//! toolchain is the MSRV.

use crate::project_root;
use std::path::Path;
use std::process::Command;

/// What `cargo xtask msrv --help` says the task does.
pub const ABOUT: &str = "\
Checks that the minimum supported Rust version (`rust-version` in the workspace Cargo.toml) is
inherited by every member crate, pinned by rust-toolchain.toml (so CI builds on exactly the
MSRV), stated by the READMEs, and that the rustc running this is that version.";

pub fn run() -> Result<(), String> {
    let msrv = check_files(&project_root())?;
    let output = Command::new("rustc")
        .arg("--version")
        .current_dir(project_root())
        .output()
        .map_err(|e| format!("running rustc --version: {e}"))?;
    let rustc = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !rustc.starts_with(&format!("rustc {msrv}.")) {
        return Err(format!(
            "the toolchain here is `{rustc}`, not the MSRV {msrv} that rust-toolchain.toml pins"
        ));
    }
    println!("msrv: {msrv}, stated consistently; this toolchain ({rustc}) is the MSRV.");
    Ok(())
}

/// The MSRV, after checking that the files under `root` agree on it.
pub fn check_files(root: &Path) -> Result<String, String> {
    let read = |name: &str| {
        std::fs::read_to_string(root.join(name)).map_err(|e| format!("reading {name}: {e}"))
    };
    let manifest = read("Cargo.toml")?;
    let msrv = quoted_value(&manifest, "rust-version")
        .ok_or("the workspace Cargo.toml has no `rust-version`")?;
    let mut problems = Vec::new();

    let toolchain = read("rust-toolchain.toml")?;
    match quoted_value(&toolchain, "channel") {
        Some(channel) if channel == msrv || channel.starts_with(&format!("{msrv}.")) => {}
        other => problems.push(format!(
            "rust-toolchain.toml pins {other:?}, not the MSRV {msrv}: CI would not build on it"
        )),
    }
    for member in members(&manifest) {
        let path = format!("{member}/Cargo.toml");
        let text = read(&path)?;
        if !text
            .lines()
            .any(|l| l.trim() == "rust-version.workspace = true")
        {
            problems.push(format!(
                "{path} does not inherit `rust-version.workspace = true`"
            ));
        }
        // A crate README that states a version states this one.
        if let Ok(readme) = read(&format!("{member}/README.md"))
            && let Some(stated) = readme
                .lines()
                .find_map(|l| l.strip_prefix("Minimum supported Rust version: "))
            && stated.trim_end_matches('.') != msrv
        {
            problems.push(format!("{member}/README.md states {stated}, not {msrv}"));
        }
    }
    if !read("README.md")?.contains(&format!("Rust {msrv} or newer")) {
        problems.push(format!("README.md does not say `Rust {msrv} or newer`"));
    }
    if problems.is_empty() {
        Ok(msrv)
    } else {
        Err(format!(
            "the MSRV is not stated consistently:\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// The string value of the first `key = "value"` line.
fn quoted_value(toml: &str, key: &str) -> Option<String> {
    toml.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
    })
}

/// The `members = [...]` of the workspace manifest.
fn members(manifest: &str) -> Vec<String> {
    let Some(start) = manifest.find("members = [") else {
        return Vec::new();
    };
    let list = &manifest[start + "members = [".len()..];
    let list = &list[..list.find(']').unwrap_or(list.len())];
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_msrv_is_stated_consistently() {
        let msrv = check_files(&project_root()).unwrap();
        assert!(msrv.starts_with("1."), "{msrv}");
    }

    #[test]
    fn reads_the_manifest() {
        let manifest = "[workspace]\nmembers = [\"a\", \"crates/b\"]\n\n[workspace.package]\nrust-version = \"1.95\"\n";
        assert_eq!(members(manifest), ["a", "crates/b"]);
        assert_eq!(
            quoted_value(manifest, "rust-version").as_deref(),
            Some("1.95")
        );
        assert_eq!(quoted_value(manifest, "edition"), None);
    }
}
