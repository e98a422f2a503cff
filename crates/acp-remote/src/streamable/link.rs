//! Which HTTP the Streamable HTTP client speaks; both versions are hyper's ([`super::wire`]),
//! and only the connections differ. With the `http2` feature, an `https://` client offers `h2`
//! by ALPN on its first connection and keeps HTTP/2 if the server picks it; an `http://`
//! client speaks h2c only with prior knowledge (a server that speaks only HTTP/1.1 would not
//! understand the preface). Otherwise, and for every server that prefers HTTP/1.1, the POSTs
//! share a kept-alive connection and each SSE stream has one of its own.

use std::io;

#[cfg(feature = "http2")]
use std::sync::OnceLock;
#[cfg(feature = "http2")]
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(feature = "http2")]
use super::wire::H2;
use super::wire::{self, Answer, Body, Endpoint, Poster};
#[cfg(feature = "http2")]
use crate::net::NetStream;

/// How a client connection's requests reach the server.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) endpoint: Endpoint,
    /// The HTTP/2 connection, once the first request chose it.
    #[cfg(feature = "http2")]
    h2: OnceLock<H2>,
    /// Whether the first request has chosen (HTTP/2 is tried once, not per request).
    #[cfg(feature = "http2")]
    chosen: AtomicBool,
}

impl Link {
    pub(crate) fn new(endpoint: Endpoint) -> Link {
        Link {
            endpoint,
            #[cfg(feature = "http2")]
            h2: OnceLock::new(),
            #[cfg(feature = "http2")]
            chosen: AtomicBool::new(false),
        }
    }

    /// Sends a POST or DELETE; the whole answer. `poster` carries HTTP/1.1's kept-alive
    /// connection (the sender's, so that requests go out one after the other).
    pub(crate) async fn send(
        &self,
        poster: &mut Poster,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<Answer> {
        #[cfg(feature = "http2")]
        {
            if !self.chosen.swap(true, Ordering::SeqCst)
                && let Some(h2) = self.choose(poster).await?
            {
                let _ = self.h2.set(h2);
            }
            if let Some(h2) = self.h2.get() {
                return h2.send(&self.endpoint, method, headers, body).await;
            }
        }
        poster.send(&self.endpoint, method, headers, body).await
    }

    /// Opens a GET (an SSE stream); its status, headers and body.
    pub(crate) async fn open_get(
        &self,
        headers: &[(String, String)],
    ) -> io::Result<(u16, Vec<(String, String)>, Body)> {
        #[cfg(feature = "http2")]
        if let Some(h2) = self.h2.get() {
            return h2.open("GET", headers, b"").await;
        }
        wire::open_get(&self.endpoint, headers).await
    }

    /// Connects for the first request: HTTP/2 if ALPN chose `h2` or the client has prior
    /// knowledge; otherwise the socket carries HTTP/1.1 as the kept-alive connection (`None`).
    #[cfg(feature = "http2")]
    async fn choose(&self, poster: &mut Poster) -> io::Result<Option<H2>> {
        let endpoint = &self.endpoint;
        let socket = match &endpoint.tls {
            #[cfg(feature = "tls")]
            Some(tls) => {
                let offering = tls.offering_h2();
                NetStream::connect(&endpoint.host, endpoint.port, Some(&offering)).await?
            }
            #[cfg(not(feature = "tls"))]
            Some(never) => match *never {},
            None if endpoint.http2_prior_knowledge => {
                NetStream::connect(&endpoint.host, endpoint.port, None).await?
            }
            None => return Ok(None),
        };
        if socket.is_tls() && !socket.negotiated_h2() {
            poster.keep(wire::http1(socket).await?);
            return Ok(None);
        }
        H2::handshake(socket, endpoint).await.map(Some)
    }
}
