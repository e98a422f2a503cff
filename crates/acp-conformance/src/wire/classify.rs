//! Judging one received line: what kind of message it is, and what is wrong with it.

use std::path::Path;

use acp_jsonrpc::Message;
use acp_types::{
    AgentNotification, AgentRequest, SessionNotification, SessionUpdate, ToolCallContent,
    de::collect_dropped,
};
use serde_json::Value;

use super::Conn;
use super::event::{Event, received};
use crate::client::RpcError;
use crate::limits::NAMED_SESSIONS;

impl Conn {
    /// Classifies one line, noting what breaks a rule in the connection's log.
    pub(super) fn classify(&mut self, bytes: &[u8]) -> Event {
        let raw = String::from_utf8_lossy(bytes).into_owned();
        self.trace("<", &raw);
        let size = bytes.len();
        let message = match Message::from_slice(bytes) {
            Ok(message) => message,
            Err(error) => {
                self.log
                    .garbage
                    .push(|| format!("{} ({error})", received(&raw)), size);
                self.note_garbage(size as u64);
                return match idless_response(bytes) {
                    Some(result) => Event::Idless { result, raw },
                    None => Event::Garbage { raw },
                };
            }
        };
        // Valid JSON-RPC, hence valid JSON.
        let value: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        let params = value.get("params").cloned().unwrap_or(Value::Null);
        match message {
            Message::Request(request) => {
                let decoded = if self.v2 {
                    v2_schema::request(&request.method, request.params.as_deref())
                } else {
                    AgentRequest::decode(&request.method, request.params.as_deref())
                        .map(|_| ())
                        .map_err(|error| error.to_string())
                };
                let problem = match decoded {
                    Err(error) => Some(error),
                    Ok(()) => request_problem(&request.method, &params),
                };
                if let Some(session) = params.get("sessionId").and_then(Value::as_str)
                    && !request.method.starts_with('_')
                {
                    self.name_session(session, &raw);
                }
                if let Some(problem) = problem {
                    self.log
                        .invalid
                        .push(|| format!("{} ({problem})", received(&raw)), size);
                }
                if request.method.starts_with("elicitation/") {
                    self.log.elicitations.push(|| received(&raw), size);
                }
                Event::Request {
                    id: value["id"].clone(),
                    method: request.method,
                    params,
                    raw,
                }
            }
            Message::Notification(notification) => {
                let method = notification.method;
                let problem = if self.v2 {
                    match v2_schema::notification(&method, &params, notification.params.as_deref())
                    {
                        Ok(Some(session)) => {
                            self.name_session(&session, &raw);
                            None
                        }
                        Ok(None) => None,
                        Err(problem) => Some(problem),
                    }
                } else if method == "session/update" {
                    let (decoded, dropped) = collect_dropped(|| {
                        serde_json::from_value::<SessionNotification>(params.clone())
                    });
                    match decoded {
                        Err(error) => Some(format!("does not match the schema: {error}")),
                        Ok(_) if !dropped.is_empty() => Some(format!(
                            "values that do not match the schema: {}",
                            dropped
                                .iter()
                                .map(|d| d.value.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                        Ok(n) => {
                            self.name_session(n.session_id.as_ref(), &raw);
                            if let Some(needs) = needs_opt_in(&n.update) {
                                self.log
                                    .ungated
                                    .push(|| format!("{} (needs `{needs}`)", received(&raw)), size);
                            }
                            None
                        }
                    }
                } else {
                    AgentNotification::decode(&method, notification.params.as_deref())
                        .err()
                        .map(|e| e.to_string())
                };
                if let Some(problem) = problem {
                    self.log
                        .invalid
                        .push(|| format!("{} ({problem})", received(&raw)), size);
                }
                Event::Notification {
                    method,
                    params,
                    raw,
                }
            }
            Message::Response(_) => {
                let id = value["id"].clone();
                let key = id.to_string();
                let mut ours = true;
                if let Some(method) = self.outstanding.remove(&key) {
                    self.answered.insert(key);
                    if method == "session/new"
                        && let Some(session) =
                            value.pointer("/result/sessionId").and_then(Value::as_str)
                    {
                        self.sessions.insert(session.to_owned());
                    }
                } else if id.is_null() && self.null_allowance > 0 {
                    self.null_allowance -= 1;
                } else if self.answered.contains(&key) {
                    self.log.unsolicited.push(
                        || format!("{} (a second response to request {key})", received(&raw)),
                        size,
                    );
                } else {
                    ours = false;
                    self.log.unsolicited.push(
                        || format!("{} (no request with id {key} was sent)", received(&raw)),
                        size,
                    );
                }
                let result = match value.get("error") {
                    Some(error) => Err(RpcError::from_value(error.clone())),
                    None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
                };
                Event::Response {
                    id,
                    result,
                    raw,
                    ours,
                }
            }
        }
    }

    /// Remembers that the agent named `session` (with the first line that did), to judge at
    /// the end of the connection whether it exists: an update racing the `session/new`
    /// response is not taken for a stray one. At most [`NAMED_SESSIONS`] distinct ids.
    fn name_session(&mut self, session: &str, raw: &str) {
        if self.named_sessions.len() < NAMED_SESSIONS
            && !self.named_sessions.iter().any(|(s, _)| s == session)
        {
            self.named_sessions
                .push((session.to_owned(), received(raw)));
        }
    }
}

/// A protocol rule on the agent's requests beyond the schema: file paths are absolute.
/// The client capability an update needs that the checker never advertises: `plan` for plan
/// operations, `subagents` for subagent updates, session messages and tool call content of
/// type `session` (schema 1.20). The checker reads the schema on its own, apart from the
/// runtime's rule book, so that a bug in one does not hide in the other.
fn needs_opt_in(update: &SessionUpdate) -> Option<&'static str> {
    let session_content = |content: Option<&[ToolCallContent]>| {
        content
            .unwrap_or_default()
            .iter()
            .any(|c| matches!(c, ToolCallContent::Session(_)))
    };
    match update {
        SessionUpdate::PlanUpdate(_) | SessionUpdate::PlanRemoved(_) => Some("plan"),
        SessionUpdate::SubagentUpdate(_)
        | SessionUpdate::SessionMessage(_)
        | SessionUpdate::SessionMessageChunk(_) => Some("subagents"),
        SessionUpdate::ToolCall(call) if session_content(call.content.as_deref()) => {
            Some("subagents")
        }
        SessionUpdate::ToolCallUpdate(update) if session_content(update.content.as_deref()) => {
            Some("subagents")
        }
        _ => None,
    }
}

fn request_problem(method: &str, params: &Value) -> Option<String> {
    let path_field = match method {
        "fs/read_text_file" | "fs/write_text_file" => Some("path"),
        "terminal/create" => Some("cwd"),
        _ => None,
    };
    if let Some(field) = path_field
        && let Some(path) = params.get(field).and_then(Value::as_str)
        && !Path::new(path).is_absolute()
    {
        return Some(format!("`{field}` is not an absolute path"));
    }
    None
}

/// For an object shaped like a response (a `result` or an `error`, no `method`) but without
/// `id`: what it answers with. Not a JSON-RPC message, yet plainly an answer to something
/// whose id the agent did not know or did not care to give: a notification, a line it could
/// not parse.
fn idless_response(bytes: &[u8]) -> Option<Result<Value, RpcError>> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let object = value.as_object()?;
    if object.contains_key("id") || object.contains_key("method") {
        return None;
    }
    match (object.get("error"), object.get("result")) {
        (Some(error), _) => Some(Err(RpcError::from_value(error.clone()))),
        (None, Some(result)) => Some(Ok(result.clone())),
        (None, None) => None,
    }
}

/// Judging the agent's messages by protocol v2's schema (on a `--protocol 2` run).
#[cfg(feature = "unstable-protocol-v2")]
mod v2_schema {
    use acp_types::de::collect_dropped;
    use acp_types::v2::{AgentNotification, AgentRequest, UpdateSessionNotification};
    use serde_json::Value;
    use serde_json::value::RawValue;

