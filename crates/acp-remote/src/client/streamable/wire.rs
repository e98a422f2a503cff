//! HTTP for the Streamable HTTP client: hyper's client on smol through [`rt`](crate::rt),
//! HTTP/1.1 always and HTTP/2 with the `http2` feature. Only the bytes: which headers a request
//! carries and what an answer means are decided by `client.rs`; which version a connection
//! speaks by `link.rs`. On HTTP/1.1 the POSTs share one kept-alive connection ([`Poster`]) and
//! each SSE stream has one of its own; on HTTP/2 ([`H2`]) one connection carries them all.

use std::convert::Infallible;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::{Body as _, Bytes, Frame, Incoming, SizeHint};
use hyper::client::conn::http1;
use hyper::header::{HeaderName, HeaderValue};

use crate::net::NetStream;
use crate::rt;

/// Where and how to reach the server.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// `host:port` as the `Host` header says it.
    pub(crate) authority: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) max_message_size: usize,
    pub(crate) tls: Option<crate::tls::ClientTls>,
    /// How a cut SSE stream is resumed and a POST that met a network error sent again.
    pub(crate) reconnect: Reconnect,
    /// Ask for the durable-transport proposal at `initialize`.
    pub(crate) durable: bool,
    /// A stream on which nothing (no event, no keep-alive comment) arrived for this long is
    /// taken for cut and resumed (the durable transport's five keep-alive intervals).
    pub(crate) silence: Option<std::time::Duration>,
    /// h2c on `http://` URLs: the server is known to speak HTTP/2 in the clear.
    #[cfg(feature = "http2")]
    pub(crate) http2_prior_knowledge: bool,
}

/// How many times, and for how long, the client tries again after a network error: a cut
/// SSE stream is reopened with `Last-Event-ID`, a POST is sent again (the server takes a
/// request id it has seen as the same request). The first try again is at once, the next
/// after 100 ms, doubling up to 2 s between tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reconnect {
    pub(crate) attempts: u32,
    pub(crate) within: Duration,
}

/// The tries of one operation (a stream's reopening, a POST's sending).
#[derive(Debug)]
pub(crate) struct Retry {
    policy: Reconnect,
    tried: u32,
    since: Option<Instant>,
}

impl Retry {
    pub(crate) fn new(policy: Reconnect) -> Retry {
        Retry {
            policy,
            tried: 0,
            since: None,
        }
    }

    /// Waits before the next try; `false` when the tries are spent.
    pub(crate) async fn wait(&mut self) -> bool {
        let since = *self.since.get_or_insert_with(Instant::now);
        if self.tried >= self.policy.attempts || since.elapsed() >= self.policy.within {
            return false;
        }
        self.tried += 1;
        if self.tried > 1 {
            let delay = Duration::from_millis(100)
                .saturating_mul(1 << (self.tried - 2).min(5))
                .min(Duration::from_secs(2));
            smol::Timer::after(delay).await;
        }
        true
    }

    /// Progress was made: the next failure starts a fresh series of tries.
    pub(crate) fn reset(&mut self) {
        self.tried = 0;
        self.since = None;
    }
}

/// Whether an error is the network's (worth trying again), not the request's.
pub(crate) fn is_network(error: &io::Error) -> bool {
    !matches!(
        error.kind(),
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData
    )
}

/// A kept-alive connection is reused only this soon after its last answer: well within the
/// idle timeouts of servers (ours 10 s, Node's 5 s), so that a request never meets a socket
/// the server is closing.
const REUSE_WITHIN: Duration = Duration::from_secs(2);

/// An answer's head is at most this large (status line and headers), on either version.
const MAX_HEAD: usize = 64 * 1024;

/// An answer to a POST or DELETE.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A request body sent whole (a JSON-RPC message, or nothing).
pub(crate) struct Full(Option<Bytes>);

impl hyper::body::Body for Full {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.get_mut().0.take().map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.as_ref().map_or(0, |d| d.len() as u64))
    }
}

