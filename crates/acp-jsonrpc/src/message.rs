//! The three kinds of JSON-RPC message, how a line becomes one, and how one
//! becomes a line.

use std::borrow::Cow;
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use crate::{RequestId, ResponseError};

/// One JSON-RPC 2.0 message.
///
/// Params and results stay raw JSON ([`RawValue`]) until whoever handles
/// them decodes them into their own type, so routing a message never builds
/// an intermediate `serde_json::Value` tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A call that expects exactly one response.
    Request(Request),
    /// A one-way message; never answered.
    Notification(Notification),
    /// The answer to a request.
    Response(Response),
}

/// A request: it has an id and expects a response.
#[derive(Debug, Clone)]
pub struct Request {
    /// The id the response must carry.
    pub id: RequestId,
    /// The method to call.
    pub method: String,
    /// The params as the sender wrote them; `None` when the field was absent.
    pub params: Option<Box<RawValue>>,
}

/// A notification: it has no id and is never answered.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method to call.
    pub method: String,
    /// The params as the sender wrote them; `None` when the field was absent.
    pub params: Option<Box<RawValue>>,
}

/// A response: the result of a request, or the error it failed with.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request this answers (`null` for some errors).
    pub id: RequestId,
    /// `result` (raw JSON) or `error`.
    pub result: Result<Box<RawValue>, ResponseError>,
}

impl Request {
    /// A request whose params are `params` serialized as JSON.
    pub fn new<P: Serialize + ?Sized>(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Request {
            id: id.into(),
            method: method.into(),
            params: Some(serde_json::value::to_raw_value(params)?),
        })
    }

    /// Decodes the params into `T`; absent params decode as `null`.
    pub fn params<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        decode_params(self.params.as_deref())
    }
}

impl Notification {
    /// A notification whose params are `params` serialized as JSON.
    pub fn new<P: Serialize + ?Sized>(
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Notification {
            method: method.into(),
            params: Some(serde_json::value::to_raw_value(params)?),
        })
    }

    /// Decodes the params into `T`; absent params decode as `null`.
    pub fn params<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        decode_params(self.params.as_deref())
    }
}

impl Response {
    /// A successful response carrying `result` serialized as JSON.
    pub fn ok<T: Serialize + ?Sized>(
        id: impl Into<RequestId>,
        result: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Response {
            id: id.into(),
            result: Ok(serde_json::value::to_raw_value(result)?),
        })
    }

    /// An error response.
    pub fn error(id: impl Into<RequestId>, error: ResponseError) -> Self {
        Response {
            id: id.into(),
            result: Err(error),
        }
    }
}

pub(crate) fn decode_params<'a, T: Deserialize<'a>>(
    params: Option<&'a RawValue>,
) -> Result<T, serde_json::Error> {
    serde_json::from_str(params.map_or("null", RawValue::get))
}

fn raw_text(raw: &Option<Box<RawValue>>) -> Option<&str> {
    raw.as_deref().map(RawValue::get)
}

/// Equal when id, method and the exact params text are.
impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.method == other.method
            && raw_text(&self.params) == raw_text(&other.params)
    }
}

impl Eq for Request {}

/// Equal when method and the exact params text are.
impl PartialEq for Notification {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method && raw_text(&self.params) == raw_text(&other.params)
    }
}

impl Eq for Notification {}

/// Equal when id and the exact result text (or the error) are.
impl PartialEq for Response {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && match (&self.result, &other.result) {
                (Ok(a), Ok(b)) => a.get() == b.get(),
                (Err(a), Err(b)) => a == b,
                _ => false,
            }
    }
}

impl Eq for Response {}

impl From<Request> for Message {
    fn from(request: Request) -> Self {
        Message::Request(request)
    }
}

impl From<Notification> for Message {
    fn from(notification: Notification) -> Self {
        Message::Notification(notification)
    }
}

impl From<Response> for Message {
    fn from(response: Response) -> Self {
        Message::Response(response)
    }
}

