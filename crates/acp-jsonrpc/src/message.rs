//! The three kinds of JSON-RPC message, how a line becomes one, and how one
//! becomes a line.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::json::{self, UncheckedJson};
use crate::{RequestId, ResponseError};

mod decode;

use decode::decode;
pub use decode::{DecodeError, DecodeErrorKind};

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
            Message::Request(request) => encode_raw_request(
                out,
                &request.id,
                &request.method,
                request.params.as_deref().map(UncheckedJson::from),
            ),
            Message::Notification(notification) => encode_raw_notification(
                out,
                &notification.method,
                notification.params.as_deref().map(UncheckedJson::from),
            ),
            Message::Response(response) => match &response.result {
                Ok(result) => encode_result(out, &response.id, (&**result).into()),
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

fn write_request_head(out: &mut Vec<u8>, id: &RequestId, method: &str) {
    out.extend_from_slice(REQUEST_HEAD);
    id.write_json(out);
    out.extend_from_slice(br#","method":"#);
    json::write_str(out, method);
}

fn write_notification_head(out: &mut Vec<u8>, method: &str) {
    out.extend_from_slice(NOTIFICATION_HEAD);
    json::write_str(out, method);
}

fn write_raw_params(out: &mut Vec<u8>, params: Option<UncheckedJson<'_>>) {
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        out.extend_from_slice(params.as_bytes());
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
    json::write(out, params)?;
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
    params: Option<UncheckedJson<'_>>,
) {
    let start = out.len();
    write_request_head(out, id, method);
    write_raw_params(out, params);
    end_line_around(out, start, params);
}

/// Appends the request `outer` whose params carry the message `inner` with `params`
/// (`{"method":inner,"params":…}`), spliced in one pass: the request counterpart of
/// [`encode_wrapped_notification`].
pub(crate) fn encode_wrapped_request(
    out: &mut Vec<u8>,
    id: &RequestId,
    outer: &str,
    inner: &str,
    params: Option<UncheckedJson<'_>>,
) {
    let start = out.len();
    write_request_head(out, id, outer);
    out.extend_from_slice(br#","params":"#);
    json::write_inner_message(out, inner, params);
    end_line_around(out, start, params);
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

pub(crate) fn encode_raw_notification(
    out: &mut Vec<u8>,
    method: &str,
    params: Option<UncheckedJson<'_>>,
) {
    if let Some(span) = params.and_then(|params| params.after_method(method)) {
        // The method and params as the line they came from spelled them, one copy.
        out.reserve(NOTIFICATION_HEAD.len() + span.len() + 3);
        out.extend_from_slice(NOTIFICATION_HEAD);
        out.push(b'"');
        out.extend_from_slice(span);
        out.extend_from_slice(b"}\n");
        return;
    }
    let start = out.len();
    write_notification_head(out, method);
    write_raw_params(out, params);
    end_line_around(out, start, params);
}

/// [`end_line`], without its search for newlines when the only text not written here (the
/// method is escaped) is params found on one line.
fn end_line_around(out: &mut Vec<u8>, start: usize, params: Option<UncheckedJson<'_>>) {
    if params.is_none_or(|params| params.is_one_line()) {
        out.extend_from_slice(b"}\n");
    } else {
        end_line(out, start);
    }
}

/// Appends the notification `outer` whose params carry the message `inner` with `params`
/// (`{"method":inner,"params":…}`, as ACP's `proxy/successor` does), spliced in one pass:
/// the same line as `encode_raw_notification(out, outer, Some(&inner_message(inner, params)))`
/// without the intermediate copy.
pub(crate) fn encode_wrapped_notification(
    out: &mut Vec<u8>,
    outer: &str,
    inner: &str,
    params: Option<UncheckedJson<'_>>,
) {
    if let Some(span) = params.and_then(|params| params.after_method(inner))
        && json::short_and_plain(outer.as_bytes())
    {
        // The inner method and its params as the line they came from spelled them, after an
        // outer method (a router's constant) that needs no escape: five copies in one
        // reservation, where the writer would reserve for each.
        const INNER_HEAD: &[u8] = br#"","params":{"method":""#;
        out.reserve(NOTIFICATION_HEAD.len() + outer.len() + INNER_HEAD.len() + span.len() + 4);
        out.extend_from_slice(NOTIFICATION_HEAD);
        out.push(b'"');
        out.extend_from_slice(outer.as_bytes());
        out.extend_from_slice(INNER_HEAD);
        out.extend_from_slice(span);
        out.extend_from_slice(b"}}\n");
        return;
    }
    let start = out.len();
    write_notification_head(out, outer);
    out.extend_from_slice(br#","params":"#);
    json::write_inner_message(out, inner, params);
    end_line_around(out, start, params);
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
    if let Err(error) = json::write(out, result) {
        out.truncate(start);
        return Err(error);
    }
    end_line(out, start);
    Ok(())
}

pub(crate) fn encode_result(out: &mut Vec<u8>, id: &RequestId, result: UncheckedJson<'_>) {
    let start = out.len();
    out.extend_from_slice(REQUEST_HEAD);
    id.write_json(out);
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result.as_bytes());
    // An id is written without a newline, so only the result may hold one.
    end_line_around(out, start, Some(result));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A forwarded notification's method and params written as one span of the line they came
    /// from: the same line as the method escaped and the params copied apart, wrapped or not,
    /// for any outer method; a method the span does not start with is written as asked.
    #[test]
    fn spliced_spans_write_what_the_writer_writes() {
        let line = br#"session/update","params":{"t":"a\"]}"}"#;
        let params = UncheckedJson::on_line_after_method(line, "session/update".len());
        let raw = RawValue::from_string(r#"{"t":"a\"]}"}"#.to_owned()).unwrap();
        let copy = String::from("session/update");
        for method in ["session/update", copy.as_str(), "session/other", "é\"x"] {
            let (mut spliced, mut written) = (Vec::new(), Vec::new());
            encode_raw_notification(&mut spliced, method, Some(params));
            encode_raw_notification(&mut written, method, Some(UncheckedJson::from(&*raw)));
            assert_eq!(spliced, written, "{method}");
            for outer in ["proxy/successor", "a\"b", "é", ""] {
                let (mut spliced, mut written) = (Vec::new(), Vec::new());
                encode_wrapped_notification(&mut spliced, outer, method, Some(params));
                let inner = json::inner_message(method, Some(&raw));
                encode_raw_notification(&mut written, outer, Some(UncheckedJson::from(&*inner)));
                assert_eq!(spliced, written, "{outer} {method}");
            }
        }
    }

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
