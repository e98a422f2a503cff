//! Streamable HTTP's words that both sides use: the headers that name a connection, a
//! session and a resumed stream, the refusal a client recognises to reconnect elsewhere, and
//! the parts of a message that routing reads ([`Peek`]).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// The header naming a connection: on every Streamable HTTP request after `initialize`, and
/// on the 101 answer that opens a WebSocket.
pub(crate) const CONNECTION_ID: &str = "Acp-Connection-Id";
/// The header naming a session.
pub(crate) const SESSION_ID: &str = "Acp-Session-Id";
/// The header of a GET that resumes a stream after the event it names.
pub(crate) const LAST_EVENT_ID: &str = "Last-Event-ID";

/// The 404's text for a connection id that names another instance.
pub(crate) const OTHER_INSTANCE: &str = "unknown Acp-Connection-Id: it names another instance";

/// The parts of a JSON-RPC message that routing looks at, without decoding the rest.
#[derive(Deserialize)]
pub(crate) struct Peek<'a> {
    #[serde(borrow, default)]
    pub(crate) jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) result: Option<&'a RawValue>,
}

impl Peek<'_> {
    pub(crate) fn id_key(&self) -> Option<String> {
        self.id.map(|id| id.get().trim().to_owned())
    }

    pub(crate) fn is_jsonrpc(&self) -> bool {
        self.jsonrpc.as_deref() == Some("2.0")
    }

    pub(crate) fn is_initialize(&self) -> bool {
        self.method.as_deref() == Some("initialize") && self.id.is_some()
    }
}

/// `sessionId` of an object, if it is one and has a string there.
pub(crate) fn session_of(raw: Option<&RawValue>) -> Option<String> {
    #[derive(Deserialize)]
    struct Session {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    serde_json::from_str::<Session>(raw?.get()).ok()?.session_id
}