impl Message {
    /// Decodes one line (without its `\n`; a trailing `\r` is fine, it is
    /// JSON whitespace).
    ///
    /// The error says what was wrong and carries the error response
    /// JSON-RPC prescribes, if any (see [`DecodeError::reply`]).
    ///
    /// A leading byte-order mark is not JSON: such a line is
    /// [`DecodeErrorKind::NotJson`]. A [`Connection`](crate::Connection) and
    /// [`LineReader::read_message`](crate::LineReader::read_message) remove
    /// it first, with [`strip_byte_order_mark`](crate::strip_byte_order_mark).
    pub fn from_slice(line: &[u8]) -> Result<Message, DecodeError> {
        decode(line)
    }

    /// Appends the message as one line of JSON, `\n` included, to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Message::Request(request) => {
                encode_raw_request(out, &request.id, &request.method, request.params.as_deref())
            }
            Message::Notification(notification) => {
                encode_raw_notification(out, &notification.method, notification.params.as_deref())
            }
            Message::Response(response) => match &response.result {
                Ok(result) => encode_result(out, &response.id, result.get().as_bytes()),
                Err(error) => encode_error(out, &response.id, error),
            },
        }
    }

    /// The message as one line of JSON, without the `\n`.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(128);
        self.encode(&mut out);
        out.pop();
        // Everything `encode` writes is valid UTF-8: escaped strings and raw
        // JSON that was itself validated as UTF-8.
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Shows the message as its JSON line.
impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

// ---------------------------------------------------------------------------
// Encoding. Messages are written by hand around serde_json so that a typed
// `params` goes straight into the output buffer.

const REQUEST_HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
const NOTIFICATION_HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":"#;

pub(crate) fn write_json_str(out: &mut Vec<u8>, s: &str) {
    // Serializing a str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write_request_head(out: &mut Vec<u8>, id: &RequestId, method: &str) {
    out.extend_from_slice(REQUEST_HEAD);
    id.write_json(out);
    out.extend_from_slice(br#","method":"#);
    write_json_str(out, method);
}

fn write_notification_head(out: &mut Vec<u8>, method: &str) {
    out.extend_from_slice(NOTIFICATION_HEAD);
    write_json_str(out, method);
}

fn write_raw_params(out: &mut Vec<u8>, params: Option<&RawValue>) {
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        out.extend_from_slice(params.get().as_bytes());
    }
}

/// Writes `,"params":…` unless `params` serializes to `null` (a unit,
/// `None`), which JSON-RPC spells by leaving the member out.
fn write_typed_params<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    params: &P,
) -> Result<(), serde_json::Error> {
    let member_start = out.len();
    out.extend_from_slice(br#","params":"#);
    let value_start = out.len();
    serde_json::to_writer(&mut *out, params)?;
    if &out[value_start..] == b"null" {
        out.truncate(member_start);
    }
    Ok(())
}

/// Closes the message begun at `start` and ends the line.
///
/// A newline inside the message can only come from raw JSON a caller
/// supplied (serde_json never writes one, and a JSON string cannot contain
/// one), where it is whitespace: it becomes a space, so that one message
/// stays one line.
fn end_line(out: &mut Vec<u8>, start: usize) {
    let message = &mut out[start..];
    if memchr::memchr(b'\n', message).is_some() {
        for byte in message.iter_mut().filter(|b| **b == b'\n') {
            *byte = b' ';
        }
    }
    out.extend_from_slice(b"}\n");
}

/// Appends a request line; on error `out` is left as it was.
pub(crate) fn encode_request<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: &str,
    params: &P,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    write_request_head(out, id, method);
    if let Err(error) = write_typed_params(out, params) {
        out.truncate(start);
        return Err(error);
    }
    end_line(out, start);
    Ok(())
}

pub(crate) fn encode_raw_request(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: &str,
    params: Option<&RawValue>,
) {
    let start = out.len();
    write_request_head(out, id, method);
    write_raw_params(out, params);
    end_line(out, start);
}

/// Appends a notification line; on error `out` is left as it was.
pub(crate) fn encode_notification<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    method: &str,
    params: &P,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    write_notification_head(out, method);
    if let Err(error) = write_typed_params(out, params) {
        out.truncate(start);
        return Err(error);
    }
    end_line(out, start);
    Ok(())
}

