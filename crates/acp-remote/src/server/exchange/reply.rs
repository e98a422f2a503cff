//! What the server answers, whichever HTTP version carries it: a status, headers and a body
//! that is empty, text, JSON, or an SSE stream. HTTP/1.1 and HTTP/2 each render a [`Reply`]
//! their own way (Content-Length and chunks, or frames); what it says is decided once.

use std::sync::Arc;
use std::time::Duration;

use futures_lite::future;
use smol::Timer;

use crate::server::conn::Shared;
use crate::server::streamable::HttpConn;
use crate::server::streamable::stream::{AttachError, Batch, SseStream};

/// Up to how many bytes of queued events one write carries.
const BATCH_BYTES: usize = 64 * 1024;

/// An answer to one request.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    /// Headers beyond those of the body's framing and its `Content-Type`.
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: ReplyBody,
}

/// The body of a [`Reply`].
#[derive(Debug)]
pub(crate) enum ReplyBody {
    Empty,
    /// `text/plain`: why a request was refused.
    Text(String),
    Json(Vec<u8>),
    /// `text/event-stream`, for as long as the stream lives.
    Events(EventStream),
}

impl ReplyBody {
    /// The `Content-Type` of a body that has one.
    pub(crate) fn content_type(&self) -> Option<&'static str> {
        match self {
            ReplyBody::Empty => None,
            ReplyBody::Text(_) => Some("text/plain; charset=utf-8"),
            ReplyBody::Json(_) => Some("application/json"),
            ReplyBody::Events(_) => Some("text/event-stream"),
        }
    }
}

impl Reply {
    /// An answer with a one-line text body (none for an empty `text`).
    pub(crate) fn text(status: u16, text: &str) -> Reply {
        let body = if text.is_empty() {
            ReplyBody::Empty
        } else {
            ReplyBody::Text(format!("{text}\n"))
        };
        Reply {
            status,
            headers: Vec::new(),
            body,
        }
    }

    pub(crate) fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }
}

/// An open SSE stream: first `id: <cursor>` alone (so that a client knows where it stands
/// before any event, and can resume from there), then the events of its [`SseStream`] after
/// that id, each with its id; a `: keepalive` comment when it is quiet; its end when the
/// stream ends (or the connection, or the server), or when another reader took it over.
#[derive(Debug)]
pub(crate) struct EventStream {
    conn: Arc<HttpConn>,
    stream: Arc<SseStream>,
    shared: Arc<Shared>,
    reader: u64,
    /// The id of the last event handed out.
    cursor: u64,
    /// A batch was handed out: a transport asks for the next only once it has taken it.
    handed: bool,
    primed: bool,
    keep_alive: Duration,
    ended: bool,
    /// Ended without finishing: taken over, or its events lost (see [`cut`](Self::cut)).
    cut: bool,
    /// A durable-transport resumption: once the replay reaches this cursor, the turn state
    /// (of this session's turns, or all) goes out before anything live.
    /// (Boxed: a reply is moved by value, and most streams have none.)
    turn_state: Option<Box<(u64, Option<String>)>>,
}

impl EventStream {
    /// Becomes the reader of `stream`, resuming after `resume` if given (see
    /// [`SseStream::attach`]).
    pub(crate) fn attach(
        conn: Arc<HttpConn>,
        stream: Arc<SseStream>,
        resume: Option<u64>,
        session: Option<&str>,
        shared: Arc<Shared>,
        keep_alive: Duration,
    ) -> Result<EventStream, AttachError> {
        if resume.is_some() {
            // What is too old is given up before the resumption is judged.
            conn.trim_replay();
        }
        let attached = stream.attach(resume)?;
        let turn_state = (resume.is_some() && conn.durable())
            .then(|| Box::new((stream.last_id(), session.map(str::to_owned))));
        Ok(EventStream {
            conn,
            stream,
            shared,
            reader: attached.reader,
            cursor: attached.cursor,
            handed: false,
            primed: false,
            keep_alive,
            ended: false,
            cut: false,
            turn_state,
        })
    }

    /// The bytes to write next (events, or a comment); `None` at the stream's end.
    pub(crate) async fn next(&mut self) -> Option<Vec<u8>> {
        if std::mem::take(&mut self.handed) {
            self.stream.written(self.reader, self.cursor);
            self.conn.activity.touch();
        }
        if self.ended {
            return None;
        }
        if !std::mem::replace(&mut self.primed, true) {
            return Some(format!("id: {}\n\n", self.cursor).into_bytes());
        }
        loop {
            if self
                .turn_state
                .as_ref()
                .is_some_and(|state| self.cursor >= state.0)
                && let Some(taken) = self.turn_state.take()
            {
                let (_, session) = *taken;
                let state = self.conn.turn_state(session.as_deref());
                let mut event = b"data: ".to_vec();
                event.extend_from_slice(&crate::proto::cursor::resumed(self.cursor, state));
                event.extend_from_slice(b"\n\n");
                return Some(event);
            }
            let (pushed, taken_over) = self.stream.listen();
            // What is queued already goes out in the same write: a burst of updates costs
            // one system call, not one each.
            match self
                .stream
                .take_batch(self.reader, self.cursor, BATCH_BYTES)
            {
                Batch::Events(events, last) => {
                    self.cursor = last;
                    self.handed = true;
                    self.conn.trim_replay();
                    return Some(events);
                }
                Batch::Ended => {
                    self.ended = true;
                    self.cut = self.stream.broken(self.reader);
                    return None;
                }
                Batch::Empty => {}
            }
            let woken = async {
                future::or(pushed, taken_over).await;
                Woke::Work
            };
            let keep_alive = async {
                Timer::after(self.keep_alive).await;
                Woke::KeepAlive
            };
            let stopped = async {
                future::or(self.conn.ended.wait(), self.shared.stop.wait()).await;
                Woke::Stop
            };
            match future::or(woken, future::or(keep_alive, stopped)).await {
                Woke::Work => {}
                Woke::KeepAlive => {
                    self.conn.trim_replay();
                    return Some(b": keepalive\n\n".to_vec());
                }
                Woke::Stop => {
                    self.ended = true;
                    return None;
                }
            }
        }
    }

    /// Whether the stream ended without being finished (taken over by another reader, or
    /// its next events given up by the replay window): the transport then breaks it off
    /// rather than ending it, so that a client never takes it for the stream's end.
    pub(crate) fn cut(&self) -> bool {
        self.cut
    }
}

enum Woke {
    Work,
    KeepAlive,
    Stop,
}

impl Drop for EventStream {
    fn drop(&mut self) {
        // What was handed out and not taken stays in the window: the next reader that does
        // not resume starts before it, one that resumes where its client says.
        self.stream.detach(self.reader);
    }
}
