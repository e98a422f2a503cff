//! The `proxy/successor` envelope on the wire: reading one without copying its params (the
//! message scan of acp-jsonrpc, serde_json only for what the scan leaves to it; on the
//! forwarding path, what acp-jsonrpc's forwarding scan found, unread), and splicing one around
//! a message. Shared by the proxy role and the conductor.

use std::borrow::Cow;

use acp_jsonrpc::json::UncheckedJson;
use acp_jsonrpc::{IncomingRequest, RawNotification, RawRequest, ResponseError};
use serde::Deserialize;
use serde_json::value::RawValue;

/// `proxy/initialize`: `initialize`, sent by a conductor to a component that has a successor.
pub(crate) const PROXY_INITIALIZE: &str = "proxy/initialize";
/// `proxy/successor`: the envelope between a proxy and its conductor.
pub(crate) const PROXY_SUCCESSOR: &str = "proxy/successor";
/// `initialize`.
pub(crate) const INITIALIZE: &str = "initialize";

/// A received envelope. Its own `_meta` is hop-local and ignored, and so are members a
/// newer schema may add; the wrapped params stay raw.
#[derive(Debug, Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(borrow)]
    pub(crate) method: Cow<'a, str>,
    /// `None` when absent or `null`: the schema makes the two equivalent.
    #[serde(borrow, default)]
    pub(crate) params: Option<&'a RawValue>,
}

/// Reads the envelope in `params`; a malformed one is `-32602`, a nested one `-32600`
/// ([`crate::rules::nested_envelope`]).
pub(crate) fn open(params: Option<&RawValue>) -> Result<Envelope<'_>, ResponseError> {
    let raw = params.map_or("null", RawValue::get);
    // Already validated with the line: found by the forwarding path's walk, not read again.
    let envelope = match params.and_then(acp_jsonrpc::json::carried_message) {
        // What serde_json reads too: a present `null` is no params, other members are ignored.
        Some((method, params)) => Envelope {
            method: Cow::Borrowed(method),
            params: params.filter(|params| params.get() != "null"),
        },
        // Missing or escaped `method`, repeated members, not an object: serde_json reads it
        // and words the error.
        None => read_with_serde(raw)?,
    };
    if envelope.method == PROXY_SUCCESSOR {
        return Err(crate::rules::nested_envelope());
    }
    Ok(envelope)
}

/// The message a `proxy/successor` notification carries, as the forwarding path found it
/// (its params unread): the method, and the params (`null` ones are none, as [`open`] reads
/// them). `None` wherever [`open`] must decide (no carried message the scan could read, a
/// nested envelope): the notification then goes the handler's way, which opens it and reports
/// what is wrong.
pub(crate) fn open_forwarded<'a>(
    notification: &RawNotification<'a>,
) -> Option<(&'a str, Option<UncheckedJson<'a>>)> {
    let carried = notification.carried()?;
    if carried.method() == PROXY_SUCCESSOR {
        return None;
    }
    let params = carried.params().filter(|params| !params.is_null());
    Some((carried.method(), params))
}

/// The message a `proxy/successor` request carries, as the connection handed it over: for a
/// request taken unread ([`IncomingRequest::is_unread`]), as [`open_forwarded`] finds it
/// (the router took it only if found); otherwise as [`open`] reads it. Its params unread
/// either way, `null` ones none.
pub(crate) fn open_request(
    request: &IncomingRequest,
) -> Result<(Cow<'_, str>, Option<UncheckedJson<'_>>), ResponseError> {
    if !request.is_unread() {
        let envelope = open(request.raw_params())?;
        return Ok((envelope.method, envelope.params.map(Into::into)));
    }
    let carried = request.carried().ok_or_else(|| {
        ResponseError::invalid_params(format_args!("a `{PROXY_SUCCESSOR}` envelope"))
    })?;
    if carried.method() == PROXY_SUCCESSOR {
        return Err(crate::rules::nested_envelope());
    }
    let params = carried.params().filter(|params| !params.is_null());
    Ok((Cow::Borrowed(carried.method()), params))
}

