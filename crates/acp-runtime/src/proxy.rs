//! The proxy role of proxy chains (feature `unstable-proxy-chains`): a component between the
//! client and the agent, run by a conductor ([`crate::conductor`]), that forwards everything
//! both ways except what it intercepts.
//!
//! A proxy has one connection, to its conductor. What comes in raw is from its predecessor
//! (the client side); what comes in a `proxy/successor` envelope is from its successor (the
//! agent side). By default a message from one neighbour goes to the other: raw messages are
//! wrapped and sent on, envelopes opened and sent back raw, `proxy/initialize` is forwarded
//! as `initialize`, and answers come back unchanged. [`ProxyBuilder`] adds typed hooks for
//! what the proxy intercepts; a hook reaches both neighbours through [`ProxyContext`].
//!
//! The runtime keeps the rules:
//!
//! - Order: messages are forwarded in the order they arrived (a hook starts only after
//!   everything before it was forwarded); updates are written before the answer they precede.
//! - Every request is answered once: with its hook's answer, or the neighbour's, verbatim.
//! - Cancellation is per hop: a `$/cancel_request` from the conductor drops the handler, and
//!   with it the request it forwarded, which the conductor then gets its own cancellation for.
//! - `proxy/initialize` is answered only after an `initialize` went to the successor, and
//!   with the successor's `protocolVersion` (`-32603` otherwise); a plain `initialize` and
//!   an envelope inside an envelope are `-32600`.
//! - Memory is bounded as on any connection (docs/limits.md): forwarded answers reserve room
//!   in the reply budget, forwarded messages wait for room in the outgoing queue.
//! - A notification no hook takes is forwarded byte for byte with its params unread (only its
//!   envelope is read): malformed params are reported by the peer that decodes them, a
//!   malformed envelope by the proxy.
//!
//! A proxy served with [`serve`] forwards whatever protocol version its chain speaks; its hooks
//! decode the messages of one version. With protocol v2 (feature `unstable-protocol-v2`),
//! `router::proxy_router()` serves a proxy whose hooks take v1's messages as v1-only (a v2
//! chain is answered as v1), one whose hooks take v2's as v2-only, or one of each.
//!
//! ```
//! use acp_runtime::prelude::*;
//! use acp_runtime::proxy::{self, Proxy, ProxyContext};
//!
//! // Allows every permission request once, without asking the client.
//! let proxy = Proxy::builder()
//!     .on_agent_request(|_cx: ProxyContext, request: RequestPermissionRequest| async move {
//!         let option = request
//!             .options
//!             .iter()
//!             .find(|option| option.kind == PermissionOptionKind::AllowOnce)
//!             .ok_or_else(|| Error::invalid_params("no allow-once option"))?;
//!         Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
//!             SelectedPermissionOutcome::new(option.option_id.clone()),
//!         )))
//!     })
//!     .build();
//! // In `main`: proxy::serve_stdio(proxy)
//! # let _ = proxy;
//! ```

use std::future::Future;
use std::sync::Arc;

use acp_jsonrpc::{Connection, ConnectionError, ConnectionOptions};
use futures_lite::{AsyncBufRead, AsyncWrite};

pub(crate) mod context;
mod dispatch;
pub(crate) mod envelope;
mod hooks;
pub(crate) mod order;

pub use context::{Predecessor, ProxyContext, Successor};
use dispatch::ProxyDispatch;
pub use hooks::{Proxy, ProxyBuilder};

/// Serves `proxy` over a reader and a writer (its conductor's pipes). Returns its context (to
/// call either neighbour from outside a hook) and the connection's driver, which must be
/// polled for anything to happen; it resolves when the conductor closes the connection.
///
/// ```
/// use acp_runtime::proxy::{self, Proxy};
/// use acp_runtime::acp_jsonrpc::{ConnectionOptions, memory};
///
/// let (_conductor_end, proxy_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
/// let (_cx, driver) = proxy::serve(
///     Proxy::pass_through(),
///     proxy_end.reader,
///     proxy_end.writer,
///     ConnectionOptions::default(),
/// );
/// # drop(driver);
/// ```
pub fn serve<R, W>(
    proxy: Proxy,
    reader: R,
    writer: W,
    options: ConnectionOptions,
) -> (
    ProxyContext,
    impl Future<Output = Result<(), ConnectionError>> + Send + use<R, W>,
)
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let state = Arc::new(context::ProxyState::default());
    let dispatch = ProxyDispatch {
        proxy,
        state: state.clone(),
        order: Arc::default(),
        relays: Arc::new(dispatch::RelayBack),
    };
    let (rpc, driver) = Connection::new(reader, writer, dispatch, options);
    (ProxyContext { rpc, state }, driver)
}

/// Serves `proxy` on this process's stdin and stdout until the conductor closes stdin. Runs
/// the connection on the calling thread.
pub fn serve_stdio(proxy: Proxy) -> std::io::Result<()> {
    serve_stdio_with(proxy, ConnectionOptions::default())
}

/// [`serve_stdio`] with options.
///
/// ```no_run
/// use acp_runtime::acp_jsonrpc::ConnectionOptions;
/// use acp_runtime::proxy::{self, Proxy};
///
/// fn main() -> std::io::Result<()> {
///     // A pass-through that reads lines of at most 1 MiB.
///     let options = ConnectionOptions::default().with_max_line_length(1 << 20);
///     proxy::serve_stdio_with(Proxy::pass_through(), options)
/// }
/// ```
pub fn serve_stdio_with(proxy: Proxy, options: ConnectionOptions) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some((pipes, reader, writer)) = crate::stdio::pipes()? {
        let (_cx, driver) = serve(proxy, reader, writer, options);
        return crate::stdio::run_on_pipes(&pipes, driver);
    }
    let (reader, writer) = crate::stdio::stdio()?;
    let (_cx, driver) = serve(proxy, reader, writer, options);
    crate::stdio::ended(smol::block_on(driver))
}
