//! The router's reading and rewriting of `initialize` params: the requested version, and the
//! params of a v2 request in the shape of the version it is served with. Only the `initialize`
//! (or `proxy/initialize`: the same params) line of a connection ever comes here.

use acp_jsonrpc::ResponseError;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// `protocolVersion` of `initialize` params; `-32602` when absent or not a version number
/// (an integer from 0 to 65535).
pub(super) fn requested_version(params: &str, method: &str) -> Result<u16, ResponseError> {
    #[derive(serde::Deserialize)]
    struct Version {
        #[serde(rename = "protocolVersion")]
        protocol_version: u16,
    }
    serde_json::from_str::<Version>(params)
        .map(|v| v.protocol_version)
        .map_err(|_| {
            ResponseError::invalid_params(format_args!(
                "`{method}.protocolVersion` must be a protocol version number (0 to 65535)"
            ))
        })
}

/// The params with `protocolVersion` set to `version`, everything else as sent.
pub(super) fn with_version(params: &str, version: u16) -> Result<Box<RawValue>, ResponseError> {
    let mut object = object(params)?;
    object.insert("protocolVersion".into(), version.into());
    raw(object)
}

/// v2 `initialize` params in v1's shape, for a v2 client served by the v1 side: version 1,
/// `info` as `clientInfo`, `capabilities` as `clientCapabilities` (v2's object support markers
/// as v1's booleans where v1 has booleans: `auth.terminal`), plus what every v2 client
/// supports and v1 makes a capability: boolean config options. Members v1 does not know are
/// kept; the v1 types ignore them.
pub(super) fn to_v1(params: &str) -> Result<Box<RawValue>, ResponseError> {
    let mut object = object(params)?;
    object.insert("protocolVersion".into(), 1.into());
    if let Some(info) = object.remove("info") {
        object.entry("clientInfo").or_insert(info);
    }
    let mut capabilities = match object.remove("capabilities") {
        Some(Value::Object(capabilities)) => capabilities,
        _ => Map::new(),
    };
    if let Some(Value::Object(auth)) = capabilities.get_mut("auth")
        && let Some(terminal) = auth.get_mut("terminal")
    {
        *terminal = Value::Bool(!terminal.is_null());
    }
    let session = capabilities
        .entry("session")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(session) = session {
        let config = session
            .entry("configOptions")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(config) = config {
            config
                .entry("boolean")
                .or_insert_with(|| Value::Object(Map::new()));
        }
    }
    object
        .entry("clientCapabilities")
        .or_insert(Value::Object(capabilities));
    raw(object)
}

fn object(params: &str) -> Result<Map<String, Value>, ResponseError> {
    serde_json::from_str(params)
        .map_err(|_| ResponseError::invalid_params("`initialize` params must be an object"))
}

fn raw(object: Map<String, Value>) -> Result<Box<RawValue>, ResponseError> {
    serde_json::value::to_raw_value(&object)
        .map_err(|e| ResponseError::internal_error(format_args!("re-encoding params: {e}")))
}
