//! The client side of Streamable HTTP: the runtime's lines POSTed one by one, the server's
//! SSE streams read into one input.
//!
//! The connection opens with the first message, which must be `initialize`: its answer is the
//! POST's body, with the `Acp-Connection-Id` that every later request carries. Then the
//! connection's GET stream is opened, and a session's as soon as its id is known (from a
//! `session/new` answer, or before a `session/load` or `session/resume` is sent, as in the
//! RFD's resume flow). POSTs go out in order, from one task, so that a `session/cancel` never
//! overtakes its prompt. A POST the server refuses fails its request locally (an error answer
//! with the status), instead of leaving it waiting.
//!
//! After a network error the client tries again by itself, within its [`Reconnect`] bounds:
//! a cut SSE stream is reopened with `Last-Event-ID` (the last id it read on that stream, `0`
//! for none), once the server has shown that it numbers its events, and the server sends
//! exactly what came after it; a POST is sent again, and the server, which remembers the
//! request ids it accepted, does not run a request twice. A resumption the server can no
//! longer serve (`410`) ends the connection with the server's reason.
//!
//! All of that is decided here, for HTTP/1.1 and HTTP/2 alike: [`Link`] only carries the
//! bytes, by the version the first request chose.

mod link;
mod sse;
pub(crate) mod wire;

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_lite::future;

use self::link::Link;

#[cfg(doc)]
use self::wire::Reconnect;
use self::wire::{Endpoint, Poster, Retry, is_network};
use crate::lines::{LineWriter, to_line};
use crate::proto::streamable::{CONNECTION_ID, LAST_EVENT_ID, OTHER_INSTANCE, SESSION_ID};
use crate::proto::streamable::{Peek, session_of};
use crate::queue::Failure;
use crate::queue::{ByteQueue, Inbound, Outbound, QueueReader, QueueSink};
use crate::share::Share;
use acp_jsonrpc::Latch;

#[derive(Debug)]
pub(crate) struct Shared {
    link: Link,
    connection_id: Mutex<Option<String>>,
    inbound: ByteQueue,
    outbound: ByteQueue,
    /// Sessions whose GET stream is open (or opening).
    streams: Mutex<HashSet<String>>,
    /// The agent's requests asked in a session: our answers name it.
    asked_in: Mutex<HashMap<String, String>>,
    /// Cookies the server set, sent back on every request of the connection (the RFD requires
    /// it, for sticky sessions behind load balancers).
    cookies: Mutex<CookieJar>,
    /// The server has sent an event id: it numbers its events, and a cut stream resumes.
    resumable: AtomicBool,
    /// Why the connection ended, when it did not end cleanly.
    failure: Mutex<Option<Failure>>,
    ended: Latch,
}

/// The cookies of one connection: names and values only (the connection is one endpoint and
/// short-lived, so paths, domains and expiry dates do not matter; `Max-Age=0` removes).
#[derive(Debug, Default)]
struct CookieJar(Vec<(String, String)>);

impl CookieJar {
    /// Takes in the `Set-Cookie` headers of an answer.
    fn update(&mut self, headers: &[(String, String)]) {
        for (_, value) in headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
        {
            let mut parts = value.split(';');
            let Some((name, cookie)) = parts.next().and_then(|p| p.split_once('=')) else {
                continue;
            };
            let (name, cookie) = (name.trim(), cookie.trim());
            if name.is_empty() {
                continue;
            }
            let removed = parts.any(|a| {
                let a = a.trim().to_ascii_lowercase();
                a == "max-age=0" || a.starts_with("max-age=-")
            });
            self.0.retain(|(n, _)| n != name);
            if !removed && self.0.len() < 64 {
                self.0.push((name.to_owned(), cookie.to_owned()));
            }
        }
    }