pub(crate) fn encode_raw_notification(out: &mut Vec<u8>, method: &str, params: Option<&RawValue>) {
    let start = out.len();
    write_notification_head(out, method);
    write_raw_params(out, params);
    end_line(out, start);
}

/// Appends a success response; on error `out` is left as it was.
pub(crate) fn encode_typed_result<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    result: &T,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    out.extend_from_slice(REQUEST_HEAD);
    id.write_json(out);
    out.extend_from_slice(br#","result":"#);
    if let Err(error) = serde_json::to_writer(&mut *out, result) {
        out.truncate(start);
        return Err(error);
    }
    end_line(out, start);
    Ok(())
}

pub(crate) fn encode_result(out: &mut Vec<u8>, id: &RequestId, result_json: &[u8]) {
    let start = out.len();
    out.extend_from_slice(REQUEST_HEAD);
    id.write_json(out);
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result_json);
    end_line(out, start);
}

pub(crate) fn encode_error(out: &mut Vec<u8>, id: &RequestId, error: &ResponseError) {
    let start = out.len();
    out.extend_from_slice(REQUEST_HEAD);
    id.write_json(out);
    out.extend_from_slice(br#","error":"#);
    // A ResponseError holds a number, a string and valid raw JSON; writing
    // it into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, error);
    end_line(out, start);
}

// ---------------------------------------------------------------------------
// Decoding.

/// What was wrong with a line that did not decode into a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The line does not even start like a JSON object (a log line printed
    /// on the wrong stream, say). Skipped without an answer.
    NotJson,
    /// The line is not valid UTF-8. Answered with `-32700`.
    InvalidUtf8,
    /// The line starts like a JSON object but is not valid JSON. Answered
    /// with `-32700`.
    InvalidJson,
    /// A JSON array: a batch, which this crate (like ACP) does not support.
    /// Answered with a single `-32600`.
    Batch,
    /// Valid JSON that is not an object (`42`, `"text"`). Answered with
    /// `-32600`.
    NotAnObject,
    /// An object with a `method` that is not a valid request (a method that
    /// is not a string, a bad id, a missing or wrong `"jsonrpc": "2.0"`,
    /// `result` or `error` beside the method, a repeated member), or an
    /// object with none of `method`, `result` and `error` but with a string
    /// or number `id`. Answered with `-32600`, echoing the id when the
    /// object has a method and its id could be read, `null` otherwise.
    InvalidRequest,
    /// An object shaped like a notification (a string method, no id) with a
    /// missing or wrong `"jsonrpc": "2.0"`, or a `method`, no id and a
    /// repeated member. Never answered: notifications never are.
    InvalidNotification,
    /// An object without `method` that is not a valid response: `result`
    /// or `error` with a missing or invalid id, both of them, a bad error
    /// object, a missing or wrong `"jsonrpc": "2.0"`, a repeated member; or
    /// neither of them and no string or number `id` (`{}`, `{"id": null}`).
    /// Never answered: answering a response can start two peers answering
    /// each other's answers forever. When a response's id could be read,
    /// [`DecodeError::response_id`] has it.
    InvalidResponse,
}

/// A line that is not a valid JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(Box<DecodeErrorInner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct DecodeErrorInner {
    kind: DecodeErrorKind,
    detail: String,
    reply: Option<Response>,
    response_id: Option<RequestId>,
}

impl DecodeError {
    /// What kind of problem this is.
    pub fn kind(&self) -> DecodeErrorKind {
        self.0.kind
    }

    /// A human-readable description of what is wrong.
    pub fn detail(&self) -> &str {
        &self.0.detail
    }

    /// The error response JSON-RPC prescribes for this line, or `None` when
    /// nothing should be sent back (notifications, non-JSON lines).
    pub fn reply(&self) -> Option<&Response> {
        self.0.reply.as_ref()
    }

    /// For a malformed response (`result` or `error` without `method`)
    /// whose id could still be read: that id, so the request waiting for it
    /// can be failed instead of waiting forever.
    pub fn response_id(&self) -> Option<&RequestId> {
        self.0.response_id.as_ref()
    }

