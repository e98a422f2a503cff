//! Tidiness rules of the whole workspace that no compiler checks, read from the sources as
//! text (rust-analyzer's `tidy.rs` is the model): no two sibling modules import each other,
//! directly or round a longer loop; every path `docs/ARCHITECTURE.md` names exists; every Rust
//! file says what it is for in a `//!` line.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root (xtask lives one level below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// Folders never scanned: build output, version control, dependencies of the JavaScript peers.
const SKIPPED: &[&str] = &["target", ".git", "node_modules"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !SKIPPED.contains(&name.as_str()) && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if kind.is_file() && name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Written by a generator (the first line says `@generated`): its doc is the generator's.
fn is_generated(text: &str) -> bool {
    text.lines()
        .next()
        .is_some_and(|line| line.contains("@generated"))
}

// ---------------------------------------------------------------------------------------------
// `//!` lines

#[test]
fn every_rust_file_says_what_it_is_for() {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    let mut missing: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let text = fs::read_to_string(path).ok()?;
            let first = text.lines().find(|line| !line.trim().is_empty())?;
            (!first.starts_with("//!") && !is_generated(&text)).then(|| relative(path))
        })
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "these files do not start with a `//!` line saying what they are for:\n  {}",
        missing.join("\n  ")
    );
}

// ---------------------------------------------------------------------------------------------
// Module cycles

/// A crate's module tree on disk: the folder its modules are found in, the files of its
/// modules and their module paths (`agent/dispatch.rs` → `["agent", "dispatch"]`).
struct ModuleTree {
    base: PathBuf,
    modules: BTreeMap<Vec<String>, PathBuf>,
}

/// Every module tree of the workspace: each package's `src/` (without `src/bin/`), and each
/// binary, test, example or bench that is a folder with a `main.rs`.
fn module_trees() -> Vec<ModuleTree> {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    let mut bases: BTreeSet<PathBuf> = BTreeSet::new();
    for file in &files {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let parent = file.parent().expect("a file has a folder");
        let folder = parent.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let grandparent = parent
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let is_root = match name {
            "lib.rs" | "main.rs" => {
                folder == "src" || ["bin", "tests", "examples", "benches"].contains(&grandparent)
            }
            _ => false,
        };
        if is_root {
            bases.insert(parent.to_path_buf());
        }
    }
    bases
        .iter()
        .map(|base| {
            let mut modules = BTreeMap::new();
            for file in &files {
                let Ok(rel) = file.strip_prefix(base) else {
                    continue;
                };
                // A file belongs to the innermost tree holding it; `src/bin/` holds other crates.
                let inner = bases.iter().any(|other| {
                    other != base && other.starts_with(base) && file.starts_with(other)
                });
                if inner || rel.starts_with("bin") && base.ends_with("src") {
                    continue;
                }
                let mut path: Vec<String> = rel
                    .with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if path.last().is_some_and(|last| last == "mod") {
                    path.pop();
                }
                if path.len() == 1 && (path[0] == "lib" || path[0] == "main") {
                    path.clear();
                }
                modules.insert(path, file.clone());
            }
            ModuleTree {
                base: base.clone(),
                modules,
            }
        })
        .collect()
}

/// The text of a Rust file without comments, strings and character literals (each replaced
/// by a space), so that only code is searched for paths.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !is_ident(chars.get(i.wrapping_sub(1)))
        {
            // A raw string: r"…", r#"…"#, …
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push(' ');
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push(' ');
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push(' ');
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// One token of code: an identifier, `::`, or any other single character.
fn tokens(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// Reads a path or a `use` tree from `tokens[i]` on, after its first segment: every full path
/// it names (a group `{a, b::c}` gives one path per member). Returns them and the index after.
fn read_tree(tokens: &[String], mut i: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    loop {
        if tokens.get(i).map(String::as_str) != Some("::") {
            return (vec![path], i);
        }
        i += 1;
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                i += 1;
                let mut all = Vec::new();
                loop {
                    match tokens.get(i).map(String::as_str) {
                        None => return (all, i),
                        Some("}") => return (all, i + 1),
                        Some(",") => i += 1,
                        Some("self") => {
                            all.push(path.clone());
                            i += 1;
                        }
                        Some(segment) if is_ident(segment.chars().next().as_ref()) => {
                            let mut member = path.clone();
                            member.push(segment.to_owned());
                            let (paths, next) = read_tree(tokens, i + 1, member);
                            all.extend(paths);
                            i = next;
                        }
                        // `*`, `as name` and anything unexpected: skip a token.
                        Some(_) => i += 1,
                    }
                }
            }
            Some(segment) if is_ident(segment.chars().next().as_ref()) => {
                path.push(segment.to_owned());
                i += 1;
            }
            _ => return (vec![path], i),
        }
    }
}