/// An answer's body as it arrives (an SSE stream, or an answer being collected).
#[derive(Debug)]
pub(crate) struct Body(Incoming);

impl Body {
    /// The next piece of the body; `None` at its end, an error when the connection fails
    /// first (a cut SSE stream, which the client resumes, is not a finished one). Trailers
    /// are skipped.
    pub(crate) async fn try_next(&mut self) -> Option<io::Result<Vec<u8>>> {
        loop {
            let frame = poll_fn(|cx| Pin::new(&mut self.0).poll_frame(cx)).await?;
            match frame.map_err(failed) {
                Ok(frame) => {
                    if let Ok(data) = frame.into_data() {
                        return Some(Ok(data.to_vec()));
                    }
                }
                Err(error) => return Some(Err(error)),
            }
        }
    }
}

fn invalid(error: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, error.to_string())
}

fn failed(error: hyper::Error) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, error)
}

/// A request to `uri` (origin-form with a `Host` header on HTTP/1.1; absolute on HTTP/2,
/// whose pseudo-headers carry the scheme and authority).
fn request(
    uri: &str,
    host: Option<&str>,
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<hyper::Request<Full>> {
    let mut request = hyper::Request::builder().method(method).uri(uri);
    if let Some(host) = host {
        request = request.header(hyper::header::HOST, host);
    }
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(invalid)?;
        let value = HeaderValue::from_str(value).map_err(invalid)?;
        request = request.header(name, value);
    }
    let body = (!body.is_empty()).then(|| Bytes::copy_from_slice(body));
    request.body(Full(body)).map_err(invalid)
}

/// An answer's status, its headers (those that are text) and its body as it arrives.
fn split(response: hyper::Response<Incoming>) -> (u16, Vec<(String, String)>, Body) {
    let (parts, incoming) = response.into_parts();
    let headers = parts
        .headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    (parts.status.as_u16(), headers, Body(incoming))
}

/// The whole answer, its body at most `max` bytes.
async fn collect(response: hyper::Response<Incoming>, max: usize) -> io::Result<Answer> {
    let (status, headers, mut incoming) = split(response);
    let mut body = Vec::new();
    while let Some(data) = incoming.try_next().await {
        body.extend_from_slice(&data?);
        if body.len() > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "answer too large",
            ));
        }
    }
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// Starts HTTP/1.1 on `stream`; the connection runs on a task of its own until its sender is
/// dropped and its last answer has been read (or dropped).
pub(crate) async fn http1(stream: NetStream) -> io::Result<http1::SendRequest<Full>> {
    let (send, connection) = http1::Builder::new()
        .max_header_size(MAX_HEAD)
        .handshake(rt::Io::new(stream, Vec::new()))
        .await
        .map_err(failed)?;
    smol::spawn(async move {
        let _ = connection.await;
    })
    .detach();
    Ok(send)
}

async fn connect_http1(endpoint: &Endpoint) -> io::Result<http1::SendRequest<Full>> {
    http1(NetStream::connect(&endpoint.host, endpoint.port, endpoint.tls.as_ref()).await?).await
}

/// Sends POSTs and DELETEs one after the other over HTTP/1.1, on one kept-alive connection
/// while the server keeps it (TLS handshakes included, a connection per request would cost
/// the most).
#[derive(Default)]
pub(crate) struct Poster {
    kept: Option<(http1::SendRequest<Full>, Instant)>,
}

impl Poster {
    /// Keeps `send` (just connected) for the next request.
    #[cfg(feature = "http2")]
    pub(crate) fn keep(&mut self, send: http1::SendRequest<Full>) {
        self.kept = Some((send, Instant::now()));
    }