/// The message a `proxy/successor` request taken unread carries: its carried message as the
/// forwarding scan found it, unless it is itself an envelope; `None` otherwise, and the request
/// is not taken unread ([`open_request`] then reads it as [`open`] would, and [`open`] words
/// the error). Its params `null` ones none, as [`open_request`] has them.
pub(crate) fn open_unread<'a>(
    request: &RawRequest<'a>,
) -> Option<(&'a str, Option<UncheckedJson<'a>>)> {
    let carried = request.carried()?;
    if carried.method() == PROXY_SUCCESSOR {
        return None;
    }
    let params = carried.params().filter(|params| !params.is_null());
    Some((carried.method(), params))
}

fn read_with_serde(raw: &str) -> Result<Envelope<'_>, ResponseError> {
    serde_json::from_str(raw).map_err(|error| {
        ResponseError::invalid_params(format_args!("a `{PROXY_SUCCESSOR}` envelope: {error}"))
    })
}

/// The params of a `proxy/successor` carrying `method` with `params`, spliced.
pub(crate) fn wrap(method: &str, params: Option<&RawValue>) -> Box<RawValue> {
    acp_jsonrpc::json::inner_message(method, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_and_opens_without_changing_the_params() {
        let params = RawValue::from_string(r#"{"sessionId":"s","x":[1, 2]}"#.into()).unwrap();
        let wrapped = wrap("session/prompt", Some(&params));
        assert_eq!(
            wrapped.get(),
            r#"{"method":"session/prompt","params":{"sessionId":"s","x":[1, 2]}}"#
        );
        let opened = open(Some(&wrapped)).unwrap();
        assert_eq!(opened.method, "session/prompt");
        assert_eq!(opened.params.unwrap().get(), params.get());
    }

    #[test]
    fn absent_and_null_params_are_the_same_and_meta_is_dropped() {
        let a = RawValue::from_string(r#"{"method":"m"}"#.into()).unwrap();
        let b = RawValue::from_string(r#"{"method":"m","params":null,"_meta":{"k":1}}"#.into())
            .unwrap();
        assert!(open(Some(&a)).unwrap().params.is_none());
        assert!(open(Some(&b)).unwrap().params.is_none());
        assert_eq!(wrap("m", None).get(), r#"{"method":"m"}"#);
    }

    #[test]
    fn what_the_scan_leaves_to_serde_reads_as_serde_reads_it() {
        // An escaped method: decoded.
        let escaped =
            RawValue::from_string(r#"{"method":"session\/update","params":[1]}"#.into()).unwrap();
        let opened = open(Some(&escaped)).unwrap();
        assert_eq!(
            (&*opened.method, opened.params.unwrap().get()),
            ("session/update", "[1]")
        );
        // A repeated member: serde_json's error.
        let twice = RawValue::from_string(r#"{"method":"a","method":"b"}"#.into()).unwrap();
        assert_eq!(open(Some(&twice)).unwrap_err().code.0, -32602);
        // An escaped nested envelope is still nested.
        let nested = RawValue::from_string(r#"{"method":"proxy\/successor"}"#.into()).unwrap();
        assert_eq!(open(Some(&nested)).unwrap_err().code.0, -32600);
    }

    #[test]
    fn nested_and_malformed_envelopes_are_refused() {
        let nested = RawValue::from_string(r#"{"method":"proxy/successor"}"#.into()).unwrap();
        assert_eq!(open(Some(&nested)).unwrap_err().code.0, -32600);
        let bad = RawValue::from_string(r#"{"params":{}}"#.into()).unwrap();
        assert_eq!(open(Some(&bad)).unwrap_err().code.0, -32602);
        assert_eq!(open(None).unwrap_err().code.0, -32602);
    }
}
