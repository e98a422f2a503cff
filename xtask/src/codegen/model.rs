//! Lowers a JSON schema into the small model the emitter understands: structs, newtypes,
//! string- and integer-constant enums (open or closed), tagged unions, untagged unions, and the
//! method table. Any shape not recognised here stops the generator with its schema path: a
//! silent fallback would produce types that accept or emit the wrong JSON.

use super::json::Json;
use std::collections::BTreeSet;

pub mod keywords;
pub mod names;
pub mod state;
mod union;

#[derive(Debug, Default)]
pub struct Model {
    pub items: Vec<Item>,
    pub methods: Vec<MethodDef>,
    /// The ignored keywords the schema uses, and how often (see [`keywords`]).
    pub ignored: std::collections::BTreeMap<&'static str, usize>,
}

#[derive(Debug)]
pub struct Item {
    pub name: String,
    pub doc: Option<String>,
    pub kind: ItemKind,
}

#[derive(Debug)]
pub enum ItemKind {
    Struct(Struct),
    Newtype(Ty),
    StringEnum(ConstEnum<String>),
    IntEnum(ConstEnum<i64>),
    Tagged(Tagged),
    Untagged(Vec<UntaggedVariant>),
}

#[derive(Debug)]
pub struct Struct {
    pub fields: Vec<Field>,
    /// A union that shares the object with the fields above (`properties` next to `oneOf`).
    pub flattened: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Ref(String),
    String,
    Bool,
    Int(&'static str),
    Float,
    /// Any JSON value.
    Any,
    /// A free-form JSON object (`_meta` and the like).
    Object,
    Array(Box<Ty>),
    Map(Box<Ty>),
}

#[derive(Clone, Debug)]
pub struct Field {
    pub json_name: String,
    pub rust_name: String,
    pub doc: Option<String>,
    pub ty: Ty,
    pub presence: Presence,
    /// `x-deserialize-default-on-error`: a value that does not decode becomes the default.
    pub lenient: bool,
    /// `x-deserialize-skip-invalid-items`: array items that do not decode are dropped.
    pub skip_invalid_items: bool,
    /// `x-deserialize-default-on-null`: `null` decodes as the default.
    pub null_as_default: bool,
}

impl Field {
    /// Whether an optional field is kept in a box: the extension points that are large and rarely
    /// sent, `_meta` (a free-form object) and `annotations`. Inline they made every value that
    /// carries them, and every enum holding such a value, about 100 bytes larger (`TextContent`
    /// 152 bytes instead of 40), which each decode moved layer by layer. Boxed, they cost 8 bytes
    /// while absent and one allocation when present; the wire format does not change.
    pub fn boxed(&self) -> bool {
        self.presence == Presence::Optional
            && (self.json_name == "_meta" && self.ty == Ty::Object
                || matches!(&self.ty, Ty::Ref(name) if name == "Annotations"))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Presence {
    Required,
    /// Required, but `null` is a value.
    RequiredNullable,
    /// May be absent; absent and `null` mean the same.
    Optional,
    /// May be absent; absent means "unchanged" and `null` means "clear".
    Patch,
    /// May be absent; absent means the type's default value, which equals the schema default.
    Defaulted,
}

#[derive(Debug)]
pub struct ConstEnum<V> {
    pub variants: Vec<ConstVariant<V>>,
    /// The schema's own catch-all arm (an open enum), with its doc; closed enums get an
    /// `Unknown` variant anyway so that values added later still decode.
    pub open: Option<(String, Option<String>)>,
}

#[derive(Debug)]
pub struct ConstVariant<V> {
    pub value: V,
    pub rust_name: String,
    pub doc: Option<String>,
}

#[derive(Debug)]
pub struct Tagged {
    pub tag: String,
    pub variants: Vec<TaggedVariant>,
    /// The arm without a tag (e.g. McpServer `stdio`), used when the tag is absent.
    pub default_arm: Option<TaggedVariant>,
    /// Doc of the schema's catch-all arm, if it has one.
    pub catch_all_doc: Option<String>,
    /// The variant for tags this schema does not know (`Unknown` unless a tag takes the name).
    pub catch_all_name: String,
}

#[derive(Debug)]
pub struct TaggedVariant {
    /// The tag value (for the default arm: its title).
    pub value: String,
    pub rust_name: String,
    pub doc: Option<String>,
    pub payload: Option<String>,
}

#[derive(Debug)]
pub struct UntaggedVariant {
    pub rust_name: String,
    pub doc: Option<String>,
    /// `None` for the JSON `null` arm.
    pub ty: Option<Ty>,
}

#[derive(Debug)]
pub struct MethodDef {
    pub method: String,
    pub kind: MethodKind,
    /// Which side receives (handles) it: "agent", "client" or "protocol".
    pub handled_by: String,
    pub params: String,
    pub response: Option<String>,
    pub doc: Option<String>,
}

#[derive(Debug, PartialEq, Clone, Copy)]
pub enum MethodKind {
    Request,
    Notification,
}

type Result<T> = std::result::Result<T, String>;

pub fn lower(schema: &Json) -> Result<Model> {
    // Every keyword is one the generator reads or knowingly ignores.
    let ignored = keywords::check(schema)?;
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Json::as_object)
        .ok_or("schema has no $defs")?;
    let mut lowerer = Lowerer {
        defs,
        model: Model::default(),
        names: BTreeSet::new(),
        upserted: state::upserted(defs)?
            .iter()
            .map(|name| names::rust_name(name))
            .collect(),
    };
    for (name, _) in defs {
        lowerer.names.insert(names::rust_name(name));
    }
    for (name, def) in defs {
        if def.get("x-docs-ignore").and_then(Json::as_bool) == Some(true) {
            // JSON-RPC envelopes (AgentRequest, ClientResponse, ...): acp-jsonrpc owns framing,
            // and the method tables below come from `x-method`.
            continue;
        }
        lowerer.lower_def(&names::rust_name(name), def, &format!("#/$defs/{name}"))?;
    }
    lowerer.collect_methods()?;
    lowerer.model.ignored = ignored;
    Ok(lowerer.model)
}

struct Lowerer<'a> {
    defs: &'a [(String, Json)],
    model: Model,
    names: BTreeSet<String>,
    /// The definitions an `x-state` upsert merges into session state (Rust names): their
    /// optional fields are patches whatever their descriptions say ([`state`]).
    upserted: BTreeSet<String>,
}

impl Lowerer<'_> {
    fn lower_def(&mut self, name: &str, def: &Json, path: &str) -> Result<()> {
        let doc = description(def);
        let union = def.get("oneOf").or_else(|| def.get("anyOf"));
        let kind = if def.get("properties").is_some() {
            let mut fields = self.lower_fields(name, def, path)?;
            let flattened = match union {
                Some(arms) => {
                    let union_name = format!("{name}Kind");
                    self.claim_name(&union_name, path)?;
                    let kind = self.lower_union(&union_name, arms, &format!("{path}/oneOf"))?;
                    if let ItemKind::Tagged(tagged) = &kind {
                        // The tag is the union's to read and write, not the struct's.
                        fields.retain(|f| f.json_name != tagged.tag);
                    }
                    self.model.items.push(Item {
                        name: union_name.clone(),
                        doc: Some(format!("The variant part of [`{name}`].")),
                        kind,
                    });
                    Some(union_name)
                }
                None => None,
            };
            ItemKind::Struct(Struct { fields, flattened })
        } else if let Some(arms) = union {
            self.lower_union(name, arms, path)?
        } else if let Some(values) = def.get("enum").and_then(Json::as_array) {
            let variants = values
                .iter()
                .map(|v| {
                    let value = v.as_str().ok_or(format!("{path}/enum: non-string value"))?;
                    Ok(ConstVariant {
                        value: value.to_owned(),
                        rust_name: pascal(value),
                        doc: None,
                    })
                })
                .collect::<Result<_>>()?;
            ItemKind::StringEnum(ConstEnum {
                variants,
                open: None,
            })
        } else if def.get("type").and_then(Json::as_str) == Some("object") {
            ItemKind::Struct(Struct {
                fields: Vec::new(),
                flattened: None,
            })
        } else if def.get("type").is_some() {
            let (ty, nullable) = self.lower_ty(def, path)?;
            if nullable {
                return Err(format!("{path}: nullable top-level type is not supported"));
            }
            ItemKind::Newtype(ty)
        } else if def.get("allOf").is_some() {
            ItemKind::Newtype(self.lower_ty(def, path)?.0)
        } else if is_empty_schema(def) {
            ItemKind::Newtype(Ty::Any)
        } else {
            return Err(format!(
                "{path}: unrecognised definition shape (keys: {:?})",
                def.keys().collect::<Vec<_>>()
            ));
        };
        self.model.items.push(Item {
            name: name.to_owned(),
            doc,
            kind,
        });
        Ok(())
    }

