//! `cargo xtask schema-diff OLD NEW`: the protocol-level changes between two ACP schemas, for
//! the reviewer of a schema update.
//!
//! It walks the schema JSON (`$defs` or `definitions`) directly rather than the codegen model:
//! the report speaks in the schema's own names (JSON field names, tag values), not in the Rust
//! names the generator derives, and it works on any schema, including shapes the generator
//! refuses. Every list in the report is sorted, so the output is stable.

use super::json::Json;
use super::source;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// What `cargo xtask schema-diff --help` says the task does.
pub const ABOUT: &str = "\
Prints the protocol-level changes between two ACP schemas: methods (added, removed, or
changed between request and notification or in the side that handles them), types, fields of
object types (added, removed, required <-> optional, type changed), enum and union variants
(the `params` and `result` unions of the message envelopes too, as `ClientRequest.params`,
`AgentResponse.result`, ...), and capability flags (the fields of the `*Capabilities` types,
`_meta` aside).";

/// The arguments of `schema-diff`.
#[derive(Debug, PartialEq, Eq, clap::Args)]
pub struct Args {
    /// Print the changes as JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// The old schema: a pin name from xtask/schema-pins.json (e.g. `stable`, `unstable`, `2025-10`), fetched and verified like `cargo xtask codegen` does, or the path of a schema JSON file.
    pub old: String,
    /// The new schema, given as OLD is
    pub new: String,
}

pub fn run(Args { json, old, new }: Args) -> Result<(), String> {
    let (old_desc, old_text) = load(&old)?;
    let (new_desc, new_text) = load(&new)?;
    let diff = diff_texts(&old_text, &new_text)?;
    if json {
        let value = diff.to_json(&old_desc, &new_desc);
        println!(
            "{}",
            serde_json::to_string_pretty(&value).expect("JSON values serialize")
        );
    } else {
        print!("{}", diff.render(&old_desc, &new_desc));
    }
    Ok(())
}

/// A pin name (through the codegen's verified cache) or a file path → (description, text).
fn load(spec: &str) -> Result<(String, String), String> {
    let pins = source::load_pins()?;
    if let Some(pin) = pins.iter().find(|p| p.name == spec) {
        let text = source::fetch(pin)?;
        return Ok((format!("{} ({})", pin.name, pin.description()), text));
    }
    match std::fs::read_to_string(spec) {
        Ok(text) => Ok((spec.to_owned(), text)),
        Err(e) => {
            let names: Vec<&str> = pins.iter().map(|p| p.name.as_str()).collect();
            Err(format!(
                "`{spec}` is neither a pinned schema ({}) nor a readable file: {e}",
                names.join(", ")
            ))
        }
    }
}

/// How a method is sent, and which side handles it (`x-side`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MethodShape {
    pub kind: &'static str,
    pub side: String,
}

impl MethodShape {
    fn describe(&self) -> String {
        format!("{}, handled by {}", self.kind, self.side)
    }
}

/// The parts of a schema the report compares.
#[derive(Debug, Default)]
struct Summary {
    /// Method name → its shapes (a name can be both a request and a notification).
    methods: BTreeMap<String, BTreeSet<MethodShape>>,
    types: BTreeSet<String>,
    /// Type → field → (required, type).
    fields: BTreeMap<String, BTreeMap<String, (bool, String)>>,
    /// Type → its variants (enum values and union arms); `Type.field` → the arms of a
    /// union-valued field (see [`union_arms`]).
    variants: BTreeMap<String, BTreeSet<String>>,
}