/// An import of one module by another: where it is written and what it names.
struct Import {
    from: Vec<String>,
    to: Vec<String>,
    file: PathBuf,
}

/// Every `crate::…` and `super::…` path in a file of `tree` (in `use` or in code), resolved
/// to the module it reaches: the longest prefix of the path that is a module file.
fn imports(tree: &ModuleTree, module: &[String], file: &Path) -> Vec<Import> {
    let Ok(text) = fs::read_to_string(file) else {
        return Vec::new();
    };
    let tokens = tokens(&code_only(&text));
    // Inline modules (`mod tests { … }`), for what `super` means inside them.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let token = tokens[i].as_str();
        match token {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, at)| *at == depth) {
                    inline.pop();
                }
            }
            "mod" if tokens.get(i + 2).map(String::as_str) == Some("{") => {
                inline.push((tokens[i + 1].clone(), depth));
                depth += 1;
                i += 3;
                continue;
            }
            _ => {}
        }
        let starts_path = (token == "crate" || token == "super")
            && tokens.get(i + 1).map(String::as_str) == Some("::")
            && i.checked_sub(1).is_none_or(|p| tokens[p] != "::");
        if !starts_path {
            i += 1;
            continue;
        }
        let mut here: Vec<String> = module.to_vec();
        here.extend(inline.iter().map(|(name, _)| name.clone()));
        let mut base = if token == "crate" {
            Vec::new()
        } else {
            parent(&here)
        };
        i += 1;
        while tokens.get(i).map(String::as_str) == Some("::")
            && tokens.get(i + 1).map(String::as_str) == Some("super")
        {
            base = parent(&base);
            i += 2;
        }
        let (paths, next) = read_tree(&tokens, i, base);
        i = next.max(i + 1);
        for path in paths {
            let reached = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|prefix| tree.modules.contains_key(prefix))
                .unwrap_or_default();
            out.push(Import {
                from: here.clone(),
                to: reached,
                file: file.to_path_buf(),
            });
        }
    }
    out
}

fn parent(module: &[String]) -> Vec<String> {
    module[..module.len().saturating_sub(1)].to_vec()
}

