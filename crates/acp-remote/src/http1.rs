//! HTTP/1.1 on one TCP connection: request heads one after the other (kept alive between
//! POSTs, DELETEs and preflights), each served by [`exchange::handle`] and its [`Reply`]
//! written with a Content-Length, or in chunks for an SSE stream, until a request takes the
//! socket over (a WebSocket, an SSE stream) or the client leaves.

use std::net::SocketAddr;

use futures_lite::{AsyncWriteExt, future};
use smol::Timer;

use crate::conn::ServerCtx;
use crate::exchange::{self, BodyError, Outcome, ReadBody};
use crate::http::{HeadError, RequestHead, read_body, read_head, respond, respond_with};
use crate::net::NetStream;
use crate::streamable::reply::{EventStream, ReplyBody};
use crate::upgrade;

/// Serves requests on `stream`; `buf` holds what was read of it already.
pub(crate) async fn serve(
    mut stream: NetStream,
    mut buf: Vec<u8>,
    peer: SocketAddr,
    ctx: &ServerCtx,
) {
    loop {
        let read =
            async { Some(read_head(&mut stream, &mut buf, ctx.options.max_head_size).await) };
        // A client has the handshake timeout to send each request head.
        let timeout = async {
            Timer::after(ctx.options.handshake_timeout).await;
            None
        };
        let stopped = async {
            ctx.shared.stop.wait().await;
            None
        };
        let head = match future::or(read, future::or(timeout, stopped)).await {
            None | Some(Err(HeadError::Closed)) => return,
            Some(Err(HeadError::TooLarge)) => {
                let _ = respond(&mut stream, 431, &[], "request head too large\n").await;
                return;
            }
            Some(Err(HeadError::Malformed)) => {
                let _ = respond(&mut stream, 400, &[], "not an HTTP/1.1 request\n").await;
                return;
            }
            Some(Ok(head)) => head,
        };
        let mut body = Body {
            stream: &mut stream,
            buf: &mut buf,
            read: false,
        };
        let reply = match exchange::handle(&head, peer, &mut body, true, ctx).await {
            Outcome::Drop => return,
            Outcome::Upgrade => {
                let leftover = std::mem::take(&mut buf);
                upgrade::serve_websocket(stream, leftover, head, peer, ctx).await;
                return;
            }
            Outcome::Reply(reply) => reply,
        };
        // A GET is a WebSocket or an SSE stream, which takes the socket over: refused, it
        // ends it too, as a WebSocket client that reads until the close expects. Other
        // methods (POST, DELETE, preflights) share kept-alive sockets once their body is read.
        let keep_alive = matches!(head.method(), "POST" | "DELETE" | "OPTIONS")
            && body.consumed(&head)
            && !head.header_has_token("connection", "close");
        match reply.body {
            ReplyBody::Events(events) => {
                write_events(&mut stream, reply.status, &reply.headers, events).await;
                return;
            }
            body => {
                let written =
                    write_reply(&mut stream, reply.status, &reply.headers, body, keep_alive);
                if written.await.is_err() || !keep_alive {
                    return;
                }
            }
        }
    }
}

/// A POST's body on HTTP/1.1: with a Content-Length only (chunked request bodies are not
/// read), after `100 Continue` when the client waits for it.
struct Body<'a> {
    stream: &'a mut NetStream,
    buf: &'a mut Vec<u8>,
    read: bool,
}

impl Body<'_> {
    /// Whether the socket is at the next request: the body was read, or there was none.
    fn consumed(&self, head: &RequestHead) -> bool {
        self.read
            || (head.header("transfer-encoding").is_none()
                && head
                    .header("content-length")
                    .is_none_or(|l| l.trim() == "0"))
    }
}

impl ReadBody for Body<'_> {
    async fn read(
        &mut self,
        head: &RequestHead,
        announced: Option<usize>,
        _max: usize,
    ) -> Result<Vec<u8>, BodyError> {
        if head.header("transfer-encoding").is_some() {
            return Err(BodyError::Refused((
                411,
                "send the body with a Content-Length",
            )));
        }
        let Some(len) = announced else {
            return Err(BodyError::Refused((411, "Content-Length required")));
        };
        if head.header_has_token("expect", "100-continue")
            && self
                .stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await
                .is_err()
        {
            return Err(BodyError::Gone);
        }
        let body = read_body(self.stream, self.buf, len)
            .await
            .map_err(|_| BodyError::Gone)?;
        self.read = true;
        Ok(body)
    }
}

fn header_pairs<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    headers.iter().map(|(n, v)| (*n, v.as_str())).collect()
}

async fn write_reply(
    stream: &mut NetStream,
    status: u16,
    headers: &[(&'static str, String)],
    body: ReplyBody,
    keep_alive: bool,
) -> std::io::Result<()> {
    let content_type = body.content_type().unwrap_or("");
    let bytes = match body {
        ReplyBody::Text(text) => text.into_bytes(),
        ReplyBody::Json(json) => json,
        ReplyBody::Empty | ReplyBody::Events(_) => Vec::new(),
    };
    let headers = header_pairs(headers);
    respond_with(stream, status, &headers, content_type, &bytes, keep_alive).await
}

/// An SSE stream: the head, then each batch of events as one chunk, until the stream ends.
async fn write_events(
    stream: &mut NetStream,
    status: u16,
    headers: &[(&'static str, String)],
    mut events: EventStream,
) {
    let mut head = format!("HTTP/1.1 {status} OK\r\nContent-Type: text/event-stream\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Transfer-Encoding: chunked\r\n\r\n");
    if stream.write_all(head.as_bytes()).await.is_err() || stream.flush().await.is_err() {
        return;
    }
    while let Some(data) = events.next().await {
        let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
        chunk.extend_from_slice(&data);
        chunk.extend_from_slice(b"\r\n");
        if stream.write_all(&chunk).await.is_err() || stream.flush().await.is_err() {
            // Dropping `events` gives the undelivered batch back to its queue.
            return;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let _ = stream.flush().await;
}