fn summarize(schema: &Json) -> Result<Summary, String> {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Json::as_object)
        .ok_or("schema has no $defs or definitions")?;
    let mut summary = Summary::default();
    for (name, def) in defs {
        summary.types.insert(name.clone());
        if let (Some(method), Some(side)) = (
            def.get("x-method").and_then(Json::as_str),
            def.get("x-side").and_then(Json::as_str),
        ) {
            let kind = if name.ends_with("Request") {
                Some("request")
            } else if name.ends_with("Notification") {
                Some("notification")
            } else {
                None // responses, and anything else tagged with a method
            };
            if let Some(kind) = kind {
                summary
                    .methods
                    .entry(method.to_owned())
                    .or_default()
                    .insert(MethodShape {
                        kind,
                        side: side.to_owned(),
                    });
            }
        }
        if let Some(properties) = def.get("properties").and_then(Json::as_object) {
            let required: BTreeSet<&str> = def
                .get("required")
                .and_then(Json::as_array)
                .unwrap_or(&[])
                .iter()
                .filter_map(Json::as_str)
                .collect();
            let fields = properties
                .iter()
                .map(|(field, prop)| {
                    (
                        field.clone(),
                        (required.contains(field.as_str()), describe_type(prop)),
                    )
                })
                .collect();
            summary.fields.insert(name.clone(), fields);
        }
        let mut variants = BTreeSet::new();
        if let Some(values) = def.get("enum").and_then(Json::as_array) {
            variants.extend(values.iter().map(Json::to_compact));
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(arms) = def.get(key).and_then(Json::as_array) {
                variants.extend(arms.iter().map(describe_variant));
            }
        }
        if !variants.is_empty() {
            summary.variants.insert(name.clone(), variants);
        }
        // The union-valued fields of the type and of its union arms: the `params` of the
        // request and notification envelopes, and the `result` of the response envelopes, whose
        // union sits in the `Result` arm (`AgentResponse` = `Result {id, result} | Error {id,
        // error}`). Each is compared as its own list of variants (`ClientRequest.params`,
        // `AgentResponse.result`), so a method's new request and its new response are both
        // named, and not as one long type change of the field.
        let arms = ["oneOf", "anyOf"]
            .iter()
            .filter_map(|key| def.get(key).and_then(Json::as_array))
            .flatten();
        for holder in std::iter::once(def).chain(arms) {
            let Some(properties) = holder.get("properties").and_then(Json::as_object) else {
                continue;
            };
            for (field, prop) in properties {
                if let Some(arms) = union_arms(prop) {
                    summary
                        .variants
                        .entry(format!("{name}.{field}"))
                        .or_default()
                        .extend(arms);
                }
            }
        }
    }
    Ok(summary)
}

/// The arms of a union-valued property, nested unions flattened (`params` is `anyOf: [anyOf:
/// [...requests], null]`), each named like a variant; `None` when the property is no union of
/// at least two arms besides `null` (`anyOf: [$ref, null]` is an optional field, and its type
/// changes are reported as such).
fn union_arms(prop: &Json) -> Option<BTreeSet<String>> {
    fn flatten(schema: &Json, out: &mut BTreeSet<String>) -> bool {
        let mut found = false;
        for key in ["oneOf", "anyOf"] {
            if let Some(arms) = schema.get(key).and_then(Json::as_array) {
                found = true;
                for arm in arms {
                    let bare = arm.get("title").is_none() && arm.get("$ref").is_none();
                    if !(bare && flatten(arm, out)) {
                        out.insert(describe_variant(arm));
                    }
                }
            }
        }
        found
    }
    let mut arms = BTreeSet::new();
    flatten(prop, &mut arms);
    (arms.iter().filter(|arm| *arm != "null").count() >= 2).then_some(arms)
}