    fn claim_name(&mut self, name: &str, path: &str) -> Result<()> {
        if self.names.insert(name.to_owned()) {
            Ok(())
        } else {
            Err(format!(
                "{path}: generated name `{name}` collides with another definition"
            ))
        }
    }

    fn lower_fields(&mut self, owner: &str, def: &Json, path: &str) -> Result<Vec<Field>> {
        let required: Vec<&str> = def
            .get("required")
            .and_then(Json::as_array)
            .unwrap_or(&[])
            .iter()
            .filter_map(Json::as_str)
            .collect();
        let properties = def
            .get("properties")
            .and_then(Json::as_object)
            .unwrap_or(&[]);
        let mut fields = Vec::new();
        for (json_name, prop) in properties {
            let prop_path = format!("{path}/properties/{json_name}");
            let (ty, nullable) = self.lower_ty(prop, &prop_path)?;
            let doc = with_encoding_note(description(prop), prop);
            let is_required = required.contains(&json_name.as_str());
            let default = prop.get("default");
            let presence = if is_required {
                if nullable {
                    Presence::RequiredNullable
                } else {
                    Presence::Required
                }
            } else if self.upserted.contains(owner) && (nullable || ty == Ty::Any) {
                // An upsert's field: absent leaves the stored value, `null` clears it (v2).
                Presence::Patch
            } else if nullable && doc.as_deref().is_some_and(means_null_clears) {
                Presence::Patch
            } else if let Some(default) = default {
                if self.is_rust_default(&ty, default) {
                    Presence::Defaulted
                } else {
                    Presence::Optional
                }
            } else {
                Presence::Optional
            };
            fields.push(Field {
                json_name: json_name.clone(),
                rust_name: snake(json_name),
                doc,
                ty,
                presence,
                lenient: flag(prop, "x-deserialize-default-on-error"),
                skip_invalid_items: flag(prop, "x-deserialize-skip-invalid-items"),
                null_as_default: flag(prop, "x-deserialize-default-on-null"),
            });
        }
        for name in &required {
            if !properties.iter().any(|(k, _)| k == name) {
                // e.g. a `required` entry naming a property the schema forgot to declare.
                return Err(format!(
                    "{path}: `{name}` is required but not declared in properties"
                ));
            }
        }
        Ok(fields)
    }