    /// What is wrong with an agent request, if anything.
    pub(super) fn request(method: &str, params: Option<&RawValue>) -> Result<(), String> {
        AgentRequest::decode(method, params)
            .map(|_| ())
            .map_err(|error| error.to_string())
    }

    /// What is wrong with an agent notification, if anything; the session a `session/update`
    /// names.
    pub(super) fn notification(
        method: &str,
        params: &Value,
        raw_params: Option<&RawValue>,
    ) -> Result<Option<String>, String> {
        if method != "session/update" {
            return AgentNotification::decode(method, raw_params)
                .map(|_| None)
                .map_err(|error| error.to_string());
        }
        let (decoded, dropped) =
            collect_dropped(|| serde_json::from_value::<UpdateSessionNotification>(params.clone()));
        match decoded {
            Err(error) => Err(format!("does not match the v2 schema: {error}")),
            Ok(_) if !dropped.is_empty() => Err(format!(
                "values that do not match the v2 schema: {}",
                dropped
                    .iter()
                    .map(|d| d.value.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Ok(note) => Ok(Some(note.session_id.0)),
        }
    }
}

/// Without protocol v2 built in, no connection speaks it.
#[cfg(not(feature = "unstable-protocol-v2"))]
mod v2_schema {
    use serde_json::Value;
    use serde_json::value::RawValue;

    pub(super) fn request(_: &str, _: Option<&RawValue>) -> Result<(), String> {
        Err("protocol v2 is not built in".to_owned())
    }

    pub(super) fn notification(
        _: &str,
        _: &Value,
        _: Option<&RawValue>,
    ) -> Result<Option<String>, String> {
        Err("protocol v2 is not built in".to_owned())
    }
}