    fn new(kind: DecodeErrorKind, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let reply_error = match kind {
            DecodeErrorKind::NotJson
            | DecodeErrorKind::InvalidNotification
            | DecodeErrorKind::InvalidResponse => None,
            DecodeErrorKind::InvalidUtf8 | DecodeErrorKind::InvalidJson => {
                Some(ResponseError::parse_error(&detail))
            }
            DecodeErrorKind::Batch
            | DecodeErrorKind::NotAnObject
            | DecodeErrorKind::InvalidRequest => Some(ResponseError::invalid_request(&detail)),
        };
        DecodeError(Box::new(DecodeErrorInner {
            kind,
            reply: reply_error.map(|error| Response::error(RequestId::null(), error)),
            detail,
            response_id: None,
        }))
    }

    /// Answers with `id` instead of `null`.
    fn replying_to(mut self, id: RequestId) -> Self {
        if let Some(reply) = &mut self.0.reply {
            reply.id = id;
        }
        self
    }

    fn for_response(mut self, id: RequestId) -> Self {
        self.0.response_id = Some(id);
        self
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.0.kind {
            DecodeErrorKind::NotJson => "line is not JSON",
            DecodeErrorKind::InvalidUtf8 => "line is not valid UTF-8",
            DecodeErrorKind::InvalidJson => "line is not valid JSON",
            DecodeErrorKind::Batch => "batches are not supported",
            DecodeErrorKind::NotAnObject => "message is not a JSON object",
            DecodeErrorKind::InvalidRequest => "invalid request",
            DecodeErrorKind::InvalidNotification => "invalid notification",
            DecodeErrorKind::InvalidResponse => "invalid response",
        };
        write!(f, "{what}: {}", self.0.detail)
    }
}

impl std::error::Error for DecodeError {}

/// Every member a message may have, each as raw JSON so that reading the
/// envelope never fails on a member's type; classification happens after.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default, deserialize_with = "present_member")]
    jsonrpc: Option<StrMember<'a>>,
    #[serde(borrow, default, deserialize_with = "present_borrowed")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present_member")]
    method: Option<StrMember<'a>>,
    #[serde(borrow, default, deserialize_with = "present_borrowed")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present_borrowed")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present_borrowed")]
    error: Option<&'a RawValue>,
}

/// A member that should be a string, decoded in the same pass as the
/// envelope (borrowed unless escaped); any other JSON value is accepted and
/// remembered only as "not a string", so that reading the envelope never
/// fails on it.
enum StrMember<'a> {
    Str(Cow<'a, str>),
    NotAString,
}

impl<'de> Deserialize<'de> for StrMember<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MemberVisitor;
        impl<'de> Visitor<'de> for MemberVisitor {
            type Value = StrMember<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(StrMember::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrMember::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(StrMember::Str(Cow::Owned(v)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(StrMember::NotAString)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(StrMember::NotAString)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(StrMember::NotAString)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(StrMember::NotAString)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(StrMember::NotAString)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(StrMember::NotAString)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(StrMember::NotAString)
            }
        }
        deserializer.deserialize_any(MemberVisitor)
    }
}

fn present_member<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<StrMember<'de>>, D::Error> {
    StrMember::deserialize(deserializer).map(Some)
}

/// `Some` whenever the member is present, `null` included; a plain
/// `Option` would turn `"id": null` into "no id".
fn present_borrowed<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

pub(crate) fn present_owned<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(deserializer).map(Some)
}