    /// The type of a property or item schema, and whether `null` is allowed.
    fn lower_ty(&mut self, schema: &Json, path: &str) -> Result<(Ty, bool)> {
        if let Some(target) = schema.get("$ref").and_then(Json::as_str) {
            return Ok((Ty::Ref(self.ref_name(target, path)?), false));
        }
        if let Some(all_of) = schema.get("allOf").and_then(Json::as_array) {
            if let [single] = all_of
                && let Some(target) = single.get("$ref").and_then(Json::as_str)
            {
                return Ok((Ty::Ref(self.ref_name(target, path)?), false));
            }
            return Err(format!(
                "{path}/allOf: only a single $ref is supported here"
            ));
        }
        if let Some(any_of) = schema.get("anyOf").and_then(Json::as_array) {
            if let [a, b] = any_of
                && b.get("type").and_then(Json::as_str) == Some("null")
            {
                let (ty, _) = self.lower_ty(a, &format!("{path}/anyOf/0"))?;
                return Ok((ty, true));
            }
            return Err(format!(
                "{path}/anyOf: only `anyOf: [T, null]` is supported in a property"
            ));
        }
        let (type_name, nullable) = match schema.get("type") {
            Some(Json::String(t)) => (t.as_str(), false),
            Some(Json::Array(types)) => {
                let names: Vec<&str> = types.iter().filter_map(Json::as_str).collect();
                match names.as_slice() {
                    [t, "null"] | ["null", t] => (*t, true),
                    _ => return Err(format!("{path}/type: unsupported type list {names:?}")),
                }
            }
            None if is_free_value(schema) => return Ok((Ty::Any, false)),
            _ => return Err(format!("{path}: property without a recognised type")),
        };
        let ty = match type_name {
            "string" => Ty::String,
            "boolean" => Ty::Bool,
            "number" => Ty::Float,
            "integer" => Ty::Int(int_type(schema.get("format").and_then(Json::as_str), path)?),
            "array" => {
                let items = schema
                    .get("items")
                    .ok_or(format!("{path}: array without items"))?;
                let (item, item_nullable) = self.lower_ty(items, &format!("{path}/items"))?;
                if item_nullable {
                    return Err(format!("{path}/items: nullable items are not supported"));
                }
                Ty::Array(Box::new(item))
            }
            "object" => {
                if schema.get("properties").is_some() {
                    return Err(format!(
                        "{path}: inline object types are not supported; use a $ref"
                    ));
                }
                match schema.get("additionalProperties") {
                    None | Some(Json::Bool(true)) => Ty::Object,
                    Some(value_schema @ Json::Object(_)) => {
                        let (value, value_nullable) =
                            self.lower_ty(value_schema, &format!("{path}/additionalProperties"))?;
                        if value_nullable {
                            return Err(format!(
                                "{path}/additionalProperties: nullable values are not supported"
                            ));
                        }
                        Ty::Map(Box::new(value))
                    }
                    Some(other) => {
                        return Err(format!(
                            "{path}/additionalProperties: unsupported {}",
                            other.to_compact()
                        ));
                    }
                }
            }
            other => return Err(format!("{path}/type: unsupported type `{other}`")),
        };
        Ok((ty, nullable))
    }

