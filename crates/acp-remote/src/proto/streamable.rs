//! Streamable HTTP's words that both sides use: the headers that name a connection, a
//! session and a resumed stream, and the refusal a client recognises to reconnect elsewhere.

/// The header naming a Streamable HTTP connection.
pub(crate) const CONNECTION_ID: &str = "Acp-Connection-Id";
/// The header naming a session.
pub(crate) const SESSION_ID: &str = "Acp-Session-Id";
/// The header of a GET that resumes a stream after the event it names.
pub(crate) const LAST_EVENT_ID: &str = "Last-Event-ID";

/// The 404's text for a connection id that names another instance.
pub(crate) const OTHER_INSTANCE: &str = "unknown Acp-Connection-Id: it names another instance";