fn first_significant_byte(bytes: &[u8]) -> Option<u8> {
    bytes
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

fn is_valid_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

fn decode(line: &[u8]) -> Result<Message, DecodeError> {
    use DecodeErrorKind as Kind;

    let first = first_significant_byte(line);
    // serde_json does not check UTF-8 inside members it skips, so check the
    // whole line up front (fast for the ASCII that JSON mostly is).
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(error) if first == Some(b'{') => {
            return Err(DecodeError::new(Kind::InvalidUtf8, error.to_string()));
        }
        Err(_) => return Err(DecodeError::new(Kind::NotJson, "not valid UTF-8")),
    };
    match first {
        Some(b'{') => {}
        // A line opening with `[` may be a log line such as `[INFO] …`, so
        // only a valid array counts as a (refused) batch.
        Some(b'[') if is_valid_json(text) => {
            return Err(DecodeError::new(
                Kind::Batch,
                "batch requests are not supported",
            ));
        }
        _ if is_valid_json(text) => {
            return Err(DecodeError::new(
                Kind::NotAnObject,
                "a message must be a JSON object",
            ));
        }
        _ => return Err(DecodeError::new(Kind::NotJson, "not a JSON object")),
    }

    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(error) if error.is_data() => {
            // Valid JSON, but a member appears twice.
            return Err(classify_repeated(text, error.to_string()));
        }
        Err(error) => return Err(DecodeError::new(Kind::InvalidJson, error.to_string())),
    };
    classify(envelope)
}

