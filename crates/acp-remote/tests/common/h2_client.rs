//! An HTTP/2 client for the tests: hyper's, on smol through a copy of the crate's small
//! runtime adapter (futures-io under hyper's I/O traits, smol's executor). One client is one
//! TCP connection; every request on it is a stream of that connection. A copy because
//! `src/rt.rs` is private (hyper's runtime traits are no part of the crate's API), and not
//! `Connector` because these tests send what it never would: refused requests, raw headers.

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_io::{AsyncRead, AsyncWrite};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::client::conn::http2::SendRequest;
use hyper::rt::ReadBufCursor;

use super::http_client::take_event;
use super::within;

pub struct Io<S>(pub S);

impl<S: AsyncRead + Unpin> hyper::rt::Read for Io<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let mut chunk = [0u8; 16 * 1024];
        let want = buf.remaining().min(chunk.len());
        let n =
            std::task::ready!(Pin::new(&mut self.get_mut().0).poll_read(cx, &mut chunk[..want]))?;
        buf.put_slice(&chunk[..n]);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> hyper::rt::Write for Io<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_close(cx)
    }
}

#[derive(Clone, Copy)]
pub struct Spawn;

impl<F> hyper::rt::Executor<F> for Spawn
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        smol::spawn(future).detach();
    }
}

/// A request body sent whole.
pub struct Full(Option<Bytes>);

impl Body for Full {
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
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

/// One HTTP/2 connection.
#[derive(Clone)]
pub struct H2 {
    send: SendRequest<Full>,
}

impl H2 {
    /// h2c with prior knowledge.
    pub async fn connect(addr: std::net::SocketAddr) -> H2 {
        let tcp = smol::net::TcpStream::connect(addr).await.unwrap();
        H2::over(tcp).await
    }

    /// HTTP/2 over any stream (TLS after ALPN chose `h2`).
    pub async fn over<S>(io: S) -> H2
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send, connection) = hyper::client::conn::http2::handshake(Spawn, Io(io))
            .await
            .unwrap();
        smol::spawn(async move {
            let _ = connection.await;
        })
        .detach();
        H2 { send }
    }

    /// Whether the server closed the connection.
    pub async fn is_closed(&self) -> bool {
        let mut send = self.send.clone();
        send.ready().await.is_err()
    }

    async fn request(
        &self,
        method: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> hyper::Response<Incoming> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri("http://localhost/acp");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = (!body.is_empty()).then(|| Bytes::from(body.to_owned()));
        let request = request.body(Full(body)).unwrap();
        let mut send = self.send.clone();
        within("an HTTP/2 answer", async {
            send.ready().await.unwrap();
            send.send_request(request).await.unwrap()
        })
        .await
    }

    /// Sends one request and reads the whole answer.
    pub async fn send(&self, method: &str, headers: &[(&str, &str)], body: &str) -> Response {
        let (parts, mut incoming) = self.request(method, headers, body).await.into_parts();
        let mut body = Vec::new();
        while let Some(frame) = within("a body", next_frame(&mut incoming)).await {
            if let Ok(data) = frame.unwrap().into_data() {
                body.extend_from_slice(&data);
            }
        }
        Response {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: String::from_utf8(body).unwrap(),
        }
    }

    /// POSTs a JSON body.
    pub async fn post(&self, headers: &[(&str, &str)], body: &str) -> Response {
        let mut all = vec![("Content-Type", "application/json")];
        all.extend_from_slice(headers);
        self.send("POST", &all, body).await
    }

    /// GETs an SSE stream; `status` says whether it opened (200).
    pub async fn sse(&self, headers: &[(&str, &str)]) -> Sse {
        let mut all = vec![("Accept", "text/event-stream")];
        all.extend_from_slice(headers);
        let (parts, body) = self.request("GET", &all, "").await.into_parts();
        Sse {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            text: String::new(),
        }
    }
}

async fn next_frame(body: &mut Incoming) -> Option<Result<Frame<Bytes>, hyper::Error>> {
    poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
}

/// An open SSE stream: a stream of the HTTP/2 connection.
pub struct Sse {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    body: Incoming,
    text: String,
}

impl Sse {
    /// The next event's JSON, skipping comments; `None` when the stream ends.
    pub async fn next(&mut self) -> Option<serde_json::Value> {
        loop {
            if let Some(event) = take_event(&mut self.text) {
                return Some(event);
            }
            match within("SSE data", next_frame(&mut self.body)).await {
                None | Some(Err(_)) => return None,
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.text.push_str(std::str::from_utf8(&data).unwrap());
                    }
                }
            }
        }
    }
}