    /// Sends one request; the whole answer. A reused connection that fails before an answer's
    /// head (the server closed it while idle) is replaced once by a fresh one.
    pub(crate) async fn send(
        &mut self,
        endpoint: &Endpoint,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<Answer> {
        let request = || {
            request(
                &endpoint.path,
                Some(&endpoint.authority),
                method,
                headers,
                body,
            )
        };
        let reused = self
            .kept
            .take()
            .filter(|(send, last)| last.elapsed() < REUSE_WITHIN && !send.is_closed())
            .map(|(send, _)| send);
        if let Some(mut send) = reused
            && send.ready().await.is_ok()
            && let Ok(response) = send.send_request(request()?).await
        {
            return self.finish(send, response, endpoint).await;
        }
        let mut send = connect_http1(endpoint).await?;
        let response = send.send_request(request()?).await.map_err(failed)?;
        self.finish(send, response, endpoint).await
    }

    /// Reads the answer whole; keeps the connection if the server keeps it.
    async fn finish(
        &mut self,
        send: http1::SendRequest<Full>,
        response: hyper::Response<Incoming>,
        endpoint: &Endpoint,
    ) -> io::Result<Answer> {
        let answer = collect(response, endpoint.max_message_size).await?;
        if !send.is_closed() {
            self.kept = Some((send, Instant::now()));
        }
        Ok(answer)
    }
}

/// Opens a GET (an SSE stream) over HTTP/1.1, on a connection of its own; its status, headers
/// and body. The connection closes when the body ends or is dropped.
pub(crate) async fn open_get(
    endpoint: &Endpoint,
    headers: &[(String, String)],
) -> io::Result<(u16, Vec<(String, String)>, Body)> {
    let mut send = connect_http1(endpoint).await?;
    let request = request(
        &endpoint.path,
        Some(&endpoint.authority),
        "GET",
        headers,
        b"",
    )?;
    let response = send.send_request(request).await.map_err(failed)?;
    Ok(split(response))
}

/// One HTTP/2 connection to the server (the `http2` feature): the POSTs, the DELETE and every
/// SSE stream, each request a stream of it.
#[cfg(feature = "http2")]
#[derive(Clone)]
pub(crate) struct H2 {
    send: hyper::client::conn::http2::SendRequest<Full>,
    /// `scheme://authority/path`: HTTP/2 carries them as pseudo-headers of every request.
    uri: String,
}

#[cfg(feature = "http2")]
impl std::fmt::Debug for H2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2").field("uri", &self.uri).finish()
    }
}

#[cfg(feature = "http2")]
impl H2 {
    /// Starts HTTP/2 on `stream` (h2c with prior knowledge, or TLS after ALPN chose `h2`); the
    /// connection runs on a task of its own until every handle and stream is gone.
    pub(crate) async fn handshake(stream: NetStream, endpoint: &Endpoint) -> io::Result<H2> {
        let scheme = if endpoint.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let uri = format!("{scheme}://{}{}", endpoint.authority, endpoint.path);
        let (send, connection) = hyper::client::conn::http2::Builder::new(rt::Spawn)
            .timer(rt::Timer)
            .max_header_list_size(MAX_HEAD as u32)
            .handshake(rt::Io::new(stream, Vec::new()))
            .await
            .map_err(failed)?;
        smol::spawn(async move {
            let _ = connection.await;
        })
        .detach();
        Ok(H2 { send, uri })
    }

    /// Whether the connection has ended (it cannot carry another request).
    pub(crate) fn is_closed(&self) -> bool {
        self.send.is_closed()
    }

    /// Sends one request; its status, its headers and its body as it arrives (an SSE stream).
    pub(crate) async fn open(
        &self,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<(u16, Vec<(String, String)>, Body)> {
        let request = request(&self.uri, None, method, headers, body)?;
        let mut send = self.send.clone();
        send.ready().await.map_err(failed)?;
        let response = send.send_request(request).await.map_err(failed)?;
        Ok(split(response))
    }

    /// Sends one request; the whole answer, its body at most `endpoint.max_message_size`.
    pub(crate) async fn send(
        &self,
        endpoint: &Endpoint,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<Answer> {
        let request = request(&self.uri, None, method, headers, body)?;
        let mut send = self.send.clone();
        send.ready().await.map_err(failed)?;
        let response = send.send_request(request).await.map_err(failed)?;
        collect(response, endpoint.max_message_size).await
    }
}