/// The sibling graph of one parent module: which child imports which (through any of their
/// descendants), with the files where it is written.
type SiblingGraph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Groups of siblings that reach each other (strongly connected components of two or more).
fn cycles(graph: &SiblingGraph) -> Vec<BTreeSet<String>> {
    let nodes: BTreeSet<&String> = graph
        .iter()
        .flat_map(|(from, to)| std::iter::once(from).chain(to.keys()))
        .collect();
    let reach = |start: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(node) = stack.pop() {
            for next in graph.get(&node).into_iter().flat_map(|to| to.keys()) {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut found: Vec<BTreeSet<String>> = Vec::new();
    for node in &nodes {
        if !reaches[node].contains(*node) || found.iter().any(|c| c.contains(*node)) {
            continue;
        }
        let component: BTreeSet<String> = nodes
            .iter()
            .filter(|other| reaches[node].contains(**other) && reaches[**other].contains(*node))
            .map(|n| (*n).clone())
            .collect();
        found.push(component);
    }
    found
}

#[test]
fn no_sibling_modules_import_each_other() {
    let mut failures = Vec::new();
    for tree in module_trees() {
        let base = relative(&tree.base);
        let mut graphs: BTreeMap<Vec<String>, SiblingGraph> = BTreeMap::new();
        for (module, file) in &tree.modules {
            for import in imports(&tree, module, file) {
                let common = import
                    .from
                    .iter()
                    .zip(&import.to)
                    .take_while(|(a, b)| a == b)
                    .count();
                // A module importing its ancestor or its own descendant is no sibling edge.
                if common == import.to.len() || common == import.from.len() {
                    continue;
                }
                graphs
                    .entry(import.from[..common].to_vec())
                    .or_default()
                    .entry(import.from[common].clone())
                    .or_default()
                    .entry(import.to[common].clone())
                    .or_default()
                    .insert(relative(&import.file));
            }
        }
        for (parent, graph) in &graphs {
            for cycle in cycles(graph) {
                let parent_name = parent.join("/");
                let members: Vec<&str> = cycle.iter().map(String::as_str).collect();
                let mut report = format!(
                    "{base}: modules {} of `{}` import each other:",
                    members.join(", "),
                    if parent_name.is_empty() {
                        "crate"
                    } else {
                        &parent_name
                    }
                );
                for from in &cycle {
                    for (to, files) in &graph[from] {
                        if cycle.contains(to) {
                            let files: Vec<&str> = files.iter().map(String::as_str).collect();
                            report += &format!("\n    {from} -> {to} (in {})", files.join(", "));
                        }
                    }
                }
                failures.push(report);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// ARCHITECTURE.md's paths

/// File endings that make a backticked word a path even without a `/`.
const PATH_ENDINGS: &[&str] = &[
    ".rs", ".md", ".toml", ".sh", ".jsonl", ".json", ".yml", ".cfg",
];

/// Names the text uses as examples of a layout, not as files of this repository.
const EXAMPLE_NAMES: &[&str] = &["foo.rs", "foo/", "foo/mod.rs", "tests/common.rs"];

/// The namespaces of the protocol's methods: `session/update` is a method, not a path.
const METHOD_NAMESPACES: &[&str] = &[
    "session",
    "fs",
    "terminal",
    "proxy",
    "mcp",
    "auth",
    "providers",
    "$",
];

/// `a/{b,c}.rs` → `a/b.rs`, `a/c.rs`.
fn expand_braces(word: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (word.find('{'), word.find('}')) else {
        return vec![word.to_owned()];
    };
    word[open + 1..close]
        .split(',')
        .flat_map(|part| expand_braces(&format!("{}{part}{}", &word[..open], &word[close + 1..])))
        .collect()
}

/// The backticked words of `text` that name a file or folder.
fn backticked_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| {
            !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_-./{},".contains(c))
                && !word.starts_with(['-', '.'])
                && !EXAMPLE_NAMES.contains(word)
                && !METHOD_NAMESPACES.iter().any(|namespace| {
                    word.strip_prefix(namespace)
                        .is_some_and(|rest| rest.starts_with('/'))
                })
                && (word.contains('/') || PATH_ENDINGS.iter().any(|end| word.ends_with(end)))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_path_in_architecture_md_exists() {
    let root = root();
    let text = fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    let mut all_files = Vec::new();
    rust_files(&root, &mut all_files);
    let mut missing = Vec::new();
    // A path is read relative to the section's crate (`### \`crates/acp-x\``), its `src/`, or
    // the repository; a path that is none of these may end a path anywhere in the section's
    // crate, then anywhere in the repository (a paragraph names its neighbours' files too).
    let mut section_dir: Option<PathBuf> = None;
    for (number, line) in text.lines().enumerate() {
        if let Some(heading) = line.strip_prefix("### ") {
            section_dir = backticked_paths(heading).first().map(|dir| root.join(dir));
            continue;
        }
        if line.starts_with("## ") {
            section_dir = None;
        }
        for word in backticked_paths(line) {
            for path in expand_braces(&word) {
                let path = path.trim_end_matches('/');
                let mut bases = vec![root.clone()];
                if let Some(dir) = &section_dir {
                    bases.insert(0, dir.join("src"));
                    bases.insert(0, dir.clone());
                }
                let exists = bases.iter().any(|base| base.join(path).exists())
                    || section_dir
                        .as_deref()
                        .is_some_and(|dir| anywhere_in(dir, path))
                    || anywhere_in(&root, path);
                if !exists {
                    missing.push(format!("docs/ARCHITECTURE.md:{}: `{word}`", number + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths named in docs/ARCHITECTURE.md that do not exist:\n  {}",
        missing.join("\n  ")
    );
}

/// Whether a file or folder whose path ends with `path` stands anywhere under `dir`.
fn anywhere_in(dir: &Path, path: &str) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let full = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if SKIPPED.contains(&name.as_str()) || name.starts_with('.') {
            return false;
        }
        full.ends_with(path) || full.is_dir() && anywhere_in(&full, path)
    })
}

// ---------------------------------------------------------------------------------------------
// The readers above, on small inputs

#[test]
fn use_trees_give_one_path_per_member() {
    let code = code_only("use super::{a::X, b::{self, Y}, c::*};");
    let tokens = tokens(&code);
    let start = tokens.iter().position(|t| t == "super").unwrap();
    let (paths, _) = read_tree(&tokens, start + 1, vec!["parent".into()]);
    let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        ["parent::a::X", "parent::b", "parent::b::Y", "parent::c"]
    );
}

#[test]
fn comments_strings_and_chars_hide_their_paths() {
    let code = code_only(
        "// use crate::a;\n/* crate::b */ let s = \"crate::c\"; let r = r#\"crate::d\"#; \
         let q = '\"'; fn f<'a>(x: &'a str) { crate::e::run() }",
    );
    assert!(!code.contains("crate::a") && !code.contains("crate::b"));
    assert!(!code.contains("crate::c") && !code.contains("crate::d"));
    assert!(code.contains("crate::e::run") && code.contains("'a"));
}

#[test]
fn a_loop_of_three_is_one_cycle_and_a_chain_none() {
    let edge = |graph: &mut SiblingGraph, from: &str, to: &str| {
        graph
            .entry(from.into())
            .or_default()
            .entry(to.into())
            .or_default()
            .insert(format!("{from}.rs"));
    };
    let mut graph = SiblingGraph::new();
    edge(&mut graph, "a", "b");
    edge(&mut graph, "b", "c");
    edge(&mut graph, "c", "a");
    edge(&mut graph, "c", "d");
    let found = cycles(&graph);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].iter().collect::<Vec<_>>(), ["a", "b", "c"]);

    let mut chain = SiblingGraph::new();
    edge(&mut chain, "a", "b");
    edge(&mut chain, "b", "c");
    assert!(cycles(&chain).is_empty());
}

/// The crates `.ci/run` publishes: its `published=(...)` list.
fn published_crates() -> Vec<String> {
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let list = ci
        .lines()
        .find_map(|line| line.trim().strip_prefix("published=("))
        .expect(".ci/run names the published crates in `published=(...)`");
    list.trim_end_matches(')')
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// docs.rs builds with the default features unless told otherwise: a published crate with
/// features says `all-features` (so that feature-gated items are documented at all) and turns
/// on `doc_cfg` under `--cfg docsrs` (so that each is marked with the feature it needs).
#[test]
fn every_published_crate_with_features_documents_them_all_on_docs_rs() {
    let mut failures = Vec::new();
    for package in published_crates() {
        let folder = package.strip_prefix("acp-rs-").unwrap_or(&package);
        let dir = root().join("crates").join(format!("acp-{folder}"));
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("{package}: {}: {e}", dir.display()));
        if !manifest.contains("\n[features]") {
            continue;
        }
        let metadata = manifest
            .split("[package.metadata.docs.rs]")
            .nth(1)
            .map(|rest| rest.split("\n[").next().unwrap_or(""));
        match metadata {
            Some(table) if table.contains("all-features = true") && table.contains("docsrs") => {}
            _ => failures.push(format!(
                "{package}: Cargo.toml needs [package.metadata.docs.rs] with all-features = true and rustdoc-args = [\"--cfg\", \"docsrs\"]"
            )),
        }
        let lib = dir.join("src/lib.rs");
        if let Ok(text) = std::fs::read_to_string(&lib)
            && !text.contains("#![cfg_attr(docsrs, feature(doc_cfg))]")
        {
            failures.push(format!(
                "{package}: src/lib.rs needs #![cfg_attr(docsrs, feature(doc_cfg))]"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
