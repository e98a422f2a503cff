//! The runtime's coverage of the stable schema: after `cargo xtask codegen`, every method,
//! variant (of the unions the table lists, `SessionUpdate` and `ToolCallContent`) and
//! capability flag of the stable schema that `xtask/runtime-coverage.json` does not account
//! for is named, so a schema move tells the maintainer what the runtime does not handle yet
//! instead of letting the rules weaken silently (issue 28: plan operations, subagents and the
//! system prompt became stable types, and no rule noticed).
//!
//! Each entry of the table says `by` which rules (`rules::NAME`, a fn of
//! `crates/acp-runtime/src/rules.rs`) and helpers (`Type::method`, a fn in an `impl Type` or
//! `trait Type` of `crates/acp-runtime/src`) the item is handled, or gives a `decision` (why
//! nothing more is needed, or what is knowingly not done). An entry marked `pending` is being
//! implemented: it counts as covered, its names are not checked, and the report lists it.

use super::json::Json;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

/// The committed table, relative to the workspace root.
pub const TABLE: &str = "xtask/runtime-coverage.json";

/// The runtime's sources the names of the table are looked up in, relative to the root.
pub const RUNTIME_SRC: &str = "crates/acp-runtime/src";

/// What kind of schema item an entry is about; the table's section names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Method,
    Variant,
    Capability,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Method, Kind::Variant, Kind::Capability];

    fn section(self) -> &'static str {
        match self {
            Kind::Method => "methods",
            Kind::Variant => "variants",
            Kind::Capability => "capabilities",
        }
    }

    fn singular(self) -> &'static str {
        match self {
            Kind::Method => "method",
            Kind::Variant => "variant",
            Kind::Capability => "capability",
        }
    }
}

/// One entry of the table.
#[derive(Debug, Default)]
pub struct Entry {
    pub by: Vec<String>,
    pub decision: Option<String>,
    pub pending: Option<String>,
}

/// The table: the unions whose variants it covers, and its entries.
#[derive(Debug)]
pub struct Table {
    pub unions: Vec<String>,
    pub entries: BTreeMap<(Kind, String), Entry>,
}

impl Table {
    pub fn parse(text: &str) -> Result<Table, String> {
        let json: Json = serde_json::from_str(text).map_err(|e| format!("{TABLE}: {e}"))?;
        let strings = |value: Option<&Json>, what: &str| -> Result<Vec<String>, String> {
            match value {
                None => Ok(Vec::new()),
                Some(Json::Array(items)) => items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| format!("{TABLE}: {what} holds a non-string"))
                    })
                    .collect(),
                Some(_) => Err(format!("{TABLE}: {what} is not a list of strings")),
            }
        };
        let unions = strings(json.get("unions"), "`unions`")?;
        let mut entries = BTreeMap::new();
        for kind in Kind::ALL {
            let Some(section) = json.get(kind.section()) else {
                continue;
            };
            let section = section
                .as_object()
                .ok_or_else(|| format!("{TABLE}: `{}` is not an object", kind.section()))?;
            for (name, value) in section {
                let text = |key: &str| value.get(key).and_then(Json::as_str).map(str::to_owned);
                let entry = Entry {
                    by: strings(value.get("by"), &format!("`{name}`.by"))?,
                    decision: text("decision"),
                    pending: text("pending"),
                };
                entries.insert((kind, name.clone()), entry);
            }
        }
        Ok(Table { unions, entries })
    }
}