fn version_problem(jsonrpc: Option<&StrMember<'_>>) -> Option<&'static str> {
    match jsonrpc {
        None => Some(r#"missing "jsonrpc": "2.0""#),
        // An escaped spelling of "2.0" is still "2.0": the string is decoded.
        Some(StrMember::Str(version)) if version == "2.0" => None,
        Some(_) => Some(r#""jsonrpc" must be "2.0""#),
    }
}

fn classify(envelope: Envelope<'_>) -> Result<Message, DecodeError> {
    use DecodeErrorKind as Kind;

    let version_problem = version_problem(envelope.jsonrpc.as_ref());
    if let Some(method) = envelope.method {
        let id = match envelope.id {
            None => None,
            Some(raw) => match RequestId::from_json_text(raw.get()) {
                Some(id) => Some(id),
                None => {
                    return Err(DecodeError::new(
                        Kind::InvalidRequest,
                        r#""id" must be a string, a number or null"#,
                    ));
                }
            },
        };
        let method: String = match method {
            StrMember::Str(method) => method.into_owned(),
            StrMember::NotAString => {
                let error = DecodeError::new(Kind::InvalidRequest, r#""method" must be a string"#);
                return Err(match id {
                    Some(id) => error.replying_to(id),
                    None => error,
                });
            }
        };
        if envelope.result.is_some() || envelope.error.is_some() {
            let error = DecodeError::new(
                Kind::InvalidRequest,
                r#"a message cannot have both "method" and "result" or "error""#,
            );
            return Err(match id {
                Some(id) => error.replying_to(id),
                None => error,
            });
        }
        let params = envelope.params.map(RawValue::to_owned);
        return match (id, version_problem) {
            (Some(id), None) => Ok(Message::Request(Request { id, method, params })),
            (None, None) => Ok(Message::Notification(Notification { method, params })),
            (Some(id), Some(problem)) => {
                Err(DecodeError::new(Kind::InvalidRequest, problem).replying_to(id))
            }
            (None, Some(problem)) => Err(DecodeError::new(
                Kind::InvalidNotification,
                format!("{problem} (method {method:?})"),
            )),
        };
    }

    if envelope.result.is_none() && envelope.error.is_none() {
        let id = envelope
            .id
            .and_then(|raw| RequestId::from_json_text(raw.get()));
        return Err(neither(
            id,
            r#"missing "method" (or "result"/"error" for a response)"#,
        ));
    }
    let Some(raw_id) = envelope.id else {
        return Err(DecodeError::new(
            Kind::InvalidResponse,
            r#"a response needs an "id""#,
        ));
    };
    let Some(id) = RequestId::from_json_text(raw_id.get()) else {
        return Err(DecodeError::new(
            Kind::InvalidResponse,
            r#""id" must be a string, a number or null"#,
        ));
    };
    let invalid =
        |detail: String| DecodeError::new(Kind::InvalidResponse, detail).for_response(id.clone());
    if let Some(problem) = version_problem {
        return Err(invalid(problem.to_owned()));
    }
    let result = match (envelope.result, envelope.error) {
        (Some(result), None) => Ok(result.to_owned()),
        (None, Some(error)) => match serde_json::from_str::<ResponseError>(error.get()) {
            Ok(error) => Err(error),
            Err(decode_error) => {
                return Err(invalid(format!(
                    r#"invalid "error" object: {decode_error}"#
                )));
            }
        },
        _ => {
            return Err(invalid(
                r#"a response must have exactly one of "result" and "error""#.to_owned(),
            ));
        }
    };
    Ok(Message::Response(Response { id, result }))
}

/// An object with none of `method`, `result` and `error`: a request that
/// lost its method, or a response that lost its result (JavaScript's
/// `JSON.stringify` drops `result: undefined`). Answered, with id `null`,
/// only when it has a string or number id, as a request would: echoing that
/// id could fail a request of the peer's own with the same id, and without
/// one nobody waits for the answer, while answering `{"id": null}` is how
/// two peers end up answering each other forever.
fn neither(id: Option<RequestId>, detail: impl Into<String>) -> DecodeError {
    match id {
        Some(id) if !id.is_null() => DecodeError::new(DecodeErrorKind::InvalidRequest, detail),
        _ => DecodeError::new(DecodeErrorKind::InvalidResponse, detail),
    }
}

/// Classifies an object with a repeated member, which the envelope refuses
/// to read, by reading which members it has: a request-shaped one is
/// answered (with its id when it has exactly one, readable), a
/// notification- or response-shaped one is not.
fn classify_repeated(text: &str, detail: String) -> DecodeError {
    use DecodeErrorKind as Kind;

    let Ok(members) = serde_json::from_str::<Members<'_>>(text) else {
        // Unreachable: `text` is a valid JSON object.
        return DecodeError::new(Kind::InvalidRequest, detail);
    };
    let id = match members.id {
        Some(raw) if members.ids == 1 => RequestId::from_json_text(raw.get()),
        _ => None,
    };
    if members.method {
        if members.ids == 0 {
            return DecodeError::new(Kind::InvalidNotification, detail);
        }
        let error = DecodeError::new(Kind::InvalidRequest, detail);
        return match id {
            Some(id) => error.replying_to(id),
            None => error,
        };
    }
    if members.answer {
        let error = DecodeError::new(Kind::InvalidResponse, detail);
        return match id {
            Some(id) => error.for_response(id),
            None => error,
        };
    }
    neither(id, detail)
}

/// Which of the members that decide how a message is answered an object
/// has, read without refusing repeated ones.
#[derive(Default)]
struct Members<'a> {
    method: bool,
    /// `result` or `error`.
    answer: bool,
    /// How many times `id` appears, and the last one.
    ids: usize,
    id: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Members::default();
                while let Some(key) = map.next_key::<StrMember<'de>>()? {
                    let key = match &key {
                        StrMember::Str(key) => key.as_ref(),
                        StrMember::NotAString => "",
                    };
                    match key {
                        "id" => {
                            members.ids += 1;
                            members.id = Some(map.next_value::<&'de RawValue>()?);
                            continue;
                        }
                        "method" => members.method = true,
                        "result" | "error" => members.answer = true,
                        _ => {}
                    }
                    map.next_value::<IgnoredAny>()?;
                }
                Ok(members)
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(line: &str) -> Message {
        Message::from_slice(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn kind(line: &[u8]) -> DecodeErrorKind {
        Message::from_slice(line).unwrap_err().kind()
    }

    #[test]
    fn absent_and_null_id_differ() {
        assert!(matches!(
            decoded(r#"{"jsonrpc":"2.0","method":"m"}"#),
            Message::Notification(_)
        ));
        let Message::Request(request) = decoded(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#)
        else {
            panic!()
        };
        assert!(request.id.is_null());
    }

    #[test]
    fn null_result_is_a_result() {
        let Message::Response(response) = decoded(r#"{"jsonrpc":"2.0","id":1,"result":null}"#)
        else {
            panic!()
        };
        assert_eq!(response.result.unwrap().get(), "null");
    }

    #[test]
    fn typed_params_that_are_null_are_left_out() {
        let mut out = Vec::new();
        encode_notification(&mut out, "m", &()).unwrap();
        assert_eq!(out, b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n");
        out.clear();
        encode_request(&mut out, &RequestId::from(1), "m", &Some(1)).unwrap();
        assert_eq!(
            out,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":1}\n"
        );
    }

    #[test]
    fn failed_serialization_leaves_buffer_unchanged() {
        let mut map = std::collections::HashMap::new();
        map.insert(vec![1u8], 2);
        let mut out = b"keep".to_vec();
        assert!(encode_notification(&mut out, "m", &map).is_err());
        assert!(encode_request(&mut out, &RequestId::from(1), "m", &map).is_err());
        assert!(encode_typed_result(&mut out, &RequestId::from(1), &map).is_err());
        assert_eq!(out, b"keep");
    }

    #[test]
    fn classification() {
        use DecodeErrorKind as K;
        assert_eq!(kind(b"hello world"), K::NotJson);
        assert_eq!(kind(b"[INFO] starting"), K::NotJson);
        assert_eq!(kind(b"\xff\xfe"), K::NotJson);
        assert_eq!(
            kind(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}"),
            K::InvalidUtf8
        );
        assert_eq!(kind(b"{\"jsonrpc\":"), K::InvalidJson);
        assert_eq!(kind(b"[1,2]"), K::Batch);
        assert_eq!(kind(b"42"), K::NotAnObject);
        assert_eq!(kind(br#"{"jsonrpc":"2.0"}"#), K::InvalidResponse);
        assert_eq!(kind(br#"{"jsonrpc":"2.0","id":3}"#), K::InvalidRequest);
        assert_eq!(
            kind(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#),
            K::InvalidRequest
        );
        assert_eq!(
            kind(br#"{"jsonrpc":"1.0","id":1,"method":"m"}"#),
            K::InvalidRequest
        );
        assert_eq!(
            kind(br#"{"jsonrpc":"1.0","method":"m"}"#),
            K::InvalidNotification
        );
        assert_eq!(kind(br#"{"method":"m"}"#), K::InvalidNotification);
        assert_eq!(
            kind(br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}"#),
            K::InvalidResponse
        );
        assert_eq!(kind(br#"{"jsonrpc":"2.0","result":1}"#), K::InvalidResponse);
        assert_eq!(
            kind(br#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#),
            K::InvalidResponse
        );
        assert!(matches!(
            decoded(r#"{"jsonrpc":"2\u002e0","method":"m"}"#),
            Message::Notification(_)
        ));
    }

    #[test]
    fn version_and_method_of_any_json_type_are_classified_not_rejected() {
        use DecodeErrorKind as K;
        for version in [r#"2"#, r#"null"#, r#"{"v":"2.0"}"#, r#"["2.0"]"#, r#"true"#] {
            let line = format!(r#"{{"jsonrpc":{version},"id":1,"method":"m"}}"#);
            assert_eq!(kind(line.as_bytes()), K::InvalidRequest, "{line}");
        }
        for method in [
            r#"7"#,
            r#"null"#,
            r#"{"a":[1,{"b":2}]}"#,
            r#"[[]]"#,
            r#"1.5"#,
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":"x","method":{method}}}"#);
            let error = Message::from_slice(line.as_bytes()).unwrap_err();
            assert_eq!(error.kind(), K::InvalidRequest, "{line}");
            assert_eq!(error.reply().unwrap().id, RequestId::from("x"), "{line}");
        }
        match decoded(r#"{"jsonrpc":"2.0","method":"pi\u006eg","params":[1]}"#) {
            Message::Notification(notification) => assert_eq!(notification.method, "ping"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn answers_echo_the_id_only_for_requests() {
        let error = Message::from_slice(br#"{"jsonrpc":"1.0","id":"a","method":"m"}"#).unwrap_err();
        assert_eq!(error.reply().unwrap().id, RequestId::from("a"));
        let error = Message::from_slice(br#"{"id":9,"result":1}"#).unwrap_err();
        assert!(error.reply().is_none());
        assert_eq!(error.response_id(), Some(&RequestId::from(9)));
        let error = Message::from_slice(br#"{"jsonrpc":"2.0","method":"m"}  x"#).unwrap_err();
        assert_eq!(error.kind(), DecodeErrorKind::InvalidJson);
    }

    /// Never answered: the kind, and the id of a request of ours it fails.
    fn unanswered(line: &str, kind: DecodeErrorKind, response_id: Option<RequestId>) {
        let error = Message::from_slice(line.as_bytes()).unwrap_err();
        assert_eq!(error.kind(), kind, "{line}");
        assert_eq!(error.reply(), None, "{line}");
        assert_eq!(error.response_id(), response_id.as_ref(), "{line}");
    }

    /// Answered with `-32600` and `id`.
    fn refused(line: &str, id: RequestId) {
        let error = Message::from_slice(line.as_bytes()).unwrap_err();
        assert_eq!(error.kind(), DecodeErrorKind::InvalidRequest, "{line}");
        let reply = error.reply().expect(line);
        assert_eq!(reply.id, id, "{line}");
        let code = reply.result.as_ref().unwrap_err().code;
        assert_eq!(code, crate::ErrorCode::INVALID_REQUEST, "{line}");
        assert_eq!(error.response_id(), None, "{line}");
    }

    #[test]
    fn malformed_responses_are_never_answered() {
        use DecodeErrorKind::InvalidResponse as R;
        let null = RequestId::null;
        unanswered(
            r#"{"jsonrpc":"2.0","error":{"code":-1,"message":"x"}}"#,
            R,
            None,
        );
        unanswered(r#"{"jsonrpc":"2.0","result":1}"#, R, None);
        unanswered(r#"{"jsonrpc":"2.0","id":[1],"result":1}"#, R, None);
        let both = r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}"#;
        unanswered(both, R, Some(1.into()));
        let both = r#"{"jsonrpc":"2.0","id":null,"result":1,"error":{"code":1,"message":"x"}}"#;
        unanswered(both, R, Some(null()));
        unanswered(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":"x"}}"#,
            R,
            Some(2.into()),
        );
        unanswered(r#"{"id":3,"result":1}"#, R, Some(3.into()));
        unanswered(
            r#"{"jsonrpc":"2.0","id":4,"result":1,"result":2}"#,
            R,
            Some(4.into()),
        );
        unanswered(r#"{"jsonrpc":"2.0","id":4,"id":5,"result":1}"#, R, None);
    }

    #[test]
    fn objects_without_method_result_or_error_are_answered_only_with_a_usable_id() {
        use DecodeErrorKind::InvalidResponse as R;
        unanswered(r#"{}"#, R, None);
        unanswered(r#"{"foo":"boo"}"#, R, None);
        unanswered(r#"{"jsonrpc":"2.0","id":null}"#, R, None);
        unanswered(r#"{"jsonrpc":"2.0","id":{"x":1}}"#, R, None);
        unanswered(
            r#"{"jsonrpc":"2.0","id":null,"params":1,"params":2}"#,
            R,
            None,
        );
        refused(r#"{"jsonrpc":"2.0","id":6}"#, RequestId::null());
        refused(
            r#"{"jsonrpc":"2.0","id":"s","params":{}}"#,
            RequestId::null(),
        );
        refused(
            r#"{"jsonrpc":"2.0","id":7,"params":1,"params":2}"#,
            RequestId::null(),
        );
    }

    #[test]
    fn repeated_members_are_answered_only_in_requests() {
        use DecodeErrorKind::InvalidNotification as N;
        refused(
            r#"{"jsonrpc":"2.0","id":8,"method":"m","params":1,"params":2}"#,
            8.into(),
        );
        refused(
            r#"{"jsonrpc":"2.0","id":8,"id":9,"method":"m"}"#,
            RequestId::null(),
        );
        unanswered(
            r#"{"jsonrpc":"2.0","method":"m","params":1,"params":2}"#,
            N,
            None,
        );
        unanswered(r#"{"jsonrpc":"2.0","method":"m","method":"n"}"#, N, None);
    }
}
