//! HTTP/1.1 on one TCP connection: request heads one after the other (kept alive between
//! POSTs, DELETEs and preflights), each served by [`exchange::handle`] and its [`Reply`]
//! written with a Content-Length, or in chunks for an SSE stream, until a request takes the
//! socket over (a WebSocket, an SSE stream) or the client leaves.

use std::net::SocketAddr;

use futures_lite::{AsyncReadExt, AsyncWriteExt, future};
use smol::Timer;

use crate::conn::ServerCtx;
use crate::exchange::{self, BodyError, Outcome, ReadBody};
use crate::http::{HeadError, RequestHead, read_head, respond, respond_with};
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
        let framing = match framing(&head) {
            Ok(framing) => framing,
            Err((status, text)) => {
                let _ = respond(&mut stream, status, &[], &format!("{text}\n")).await;
                return;
            }
        };
        let mut body = Body::new(&mut stream, &mut buf, framing);
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
            && body.consumed()
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

/// How a request's body is framed (RFC 9112, 6): decided once, from the head, before
/// anything else, so that every request on a kept-alive socket starts where the last ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// No body.
    None,
    Length(usize),
    Chunked,
}

/// The framing of `head`, or why it is refused: `Content-Length` must be digits only, and all
/// of its values the same; `Transfer-Encoding` must be `chunked` alone, never beside a
/// `Content-Length`. Anything else is a message whose end two parties could see differently.
fn framing(head: &RequestHead) -> Result<Framing, (u16, &'static str)> {
    let mut codings = head.headers_named("transfer-encoding").peekable();
    if codings.peek().is_some() {
        if head.headers_named("content-length").next().is_some() {
            return Err((400, "both Transfer-Encoding and Content-Length"));
        }
        let codings: Vec<&str> = codings
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        return match codings.as_slice() {
            [only] if only.eq_ignore_ascii_case("chunked") => Ok(Framing::Chunked),
            _ => Err((501, "only the chunked transfer coding is implemented")),
        };
    }
    let mut length = None;
    for value in head
        .headers_named("content-length")
        .flat_map(|v| v.split(','))
    {
        let value = value.trim();
        if value.is_empty() || value.len() > 19 || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err((400, "invalid Content-Length"));
        }
        let n: usize = value.parse().map_err(|_| (400, "invalid Content-Length"))?;
        if length.is_some_and(|l| l != n) {
            return Err((400, "differing Content-Length values"));
        }
        length = Some(n);
    }
    Ok(match length {
        None | Some(0) => Framing::None,
        Some(n) => Framing::Length(n),
    })
}

/// Longest chunk-size line (with extensions) and trailer section of a chunked body.
const MAX_CHUNK_LINE: usize = 4096;
const MAX_TRAILERS: usize = 16 * 1024;

/// A POST's body on HTTP/1.1, piece by piece: by its `Content-Length`, or in chunks; after
/// `100 Continue` when the client waits for it.
struct Body<'a> {
    stream: &'a mut NetStream,
    buf: &'a mut Vec<u8>,
    framing: Framing,
    /// What is left of the body (`Length`) or of the current chunk (`Chunked`).
    left: usize,
    /// Chunked: between chunks (a size line is next).
    at_size: bool,
    started: bool,
    done: bool,
}

impl<'a> Body<'a> {
    fn new(stream: &'a mut NetStream, buf: &'a mut Vec<u8>, framing: Framing) -> Self {
        Body {
            stream,
            buf,
            framing,
            left: match framing {
                Framing::Length(n) => n,
                _ => 0,
            },
            at_size: true,
            started: false,
            done: framing == Framing::None,
        }
    }

    /// Whether the socket is at the next request: the body was read, or there was none.
    fn consumed(&self) -> bool {
        self.done
    }

    /// Reads more of the socket into `buf`.
    async fn fill(&mut self) -> Result<(), BodyError> {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk).await {
            Ok(0) | Err(_) => Err(BodyError::Gone),
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(())
            }
        }
    }

    /// The end of the next CRLF-terminated line in `buf`, reading for it (at most `max`).
    async fn line(&mut self, max: usize) -> Result<usize, BodyError> {
        loop {
            if let Some(at) = self.buf.windows(2).position(|w| w == b"\r\n") {
                return Ok(at);
            }
            if self.buf.len() > max {
                return Err(BodyError::Refused((400, "malformed chunked body")));
            }
            self.fill().await?;
        }
    }

    /// Chunked: the next chunk's size (0 for the last, after its trailers).
    async fn chunk_size(&mut self) -> Result<usize, BodyError> {
        const MALFORMED: BodyError = BodyError::Refused((400, "malformed chunked body"));
        let end = self.line(MAX_CHUNK_LINE).await?;
        let line = std::str::from_utf8(&self.buf[..end]).map_err(|_| MALFORMED)?;
        let digits = line
            .split(';')
            .next()
            .unwrap_or("")
            .trim_end_matches([' ', '\t']);
        if digits.is_empty() || digits.len() > 15 || !digits.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(MALFORMED);
        }
        let size = usize::from_str_radix(digits, 16).map_err(|_| MALFORMED)?;
        self.buf.drain(..end + 2);
        if size == 0 {
            // Trailers, up to the empty line: read and dropped.
            let mut trailers = 0;
            loop {
                let end = self.line(MAX_TRAILERS).await?;
                self.buf.drain(..end + 2);
                trailers += end + 2;
                if end == 0 {
                    break;
                }
                if trailers > MAX_TRAILERS {
                    return Err(MALFORMED);
                }
            }
        }
        Ok(size)
    }
}

impl ReadBody for Body<'_> {
    async fn start(&mut self, head: &RequestHead) -> Result<(), BodyError> {
        if head.header("content-length").is_none() && self.framing != Framing::Chunked {
            return Err(BodyError::Refused((411, "Content-Length required")));
        }
        self.started = true;
        if !self.done
            && head.header_has_token("expect", "100-continue")
            && self
                .stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await
                .is_err()
        {
            return Err(BodyError::Gone);
        }
        Ok(())
    }

    async fn next(&mut self) -> Result<Option<Vec<u8>>, BodyError> {
        if self.done {
            return Ok(None);
        }
        if self.framing == Framing::Chunked && self.left == 0 {
            if !self.at_size {
                // The CRLF after a chunk's data.
                while self.buf.len() < 2 {
                    self.fill().await?;
                }
                if &self.buf[..2] != b"\r\n" {
                    return Err(BodyError::Refused((400, "malformed chunked body")));
                }
                self.buf.drain(..2);
                self.at_size = true;
            }
            let size = self.chunk_size().await?;
            if size == 0 {
                self.done = true;
                return Ok(None);
            }
            self.left = size;
            self.at_size = false;
        }
        if self.buf.is_empty() {
            self.fill().await?;
        }
        let n = self.buf.len().min(self.left);
        let rest = self.buf.split_off(n);
        let piece = std::mem::replace(self.buf, rest);
        self.left -= n;
        if self.framing != Framing::Chunked && self.left == 0 {
            self.done = true;
        }
        Ok(Some(piece))
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
