//! The proxy-side protocol router (features `unstable-protocol-v2` and `unstable-proxy-chains`):
//! one proxy endpoint serving a v1 [`Proxy`], a v2 [`Proxy`] or both, picking the version per
//! connection from the conductor's first `proxy/initialize`, by the agent router's rules.

use acp_jsonrpc::{ConnectionError, ConnectionOptions};
use futures_lite::{AsyncBufRead, AsyncWrite};

use super::first_frame::{Sides, first_initialize};
use crate::proxy::{self, Proxy};
use crate::rules::ServedVersion as Side;

/// The method that picks the version on a proxy's connection.
const PROXY_INITIALIZE: &str = "proxy/initialize";

/// A proxy router with no side yet; add them with [`ProxyRouter::with_v1`] and
/// [`ProxyRouter::with_v2`].
///
/// ```
/// use acp_runtime::proxy::Proxy;
/// use acp_runtime::router::proxy_router;
///
/// // A proxy that forwards both versions (it has no hooks, so it reads no message's params),
/// // and one whose hooks are typed with v1's messages: a v2 chain is answered as v1.
/// let both = proxy_router().with_v1(Proxy::pass_through()).with_v2(Proxy::pass_through());
/// let v1_only = proxy_router().with_v1(Proxy::pass_through());
/// // In `main`: both.serve_stdio()
/// # let _ = (both, v1_only);
/// ```
pub fn proxy_router() -> ProxyRouter {
    ProxyRouter {
        v1: None,
        v2: None,
        options: ConnectionOptions::default(),
    }
}

/// Serves each conductor connection with the proxy its `proxy/initialize` asks for. The rules
/// are [`Router::serve`](super::Router::serve)'s with `proxy/initialize` for `initialize`:
///
/// - lines are read until a `proxy/initialize` request; notifications and responses before it
///   are ignored, a malformed line gets `-32700`/`-32600` with id `null`, another request
///   (a plain `initialize` included) `-32600` with its id, a `protocolVersion` that is not a
///   version number `-32602`, a version no side serves `-32022` with data
///   `{requested, supported}`, and the connection stays open each time;
/// - `protocolVersion` 2 or more goes to the v2 side when there is one (a higher request
///   rewritten to 2), everything else to the v1 side; a v2 request taken by a v1-only router
///   has its params normalized to v1, so the v1 proxy forwards a v1 `initialize` to its
///   successor and the chain is answered as v1 (what upstream's `Proxy.v1()` does);
/// - the chosen proxy gets the connection whole, starting with that `proxy/initialize`: a
///   repeated one is the chosen side's, never routed again. The v2 side refuses `null`
///   request ids (`-32600`).
#[derive(Debug)]
pub struct ProxyRouter {
    v1: Option<Proxy>,
    v2: Option<Proxy>,
    options: ConnectionOptions,
}

impl ProxyRouter {
    /// Serves version 1 (every request below 2, and above 2 when there is no v2 side) with
    /// `proxy`.
    pub fn with_v1(mut self, proxy: Proxy) -> Self {
        self.v1 = Some(proxy);
        self
    }

    /// Serves version 2 with `proxy`, on a connection that refuses `null` request ids. Its
    /// hooks, if any, take v2's messages (`acp_types::v2`).
    pub fn with_v2(mut self, proxy: Proxy) -> Self {
        self.v2 = Some(proxy);
        self
    }

    /// The options of the connection to the conductor, whichever side serves it (`null`
    /// request ids are refused on v2 whatever they say).
    pub fn with_options(mut self, options: ConnectionOptions) -> Self {
        self.options = options;
        self
    }

    /// Serves one conductor connection: reads until `proxy/initialize`, answers what comes
    /// before it, and hands the connection to the chosen proxy, whose driver it then is.
    /// Resolves when the conductor closed the connection, or with the error that ended it.
    pub async fn serve<R, W>(self, reader: R, mut writer: W) -> Result<(), ConnectionError>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let sides = Sides {
            v1: self.v1.is_some(),
            v2: self.v2.is_some(),
        };
        let max_line_length = self.options.max_line_length();
        let Some((side, reader)) = first_initialize(
            reader,
            &mut writer,
            PROXY_INITIALIZE,
            sides,
            max_line_length,
        )
        .await?
        else {
            return Ok(());
        };
        let (proxy, options) = match (side, self.v1, self.v2) {
            (Side::V2, _, Some(proxy)) => (proxy, self.options.with_null_request_ids_refused(true)),
            (Side::V1, Some(proxy), _) => (proxy, self.options),
            // `first_initialize` picks only a present side.
            _ => return Ok(()),
        };
        let (_cx, driver) = proxy::serve(proxy, reader, writer, options);
        driver.await
    }

    /// Serves one conductor connection on this process's stdin and stdout until the
    /// conductor closes stdin; runs it on the calling thread.
    pub fn serve_stdio(self) -> std::io::Result<()> {
        let (reader, writer) = crate::stdio::stdio()?;
        crate::stdio::ended(smol::block_on(self.serve(reader, writer)))
    }
}
