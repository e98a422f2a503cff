//! [`Connection`]: starts a connection over a reader and a writer, giving
//! back the handle and the driver. Apart from `connection.rs` because the
//! handler module needs the handle, and this needs the handler traits.

use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;

use futures_io::{AsyncBufRead, AsyncWrite};

use crate::ConnectionError;
use crate::connection::{ConnectionHandle, ConnectionOptions};
use crate::driver::Driver;
use crate::handler::{Handler, LocalHandler, RawNotification, RawRequest};

/// Creates connections. See the [crate documentation](crate) for the whole
/// picture, including what closing and dropping do.
#[derive(Debug)]
pub enum Connection {}

impl Connection {
    /// Starts a connection over `reader` and `writer`, answering the peer
    /// with `handler`.
    ///
    /// Returns the handle to send with, and the driver: the one future that
    /// reads, writes and runs the handlers. Nothing happens until it is
    /// polled; poll it on any executor (it is `Send` when `reader`,
    /// `writer` and the handler are). It resolves when the connection is
    /// over: `Ok(())` after the peer closed its side or
    /// [`ConnectionHandle::close`] was called, `Err` on an I/O error.
    ///
    /// For `reader`, wrap a plain `AsyncRead` in
    /// [`futures_lite::io::BufReader`].
    #[expect(
        clippy::new_ret_no_self,
        reason = "a connection is a handle plus its driver; there is no `Connection` value"
    )]
    pub fn new<R, W, H>(
        reader: R,
        writer: W,
        handler: H,
        options: ConnectionOptions,
    ) -> (
        ConnectionHandle,
        impl Future<Output = Result<(), ConnectionError>> + use<R, W, H>,
    )
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin,
        H: Handler,
    {
        let handler = Arc::new(handler);
        let for_notifications = handler.clone();
        let for_forwarding = handler.clone();
        let for_requests = handler.clone();
        let for_relays = handler.clone();
        Driver::start(
            reader,
            writer,
            options,
            move |request, responder, guard| {
                let handler = handler.clone();
                guard.run(async move { Handler::request(&*handler, request, responder).await })
            },
            move |notification| {
                let handler = for_notifications.clone();
                async move { Handler::notification(&*handler, notification).await }
            },
            (
                move |notification: &RawNotification<'_>| {
                    Handler::forward_notification(&*for_forwarding, notification)
                },
                move |request: &RawRequest<'_>| Handler::takes_unread(&*for_requests, request),
                move |request: &RawRequest<'_>, responder| {
                    Handler::relay_request(&*for_relays, request, responder)
                },
            ),
            H::FORWARDS,
        )
    }

    /// Like [`new`](Self::new), for a handler whose futures are not `Send`.
    /// The driver is then not `Send` either: run it on a local executor or
    /// with `block_on`.
    pub fn new_local<R, W, H>(
        reader: R,
        writer: W,
        handler: H,
        options: ConnectionOptions,
    ) -> (
        ConnectionHandle,
        impl Future<Output = Result<(), ConnectionError>> + use<R, W, H>,
    )
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin,
        H: LocalHandler,
    {
        let handler = Rc::new(handler);
        let for_notifications = handler.clone();
        let for_forwarding = handler.clone();
        let for_requests = handler.clone();
        let for_relays = handler.clone();
        Driver::start(
            reader,
            writer,
            options,
            move |request, responder, guard| {
                let handler = handler.clone();
                guard.run(async move { LocalHandler::request(&*handler, request, responder).await })
            },
            move |notification| {
                let handler = for_notifications.clone();
                async move { LocalHandler::notification(&*handler, notification).await }
            },
            (
                move |notification: &RawNotification<'_>| {
                    LocalHandler::forward_notification(&*for_forwarding, notification)
                },
                move |request: &RawRequest<'_>| LocalHandler::takes_unread(&*for_requests, request),
                move |request: &RawRequest<'_>, responder| {
                    LocalHandler::relay_request(&*for_relays, request, responder)
                },
            ),
            <H as LocalHandler>::FORWARDS,
        )
    }
}
