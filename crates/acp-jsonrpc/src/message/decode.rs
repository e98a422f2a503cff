//! How a line becomes a [`Message`]: the envelope is read in one pass (strings borrowed, params
//! and results kept raw), then classified; what does not classify is a [`DecodeError`] that
//! says whether and how the connection answers it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::{Message, Notification, Request, Response};
use crate::json::{self, present_borrowed};
use crate::{RequestId, ResponseError};

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

    /// A line that is not valid JSON is answered with `-32700`, unless it starts as a
    /// response to one of our requests (`{"jsonrpc":"2.0","id":N,"result":` or `"error":`):
    /// a result a router forwarded unread reaches the peer that decodes it this way, and
    /// responses are never answered; the request waiting for `N` fails instead of waiting
    /// forever (docs/limits.md, "What a router forwards unread").
    ///
    /// One that starts as a request (`{"jsonrpc":"2.0","id":N,"method":"`) is answered under
    /// `N` rather than `null`: params a router forwarded unread reach the peer that decodes them
    /// this way, and the router hands the answer back to whoever asked.
    fn answered_as_its_head_says(self, line: &[u8]) -> Self {
        if let Some(id) = json::malformed_request_id(line) {
            return self.replying_to(RequestId::from(id));
        }
        match json::malformed_response_id(line) {
            Some(id) => {
                let mut error = self.for_response(RequestId::from(id));
                error.0.reply = None;
                error
            }
            None => self,
        }
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

fn is_valid_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

pub(super) fn decode(line: &[u8]) -> Result<Message, DecodeError> {
    use DecodeErrorKind as Kind;

    let first = line.get(json::skip_ws(line, 0)).copied();
    // serde_json does not check UTF-8 inside members it skips, so check the
    // whole line up front (fast for the ASCII that JSON mostly is).
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(error) if first == Some(b'{') => {
            let error = DecodeError::new(Kind::InvalidUtf8, error.to_string());
            return Err(error.answered_as_its_head_says(line));
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

    if let Some(envelope) = json::members(text).and_then(scanned) {
        return classify(envelope);
    }
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(error) if error.is_data() => {
            // Valid JSON, but a member appears twice.
            return Err(classify_repeated(text, error.to_string()));
        }
        Err(error) => {
            let error = DecodeError::new(Kind::InvalidJson, error.to_string());
            return Err(error.answered_as_its_head_says(line));
        }
    };
    classify(envelope)
}

/// The envelope serde_json would read, from the scan's members; `None` where the scan's
/// text is not what serde_json would hand over (an escaped `jsonrpc` or `method`, which it
/// decodes).
fn scanned<'a>(members: json::Members<'a>) -> Option<Envelope<'a>> {
    let string_member = |raw: Option<&'a str>| match raw {
        None => Some(None),
        Some(raw) if raw.starts_with('"') => {
            json::plain_string(raw).map(|text| Some(StrMember::Str(Cow::Borrowed(text))))
        }
        Some(_) => Some(Some(StrMember::NotAString)),
    };
    let raw_member = |raw: Option<&'a str>| match raw {
        None => Some(None),
        Some(raw) => json::borrowed_raw(raw).map(Some),
    };
    Some(Envelope {
        jsonrpc: string_member(members.jsonrpc)?,
        id: raw_member(members.id)?,
        method: string_member(members.method)?,
        params: raw_member(members.params)?,
        result: raw_member(members.result)?,
        error: raw_member(members.error)?,
    })
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
