//! What the agent and client dispatchers share for answering the peer.

use acp_jsonrpc::Responder;
use serde_json::value::RawValue;

use crate::error::Result;

/// A handler's answer, serialized once, straight into the response frame when it is sent.
pub(crate) type Reply = Box<dyn FnOnce(Responder) + Send>;

/// Answers with `value`.
pub(crate) fn raw<T: serde::Serialize + Send + 'static>(value: T) -> Result<Reply> {
    Ok(Box::new(move |responder: Responder| {
        responder.respond_ok(&value)
    }))
}

/// Answers with JSON that is already serialized (extension methods).
pub(crate) fn raw_json(value: Box<RawValue>) -> Result<Reply> {
    Ok(Box::new(move |responder: Responder| {
        responder.respond_raw(Ok(&value))
    }))
}