/// The methods, variants (of `unions`) and capability flags of a schema, as the table names
/// them: `session/new`, `SessionUpdate.plan_update`, `ClientCapabilities.plan`.
pub fn schema_items(schema: &Json, unions: &[String]) -> Result<BTreeSet<(Kind, String)>, String> {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Json::as_object)
        .ok_or("the schema has no $defs or definitions")?;
    let mut items = BTreeSet::new();
    for (name, def) in defs {
        let is_message = name.ends_with("Request") || name.ends_with("Notification");
        if let (true, Some(method), Some(_)) = (
            is_message,
            def.get("x-method").and_then(Json::as_str),
            def.get("x-side"),
        ) {
            items.insert((Kind::Method, method.to_owned()));
        }
        if name.ends_with("Capabilities")
            && let Some(properties) = def.get("properties").and_then(Json::as_object)
        {
            for (field, _) in properties.iter().filter(|(f, _)| *f != "_meta") {
                items.insert((Kind::Capability, format!("{name}.{field}")));
            }
        }
        if unions.contains(name) {
            for arm in ["oneOf", "anyOf"]
                .iter()
                .filter_map(|k| def.get(k).and_then(Json::as_array))
                .flatten()
            {
                // The tag: the required property with a constant value; catch-all arms have
                // none.
                let required: Vec<&str> = arm
                    .get("required")
                    .and_then(Json::as_array)
                    .unwrap_or(&[])
                    .iter()
                    .filter_map(Json::as_str)
                    .collect();
                let tag = arm
                    .get("properties")
                    .and_then(Json::as_object)
                    .unwrap_or(&[])
                    .iter()
                    .filter(|(k, _)| required.contains(&k.as_str()))
                    .find_map(|(_, v)| v.get("const").and_then(Json::as_str));
                if let Some(tag) = tag {
                    items.insert((Kind::Variant, format!("{name}.{tag}")));
                }
            }
        }
    }
    Ok(items)
}

/// The names the runtime defines: the fns of `rules.rs`, and `Type::fn` for the fns of every
/// `impl Type`, `impl Trait for Type` and `trait Type` of the runtime's sources.
#[derive(Debug, Default)]
pub struct RuntimeNames {
    pub rules: BTreeSet<String>,
    pub methods: BTreeSet<String>,
}

impl RuntimeNames {
    pub fn scan(src: &Path) -> Result<RuntimeNames, String> {
        let mut names = RuntimeNames::default();
        let mut stack = vec![src.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let entries =
                std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
            for entry in entries {
                let path = entry
                    .map_err(|e| format!("reading {}: {e}", dir.display()))?
                    .path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| format!("reading {}: {e}", path.display()))?;
                    // The rule book and its children (`rules/version.rs`, ...), whose rules it
                    // re-exports as `rules::…`.
                    let is_rules = path == src.join("rules.rs")
                        || path.parent() == Some(src.join("rules").as_path());
                    names.add_file(&text, is_rules);
                }
            }
        }
        Ok(names)
    }

    /// A file's names: top-level fns (of `rules.rs` and `rules/`) and the fns of its top-level impl and
    /// trait blocks, found by their lines (rustfmt puts each item at the start of a line).
    pub fn add_file(&mut self, text: &str, is_rules: bool) {
        let mut owner: Option<String> = None;
        for line in text.lines() {
            if line.trim().is_empty() {
                continue;
            }
            if !line.starts_with(' ') {
                owner = block_owner(line);
                if is_rules && let Some(name) = fn_name(line) {
                    self.rules.insert(name);
                }
            } else if let (Some(owner), Some(name)) = (&owner, fn_name(line)) {
                self.methods.insert(format!("{owner}::{name}"));
            }
        }
    }

    /// Whether `name` (`rules::x` or `Type::x`) is defined.
    fn defines(&self, name: &str) -> bool {
        match name.strip_prefix("rules::") {
            Some(rule) => self.rules.contains(rule),
            None => self.methods.contains(name),
        }
    }
}

