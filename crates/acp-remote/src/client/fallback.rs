//! The fallback of a durable-transport client whose resumption was refused (the proposal's
//! rule, on both transports): the connection is taken up again on a new one, with the
//! `initialize` the runtime sent first and `session/resume` for each session it had, so that
//! the runtime's sessions go on. The requests the runtime had in flight (a prompt, say) fail
//! with a JSON-RPC error saying so: their outcome is unknown, and the runtime's client decides
//! whether to send them again. A new connection that cannot be opened or initialized, or an
//! agent that resumes none of the sessions, ends the connection with the first refusal's
//! reason and its own.
//!
//! The layer sits between the runtime and the transport's own reader and writer, and watches
//! what goes by: the `initialize`, the requests that open sessions (`session/new`,
//! `session/load`, `session/resume`: their `cwd`, roots and MCP servers) and their answers,
//! and which requests are unanswered; all bounded.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_lite::{AsyncWriteExt, future};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::client::pipe::{Pipe, PipeReader, PipeWriter};
use crate::lines::{read_message, to_line};
use crate::queue::{Failure, ResumeRefused};
use crate::transport::{ConnectionReader, ConnectionWriter};

/// Most sessions remembered (the oldest opened is forgotten first); most requests followed.
const MAX_SESSIONS: usize = 256;
const MAX_PENDING: usize = 4096;

/// The id of the fallback's own requests, numbered after it.
const FALLBACK_ID: &str = "acp-remote/fallback-";

/// Opens a new connection by the same transport (the connector's, without the fallback).
pub(crate) type Reconnect = Arc<
    dyn Fn() -> std::pin::Pin<
            Box<
                dyn std::future::Future<
                        Output = Result<(ConnectionReader, ConnectionWriter), String>,
                    > + Send,
            >,
        > + Send
        + Sync,
>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The parts of a message the layer looks at.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

impl Peek<'_> {
    fn id_key(&self) -> Option<String> {
        self.id.map(|id| id.get().trim().to_owned())
    }
}

/// What the runtime said that a new connection needs.
#[derive(Debug, Default)]
struct Tracker {
    initialize: Option<Vec<u8>>,
    /// Requests opening a session, by id: their params.
    opening: HashMap<String, Value>,
    /// Sessions by id: the params to resume them with (without `sessionId`), and their order.
    sessions: HashMap<String, (u64, Value)>,
    opened: u64,
    /// The runtime's requests not answered yet: their ids, as JSON.
    pending: HashMap<String, ()>,
}

impl Tracker {
    fn outgoing(&mut self, line: &[u8]) {
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(line) else {
            return;
        };
        let (Some(method), Some(key)) = (peek.method.as_deref(), peek.id_key()) else {
            return;
        };
        if method == "initialize" && self.initialize.is_none() {
            self.initialize = Some(line.to_vec());
        }
        if self.pending.len() < MAX_PENDING {
            self.pending.insert(key.clone(), ());
        }
        if matches!(method, "session/new" | "session/load" | "session/resume")
            && self.opening.len() < MAX_PENDING
            && let Some(params) = peek.params.and_then(|p| serde_json::from_str(p.get()).ok())
        {
            self.opening.insert(key, params);
        }
    }