    fn ref_name(&self, target: &str, path: &str) -> Result<String> {
        let name = target
            .strip_prefix("#/$defs/")
            .or_else(|| target.strip_prefix("#/definitions/"))
            .ok_or(format!("{path}: unsupported $ref `{target}`"))?;
        if !self.defs.iter().any(|(k, _)| k == name) {
            return Err(format!("{path}: $ref to missing definition `{name}`"));
        }
        Ok(names::rust_name(name))
    }

    /// Whether `value` (a schema `default`) equals what `Default::default()` gives for `ty`, so
    /// that the field can be a plain value instead of an `Option`.
    fn is_rust_default(&self, ty: &Ty, value: &Json) -> bool {
        match (ty, value) {
            (Ty::Bool, Json::Bool(false)) => true,
            (Ty::Int(_), Json::Number(n)) => n.as_i64() == Some(0) || n.as_u64() == Some(0),
            (Ty::String, Json::String(s)) => s.is_empty(),
            (Ty::Array(_), Json::Array(items)) => items.is_empty(),
            (Ty::Map(_) | Ty::Object, Json::Object(members)) => members.is_empty(),
            (Ty::Ref(name), Json::Object(members)) => {
                let Some((_, def)) = self.defs.iter().find(|(k, _)| names::rust_name(k) == *name)
                else {
                    return false;
                };
                if def.get("oneOf").is_some() || def.get("anyOf").is_some() {
                    return false;
                }
                let required = def
                    .get("required")
                    .and_then(Json::as_array)
                    .map_or(0, <[Json]>::len);
                if required > 0 {
                    return false;
                }
                let props = def
                    .get("properties")
                    .and_then(Json::as_object)
                    .unwrap_or(&[]);
                members.iter().all(|(k, v)| {
                    props
                        .iter()
                        .find(|(pk, _)| pk == k)
                        .is_some_and(|(_, prop)| {
                            let mut probe = Lowerer {
                                defs: self.defs,
                                model: Model::default(),
                                names: BTreeSet::new(),
                                upserted: BTreeSet::new(),
                            };
                            probe
                                .lower_ty(prop, "")
                                .is_ok_and(|(t, _)| self.is_rust_default(&t, v))
                        })
                }) && props.iter().all(|(k, prop)| {
                    // Fields the default leaves out must themselves default to "nothing".
                    members.iter().any(|(mk, _)| mk == k)
                        || prop.get("default").is_none_or(|d| {
                            let mut probe = Lowerer {
                                defs: self.defs,
                                model: Model::default(),
                                names: BTreeSet::new(),
                                upserted: BTreeSet::new(),
                            };
                            probe
                                .lower_ty(prop, "")
                                .is_ok_and(|(t, _)| self.is_rust_default(&t, d))
                        })
                })
            }
            _ => false,
        }
    }