/// `Type` for `impl Type {`, `impl<T> Trait for Type<T> {`, `pub trait Type: Bound {`.
fn block_owner(line: &str) -> Option<String> {
    let words: Vec<&str> = line
        .split_whitespace()
        .skip_while(|w| *w == "pub" || w.starts_with("pub(") || *w == "unsafe")
        .collect();
    if !words
        .first()
        .is_some_and(|w| *w == "trait" || w.starts_with("impl"))
    {
        return None;
    }
    let at = words
        .iter()
        .position(|w| *w == "trait")
        .map(|i| i + 1)
        .or_else(|| {
            let i = words.iter().position(|w| w.starts_with("impl"))?;
            Some(words.iter().position(|w| *w == "for").unwrap_or(i) + 1)
        })?;
    let word = words.get(at)?;
    let name: String = word
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// `name` for a line declaring `fn name(` or `fn name<`.
fn fn_name(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("fn ")?;
    let before = &line[..line.len() - rest.len() - 3];
    // Only item declarations: `pub(crate) async fn`, not a `fn` inside an expression.
    if !before
        .split_whitespace()
        .all(|w| matches!(w, "pub" | "async" | "const" | "unsafe") || w.starts_with("pub("))
    {
        return None;
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Items of the schema that the table does not account for.
    pub missing: Vec<(Kind, String)>,
    /// Entries with neither `by` nor `decision`.
    pub empty: Vec<(Kind, String)>,
    /// Entries whose item the schema does not have (any more).
    pub stale: Vec<(Kind, String)>,
    /// (item, name) of the `by` names the runtime does not define (pending entries aside).
    pub unknown_names: Vec<((Kind, String), String)>,
    /// Entries marked pending, with their note.
    pub pending: Vec<((Kind, String), String)>,
}

impl Report {
    /// Whether every item is accounted for by an existing name or a decision.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty()
            && self.empty.is_empty()
            && self.stale.is_empty()
            && self.unknown_names.is_empty()
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let w = &mut out;
        let item = |(kind, name): &(Kind, String)| format!("{} {name}", kind.singular());
        if !self.missing.is_empty() {
            let _ = writeln!(
                w,
                "\nThe runtime does not account for {} item(s) of the stable schema (no rule, \
                 helper or documented decision in {TABLE}): handle each in acp-runtime \
                 (rules.rs for a protocol rule), then add it to the table, or add the decision:",
                self.missing.len()
            );
            for missing in &self.missing {
                let _ = writeln!(w, "  {}", item(missing));
            }
        }
        for (list, what) in [
            (&self.empty, "entries with neither `by` nor `decision`"),
            (
                &self.stale,
                "entries for items the stable schema does not have",
            ),
        ] {
            if !list.is_empty() {
                let _ = writeln!(w, "\n{TABLE}: {} {what}:", list.len());
                for entry in list {
                    let _ = writeln!(w, "  {}", item(entry));
                }
            }
        }
        if !self.unknown_names.is_empty() {
            let _ = writeln!(
                w,
                "\n{TABLE}: {} name(s) the runtime ({RUNTIME_SRC}) does not define:",
                self.unknown_names.len()
            );
            for (entry, name) in &self.unknown_names {
                let _ = writeln!(w, "  {name} (for the {})", item(entry));
            }
        }
        if !self.pending.is_empty() {
            let _ = writeln!(
                w,
                "\n{TABLE}: {} item(s) marked pending (being implemented):",
                self.pending.len()
            );
            for (entry, note) in &self.pending {
                let _ = writeln!(w, "  {}: {note}", item(entry));
            }
        }
        if self.is_complete() {
            let _ = writeln!(
                w,
                "\nruntime coverage: every method, variant and capability of the stable schema \
                 is accounted for in {TABLE} ({} pending).",
                self.pending.len()
            );
        }
        out
    }
}

/// Checks `table` against the stable schema `schema_text` and the runtime's `names`.
pub fn check(schema_text: &str, table: &Table, names: &RuntimeNames) -> Result<Report, String> {
    let schema: Json = serde_json::from_str(schema_text)
        .map_err(|e| format!("the schema is not valid JSON: {e}"))?;
    let items = schema_items(&schema, &table.unions)?;
    let mut report = Report::default();
    for item in &items {
        match table.entries.get(item) {
            None => report.missing.push(item.clone()),
            Some(entry) => {
                if entry.by.is_empty() && entry.decision.is_none() {
                    report.empty.push(item.clone());
                }
                if let Some(note) = &entry.pending {
                    report.pending.push((item.clone(), note.clone()));
                    continue;
                }
                for name in entry.by.iter().filter(|n| !names.defines(n)) {
                    report.unknown_names.push((item.clone(), name.clone()));
                }
            }
        }
    }
    report.stale = table
        .entries
        .keys()
        .filter(|key| !items.contains(*key))
        .cloned()
        .collect();
    Ok(report)
}

/// The check on the committed table, the runtime's sources under `root`, and `schema_text`.
pub fn check_workspace(root: &Path, schema_text: &str) -> Result<Report, String> {
    let table_path = root.join(TABLE);
    let text = std::fs::read_to_string(&table_path)
        .map_err(|e| format!("reading {}: {e}", table_path.display()))?;
    let names = RuntimeNames::scan(&root.join(RUNTIME_SRC))?;
    check(schema_text, &Table::parse(&text)?, &names)
}

#[cfg(test)]
mod tests;
