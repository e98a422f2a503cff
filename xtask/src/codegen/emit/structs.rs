//! Structs: the type with its serde attributes, `new` over the required fields, and a `with_…`
//! setter per optional field. Structs are `#[non_exhaustive]`, so `new` plus the setters are the
//! only way to build one outside acp-types: a field the schema adds later is then not a breaking
//! change for anyone.

use super::{Emitter, ident, rust_ty};
use crate::codegen::model::*;
use std::fmt::Write;

impl Emitter<'_> {
    pub(super) fn strukt(&mut self, name: &str, s: &Struct) {
        let defaultable = s.flattened.is_none()
            && s.fields
                .iter()
                .all(|f| !matches!(f.presence, Presence::Required | Presence::RequiredNullable));
        let derives = if defaultable {
            "Clone, Debug, Default, PartialEq, Serialize, Deserialize"
        } else {
            "Clone, Debug, PartialEq, Serialize, Deserialize"
        };
        writeln!(
            self.out,
            "#[derive({derives})]\n#[non_exhaustive]\npub struct {name} {{"
        )
        .unwrap();
        for f in &s.fields {
            self.doc(f.doc.as_deref(), "    ");
            let mut attrs: Vec<String> = Vec::new();
            let bare = f.rust_name.as_str();
            if bare != f.json_name {
                attrs.push(format!("rename = \"{}\"", f.json_name));
            }
            match f.presence {
                Presence::Optional => {
                    attrs.push("default".into());
                    attrs.push("skip_serializing_if = \"Option::is_none\"".into());
                }
                Presence::Patch => {
                    attrs.push("default".into());
                    attrs.push("skip_serializing_if = \"Patch::is_unchanged\"".into());
                }
                Presence::Defaulted => attrs.push("default".into()),
                Presence::Required | Presence::RequiredNullable => {}
            }
            if let Some(with) = deserialize_with(f) {
                attrs.push(format!("deserialize_with = \"{with}\""));
            }
            if !attrs.is_empty() {
                writeln!(self.out, "    #[serde({})]", attrs.join(", ")).unwrap();
            }
            writeln!(self.out, "    pub {}: {},", ident(bare), field_ty(f)).unwrap();
        }
        if let Some(union) = &s.flattened {
            writeln!(self.out, "    /// The variant part of this object.\n    #[serde(flatten)]\n    pub kind: {union},").unwrap();
        }
        writeln!(self.out, "}}").unwrap();
        self.constructor(name, s);
    }

    /// `new` takes the required fields (and the variant part); the others start empty and have
    /// a setter each.
    fn constructor(&mut self, name: &str, s: &Struct) {
        let mut params = Vec::new();
        let mut inits = Vec::new();
        for f in &s.fields {
            let field = ident(&f.rust_name);
            match f.presence {
                Presence::Required if matches!(f.ty, Ty::Int(_)) => {
                    params.push(format!("{field}: {}", rust_ty(&f.ty)));
                    inits.push(field);
                }
                Presence::Required => {
                    params.push(format!("{field}: impl Into<{}>", rust_ty(&f.ty)));
                    inits.push(format!("{field}: {field}.into()"));
                }
                Presence::RequiredNullable | Presence::Optional => {
                    inits.push(format!("{field}: None"))
                }
                Presence::Patch => inits.push(format!("{field}: Patch::Unchanged")),
                Presence::Defaulted => inits.push(format!("{field}: Default::default()")),
            }
        }
        if let Some(union) = &s.flattened {
            params.push(format!("kind: impl Into<{union}>"));
            inits.push("kind: kind.into()".to_owned());
        }
        writeln!(
            self.out,
            "\nimpl {name} {{\n    /// A value with the given required fields; optional fields are absent.\n    \
             pub fn new({}) -> Self {{\n        Self {{ {} }}\n    }}",
            params.join(", "),
            inits.join(", ")
        )
        .unwrap();
        for f in &s.fields {
            self.setter(f);
        }
        writeln!(self.out, "}}").unwrap();
    }

    fn setter(&mut self, f: &Field) {
        let field = ident(&f.rust_name);
        let bare = f.rust_name.as_str();
        let json = &f.json_name;
        let ty = rust_ty(&f.ty);
        let (doc, value) = match f.presence {
            Presence::Required => return,
            Presence::RequiredNullable => (
                "Sets `{json}` (sent as `null` until set).",
                "Some(value.into())",
            ),
            Presence::Optional if f.boxed() => ("Sets `{json}`.", "Some(Box::new(value.into()))"),
            Presence::Optional => ("Sets `{json}`.", "Some(value.into())"),
            Presence::Defaulted => ("Sets `{json}` (empty or zero until set).", "value.into()"),
            Presence::Patch => ("Sets `{json}` to a new value.", "Patch::Set(value.into())"),
        };
        let doc = doc.replace("{json}", json);
        // An integer is taken as it is: with `impl Into<u32>` a literal (`with_line(1)`) would
        // be an `i32` and not compile.
        let (param, value) = if matches!(f.ty, Ty::Int(_)) {
            (ty.clone(), value.replace("value.into()", "value"))
        } else {
            (format!("impl Into<{ty}>"), value.to_owned())
        };
        writeln!(
            self.out,
            "\n    /// {doc}\n    pub fn with_{bare}(mut self, value: {param}) -> Self {{\n        \
             self.{field} = {value};\n        self\n    }}"
        )
        .unwrap();
        if f.presence == Presence::Patch {
            writeln!(
                self.out,
                "\n    /// Sets `{json}` to `null`: the receiver removes its value.\n    \
                 pub fn clear_{bare}(mut self) -> Self {{\n        self.{field} = Patch::Clear;\n        self\n    }}"
            )
            .unwrap();
        }
    }
}

fn field_ty(f: &Field) -> String {
    let base = rust_ty(&f.ty);
    match f.presence {
        Presence::Optional if f.boxed() => format!("Option<Box<{base}>>"),
        Presence::Required | Presence::Defaulted => base,
        Presence::RequiredNullable | Presence::Optional => format!("Option<{base}>"),
        Presence::Patch => format!("Patch<{base}>"),
    }
}

fn deserialize_with(f: &Field) -> Option<&'static str> {
    if f.skip_invalid_items && matches!(f.ty, Ty::Array(_)) {
        Some(match f.presence {
            Presence::Optional | Presence::RequiredNullable => "de::lenient_items_opt",
            Presence::Patch => "de::lenient_items_patch",
            Presence::Required | Presence::Defaulted => "de::lenient_items",
        })
    } else if f.lenient {
        Some("de::lenient")
    } else if f.null_as_default {
        Some("de::null_as_default")
    } else {
        None
    }
}
