//! HTTP/2 for the Streamable HTTP client (the `http2` feature): hyper's client on smol through
//! [`rt`](crate::rt). One TCP connection carries the POSTs, the DELETE and every SSE stream,
//! each request a stream of it. Only the bytes differ from HTTP/1.1 ([`super::wire`]): which
//! headers a request carries and what an answer means are decided by `client.rs`.

use std::convert::Infallible;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::client::conn::http2::SendRequest;
use hyper::header::{HeaderName, HeaderValue};

use super::wire::{Answer, Endpoint};
use crate::net::NetStream;
use crate::rt;

/// A request body sent whole (a JSON-RPC message, or nothing).
pub(crate) struct Full(Option<Bytes>);

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

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.as_ref().map_or(0, |d| d.len() as u64))
    }
}

/// One HTTP/2 connection to the server.
#[derive(Clone)]
pub(crate) struct H2 {
    send: SendRequest<Full>,
    /// `scheme://authority/path`: HTTP/2 carries them as pseudo-headers of every request.
    uri: String,
}

impl std::fmt::Debug for H2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2").field("uri", &self.uri).finish()
    }
}

fn invalid(error: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, error.to_string())
}

fn failed(error: hyper::Error) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, error)
}

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
            .max_header_list_size(64 * 1024)
            .handshake(rt::Io::new(stream, Vec::new()))
            .await
            .map_err(failed)?;
        smol::spawn(async move {
            let _ = connection.await;
        })
        .detach();
        Ok(H2 { send, uri })
    }

    async fn request(
        &self,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<hyper::Response<Incoming>> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(self.uri.as_str());
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(invalid)?;
            let value = HeaderValue::from_str(value).map_err(invalid)?;
            request = request.header(name, value);
        }
        let body = (!body.is_empty()).then(|| Bytes::copy_from_slice(body));
        let request = request.body(Full(body)).map_err(invalid)?;
        let mut send = self.send.clone();
        send.ready().await.map_err(failed)?;
        send.send_request(request).await.map_err(failed)
    }

    /// Sends one request; the whole answer, its body at most `endpoint.max_message_size`.
    pub(crate) async fn send(
        &self,
        endpoint: &Endpoint,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<Answer> {
        let (status, headers, mut incoming) = self.open(method, headers, body).await?;
        let mut body = Vec::new();
        while let Some(data) = incoming.next().await {
            body.extend_from_slice(&data?);
            if body.len() > endpoint.max_message_size {
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

    /// Sends one request; its status, its headers and its body as it arrives (an SSE stream).
    pub(crate) async fn open(
        &self,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<(u16, Vec<(String, String)>, H2Body)> {
        let (parts, incoming) = self.request(method, headers, body).await?.into_parts();
        let headers = parts
            .headers
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        Ok((parts.status.as_u16(), headers, H2Body(incoming)))
    }
}

/// An answer's body on its stream.
#[derive(Debug)]
pub(crate) struct H2Body(Incoming);

impl H2Body {
    /// The next piece of the body; `None` at its end. Trailers are skipped.
    pub(crate) async fn next(&mut self) -> Option<io::Result<Vec<u8>>> {
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
