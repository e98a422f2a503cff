//! What the generated method tables build on: the [`Method`], [`Request`] and [`Notification`]
//! traits, the direction markers ([`ClientToAgent`], [`AgentToClient`], [`Side`]), the table
//! rows ([`MethodInfo`]), the [`DecodeError`] of an incoming `(method, params)` pair (unknown
//! method or bad params), and [`ExtensionCall`] for `_`-prefixed methods.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

/// A params type with its JSON-RPC method name.
pub trait Method: Serialize + DeserializeOwned {
    /// The JSON-RPC method name, e.g. `"session/prompt"`.
    const METHOD: &'static str;
}

/// The params of a request, with the type of its successful response.
///
/// Implement it (with [`Method`] and a direction marker) for your own `_`-prefixed extension
/// methods to call them with the same typed API as the protocol's own.
pub trait Request: Method {
    /// The `result` of a successful response.
    type Response: Serialize + DeserializeOwned;
}

/// The params of a notification.
pub trait Notification: Method {}

/// Sent by the client, handled by the agent.
pub trait ClientToAgent: Method {}

/// Sent by the agent, handled by the client.
pub trait AgentToClient: Method {}

/// Which side of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The AI agent.
    Agent,
    /// The editor.
    Client,
    /// Either side (protocol-level messages such as `$/cancel_request`).
    Protocol,
    /// A proxy between client and agent (unstable proxy chains).
    Proxy,
}

/// Whether a method is a request or a notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MethodKind {
    /// Answered by a response.
    Request,
    /// Never answered.
    Notification,
}

/// A row of [`METHODS`](crate::METHODS): the schema's description of a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodInfo {
    /// The JSON-RPC method name.
    pub name: &'static str,
    /// Request or notification.
    pub kind: MethodKind,
    /// The side that receives and handles it.
    pub handled_by: Side,
    /// The Rust name of its params type.
    pub params: &'static str,
    /// The Rust name of its response type, for requests.
    pub response: Option<&'static str>,
}

/// Why an incoming `(method, params)` pair did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Neither a method of the protocol nor an extension (`_`-prefixed) method: JSON-RPC -32601.
    UnknownMethod(String),
    /// The params do not fit the method's params type: JSON-RPC -32602.
    InvalidParams {
        /// The method.
        method: String,
        /// What did not fit.
        error: String,
    },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::UnknownMethod(method) => write!(f, "unknown method `{method}`"),
            DecodeError::InvalidParams { method, error } => {
                write!(f, "invalid params for `{method}`: {error}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// A call of an extension method (its name starts with `_`), params kept as raw JSON to decode
/// into your own type.
#[derive(Clone, Debug)]
pub struct ExtensionCall {
    /// The method name, e.g. `"_zed.dev/workspace/buffers"`.
    pub method: String,
    /// The params as sent (`null` when absent).
    pub params: Box<RawValue>,
}

impl ExtensionCall {
    /// Wraps a method name and its raw params.
    pub fn new(method: &str, params: Option<&RawValue>) -> Self {
        let params = params.map_or_else(
            || RawValue::from_string("null".to_owned()).expect("null is valid JSON"),
            ToOwned::to_owned,
        );
        ExtensionCall {
            method: method.to_owned(),
            params,
        }
    }

    /// Decodes the params into `T`.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.params.get())
    }
}

impl PartialEq for ExtensionCall {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method && self.params.get() == other.params.get()
    }
}

/// Decodes the `result` of a response into `T`, accepting `null` for results whose fields are
/// all optional: the specification's own examples answer `session/load` and
/// `fs/write_text_file` with `"result": null`, so peers do it too.
///
/// ```
/// use acp_types::{WriteTextFileResponse, decode_response};
/// let response: WriteTextFileResponse = decode_response("null").unwrap();
/// assert_eq!(response, WriteTextFileResponse::default());
/// ```
pub fn decode_response<T: DeserializeOwned>(result: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str::<MethodResult<T>>(result).map(|result| result.0)
}

/// A method's `result` as [`decode_response`] reads it (`null` counts as `{}`), for decoding
/// straight from a response without going through a string first.
///
/// ```
/// use acp_types::{LoadSessionResponse, MethodResult};
/// let MethodResult(response) = serde_json::from_str::<MethodResult<LoadSessionResponse>>("null").unwrap();
/// assert_eq!(response, LoadSessionResponse::default());
/// assert!(serde_json::from_str::<MethodResult<LoadSessionResponse>>("3").is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MethodResult<T>(pub T);

impl<'de, T: DeserializeOwned> serde::Deserialize<'de> for MethodResult<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NullAsEmpty<T>(std::marker::PhantomData<T>);
        impl<'de, T: DeserializeOwned> serde::de::Visitor<'de> for NullAsEmpty<T> {
            type Value = MethodResult<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a method result")
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                serde_json::from_str("{}").map(MethodResult).map_err(|_| {
                    E::invalid_type(serde::de::Unexpected::Unit, &"a method result object")
                })
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                self.visit_none()
            }
            fn visit_some<D: serde::Deserializer<'de>>(
                self,
                deserializer: D,
            ) -> Result<Self::Value, D::Error> {
                T::deserialize(deserializer).map(MethodResult)
            }
        }
        deserializer.deserialize_option(NullAsEmpty(std::marker::PhantomData))
    }
}
