//! Error codes, the JSON-RPC error object, and the errors callers see.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A JSON-RPC error code.
///
/// The constants are the codes this crate produces itself; any other `i32`
/// is allowed, so applications can define their own.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// The line is not valid JSON (or not valid UTF-8).
    pub const PARSE_ERROR: Self = Self(-32700);
    /// The JSON is not a valid request object.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// No handler knows this method.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// The params did not decode into what the method expects.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// The handler failed, panicked, or never answered.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// The request was cancelled by `$/cancel_request` (the LSP code, which
    /// ACP uses as well).
    pub const REQUEST_CANCELLED: Self = Self(-32800);

    /// The message JSON-RPC (or LSP, for `-32800`) gives this code, if any.
    pub fn standard_message(self) -> Option<&'static str> {
        Some(match self {
            Self::PARSE_ERROR => "Parse error",
            Self::INVALID_REQUEST => "Invalid Request",
            Self::METHOD_NOT_FOUND => "Method not found",
            Self::INVALID_PARAMS => "Invalid params",
            Self::INTERNAL_ERROR => "Internal error",
            Self::REQUEST_CANCELLED => "Request cancelled",
            _ => return None,
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<i32> for ErrorCode {
    fn from(code: i32) -> Self {
        ErrorCode(code)
    }
}

/// The error object of a JSON-RPC response, serialized exactly as the
/// specification writes it: `{"code":…,"message":…,"data":…}`, with `data`
/// left out when absent.
#[derive(Debug, Clone, Serialize, Deserialize, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct ResponseError {
    /// What kind of error this is.
    pub code: ErrorCode,
    /// A short human-readable description.
    pub message: String,
    /// Anything else the sender wants to say, as raw JSON.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::present_owned"
    )]
    pub data: Option<Box<RawValue>>,
}

impl ResponseError {
    /// An error with this code and message and no data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ResponseError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// An error with the code's standard message (or `"Error"` for codes
    /// without one) and no data.
    pub fn from_code(code: ErrorCode) -> Self {
        ResponseError::new(code, code.standard_message().unwrap_or("Error"))
    }

