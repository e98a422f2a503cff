//! Which HTTP the Streamable HTTP client speaks; both versions are hyper's ([`super::wire`]),
//! and only the connections differ. With the `http2` feature, an `https://` client offers `h2`
//! by ALPN on its first connection and keeps HTTP/2 if the server picks it; an `http://`
//! client speaks h2c only with prior knowledge (a server that speaks only HTTP/1.1 would not
//! understand the preface). Otherwise, and for every server that prefers HTTP/1.1, the POSTs
//! share a kept-alive connection and each SSE stream has one of its own. An HTTP/2 connection
//! that fails is replaced by a new one at the next request, so that the client's tries again
//! (a stream resumed, a POST sent again) do not all meet the dead one.

use std::io;

#[cfg(feature = "http2")]
use std::sync::Mutex;
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
    /// The HTTP/2 connection, once the first request chose it (replaced when it fails).
    #[cfg(feature = "http2")]
    h2: Mutex<Option<H2>>,
    /// Whether the first request has chosen (HTTP/2 is tried once, not per request).
    #[cfg(feature = "http2")]
    chosen: AtomicBool,
}

impl Link {
    pub(crate) fn new(endpoint: Endpoint) -> Link {
        Link {
            endpoint,
            #[cfg(feature = "http2")]
            h2: Mutex::new(None),
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
                *self.h2_slot() = Some(h2);
            }
            if let Some(h2) = self.current_h2().await? {
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
        if let Some(h2) = self.current_h2().await? {
            return h2.open("GET", headers, b"").await;
        }
        wire::open_get(&self.endpoint, headers).await
    }

    #[cfg(feature = "http2")]
    fn h2_slot(&self) -> std::sync::MutexGuard<'_, Option<H2>> {
        self.h2.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The HTTP/2 connection if the first request chose HTTP/2: the current one, or a new one
    /// when it has closed (the network failed, or the server went away).
    #[cfg(feature = "http2")]
    async fn current_h2(&self) -> io::Result<Option<H2>> {
        let Some(h2) = self.h2_slot().clone() else {
            return Ok(None);
        };
        if !h2.is_closed() {
            return Ok(Some(h2));
        }
        let endpoint = &self.endpoint;
        #[cfg(feature = "tls")]
        let offering = endpoint.tls.as_ref().map(|tls| tls.offering_h2());
        #[cfg(feature = "tls")]
        let tls = offering.as_ref();
        #[cfg(not(feature = "tls"))]
        let tls = endpoint.tls.as_ref();
        let socket = NetStream::connect(&endpoint.host, endpoint.port, tls).await?;
        if socket.is_tls() && !socket.negotiated_h2() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "the server no longer offers HTTP/2",
            ));
        }
        let fresh = H2::handshake(socket, endpoint).await?;
        *self.h2_slot() = Some(fresh.clone());
        Ok(Some(fresh))
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