    /// The `Cookie` header to send, if any.
    fn header(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| {
            self.0
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts a client connection's tasks; returns its reader and writer.
pub(crate) fn open(endpoint: Endpoint) -> (HttpClientReader, HttpClientWriter) {
    let budget = endpoint.max_message_size.max(1 << 20);
    let shared = Arc::new(Shared {
        link: Link::new(endpoint),
        connection_id: Mutex::new(None),
        inbound: ByteQueue::new(Share::alone(budget)),
        outbound: ByteQueue::new(Share::alone(budget)),
        streams: Mutex::default(),
        asked_in: Mutex::default(),
        cookies: Mutex::default(),
        resumable: AtomicBool::new(false),
        failure: Mutex::default(),
        ended: Latch::default(),
    });
    let poster = shared.clone();
    smol::spawn(async move {
        future::or(post_all(&poster), poster.ended.wait()).await;
        poster.end();
    })
    .detach();
    let reader = HttpClientReader::new(shared.clone());
    let writer = LineWriter::new(QueueSink::new(shared));
    (reader, writer)
}

impl Shared {
    fn end(&self) {
        self.ended.set();
        self.inbound.close();
        self.outbound.abort();
    }

    /// Ends the connection with `failure`, which the runtime's reader reports.
    fn fail(&self, failure: Failure) {
        lock(&self.failure).get_or_insert(failure);
        self.end();
    }

    /// Hands a message to the runtime, as one line.
    async fn deliver(&self, message: &[u8]) {
        let _ = self.inbound.push(to_line(message)).await;
    }

    /// A local error answer for a request the server did not take.
    async fn refuse(&self, peek: &Peek<'_>, status: u16, text: &str) {
        if let (Some(id), Some(_)) = (peek.id, peek.method.as_deref()) {
            let error = serde_json::json!({
                "jsonrpc": "2.0",
                "id": serde_json::from_str::<serde_json::Value>(id.get()).unwrap_or_default(),
                "error": {"code": -32603, "message": format!("HTTP {status}: {}", text.trim())},
            });
            self.deliver(error.to_string().as_bytes()).await;
        }
    }

    /// Opens the GET stream of `session` (or the connection's) once.
    fn open_stream(self: &Arc<Self>, session: Option<String>) {
        if let Some(session) = &session
            && !lock(&self.streams).insert(session.clone())
        {
            return;
        }
        let shared = self.clone();
        smol::spawn(async move {
            let connection_stream = session.is_none();
            future::or(read_stream(&shared, session), shared.ended.wait()).await;
            // The connection's stream ends with the connection.
            if connection_stream {
                shared.end();
            }
        })
        .detach();
    }

    fn headers(&self, session: Option<&str>) -> Vec<(String, String)> {
        let mut headers = self.link.endpoint.headers.clone();
        if let Some(id) = lock(&self.connection_id).clone() {
            headers.push((CONNECTION_ID.into(), id));
        }
        if let Some(session) = session {
            headers.push((SESSION_ID.into(), session.to_owned()));
        }
        if let Some(cookies) = lock(&self.cookies).header() {
            headers.push(("Cookie".into(), cookies));
        }
        headers
    }
}

/// POSTs each message of the outbound queue, in order; a `DELETE` at the end.
async fn post_all(shared: &Arc<Shared>) {
    let mut poster = Poster::default();
    while let Some(message) = shared.outbound.pop().await {
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(&message) else {
            continue;
        };
        let initialize = peek.is_initialize() && lock(&shared.connection_id).is_none();
        let asked;
        let message = if initialize && shared.link.endpoint.durable {
            asked = crate::proto::cursor::ask_for_resumable(&message);
            &asked[..]
        } else {
            &message[..]
        };
        let session = match peek.method.as_deref() {
            Some(_) => session_of(peek.params),
            None => peek
                .id_key()
                .and_then(|key| lock(&shared.asked_in).remove(&key)),
        };
        if let (Some(method), Some(session)) = (peek.method.as_deref(), &session)
            && matches!(method, "session/load" | "session/resume")
        {
            shared.open_stream(Some(session.clone()));
        }
        let mut headers = shared.headers(session.as_deref());
        headers.extend([
            ("Content-Type".into(), "application/json".into()),
            (
                "Accept".into(),
                "application/json, text/event-stream".into(),
            ),
        ]);
        // A POST that meets a network error is sent again (not `initialize`, which would open
        // a second connection), to a server that numbers its events, as ours does: it answers
        // a request id it has seen with 202 and does not run it again. Other servers (the
        // SDKs') might run it twice: there the request fails, as before.
        let mut retry = Retry::new(shared.link.endpoint.reconnect);
        let sent = loop {
            match shared
                .link
                .send(&mut poster, "POST", &headers, message)
                .await
            {
                Err(error)
                    if !initialize
                        && is_network(&error)
                        && shared.resumable.load(Ordering::SeqCst)
                        && retry.wait().await => {}
                other => break other,
            }
        };
        let answer = match sent {
            Ok(answer) => {
                lock(&shared.cookies).update(&answer.headers);
                answer
            }
            Err(error) => {
                shared.refuse(&peek, 0, &error.to_string()).await;
                if initialize {
                    return;
                }
                continue;
            }
        };
        match answer.status {
            200 if initialize => {
                let Some(id) = answer.header(CONNECTION_ID) else {
                    shared.refuse(&peek, 200, "no Acp-Connection-Id").await;
                    return;
                };
                *lock(&shared.connection_id) = Some(id.to_owned());
                if crate::proto::cursor::advertises_resumable(&answer.body) {
                    // The server numbers its events from before the first one: a stream cut
                    // before its first id resumes too (the first event's gap).
                    shared.resumable.store(true, Ordering::SeqCst);
                }
                shared.open_stream(None);
                shared.deliver(&answer.body).await;
            }
            200..=299 => {}
            status => {
                let text = String::from_utf8_lossy(&answer.body).into_owned();
                shared.refuse(&peek, status, &text).await;
                if initialize {
                    return;
                }
            }
        }
    }
    if lock(&shared.connection_id).is_some() {
        let headers = shared.headers(None);
        let _ = shared.link.send(&mut poster, "DELETE", &headers, b"").await;
    }
}

/// How a stream's GET came to an end.
enum Ended {
    /// The server ended it, or it cannot go on (refused, too long): the stream is over.
    Over,
    /// A network error: the stream is reopened, resuming after its last event id.
    Cut,
}

/// Reads one SSE stream into the runtime's input, opening session streams as sessions
/// appear; reopens it after a cut, within the connector's reconnect bounds.
async fn read_stream(shared: &Arc<Shared>, session: Option<String>) {
    // The last event id read on this stream, across its GETs.
    let mut last_id: Option<String> = None;
    let mut opened = false;
    let mut again = false;
    let mut retry = Retry::new(shared.link.endpoint.reconnect);
    loop {
        let mut headers = shared.headers(session.as_deref());
        headers.push(("Accept".into(), "text/event-stream".into()));
        let resuming = again && shared.resumable.load(Ordering::SeqCst);
        if resuming {
            // Also when no answer came: the server may have begun the stream (and kept a
            // reader that it will only find dead later). `0` is "nothing received": this
            // client is the stream's only reader, and the first starts at 0.
            let id = last_id.clone().unwrap_or_else(|| "0".into());
            headers.push((LAST_EVENT_ID.into(), id));
        } else if opened {
            // A server that never sent an id would not know where to resume: the cut stream
            // is over, as with the SDKs' clients.
            return;
        }
        again = true;
        let ended = match shared.link.open_get(&headers).await {
            Err(error) if is_network(&error) => Ended::Cut,
            Err(_) => Ended::Over,
            Ok((status, answer_headers, mut body)) => {
                lock(&shared.cookies).update(&answer_headers);
                match status {
                    200 => {
                        opened = true;
                        read_events(shared, &mut body, &mut last_id, &mut retry).await
                    }
                    // A resumption refused: `410`, the durable-transport proposal's `409`
                    // (a GET with `Last-Event-ID` is never refused as a second reader), or
                    // `404` for a connection the server no longer has (or never had: a
                    // balancer sent it elsewhere).
                    410 | 409 | 404 if status == 410 || resuming => {
                        let mut text = Vec::new();
                        while let Some(Ok(piece)) = body.try_next().await {
                            text.extend_from_slice(&piece);
                            if text.len() > 64 * 1024 {
                                break;
                            }
                        }
                        if status == 404 && text.trim_ascii() == OTHER_INSTANCE.as_bytes() {
                            // The balancer sent it to another instance than the
                            // connection's: tried again, for it to route it right.
                            Ended::Cut
                        } else {
                            shared.fail(Failure::Refused(gone_reason(status, &text)));
                            return;
                        }
                    }
                    _ => Ended::Over,
                }
            }
        };
        if matches!(ended, Ended::Over) || !retry.wait().await {
            return;
        }
    }
}

/// What the connection fails with when a stream cannot resume: the message of the server's
/// JSON-RPC error, or its body.
fn gone_reason(status: u16, body: &[u8]) -> String {
    let message = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    format!("an SSE stream could not resume (HTTP {status}): {message}")
}

/// Reads the events of one GET until it ends.
async fn read_events(
    shared: &Arc<Shared>,
    body: &mut self::wire::Body,
    last_id: &mut Option<String>,
    retry: &mut Retry,
) -> Ended {
    // A message is at most `max_message_size`; a line or an event's data past it (plus room
    // for the `data: ` prefix) ends the stream instead of growing.
    let mut parser = sse::Parser::new(shared.link.endpoint.max_message_size.saturating_add(1024));
    let mut events = Vec::new();
    loop {
        let next = async { Some(body.try_next().await) };
        let silent = async {
            match shared.link.endpoint.silence {
                Some(limit) => smol::Timer::after(limit).await,
                None => future::pending().await,
            };
            None
        };
        let data = match future::or(next, silent).await {
            // Nothing heard for five keep-alive intervals: the stream is taken for cut.
            None => return Ended::Cut,
            Some(None) => return Ended::Over,
            Some(Some(Err(_))) => return Ended::Cut,
            Some(Some(Ok(data))) => data,
        };
        if parser.feed(&data, &mut events).is_err() {
            return Ended::Over;
        }
        for event in events.drain(..) {
            let message = event.data;
            if message.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Ok(peek) = serde_json::from_slice::<Peek<'_>>(&message) {
                if peek.method.as_deref() == Some(crate::proto::cursor::RESUMED) {
                    // The turn state after a resumption: the replay before it left nothing
                    // out, so the runtime needs nothing from it.
                    continue;
                }
                if peek.method.is_none() {
                    if let Some(session) = session_of(peek.result) {
                        shared.open_stream(Some(session));
                    }
                } else if let (Some(key), Some(session)) = (peek.id_key(), session_of(peek.params))
                {
                    lock(&shared.asked_in).insert(key, session);
                }
            }
            shared.deliver(&message).await;
        }
        // Every event up to here is delivered: the stream resumes after the last one (the
        // priming `id:` that opens each of our server's streams counts, with no event).
        if let Some(id) = parser.last_id() {
            shared.resumable.store(true, Ordering::SeqCst);
            if last_id.as_deref() != Some(id) {
                *last_id = Some(id.to_owned());
                retry.reset();
            }
        }
    }
}

/// The runtime's input on a Streamable HTTP client connection: the agent's messages, one
/// line each.
pub(crate) type HttpClientReader = QueueReader<Shared>;

impl Inbound for Shared {
    fn inbound(&self) -> &ByteQueue {
        &self.inbound
    }

    fn failure(&self) -> Option<String> {
        lock(&self.failure).as_ref().map(|f| f.reason().to_owned())
    }

    fn failure_error(&self) -> Option<io::Error> {
        lock(&self.failure).as_ref().map(Failure::to_error)
    }
}

/// The runtime's output on a Streamable HTTP client connection: each complete line is POSTed,
/// in order. Closing DELETEs the connection.
pub(crate) type HttpClientWriter = LineWriter<QueueSink<Shared>>;

impl Outbound for Shared {
    fn outbound(&self) -> &ByteQueue {
        &self.outbound
    }
}

#[cfg(test)]
mod tests {
    use super::CookieJar;

    fn set(value: &str) -> Vec<(String, String)> {
        vec![("Set-Cookie".into(), value.into())]
    }

    #[test]
    fn cookies_are_kept_replaced_and_removed() {
        let mut jar = CookieJar::default();
        assert_eq!(jar.header(), None);
        jar.update(&set("route=a1; Path=/; HttpOnly"));
        jar.update(&set("lb=x"));
        assert_eq!(jar.header().unwrap(), "route=a1; lb=x");
        jar.update(&set("route=b2"));
        assert_eq!(jar.header().unwrap(), "lb=x; route=b2");
        jar.update(&set("lb=; Max-Age=0"));
        jar.update(&set("garbage"));
        assert_eq!(jar.header().unwrap(), "route=b2");
    }
}