    /// Sets `data` to `value` serialized as JSON.
    ///
    /// A value that cannot be serialized (a map with non-string keys, a
    /// failing `Serialize` impl) is replaced by the serialization error's
    /// text, so building an error never fails.
    pub fn with_data<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        self.data = Some(match serde_json::value::to_raw_value(value) {
            Ok(raw) => raw,
            Err(error) => string_raw_value(&error.to_string()),
        });
        self
    }

    /// Sets `data` to JSON that is already serialized.
    pub fn with_raw_data(mut self, data: Box<RawValue>) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32700 Parse error`, with `detail` as data.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::from_code(ErrorCode::PARSE_ERROR).with_detail(detail)
    }

    /// `-32600 Invalid Request`, with `detail` as data.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::from_code(ErrorCode::INVALID_REQUEST).with_detail(detail)
    }

    /// `-32600 Invalid Request` for a request whose id is `null`, on a connection that refuses
    /// them ([`ConnectionOptions::with_null_request_ids_refused`](crate::ConnectionOptions::with_null_request_ids_refused),
    /// ACP v2), or wherever the same rule is kept (a v2 proxy chain's conductor).
    pub fn null_request_id() -> Self {
        Self::invalid_request("a request id must not be null")
    }

    /// `-32601 Method not found`, with `{"method": method}` as data (an [`excerpt`] of it:
    /// the name is the peer's).
    pub fn method_not_found(method: &str) -> Self {
        #[derive(Serialize)]
        struct Data<'a> {
            method: &'a str,
        }
        let method = excerpt(method);
        Self::from_code(ErrorCode::METHOD_NOT_FOUND).with_data(&Data { method: &method })
    }

    /// `-32602 Invalid params`, with `detail` (typically the decode error)
    /// as data.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::from_code(ErrorCode::INVALID_PARAMS).with_detail(detail)
    }

    /// `-32603 Internal error`, with `detail` as data.
    pub fn internal_error(detail: impl fmt::Display) -> Self {
        Self::from_code(ErrorCode::INTERNAL_ERROR).with_detail(detail)
    }

    /// `-32800 Request cancelled`, without data.
    pub fn request_cancelled() -> Self {
        Self::from_code(ErrorCode::REQUEST_CANCELLED)
    }

    /// The message of [`too_many_requests`](Self::too_many_requests).
    pub const TOO_MANY_REQUESTS_MESSAGE: &'static str = "too many requests in flight";

    /// What the connection answers a request that arrives while `limit` of
    /// the peer's requests are already in flight:
    /// `{"code":-32603,"message":"too many requests in flight","data":{"maxInFlightRequests":limit}}`.
    ///
    /// `-32603` because every peer understands it; the message tells it
    /// apart from a failing handler (see
    /// [`is_too_many_requests`](Self::is_too_many_requests)). Nothing was
    /// done for the request, so sending it again later is safe.
    pub fn too_many_requests(limit: usize) -> Self {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Data {
            max_in_flight_requests: usize,
        }
        ResponseError::new(ErrorCode::INTERNAL_ERROR, Self::TOO_MANY_REQUESTS_MESSAGE).with_data(
            &Data {
                max_in_flight_requests: limit,
            },
        )
    }

    /// Whether this is a [`too_many_requests`](Self::too_many_requests)
    /// refusal (code and message; the limit in `data` may be anything).
    pub fn is_too_many_requests(&self) -> bool {
        self.code == ErrorCode::INTERNAL_ERROR && self.message == Self::TOO_MANY_REQUESTS_MESSAGE
    }

    /// The message of [`too_many_request_bytes`](Self::too_many_request_bytes).
    pub const TOO_MANY_REQUEST_BYTES_MESSAGE: &'static str =
        "the requests in flight hold too many bytes";

    /// What the connection answers a request of `request_bytes` that does not fit in what is
    /// left of an in-flight byte budget of `limit` bytes (see
    /// [`ConnectionOptions::with_in_flight_budget`](crate::ConnectionOptions::with_in_flight_budget)):
    /// `{"code":-32603,"message":"the requests in flight hold too many bytes","data":{"maxInFlightBytes":limit,"requestBytes":request_bytes,"scope":"connection"}}`.
    ///
    /// Like [`too_many_requests`](Self::too_many_requests), nothing was done for the request:
    /// sending it again once earlier requests are answered is safe.
    pub fn too_many_request_bytes(
        limit: usize,
        request_bytes: usize,
        scope: crate::BudgetScope,
    ) -> Self {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Data {
            max_in_flight_bytes: usize,
            request_bytes: usize,
            scope: &'static str,
        }
        ResponseError::new(
            ErrorCode::INTERNAL_ERROR,
            Self::TOO_MANY_REQUEST_BYTES_MESSAGE,
        )
        .with_data(&Data {
            max_in_flight_bytes: limit,
            request_bytes,
            scope: scope.as_str(),
        })
    }

    /// Whether this is a [`too_many_request_bytes`](Self::too_many_request_bytes) refusal.
    pub fn is_too_many_request_bytes(&self) -> bool {
        self.code == ErrorCode::INTERNAL_ERROR
            && self.message == Self::TOO_MANY_REQUEST_BYTES_MESSAGE
    }

    /// Sets `data` to `detail` as a JSON string, cut to an [`excerpt`]: a detail is often a
    /// decode error, which quotes the peer's input.
    fn with_detail(mut self, detail: impl fmt::Display) -> Self {
        self.data = Some(string_raw_value(&excerpt(&detail.to_string())));
        self
    }

    /// Decodes `data` into `T`; `None` when there is no data.
    pub fn data<'a, T: Deserialize<'a>>(&'a self) -> Option<Result<T, serde_json::Error>> {
        self.data
            .as_deref()
            .map(|raw| serde_json::from_str(raw.get()))
    }
}

/// Two errors are equal when code, message and the exact text of `data`
/// are.
impl PartialEq for ResponseError {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_deref().map(RawValue::get) == other.data.as_deref().map(RawValue::get)
    }
}

impl Eq for ResponseError {}

/// How many characters of the peer's input an error message quotes: [`excerpt`].
pub const EXCERPT_CHARS: usize = 200;

/// At most the first [`EXCERPT_CHARS`] characters of `text`, followed by `… (N bytes)` when
/// it was longer: what every error message that quotes the peer's input (a method name, an
/// id, a path, a decode error) shows of it. An error echoing a 60 MiB path back would cost
/// the memory and the bandwidth the limits exist to bound.
///
/// ```
/// use acp_jsonrpc::excerpt;
///
/// assert_eq!(excerpt("short"), "short");
/// let long = "x".repeat(100_000);
/// assert!(excerpt(&long).ends_with("… (100000 bytes)"));
/// assert!(excerpt(&long).len() < 300);
/// ```
pub fn excerpt(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => text.into(),
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()).into(),
    }
}

