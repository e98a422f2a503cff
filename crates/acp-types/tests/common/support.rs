//! Building blocks the generated strategies use.

use acp_types::{Meta, Patch};
use proptest::prelude::*;
use serde_json::Value;

pub fn small_string() -> impl Strategy<Value = String> + Clone {
    "[a-zA-Z0-9 _/\\-é😀\"\\\\]{0,8}"
}

/// A string no enum of the schema uses, for catch-all variants.
pub fn unknown_string() -> impl Strategy<Value = String> + Clone {
    "[a-z]{1,6}".prop_map(|s| format!("x-future-{s}"))
}

/// Floats that print and parse back exactly.
pub fn exact_float() -> impl Strategy<Value = f64> + Clone {
    (-4000i32..4000).prop_map(|i| f64::from(i) / 8.0)
}

fn json_leaf() -> impl Strategy<Value = Value> + Clone {
    prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        exact_float().prop_map(Value::from),
        small_string().prop_map(Value::String),
    ]
}

/// A value for the catch-all arm of an untagged union, which its typed arms (strings, numbers,
/// arrays, objects with the fields they require) do not claim: an object with one member no
/// schema names.
// Only the strategies of schemas with such unions (v2) use it; the other tests share the file.
#[allow(dead_code)]
pub fn unclaimed_json() -> BoxedStrategy<Value> {
    (unknown_string(), json_value())
        .prop_map(|(key, value)| Value::Object([(key, value)].into_iter().collect()))
        .boxed()
}

/// Any JSON value but `null` (an optional field holding `null` decodes as absent).
pub fn json_value() -> BoxedStrategy<Value> {
    json_leaf()
        .prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::btree_map(small_string(), inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

pub fn json_object() -> BoxedStrategy<Meta> {
    proptest::collection::btree_map(small_string(), json_value(), 0..3)
        .prop_map(|m| m.into_iter().collect())
        .boxed()
}

pub fn patch<T: std::fmt::Debug + Clone + 'static>(
    value: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Patch<T>> {
    prop_oneof![
        Just(Patch::Unchanged),
        Just(Patch::Clear),
        value.prop_map(Patch::Set),
    ]
    .boxed()
}

/// An object whose tag this schema does not know.
pub fn unknown_tagged(tag: &'static str) -> BoxedStrategy<Value> {
    (unknown_string(), json_value())
        .prop_map(move |(value, extra)| serde_json::json!({ tag: value, "x-future-member": extra }))
        .boxed()
}
