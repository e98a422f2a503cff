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

/// The text of a line a user reads: a Markdown line as it is, a doc comment's text without
/// its `///` or `//!`. `None` for lines a user does not read (Rust code outside doc comments).
fn doc_text(is_markdown: bool, line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    if is_markdown {
        return Some(trimmed);
    }
    let text = trimmed
        .strip_prefix("//!")
        .or_else(|| trimmed.strip_prefix("///"))?;
    Some(text.trim_start())
}

/// The breaches in one file's text, as (line number, reason): an example (a fenced code block
/// of a Markdown file or of a doc comment) that names `acp_types` (a `use`, a path, or
/// `acp_runtime::acp_types`), and a Markdown line that asks for an `acp-rs-types` dependency.
fn breaches(is_markdown: bool, text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    let mut in_example = false;
    for (n, line) in text.lines().enumerate() {
        let Some(doc) = doc_text(is_markdown, line) else {
            // Code between doc comments ends any example they held.
            in_example = false;
            continue;
        };
        if doc.starts_with("```") {
            in_example = !in_example;
            continue;
        }
        // rustdoc's hidden lines (`# `) are still code a user may copy from the source.
        let code = doc.strip_prefix('#').map_or(doc, str::trim_start);
        if in_example && code.contains("acp_types") && !code.starts_with("//") {
            found.push((
                n + 1,
                "an example names `acp_types`: write `use acp_runtime::prelude::*` and the bare names",
            ));
        }
        if is_markdown && code.starts_with("acp-rs-types") && code.contains('=') {
            found.push((
                n + 1,
                "asks for an `acp-rs-types` dependency: `acp_runtime::prelude::*` makes it unnecessary",
            ));
        }
    }
    found
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
        let is_markdown = path.extension().is_some_and(|e| e == "md");
        let lines: Vec<&str> = text.lines().collect();
        for (n, why) in breaches(is_markdown, &text) {
            let shown = path.strip_prefix(&root).unwrap_or(path).display();
            found.push(format!("{shown}:{n}: {why}\n    {}", lines[n - 1].trim()));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_scan_recognizes_the_old_style() {
    let md = |text: &str| breaches(true, text).len();
    let rs = |text: &str| breaches(false, text).len();
    assert_eq!(md("```rust\nuse acp_types::*;\n```\n"), 1);
    assert_eq!(
        md("```toml\nacp-rs-types = { git = \"https://github.com/acp-rs/acp-rs\" }\n```"),
        1
    );
    assert_eq!(rs("//! ```\n//! use acp_types::*;\n//! ```\n"), 1);
    assert_eq!(
        rs("    /// ```\n    /// # use acp_types::*;\n    /// ```\n"),
        1
    );
    assert_eq!(
        rs(
            "/// ```\n/// use acp_runtime::acp_types::*;\n/// let x = acp_types::ToolKind::Read;\n/// ```"
        ),
        2
    );
    // Code, prose, links and the prelude itself pass.
    assert_eq!(rs("use acp_types::*;\n"), 0);
    assert_eq!(
        rs("/// The protocol's form, [`acp_types::TerminalExitStatus`].\n"),
        0
    );
    assert_eq!(md("so that `use acp_types::*` clashes with nothing\n"), 0);
    assert_eq!(
        rs("//! ```\n//! use acp_runtime::prelude::*;\n//! ```\n"),
        0
    );
    assert_eq!(
        md("Published as `acp-rs-types`, the library is `acp_types`\n"),
        0
    );
}
