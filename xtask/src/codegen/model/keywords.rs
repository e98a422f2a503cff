//! Every JSON Schema keyword the generator meets, and what it does with it. A keyword outside
//! [`KEYWORDS`] stops the generator with its schema path: a new schema that says something new
//! (v2's `x-state`, `x-scope` and `propertyNames` went unnoticed once: issue 28; `x-state`
//! upserts now type patch fields, model/state.rs) must be taught
//! or listed here as ignored, with the reason.

use super::super::json::Json;
use std::collections::BTreeMap;

/// What the generator does with a keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Treatment {
    /// Read by the lowering (model.rs, model/union.rs).
    Read,
    /// Not read, for the reason given. `announce`: the keyword carries meaning the generated
    /// types do not have (not a mere validation bound), so codegen names it when a schema uses
    /// it.
    Ignored { announce: bool, why: &'static str },
}

use Treatment::{Ignored, Read};

/// Lenient in what we accept: bounds are the sender's to keep, and a value outside them still
/// decodes.
const BOUND: Treatment = Ignored {
    announce: false,
    why: "a validation bound: the types decode what the peer sends (lenient in what we accept)",
};

/// The keywords, and what the generator does with each.
pub const KEYWORDS: &[(&str, Treatment)] = &[
    ("$defs", Read),
    ("definitions", Read),
    ("$ref", Read),
    ("type", Read),
    ("properties", Read),
    ("required", Read),
    ("additionalProperties", Read),
    ("items", Read),
    ("allOf", Read),
    ("anyOf", Read),
    ("oneOf", Read),
    ("not", Read),
    ("const", Read),
    ("enum", Read),
    ("format", Read),
    ("default", Read),
    ("title", Read),
    ("description", Read),
    ("x-method", Read),
    ("x-side", Read),
    ("x-docs-ignore", Read),
    ("x-deserialize-default-on-error", Read),
    ("x-deserialize-default-on-null", Read),
    ("x-deserialize-skip-invalid-items", Read),
    (
        "$schema",
        Ignored {
            announce: false,
            why: "the dialect: draft-07 and 2020-12 schemas are lowered alike",
        },
    ),
    (
        "discriminator",
        Ignored {
            announce: false,
            why: "an OpenAPI hint; unions are lowered from their arms' constant tags",
        },
    ),
    (
        "unevaluatedProperties",
        Ignored {
            announce: false,
            why: "unknown members are accepted and dropped (forward compatibility)",
        },
    ),
    ("minimum", BOUND),
    ("maximum", BOUND),
    ("minLength", BOUND),
    ("maxLength", BOUND),
    ("minItems", BOUND),
    ("contentEncoding", Read),
    ("x-state", Read),
    (
        "propertyNames",
        Ignored {
            announce: false,
            why: "a constraint on the member names of an open object (v2's elicitation scopes \
                  forbid the members of the other scopes); the types decode what the peer sends",
        },
    ),
    (
        "x-scope",
        Ignored {
            announce: false,
            why: "v2's routing keys of a message (session, tool call, request, elicitation): \
                  fields the types already have; routing by them is the runtime's",
        },
    ),
];

/// What a keyword is, or `None` when the generator does not know it.
pub fn treatment(keyword: &str) -> Option<Treatment> {
    KEYWORDS
        .iter()
        .find(|(k, _)| *k == keyword)
        .map(|(_, t)| *t)
}

/// Checks every keyword of `schema` (its definitions, their properties, items and union arms,
/// to any depth); returns how often each ignored keyword occurs, or the path of the first
/// unknown one.
pub fn check(schema: &Json) -> Result<BTreeMap<&'static str, usize>, String> {
    let mut ignored = BTreeMap::new();
    visit(schema, "#", &mut ignored)?;
    Ok(ignored)
}

fn visit(
    schema: &Json,
    path: &str,
    ignored: &mut BTreeMap<&'static str, usize>,
) -> Result<(), String> {
    let Some(members) = schema.as_object() else {
        return Ok(()); // `true`/`false` schemas
    };
    for (key, value) in members {
        let Some((keyword, treatment)) = KEYWORDS.iter().find(|(k, _)| k == key) else {
            return Err(format!(
                "{path}: the keyword `{key}` is unknown to the generator; teach it \
                 (xtask/src/codegen/model.rs) or list it as ignored, with the reason \
                 (xtask/src/codegen/model/keywords.rs)"
            ));
        };
        if let Ignored { .. } = treatment {
            *ignored.entry(*keyword).or_default() += 1;
        }
        let here = format!("{path}/{key}");
        match key.as_str() {
            // Maps of schemas.
            "$defs" | "definitions" | "properties" => {
                for (name, sub) in value.as_object().unwrap_or(&[]) {
                    visit(sub, &format!("{here}/{name}"), ignored)?;
                }
            }
            // Lists of schemas.
            "allOf" | "anyOf" | "oneOf" => {
                for (i, sub) in value.as_array().unwrap_or(&[]).iter().enumerate() {
                    visit(sub, &format!("{here}/{i}"), ignored)?;
                }
            }
            // One schema.
            "items" | "not" | "additionalProperties" | "propertyNames" => {
                visit(value, &here, ignored)?;
            }
            // Values, not schemas (`default`, `const`, `enum`, the `x-` annotations, ...).
            _ => {}
        }
    }
    Ok(())
}
