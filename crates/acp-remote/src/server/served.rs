//! Requests and replies between hyper and [`exchange`](crate::server::exchange), for HTTP/1.1 and
//! HTTP/2 alike: a request's head as a [`RequestHead`], its body as a [`ReadBody`] read frame
//! by frame (so that the exchange bounds it while it arrives), and a [`Reply`] as hyper's
//! response, an SSE stream sent batch by batch. Nothing here decides a status: framing
//! refusals of HTTP/1.1 are hyper's (a malformed head, differing `Content-Length`s) or
//! [`RequestBody::start`]'s (what hyper takes but we do not).

use std::any::Any;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{Stream, StreamExt};
use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::header::{CONTENT_TYPE, HeaderName, HeaderValue};

use crate::server::exchange::reply::{Reply, ReplyBody};
use crate::server::exchange::{BodyError, MEANINGFUL, ReadBody};
use crate::server::http::RequestHead;

/// The head of a request as the exchange reads it. Header values that are not UTF-8 are
/// left out, unless the server reads that header: then its name is the error.
pub(crate) fn head_of(parts: &hyper::http::request::Parts) -> Result<RequestHead, String> {
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut head = RequestHead::new(parts.method.as_str(), target);
    // `:authority` stands for `Host` in HTTP/2; hooks and handlers that read `Host` find it.
    if let Some(authority) = parts.uri.authority()
        && !parts.headers.contains_key(hyper::header::HOST)
    {
        head = head.with_header("Host", authority.as_str());
    }
    for (name, value) in &parts.headers {
        match std::str::from_utf8(value.as_bytes()) {
            Ok(value) => head = head.with_header(name.as_str(), value),
            Err(_) if MEANINGFUL.contains(&name.as_str()) => return Err(name.as_str().into()),
            // Others are not ours to read (a cookie, a referrer).
            Err(_) => {}
        }
    }
    Ok(head)
}

/// A POST's body: hyper's data frames until its end. On HTTP/2, with or without a
/// Content-Length (h2 checks that they agree); on HTTP/1.1, by the framing hyper parsed
/// (`Content-Length`, or chunks), after `100 Continue` if the client waits for it (hyper sends
/// it when the body is first polled, that is, once the head passed the exchange's checks).
pub(crate) struct RequestBody {
    body: Incoming,
    http1: bool,
    ended: bool,
}

impl RequestBody {
    pub(crate) fn new(body: Incoming, http1: bool) -> RequestBody {
        RequestBody {
            body,
            http1,
            ended: false,
        }
    }

    /// Whether the body was read to its end (or had none): the HTTP/1.1 socket can carry the
    /// next request.
    pub(crate) fn consumed(&self) -> bool {
        self.ended || self.body.is_end_stream()
    }
}

impl ReadBody for RequestBody {
    async fn start(&mut self, head: &RequestHead) -> Result<(), BodyError> {
        if !self.http1 {
            return Ok(());
        }
        // hyper frames a body by `Transfer-Encoding` when both are given, and takes any
        // codings that end in `chunked`: a message two parties could frame differently, or
        // one whose content we cannot read, is refused instead (RFC 9112, 6.1 and 6.3).
        let codings: Vec<&str> = head
            .headers_named("transfer-encoding")
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if !codings.is_empty() {
            if head.header("content-length").is_some() {
                return Err(BodyError::Refused((
                    400,
                    "both Transfer-Encoding and Content-Length",
                )));
            }
            if !matches!(codings.as_slice(), [only] if only.eq_ignore_ascii_case("chunked")) {
                return Err(BodyError::Refused((
                    501,
                    "only the chunked transfer coding is implemented",
                )));
            }
        } else if head.header("content-length").is_none() {
            return Err(BodyError::Refused((411, "Content-Length required")));
        }
        Ok(())
    }

    async fn next(&mut self) -> Result<Option<Vec<u8>>, BodyError> {
        while let Some(frame) = poll_fn(|cx| Pin::new(&mut self.body).poll_frame(cx)).await {
            if let Ok(data) = frame.map_err(|_| BodyError::Gone)?.into_data() {
                return Ok(Some(data.to_vec()));
            }
        }
        self.ended = true;
        Ok(None)
    }
}

/// A reply as hyper's response. `guard` lives as long as the body is being sent.
pub(crate) fn render(reply: Reply, guard: Box<dyn Any + Send>) -> hyper::Response<ReplyStream> {
    let content_type = reply.body.content_type();
    let inner = match reply.body {
        ReplyBody::Empty => Inner::Full(None),
        ReplyBody::Text(text) => Inner::Full(Some(Bytes::from(text))),
        ReplyBody::Json(json) => Inner::Full(Some(Bytes::from(json))),
        ReplyBody::Events(events) => Inner::Events(Box::pin(futures_lite::stream::unfold(
            Some(events),
            |events| async move {
                let mut events = events?;
                match events.next().await {
                    Some(data) => Some((Ok(data), Some(events))),
                    // A stream that cannot go on exactly is broken off, not finished: its
                    // client reconnects and is told (see `EventStream::cut`).
                    None if events.cut() => Some((Err(Cut), None)),
                    None => None,
                }
            },
        ))),
    };
    let mut response = hyper::Response::new(ReplyStream {
        inner,
        _guard: guard,
    });
    *response.status_mut() = hyper::StatusCode::from_u16(reply.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    if let Some(content_type) = content_type {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(name, value);
        }
    }
    response
}

/// A reply's body as frames: all at once, or each batch of an SSE stream as it comes (DATA
/// frames on HTTP/2, chunks on HTTP/1.1).
pub(crate) struct ReplyStream {
    inner: Inner,
    _guard: Box<dyn Any + Send>,
}

enum Inner {
    Full(Option<Bytes>),
    Events(Pin<Box<dyn Stream<Item = Result<Vec<u8>, Cut>> + Send>>),
}

/// An SSE stream broken off: hyper closes the HTTP/1.1 connection without the last chunk, or
/// resets the HTTP/2 stream, so that the client sees a cut rather than an end.
#[derive(Debug)]
pub(crate) struct Cut;

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the SSE stream was broken off")
    }
}

impl std::error::Error for Cut {}

impl Body for ReplyStream {
    type Data = Bytes;
    type Error = Cut;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Cut>>> {
        match &mut self.get_mut().inner {
            Inner::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            Inner::Events(events) => events
                .poll_next(cx)
                .map(|data| data.map(|d| d.map(|d| Frame::data(Bytes::from(d))))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.inner, Inner::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Full(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            Inner::Events(_) => SizeHint::default(),
        }
    }
}