    fn collect_methods(&mut self) -> Result<()> {
        for (name, def) in self.defs {
            let (Some(method), Some(side)) = (
                def.get("x-method").and_then(Json::as_str),
                def.get("x-side").and_then(Json::as_str),
            ) else {
                continue;
            };
            if !matches!(side, "agent" | "client" | "protocol" | "proxy") {
                return Err(format!("#/$defs/{name}/x-side: unknown side `{side}`"));
            }
            let kind = if name.ends_with("Request") {
                MethodKind::Request
            } else if name.ends_with("Notification") {
                MethodKind::Notification
            } else if name.ends_with("Response") {
                continue;
            } else {
                return Err(format!(
                    "#/$defs/{name}: x-method on a type that is neither a request, response nor notification"
                ));
            };
            let response = if kind == MethodKind::Request {
                let found = self.defs.iter().find(|(n, d)| {
                    n.ends_with("Response")
                        && d.get("x-method").and_then(Json::as_str) == Some(method)
                        && d.get("x-side").and_then(Json::as_str) == Some(side)
                });
                Some(
                    found
                        .ok_or(format!("#/$defs/{name}: no response type for `{method}`"))?
                        .0
                        .clone(),
                )
            } else {
                None
            };
            self.model.methods.push(MethodDef {
                method: method.to_owned(),
                kind,
                handled_by: side.to_owned(),
                params: names::rust_name(name),
                response: response.as_deref().map(names::rust_name),
                doc: description(def),
            });
        }
        Ok(())
    }
}

/// The name for a catch-all variant: `Unknown`, unless a real value already has it.
fn free_name(taken: impl Fn(&str) -> bool) -> String {
    ["Unknown", "Unrecognized", "UnknownValue"]
        .into_iter()
        .find(|n| !taken(n))
        .expect("one of the names is free")
        .to_owned()
}

/// `(tag property, tag value)` of a union arm tagged by a required string constant.
fn arm_tag(arm: &Json) -> Option<(String, String)> {
    let required: Vec<&str> = arm
        .get("required")?
        .as_array()?
        .iter()
        .filter_map(Json::as_str)
        .collect();
    arm.get("properties")?
        .as_object()?
        .iter()
        .find_map(|(k, v)| {
            let value = v.get("const")?.as_str()?;
            required
                .contains(&k.as_str())
                .then(|| (k.clone(), value.to_owned()))
        })
}

fn int_type(format: Option<&str>, path: &str) -> Result<&'static str> {
    Ok(match format {
        None | Some("int64") => "i64",
        Some("int32") => "i32",
        Some("int16") => "i16",
        Some("uint8") => "u8",
        Some("uint16") => "u16",
        Some("uint32") => "u32",
        Some("uint64") => "u64",
        Some(other) => {
            return Err(format!(
                "{path}/format: unsupported integer format `{other}`"
            ));
        }
    })
}

fn flag(schema: &Json, key: &str) -> bool {
    schema.get(key).and_then(Json::as_bool) == Some(true)
}

fn description(schema: &Json) -> Option<String> {
    schema
        .get("description")
        .and_then(Json::as_str)
        .map(str::to_owned)
}

/// `contentEncoding` keeps the string as sent (the wire text, e.g. base64), so the field's doc
/// says how to read it.
fn with_encoding_note(doc: Option<String>, schema: &Json) -> Option<String> {
    let Some(encoding) = schema.get("contentEncoding").and_then(Json::as_str) else {
        return doc;
    };
    let note = format!("The text is `{encoding}`-encoded (`contentEncoding`); it is kept as sent.");
    Some(match doc {
        Some(doc) => format!("{doc}\n\n{note}"),
        None => note,
    })
}

/// A schema that says nothing but (optionally) docs and our extension keywords: any JSON value.
fn is_free_value(schema: &Json) -> bool {
    schema
        .keys()
        .all(|k| k == "description" || k == "title" || k.starts_with("x-"))
}

fn is_empty_schema(schema: &Json) -> bool {
    is_free_value(schema)
}

/// Descriptions that give `null` its own meaning ("set to null to clear").
fn means_null_clears(doc: &str) -> bool {
    let doc = doc.to_ascii_lowercase();
    doc.contains("null")
        && (doc.contains("clear") || doc.contains("removes it") || doc.contains("retained"))
}

pub fn pascal(s: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        } else {
            upper = true;
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}

pub fn snake(s: &str) -> String {
    let trimmed = s.trim_start_matches('_');
    let mut out = String::new();
    let mut prev_lower = false;
    for c in trimmed.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            prev_lower = true;
        } else {
            out.push('_');
            prev_lower = false;
        }
    }
    out
}
