//! Hand-written pieces the generated code builds on: the `_meta` map, the three-state
//! [`Patch`] field, and the decoding rules in [`de`].

pub mod de;
mod patch;

pub use patch::Patch;

/// A free-form JSON object: `_meta` and other open maps, kept as received.
pub type Meta = serde_json::Map<String, serde_json::Value>;

/// Decodes the params of `method`; absent params decode like an empty object, so that methods
/// whose params are all optional accept a bare call.
pub(crate) fn decode_params<T: serde::de::DeserializeOwned>(
    method: &str,
    params: Option<&serde_json::value::RawValue>,
) -> Result<T, crate::DecodeError> {
    let text = match params {
        Some(raw) if raw.get() != "null" => raw.get(),
        _ => "{}",
    };
    serde_json::from_str(text).map_err(|error| crate::DecodeError::InvalidParams {
        method: method.to_owned(),
        error: error.to_string(),
    })
}
