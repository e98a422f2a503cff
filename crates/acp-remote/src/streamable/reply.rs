//! What the server answers, whichever HTTP version carries it: a status, headers and a body
//! that is empty, text, JSON, or an SSE stream. HTTP/1.1 and HTTP/2 each render a [`Reply`]
//! their own way (Content-Length and chunks, or frames); what it says is decided once.

use std::sync::Arc;
use std::time::Duration;

use futures_lite::future;
use smol::Timer;

use super::HttpConn;
use super::queue::ByteQueue;
use crate::conn::Shared;

/// How often an idle SSE stream gets a comment, so that proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

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

/// An open SSE stream: the events of one queue, a keep-alive comment when it is quiet, its end
/// when the queue ends (or the connection, or the server). It is the queue's one reader while
/// it lives.
#[derive(Debug)]
pub(crate) struct EventStream {
    conn: Arc<HttpConn>,
    queue: Arc<ByteQueue>,
    shared: Arc<Shared>,
    /// The messages of the last batch handed out: a transport asks for the next batch only
    /// once it has written this one, so a stream dropped before that gives them back.
    in_flight: Vec<Vec<u8>>,
    ended: bool,
}

impl EventStream {
    /// Becomes the reader of `queue`; `None` when it has one already.
    pub(crate) fn attach(
        conn: Arc<HttpConn>,
        queue: Arc<ByteQueue>,
        shared: Arc<Shared>,
    ) -> Option<EventStream> {
        queue.attach().then_some(EventStream {
            conn,
            queue,
            shared,
            in_flight: Vec::new(),
            ended: false,
        })
    }

    /// The bytes to write next (events, or a comment); `None` at the stream's end.
    pub(crate) async fn next(&mut self) -> Option<Vec<u8>> {
        if !self.in_flight.is_empty() {
            self.in_flight.clear();
            self.conn.activity.touch();
        }
        if self.ended {
            return None;
        }
        let next = async { Some(self.queue.pop().await) };
        let keep_alive = async {
            Timer::after(KEEP_ALIVE).await;
            None
        };
        let stopped = async {
            future::or(self.conn.ended.wait(), self.shared.stop.wait()).await;
            Some(None)
        };
        match future::or(next, future::or(keep_alive, stopped)).await {
            None => Some(b":\n\n".to_vec()),
            Some(None) => {
                self.ended = true;
                None
            }
            Some(Some(first)) => {
                // What is queued already goes out in the same write: a burst of updates costs
                // one system call, not one each.
                let mut size = first.len();
                self.in_flight.push(first);
                while size < BATCH_BYTES {
                    match future::poll_once(self.queue.pop()).await {
                        Some(Some(message)) => {
                            size += message.len();
                            self.in_flight.push(message);
                        }
                        _ => break,
                    }
                }
                let mut events = Vec::with_capacity(size + 8 * self.in_flight.len());
                for message in &self.in_flight {
                    events.extend_from_slice(b"data: ");
                    events.extend_from_slice(message);
                    events.extend_from_slice(b"\n\n");
                }
                Some(events)
            }
        }
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        // Not delivered: the next reader of this stream gets them, in order.
        for message in self.in_flight.drain(..).rev() {
            self.queue.unpop(message);
        }
        self.queue.detach();
    }
}
