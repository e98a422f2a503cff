//! One import style in everything a user reads: READMEs, `docs/*.md` and the examples in doc
//! comments teach `use acp_runtime::prelude::*`, which brings the protocol's types with the
//! runtime's traits and handles. A user copying `use acp_types::*` (or
//! `acp_runtime::acp_types::*`) would need a second import and, for the first, an `acp-rs-types`
//! dependency the prelude makes unnecessary; this test fails on either in those places.
//!
//! acp-types' own README and docs are exempt: they document that crate alone. Code (not docs)
//! inside the workspace imports what it likes.

use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root (xtask lives one level below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// Folders never scanned: build output, vendored or recorded material, and the types crate,
/// whose documentation is about `acp_types` itself.
const SKIPPED: &[&str] = &[
    "target",
    ".git",
    "fixtures",
    "fuzz",
    "node_modules",
    "acp-types",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // A symlink (acp-test's GUIDE.md → docs/testing.md) is scanned at its target.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        if kind.is_dir() {
            if !SKIPPED.contains(&name.as_ref()) && !name.starts_with('.') {
                files(&path, out);
            }
        } else if name.ends_with(".md") || name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The code of a line a user reads as an example: a Markdown line as it is, a doc comment's
/// text without its `///` or `//!` (and rustdoc's `# ` for hidden lines). `None` for lines a
/// user does not read (Rust code outside doc comments).
fn example_line(path: &Path, line: &str) -> Option<String> {
    let trimmed = line.trim_start();
    let text = if path.extension().is_some_and(|e| e == "md") {
        trimmed
    } else {
        trimmed
            .strip_prefix("//!")
            .or_else(|| trimmed.strip_prefix("///"))?
            .trim_start()
    };
    let text = text.strip_prefix("# ").unwrap_or(text).trim_start();
    Some(text.to_owned())
}

/// What is wrong with one line, if anything.
fn breach(path: &Path, line: &str) -> Option<&'static str> {
    let code = example_line(path, line)?;
    if code.starts_with("use acp_types") || code.starts_with("use acp_runtime::acp_types") {
        return Some("imports the protocol's types directly: write `use acp_runtime::prelude::*`");
    }
    let is_markdown = path.extension().is_some_and(|e| e == "md");
    if is_markdown && code.starts_with("acp-rs-types") && code.contains('=') {
        return Some(
            "asks for an `acp-rs-types` dependency: `acp_runtime::prelude::*` makes it unnecessary",
        );
    }
    None
}

#[test]
fn readmes_and_doc_examples_teach_the_prelude() {
    let root = root();
    let mut paths = Vec::new();
    files(&root, &mut paths);
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("crates/acp-test/README.md")),
        "the scan found the READMEs"
    );
    let mut found = Vec::new();
    for path in &paths {
        let Ok(text) = fs::read_to_string(path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if let Some(why) = breach(path, line) {
                let shown = path.strip_prefix(&root).unwrap_or(path).display();
                found.push(format!("{shown}:{}: {why}\n    {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_scan_recognizes_the_old_style() {
    let md = Path::new("README.md");
    let rs = Path::new("lib.rs");
    assert!(breach(md, "use acp_types::*;").is_some());
    assert!(
        breach(
            md,
            "acp-rs-types = { git = \"https://github.com/acp-rs/acp-rs\" }"
        )
        .is_some()
    );
    assert!(breach(rs, "//! use acp_types::*;").is_some());
    assert!(breach(rs, "    /// # use acp_types::*;").is_some());
    assert!(breach(rs, "    /// use acp_runtime::acp_types::*;").is_some());
    // Code, prose and the prelude itself pass.
    assert!(breach(rs, "use acp_types::*;").is_none());
    assert!(breach(md, "so that `use acp_types::*` clashes with nothing").is_none());
    assert!(breach(rs, "//! use acp_runtime::prelude::*;").is_none());
    assert!(
        breach(
            md,
            "Published as `acp-rs-types`, the library is `acp_types`"
        )
        .is_none()
    );
}