    fn incoming(&mut self, line: &[u8]) {
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(line) else {
            return;
        };
        if peek.method.is_some() {
            return;
        }
        let Some(key) = peek.id_key() else { return };
        self.pending.remove(&key);
        let Some(mut params) = self.opening.remove(&key) else {
            return;
        };
        let Some(result) = peek.result else { return };
        let from_result = serde_json::from_str::<Value>(result.get())
            .ok()
            .and_then(|r| {
                r.get("sessionId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        let session = from_result.or_else(|| {
            params
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let Some(session) = session else { return };
        if let Some(object) = params.as_object_mut() {
            object.retain(|k, _| {
                matches!(k.as_str(), "cwd" | "additionalDirectories" | "mcpServers")
            });
        }
        if self.sessions.len() >= MAX_SESSIONS
            && !self.sessions.contains_key(&session)
            && let Some(oldest) = self
                .sessions
                .iter()
                .min_by_key(|(_, (order, _))| *order)
                .map(|(s, _)| s.clone())
        {
            self.sessions.remove(&oldest);
        }
        self.opened += 1;
        self.sessions.insert(session, (self.opened, params));
    }
}

/// Wraps a durable-transport connection in the fallback.
pub(crate) fn wrap(
    connector: Reconnect,
    reader: ConnectionReader,
    writer: ConnectionWriter,
    max_message_size: usize,
) -> (PipeReader, PipeWriter) {
    let pipe = Pipe::new(max_message_size);
    let layer = Layer {
        pipe: pipe.clone(),
        connector,
        tracker: Mutex::default(),
    };
    smol::spawn(async move { layer.run(reader, writer).await }).detach();
    pipe.ends()
}

struct Layer {
    pipe: Arc<Pipe>,
    connector: Reconnect,
    tracker: Mutex<Tracker>,
}

/// How one connection's run ended.
enum End {
    Runtime,
    Transport(Option<io::Error>),
}

impl Layer {
    async fn run(self, mut reader: ConnectionReader, mut writer: ConnectionWriter) {
        loop {
            let end = future::or(self.send(&mut writer), self.receive(&mut reader)).await;
            match end {
                End::Runtime => {
                    let _ = writer.close().await;
                    self.pipe.end();
                    return;
                }
                End::Transport(None) => {
                    let _ = writer.close().await;
                    self.pipe.end();
                    return;
                }
                End::Transport(Some(error)) => {
                    let refused = error
                        .get_ref()
                        .and_then(|e| e.downcast_ref::<ResumeRefused>())
                        .map(|r| r.0.clone());
                    let Some(reason) = refused else {
                        return self.pipe.fail(Failure::Other(error.to_string()));
                    };
                    match self.fall_back(&reason).await {
                        Ok((r, w)) => (reader, writer) = (r, w),
                        Err(why) => {
                            return self.pipe.fail(Failure::Other(format!(
                                "{reason}; taking the sessions up again on a new connection \
                                 failed: {why}"
                            )));
                        }
                    }
                }
            }
        }
    }

    async fn send(&self, writer: &mut ConnectionWriter) -> End {
        loop {
            let Some(line) = self.pipe.outbound().pop().await else {
                return End::Runtime;
            };
            lock(&self.tracker).outgoing(&line);
            if write_line(writer, &line).await.is_err() {
                // The reader says why the transport failed.
                return future::pending().await;
            }
        }
    }

    async fn receive(&self, reader: &mut ConnectionReader) -> End {
        loop {
            match read_message(reader).await {
                Ok(Some(line)) => {
                    lock(&self.tracker).incoming(&line);
                    if self.pipe.inbound().push(to_line(&line)).await.is_err() {
                        return End::Runtime;
                    }
                }
                Ok(None) => return End::Transport(None),
                Err(error) => return End::Transport(Some(error)),
            }
        }
    }

    /// A new connection, initialized as the first was, with every session resumed; the
    /// runtime's requests in flight fail.
    async fn fall_back(
        &self,
        reason: &str,
    ) -> Result<(ConnectionReader, ConnectionWriter), String> {
        let (initialize, sessions) = {
            let tracker = lock(&self.tracker);
            let mut sessions: Vec<(u64, String, Value)> = tracker
                .sessions
                .iter()
                .map(|(id, (order, params))| (*order, id.clone(), params.clone()))
                .collect();
            sessions.sort_by_key(|(order, _, _)| *order);
            (tracker.initialize.clone(), sessions)
        };
        let initialize = initialize.ok_or("the runtime sent no initialize")?;
        let (mut reader, mut writer) = (self.connector)().await?;
        let init_id = serde_json::from_slice::<Value>(&initialize)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .unwrap_or_default();
        write_line(&mut writer, &initialize)
            .await
            .map_err(|e| e.to_string())?;
        let answer = self.answer_to(&mut reader, &init_id).await?;
        if let Some(error) = answer.get("error") {
            return Err(format!("initialize failed: {error}"));
        }
        // The first connection was lost before the runtime had its answer (the first
        // message's gap): this one is it.
        let init_key = init_id.to_string();
        if lock(&self.tracker).pending.remove(&init_key).is_some()
            && self
                .pipe
                .inbound()
                .push(to_line(answer.to_string().as_bytes()))
                .await
                .is_err()
        {
            return Err("the connection has ended".into());
        }
        let mut resumed = 0;
        let mut refusals = Vec::new();
        for (n, (_, session, params)) in sessions.iter().enumerate() {
            let id = json!(format!("{FALLBACK_ID}{n}"));
            let mut params = params.clone();
            if let Some(object) = params.as_object_mut() {
                object.insert("sessionId".into(), session.clone().into());
            }
            let request =
                json!({"jsonrpc":"2.0","id":id,"method":"session/resume","params":params});
            write_line(&mut writer, request.to_string().as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            let answer = self.answer_to(&mut reader, &id).await?;
            match answer.get("error") {
                None => resumed += 1,
                Some(error) => {
                    refusals.push(format!("{session}: {error}"));
                    lock(&self.tracker).sessions.remove(session);
                }
            }
        }
        if !sessions.is_empty() && resumed == 0 {
            return Err(format!("session/resume failed: {}", refusals.join("; ")));
        }
        let pending: Vec<String> = lock(&self.tracker)
            .pending
            .drain()
            .map(|(k, _)| k)
            .collect();
        for key in pending {
            let error = json!({
                "jsonrpc": "2.0",
                "id": serde_json::from_str::<Value>(&key).unwrap_or_default(),
                "error": {
                    "code": -32603,
                    "message": format!(
                        "the connection was lost ({reason}) and taken up again on a new one \
                         with session/resume: the outcome of this request is unknown"
                    ),
                },
            });
            if self
                .pipe
                .inbound()
                .push(to_line(error.to_string().as_bytes()))
                .await
                .is_err()
            {
                return Err("the connection has ended".into());
            }
        }
        Ok((reader, writer))
    }

    /// Reads the new connection up to the answer to `id`; other messages go to the runtime.
    async fn answer_to(&self, reader: &mut ConnectionReader, id: &Value) -> Result<Value, String> {
        loop {
            let line = read_message(reader)
                .await
                .map_err(|e| e.to_string())?
                .ok_or("the new connection ended")?;
            let value: Value = serde_json::from_slice(&line).unwrap_or_default();
            if value.get("method").is_none() && value.get("id") == Some(id) {
                return Ok(value);
            }
            lock(&self.tracker).incoming(&line);
            if self.pipe.inbound().push(to_line(&line)).await.is_err() {
                return Err("the connection has ended".into());
            }
        }
    }
}

async fn write_line(writer: &mut ConnectionWriter, line: &[u8]) -> io::Result<()> {
    writer.write_all(&to_line(line)).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_and_pending_requests_are_followed() {
        let mut tracker = Tracker::default();
        tracker.outgoing(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#);
        tracker.incoming(br#"{"jsonrpc":"2.0","id":0,"result":{}}"#);
        tracker.outgoing(br#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[],"other":1}}"#);
        tracker.incoming(br#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#);
        tracker.outgoing(br#"{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s0","cwd":"/v"}}"#);
        tracker.incoming(br#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        tracker
            .outgoing(br#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/x"}}"#);
        tracker.incoming(br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"no"}}"#);
        tracker.outgoing(
            br#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s1"}}"#,
        );
        assert!(tracker.initialize.is_some());
        assert_eq!(tracker.sessions.len(), 2);
        assert_eq!(
            tracker.sessions["s1"].1,
            json!({"cwd":"/w","mcpServers":[]})
        );
        assert_eq!(tracker.sessions["s0"].1, json!({"cwd":"/v"}));
        assert_eq!(tracker.pending.keys().collect::<Vec<_>>(), ["4"]);
    }
}