pub(crate) fn string_raw_value(text: &str) -> Box<RawValue> {
    let mut json = Vec::with_capacity(text.len() + 2);
    crate::json::write_str(&mut json, text);
    // The escaper only produces valid JSON strings, which are valid UTF-8.
    let json = String::from_utf8(json).unwrap_or_default();
    RawValue::from_string(json).unwrap_or_else(|_| null_raw_value())
}

pub(crate) fn null_raw_value() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).unwrap_or_else(|_| unreachable!("null is valid JSON"))
}

/// Why a request sent to the peer (or a notification) did not produce a
/// result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The peer answered with a JSON-RPC error.
    #[error("the peer answered with an error: {0}")]
    Response(#[from] ResponseError),
    /// The connection closed before the message was sent or answered: the
    /// peer went away, [`ConnectionHandle::close`](crate::ConnectionHandle::close)
    /// was called, or the connection's driver future was dropped or failed.
    #[error("the connection is closed")]
    ConnectionClosed,
    /// The timer given to
    /// [`RequestFuture::with_timeout`](crate::RequestFuture::with_timeout)
    /// fired first.
    #[error("the request timed out")]
    TimedOut,
    /// The params could not be serialized; nothing was sent.
    #[error("could not serialize the params: {0}")]
    Encode(#[source] serde_json::Error),
    /// The peer's result did not decode into the expected type.
    #[error("could not decode the result: {0}")]
    Decode(#[source] serde_json::Error),
    /// The peer's response to this request was malformed (for instance it
    /// had both `result` and `error`, or a wrong `jsonrpc` version).
    #[error("the peer sent a malformed response: {0}")]
    MalformedResponse(String),
}

/// Why a connection's driver future stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// Reading from the peer failed.
    #[error("reading from the peer failed: {0}")]
    Read(#[source] std::io::Error),
    /// Writing to the peer failed.
    #[error("writing to the peer failed: {0}")]
    Write(#[source] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_like_the_specification() {
        let error = ResponseError::new(ErrorCode(-1), "x");
        assert_eq!(
            serde_json::to_string(&error).unwrap(),
            r#"{"code":-1,"message":"x"}"#
        );
        let error = ResponseError::method_not_found("a\"b");
        assert_eq!(
            serde_json::to_string(&error).unwrap(),
            r#"{"code":-32601,"message":"Method not found","data":{"method":"a\"b"}}"#
        );
        let back: ResponseError =
            serde_json::from_str(r#"{"code":5,"message":"m","data":null}"#).unwrap();
        assert_eq!(back.data.as_deref().map(RawValue::get), Some("null"));
    }

    #[test]
    fn too_many_requests_is_recognisable() {
        let error = ResponseError::too_many_requests(256);
        assert_eq!(
            serde_json::to_string(&error).unwrap(),
            r#"{"code":-32603,"message":"too many requests in flight","data":{"maxInFlightRequests":256}}"#
        );
        assert!(error.is_too_many_requests());
        let back: ResponseError =
            serde_json::from_str(&serde_json::to_string(&error).unwrap()).unwrap();
        assert!(back.is_too_many_requests());
        assert!(!ResponseError::internal_error("x").is_too_many_requests());
    }

    #[test]
    fn unserializable_data_becomes_text() {
        let mut map = std::collections::HashMap::new();
        map.insert(vec![1u8], 2);
        let error = ResponseError::internal_error("x").with_data(&map);
        assert!(error.data.unwrap().get().starts_with('"'));
    }
}