/// A short, readable type of a property schema: `string`, `SessionId`, `ContentBlock[]`,
/// `map<string, string>`, `integer(uint16) | null`, ...
fn describe_type(schema: &Json) -> String {
    if let Some(target) = schema.get("$ref").and_then(Json::as_str) {
        return ref_name(target);
    }
    if let Some(value) = schema.get("const") {
        return value.to_compact();
    }
    if let Some(values) = schema.get("enum").and_then(Json::as_array) {
        return values
            .iter()
            .map(Json::to_compact)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(arms) = schema.get(key).and_then(Json::as_array) {
            let joiner = if key == "allOf" { " & " } else { " | " };
            return arms
                .iter()
                .map(describe_type)
                .collect::<Vec<_>>()
                .join(joiner);
        }
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Json::String(t)) => vec![t.as_str()],
        Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).collect(),
        _ => return "any".to_owned(),
    };
    types
        .iter()
        .map(|t| match *t {
            "array" => match schema.get("items") {
                Some(items) => format!("{}[]", parenthesize(describe_type(items))),
                None => "array".to_owned(),
            },
            "object" => match schema.get("additionalProperties") {
                Some(value @ Json::Object(_)) => format!("map<string, {}>", describe_type(value)),
                _ => "object".to_owned(),
            },
            "integer" => match schema.get("format").and_then(Json::as_str) {
                Some(format) => format!("integer({format})"),
                None => "integer".to_owned(),
            },
            other => other.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn parenthesize(ty: String) -> String {
    if ty.contains(' ') {
        format!("({ty})")
    } else {
        ty
    }
}

/// How a union arm is named in the report: its tag (`type="text"`), its constant, its `$ref`,
/// its title, or its type.
fn describe_variant(arm: &Json) -> String {
    if arm.get("not").is_some() {
        return "(catch-all)".to_owned();
    }
    if let Some(value) = arm.get("const") {
        return match arm.get("title").and_then(Json::as_str) {
            Some(title) if !matches!(value, Json::String(_)) => {
                format!("{} ({title})", value.to_compact())
            }
            _ => value.to_compact(),
        };
    }
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
        .find_map(|(k, v)| {
            let value = v.get("const")?;
            required
                .contains(&k.as_str())
                .then(|| format!("{k}={}", value.to_compact()))
        });
    if let Some(tag) = tag {
        return tag;
    }
    if let Some(title) = arm.get("title").and_then(Json::as_str) {
        return title.to_owned();
    }
    describe_type(arm)
}

fn ref_name(target: &str) -> String {
    target
        .rsplit_once('/')
        .map_or(target, |(_, name)| name)
        .to_owned()
}

/// One change of a field of an object type.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FieldChange {
    Added { required: bool, ty: String },
    Removed { required: bool, ty: String },
    Required { now: bool },
    Type { old: String, new: String },
}

/// The protocol-level changes between two schemas; every collection is sorted.
#[derive(Debug, Default)]
pub struct Diff {
    pub methods_added: Vec<(String, Vec<MethodShape>)>,
    pub methods_removed: Vec<(String, Vec<MethodShape>)>,
    /// Name, old shapes, new shapes.
    pub methods_changed: Vec<(String, Vec<MethodShape>, Vec<MethodShape>)>,
    pub types_added: Vec<String>,
    pub types_removed: Vec<String>,
    /// Type → field → changes, for types in both schemas.
    pub fields: BTreeMap<String, Vec<(String, FieldChange)>>,
    /// Type (or `Type.field`, a union-valued field) → (added, removed) variants, for types
    /// and union fields in both schemas.
    pub variants: BTreeMap<String, (Vec<String>, Vec<String>)>,
    /// `Type.field` of the `*Capabilities` types (but `_meta`), in either schema.
    pub capabilities_added: Vec<String>,
    pub capabilities_removed: Vec<String>,
}

pub fn diff_texts(old: &str, new: &str) -> Result<Diff, String> {
    let parse = |text: &str, which: &str| -> Result<Summary, String> {
        let json: Json = serde_json::from_str(text)
            .map_err(|e| format!("the {which} schema is not valid JSON: {e}"))?;
        summarize(&json).map_err(|e| format!("the {which} schema: {e}"))
    };
    Ok(diff(&parse(old, "old")?, &parse(new, "new")?))
}

fn diff(old: &Summary, new: &Summary) -> Diff {
    let mut d = Diff::default();
    let shapes = |set: &BTreeSet<MethodShape>| set.iter().cloned().collect::<Vec<_>>();
    for (name, old_shapes) in &old.methods {
        match new.methods.get(name) {
            None => d.methods_removed.push((name.clone(), shapes(old_shapes))),
            Some(new_shapes) if new_shapes != old_shapes => {
                d.methods_changed
                    .push((name.clone(), shapes(old_shapes), shapes(new_shapes)))
            }
            Some(_) => {}
        }
    }
    for (name, new_shapes) in &new.methods {
        if !old.methods.contains_key(name) {
            d.methods_added.push((name.clone(), shapes(new_shapes)));
        }
    }
    d.types_added = new.types.difference(&old.types).cloned().collect();
    d.types_removed = old.types.difference(&new.types).cloned().collect();

    let empty_fields = BTreeMap::new();
    for name in old.types.intersection(&new.types) {
        let old_fields = old.fields.get(name).unwrap_or(&empty_fields);
        let new_fields = new.fields.get(name).unwrap_or(&empty_fields);
        let mut changes = Vec::new();
        for (field, (required, ty)) in old_fields {
            match new_fields.get(field) {
                None => changes.push((
                    field.clone(),
                    FieldChange::Removed {
                        required: *required,
                        ty: ty.clone(),
                    },
                )),
                Some((new_required, new_ty)) => {
                    if new_required != required {
                        changes.push((field.clone(), FieldChange::Required { now: *new_required }));
                    }
                    // A union in both: its arms are compared as variants below.
                    let key = format!("{name}.{field}");
                    let both_unions =
                        old.variants.contains_key(&key) && new.variants.contains_key(&key);
                    if new_ty != ty && !both_unions {
                        changes.push((
                            field.clone(),
                            FieldChange::Type {
                                old: ty.clone(),
                                new: new_ty.clone(),
                            },
                        ));
                    }
                }
            }
        }
        for (field, (required, ty)) in new_fields {
            if !old_fields.contains_key(field) {
                changes.push((
                    field.clone(),
                    FieldChange::Added {
                        required: *required,
                        ty: ty.clone(),
                    },
                ));
            }
        }
        if !changes.is_empty() {
            changes.sort();
            d.fields.insert(name.clone(), changes);
        }
    }
    // Variants of the types in both schemas, and of their union-valued fields (`Type.field`) in
    // both: a union field that appears or goes is a field change, reported above.
    let empty = BTreeSet::new();
    let keys: BTreeSet<&String> = old.variants.keys().chain(new.variants.keys()).collect();
    for key in keys {
        let base = key.split_once('.').map_or(key.as_str(), |(ty, _)| ty);
        let in_both = if base.len() == key.len() {
            old.types.contains(base) && new.types.contains(base)
        } else {
            old.variants.contains_key(key) && new.variants.contains_key(key)
        };
        if !in_both {
            continue;
        }
        let old_variants = old.variants.get(key).unwrap_or(&empty);
        let new_variants = new.variants.get(key).unwrap_or(&empty);
        let added: Vec<String> = new_variants.difference(old_variants).cloned().collect();
        let removed: Vec<String> = old_variants.difference(new_variants).cloned().collect();
        if !added.is_empty() || !removed.is_empty() {
            d.variants.insert(key.clone(), (added, removed));
        }
    }

    let flags = |summary: &Summary| -> BTreeSet<String> {
        summary
            .fields
            .iter()
            .filter(|(ty, _)| ty.ends_with("Capabilities"))
            .flat_map(|(ty, fields)| {
                fields
                    .keys()
                    .filter(|f| *f != "_meta") // extension metadata, not a capability
                    .map(move |f| format!("{ty}.{f}"))
            })
            .collect()
    };
    let (old_flags, new_flags) = (flags(old), flags(new));
    d.capabilities_added = new_flags.difference(&old_flags).cloned().collect();
    d.capabilities_removed = old_flags.difference(&new_flags).cloned().collect();
    d
}

fn shapes_text(shapes: &[MethodShape]) -> String {
    shapes
        .iter()
        .map(MethodShape::describe)
        .collect::<Vec<_>>()
        .join("; ")
}

fn presence(required: bool) -> &'static str {
    if required { "required" } else { "optional" }
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.methods_added.is_empty()
            && self.methods_removed.is_empty()
            && self.methods_changed.is_empty()
            && self.types_added.is_empty()
            && self.types_removed.is_empty()
            && self.fields.is_empty()
            && self.variants.is_empty()
            && self.capabilities_added.is_empty()
            && self.capabilities_removed.is_empty()
    }

    /// The text report: one section per kind of change, `+` added, `-` removed, `~` changed.
    pub fn render(&self, old: &str, new: &str) -> String {
        let mut out = String::new();
        let w = &mut out;
        let _ = writeln!(w, "--- {old}\n+++ {new}");
        if self.is_empty() {
            let _ = writeln!(w, "\nno protocol-level changes");
            return out;
        }

        let _ = writeln!(
            w,
            "\nMethods: {} added, {} removed, {} changed",
            self.methods_added.len(),
            self.methods_removed.len(),
            self.methods_changed.len()
        );
        let mut lines = Vec::new();
        for (name, shapes) in &self.methods_added {
            lines.push((name, format!("  + {name} ({})", shapes_text(shapes))));
        }
        for (name, shapes) in &self.methods_removed {
            lines.push((name, format!("  - {name} ({})", shapes_text(shapes))));
        }
        for (name, old_shapes, new_shapes) in &self.methods_changed {
            lines.push((
                name,
                format!(
                    "  ~ {name} (was {}; now {})",
                    shapes_text(old_shapes),
                    shapes_text(new_shapes)
                ),
            ));
        }
        lines.sort();
        for (_, line) in lines {
            let _ = writeln!(w, "{line}");
        }

        let _ = writeln!(
            w,
            "\nTypes: {} added, {} removed",
            self.types_added.len(),
            self.types_removed.len()
        );
        let mut lines: Vec<(&String, char)> = self
            .types_added
            .iter()
            .map(|t| (t, '+'))
            .chain(self.types_removed.iter().map(|t| (t, '-')))
            .collect();
        lines.sort();
        for (name, sign) in lines {
            let _ = writeln!(w, "  {sign} {name}");
        }

        let _ = writeln!(w, "\nFields: changes in {} types", self.fields.len());
        for (ty, changes) in &self.fields {
            let _ = writeln!(w, "  {ty}");
            for (field, change) in changes {
                let line = match change {
                    FieldChange::Added { required, ty } => {
                        format!("+ {field}: {ty} ({})", presence(*required))
                    }
                    FieldChange::Removed { required, ty } => {
                        format!("- {field}: {ty} ({})", presence(*required))
                    }
                    FieldChange::Required { now } => {
                        format!("~ {field}: {} -> {}", presence(!*now), presence(*now))
                    }
                    FieldChange::Type { old, new } => format!("~ {field}: {old} -> {new}"),
                };
                let _ = writeln!(w, "    {line}");
            }
        }

        let _ = writeln!(w, "\nVariants: changes in {} types", self.variants.len());
        for (ty, (added, removed)) in &self.variants {
            let _ = writeln!(w, "  {ty}");
            let mut lines: Vec<(&String, char)> = added
                .iter()
                .map(|v| (v, '+'))
                .chain(removed.iter().map(|v| (v, '-')))
                .collect();
            lines.sort();
            for (variant, sign) in lines {
                let _ = writeln!(w, "    {sign} {variant}");
            }
        }

        let _ = writeln!(
            w,
            "\nCapability flags: {} added, {} removed",
            self.capabilities_added.len(),
            self.capabilities_removed.len()
        );
        let mut lines: Vec<(&String, char)> = self
            .capabilities_added
            .iter()
            .map(|c| (c, '+'))
            .chain(self.capabilities_removed.iter().map(|c| (c, '-')))
            .collect();
        lines.sort();
        for (flag, sign) in lines {
            let _ = writeln!(w, "  {sign} {flag}");
        }
        out
    }

    /// The same changes as JSON (object keys sorted, lists in the report's order).
    pub fn to_json(&self, old: &str, new: &str) -> Value {
        let shapes = |shapes: &[MethodShape]| -> Value {
            shapes
                .iter()
                .map(|s| json!({ "kind": s.kind, "side": s.side }))
                .collect()
        };
        let methods = |list: &[(String, Vec<MethodShape>)]| -> Value {
            list.iter()
                .map(|(name, s)| json!({ "method": name, "shapes": shapes(s) }))
                .collect()
        };
        let fields: Vec<Value> = self
            .fields
            .iter()
            .flat_map(|(ty, changes)| {
                changes.iter().map(move |(field, change)| {
                    let mut entry = match change {
                        FieldChange::Added { required, ty } => {
                            json!({ "change": "added", "required": required, "fieldType": ty })
                        }
                        FieldChange::Removed { required, ty } => {
                            json!({ "change": "removed", "required": required, "fieldType": ty })
                        }
                        FieldChange::Required { now: true } => json!({ "change": "now_required" }),
                        FieldChange::Required { now: false } => json!({ "change": "now_optional" }),
                        FieldChange::Type { old, new } => {
                            json!({ "change": "type", "old": old, "new": new })
                        }
                    };
                    entry["type"] = json!(ty);
                    entry["field"] = json!(field);
                    entry
                })
            })
            .collect();
        let variants: Vec<Value> = self
            .variants
            .iter()
            .map(|(ty, (added, removed))| json!({ "type": ty, "added": added, "removed": removed }))
            .collect();
        json!({
            "old": old,
            "new": new,
            "methods": {
                "added": methods(&self.methods_added),
                "removed": methods(&self.methods_removed),
                "changed": self.methods_changed.iter().map(|(name, o, n)| {
                    json!({ "method": name, "old": shapes(o), "new": shapes(n) })
                }).collect::<Vec<_>>(),
            },
            "types": { "added": self.types_added, "removed": self.types_removed },
            "fields": fields,
            "variants": variants,
            "capabilities": {
                "added": self.capabilities_added,
                "removed": self.capabilities_removed,
            },
        })
    }
}

#[cfg(test)]
mod tests;
