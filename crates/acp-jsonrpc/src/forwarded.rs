//! The answer to a request a router forwards: the result as the next hop sent it, read only
//! as far as its envelope, and handed to the responder that splices it into its own answer.

use serde_json::value::RawValue;

use crate::RequestError;
use crate::json::UncheckedJson;

/// What reaches a request waiting for its response: a result the line's validating decode
/// read, or one the forwarding scan only delimited (for requests sent with
/// [`ConnectionHandle::send_request_forwarded`](crate::ConnectionHandle::send_request_forwarded)).
#[derive(Debug)]
pub(crate) enum Answer {
    Checked(Box<RawValue>),
    /// Copied from one line, unread: may be anything the peer wrote between its delimiters.
    Unread(Box<[u8]>),
}

impl Answer {
    /// The result as valid JSON, for a request that reads it: an unread result is checked
    /// here (only a request of our own reaches this, when its answer came in the forwarding
    /// scan's spelling before it could be told apart).
    pub(crate) fn into_checked(self) -> Result<Box<RawValue>, RequestError> {
        match self {
            Answer::Checked(raw) => Ok(raw),
            Answer::Unread(bytes) => String::from_utf8(bytes.into_vec())
                .map_err(|error| error.to_string())
                .and_then(|text| RawValue::from_string(text).map_err(|error| error.to_string()))
                .map_err(|detail| {
                    RequestError::MalformedResponse(format!(
                        "the result is not valid JSON: {detail}"
                    ))
                }),
        }
    }
}

/// The result of a forwarded request, as the next hop answered it: a router answers its own
/// request with it ([`Responder::respond_forwarded`](crate::Responder::respond_forwarded))
/// without reading it. When the connection's handler forwards
/// ([`Handler::FORWARDS`](crate::Handler::FORWARDS)) and the response came in the usual
/// spelling, the result was not checked for valid JSON or UTF-8: the peer that finally decodes
/// it answers for it (docs/limits.md, "What a router forwards unread").
///
/// ```
/// use acp_jsonrpc::ForwardedResult;
/// use serde_json::value::RawValue;
///
/// let result = ForwardedResult::from(RawValue::from_string(r#"{"ok":true}"#.to_owned()).unwrap());
/// assert_eq!(result.as_unchecked().as_bytes(), br#"{"ok":true}"#);
/// assert_eq!(result.len(), 11);
/// ```
#[derive(Debug)]
pub struct ForwardedResult(pub(crate) Answer);

impl ForwardedResult {
    /// The result's bytes, as the next hop wrote them.
    pub fn as_unchecked(&self) -> UncheckedJson<'_> {
        match &self.0 {
            Answer::Checked(raw) => UncheckedJson::from(&**raw),
            Answer::Unread(bytes) => UncheckedJson::on_line(bytes),
        }
    }

    /// The length of the result in bytes (what answering with it adds to the reply budget).
    pub fn len(&self) -> usize {
        self.as_unchecked().as_bytes().len()
    }

    /// Whether the result is empty (never, for a result that came in a response).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The result as valid JSON, for a router that must read it after all (an `initialize`
    /// answer): [`RequestError::MalformedResponse`] if it is not.
    pub fn into_checked(self) -> Result<Box<RawValue>, RequestError> {
        self.0.into_checked()
    }
}

impl From<Box<RawValue>> for ForwardedResult {
    fn from(raw: Box<RawValue>) -> Self {
        ForwardedResult(Answer::Checked(raw))
    }
}
