//! What the application implements to answer the peer ([`Handler`], or [`LocalHandler`] for
//! futures that are not `Send`), and the [`Responder`] each request is answered through, which
//! can [`reserve`](Responder::reserve) room for a large answer before producing it.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::json::{CarriedMessage, UncheckedJson};
use crate::message::{decode_params, encode_error, encode_result, encode_typed_result};
use crate::shared::{RequestState, Shared};
use crate::{
    ConnectionHandle, ForwardedResult, Notification, Problem, Request, RequestId, ResponseError,
};

/// Answers the peer's requests and notifications. For handlers whose
/// futures are `Send`; see [`LocalHandler`] for the others.
///
/// # Requests
///
/// [`request`](Self::request) is called in arrival order, and the returned
/// futures run concurrently inside the connection's driver (at most
/// [`ConnectionOptions::with_max_in_flight_requests`](crate::ConnectionOptions::with_max_in_flight_requests)
/// at a time; the connection refuses further requests itself). The
/// [`Responder`] sends the one response; if it is dropped unanswered — the
/// handler returned early, panicked, or was cancelled — the connection
/// answers for it (`-32603`, or `-32800` after a `$/cancel_request`).
///
/// A handler whose answer is large (megabytes) should call
/// [`Responder::reserve`] before producing it, so that a peer slow to read
/// makes it wait instead of growing memory.
///
/// **Cancellation** is dropping: when the peer cancels a request with
/// `$/cancel_request`, the handler's future is dropped at its current
/// `.await`. Code that must run to completion belongs in a task of its own,
/// which can watch [`Responder::is_cancelled`].
///
/// # Notifications
///
/// [`notification`](Self::notification) is called in arrival order, and
/// each returned future finishes before the next message from the peer is
/// even read. So a notification is fully handled before any later
/// notification, and before a later response reaches the request that
/// waits for it.
///
/// The flip side: a notification handler **must not wait for the peer**
/// (for example by awaiting a request to it): the peer's answer cannot be
/// read until the handler returns, so the connection would stall. Spawn
/// such work, or queue it, instead. Sending notifications (awaiting
/// [`ConnectionHandle::notify`]) is fine.
///
/// # Example
///
/// ```
/// use acp_jsonrpc::{Handler, IncomingRequest, Responder};
///
/// struct Calculator;
///
/// impl Handler for Calculator {
///     async fn request(&self, request: IncomingRequest, responder: Responder) {
///         match request.method() {
///             "add" => responder.respond(request.params::<(i64, i64)>().map(|(a, b)| a + b)),
///             _ => responder.respond_error(request.method_not_found()),
///         }
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Handles one request. The default answers `-32601 Method not found`.
    fn request(
        &self,
        request: IncomingRequest,
        responder: Responder,
    ) -> impl Future<Output = ()> + Send {
        async move { responder.respond_error(request.method_not_found()) }
    }

    /// Handles one notification. The default reports it as unhandled to
    /// the observer.
    fn notification(&self, notification: IncomingNotification) -> impl Future<Output = ()> + Send {
        async move { notification.report_unhandled("no handler for notifications") }
    }

    /// Whether [`forward_notification`](Self::forward_notification) may take notifications:
    /// set it to `true` where that method is implemented. The connection then reads each
    /// notification's envelope without validating its params (a router copies them unread,
    /// and the peer that decodes them answers what is wrong with them) and offers it to
    /// `forward_notification` first. `false` (the default): every line is validated whole
    /// and `forward_notification` is never called.
    const FORWARDS: bool = false;

    /// The forwarding path, for routers (a conductor, a proxy) that set
    /// [`FORWARDS`](Self::FORWARDS): offered every notification (but `$/cancel_request`) as
    /// it is read, borrowed from the line, before it is validated or becomes an
    /// [`IncomingNotification`]; its params are [`UncheckedJson`], found but not read.
    /// Return `true` when it was taken care of, typically queued on another connection with
    /// [`ConnectionHandle::try_notify_raw`] or [`ConnectionHandle::try_notify_wrapped`]: it
    /// is then never validated, decoded or copied, and
    /// [`notification`](Self::notification) is not called for it. Return `false` to have it
    /// handled as usual (validated, and answered if malformed): it must then not have been
    /// acted on. The default returns `false`.
    ///
    /// It runs inside the connection's driver and must not block. It runs after every
    /// earlier request's handler started (was polled once) and before any later message is
    /// read, so a router keeps arrival order by forwarding here only when nothing earlier
    /// waits to be forwarded.
    fn forward_notification(&self, notification: &RawNotification<'_>) -> bool {
        let _ = notification;
        false
    }

    /// For routers that set [`FORWARDS`](Self::FORWARDS): offered every request read in the
    /// usual spelling (`{"jsonrpc":"2.0","id":N,"method":"…","params":…}`, `N` a non-negative
    /// integer), borrowed from the line before it is validated. Return `true` to have it handed
    /// to [`request`](Self::request) with its params unread
    /// ([`IncomingRequest::is_unread`]: only [`IncomingRequest::unchecked_params`] and
    /// [`IncomingRequest::carried`] see them; [`IncomingRequest::raw_params`] is `None`),
    /// typically to forward them with
    /// [`ConnectionHandle::send_request_forwarded`]: params that are not valid JSON are then
    /// answered by the peer that decodes them (docs/limits.md, "What a router forwards
    /// unread"). Return `false` (the default) for a request the handler reads itself: it is
    /// validated whole, as any other. The connection's checks (duplicate ids, the in-flight
    /// limits, `$/cancel_request`, one answer per request) apply either way.
    ///
    /// It runs inside the connection's driver and must not block.
    fn takes_unread(&self, request: &RawRequest<'_>) -> bool {
        let _ = request;
        false
    }

    /// For routers that set [`FORWARDS`](Self::FORWARDS): offered each request
    /// [`takes_unread`](Self::takes_unread) took, once the connection accepted it, before a
    /// task is made for it. Relay it with [`ConnectionHandle::try_relay_request`] (or
    /// [`try_relay_request_wrapped`](ConnectionHandle::try_relay_request_wrapped)) and return
    /// `Ok(())`: no task runs for it, and its answer goes back from the driver that reads it.
    /// Return `Err(responder)` (the default) to have it handled by
    /// [`request`](Self::request), unread, as usual.
    ///
    /// It runs inside the connection's driver and must not block. Every earlier request's
    /// handler has started (was polled once) when it runs, so a router keeps arrival order by
    /// relaying here only when nothing earlier waits to be forwarded.
    fn relay_request(
        &self,
        request: &RawRequest<'_>,
        responder: Responder,
    ) -> Result<(), Responder> {
        let _ = request;
        Err(responder)
    }
}

/// [`Handler`] for single-threaded code: the same contract, but neither
/// the handler nor its futures need to be `Send` (an `Rc`, a `RefCell`, a
/// `!Send` client library…). Use it with
/// [`Connection::new_local`](crate::Connection::new_local) and drive the
/// connection on a local executor or with a plain `block_on`.
///
/// Every [`Handler`] is also a `LocalHandler`.
pub trait LocalHandler: 'static {
    /// Handles one request; see [`Handler::request`].
    fn request(&self, request: IncomingRequest, responder: Responder) -> impl Future<Output = ()> {
        async move { responder.respond_error(request.method_not_found()) }
    }

    /// Handles one notification; see [`Handler::notification`].
    fn notification(&self, notification: IncomingNotification) -> impl Future<Output = ()> {
        async move { notification.report_unhandled("no handler for notifications") }
    }

    /// Whether the forwarding path is on; see [`Handler::FORWARDS`].
    const FORWARDS: bool = false;

    /// The forwarding path; see [`Handler::forward_notification`].
    fn forward_notification(&self, notification: &RawNotification<'_>) -> bool {
        let _ = notification;
        false
    }

    /// Whether a request is taken with its params unread; see [`Handler::takes_unread`].
    fn takes_unread(&self, request: &RawRequest<'_>) -> bool {
        let _ = request;
        false
    }

    /// Relays a request without a task; see [`Handler::relay_request`].
    fn relay_request(
        &self,
        request: &RawRequest<'_>,
        responder: Responder,
    ) -> Result<(), Responder> {
        let _ = request;
        Err(responder)
    }
}

impl<H: Handler> LocalHandler for H {
    const FORWARDS: bool = H::FORWARDS;

    fn request(&self, request: IncomingRequest, responder: Responder) -> impl Future<Output = ()> {
        Handler::request(self, request, responder)
    }

    fn notification(&self, notification: IncomingNotification) -> impl Future<Output = ()> {
        Handler::notification(self, notification)
    }

    fn forward_notification(&self, notification: &RawNotification<'_>) -> bool {
        Handler::forward_notification(self, notification)
    }

    fn takes_unread(&self, request: &RawRequest<'_>) -> bool {
        Handler::takes_unread(self, request)
    }

    fn relay_request(
        &self,
        request: &RawRequest<'_>,
        responder: Responder,
    ) -> Result<(), Responder> {
        Handler::relay_request(self, request, responder)
    }
}

/// The unit handler answers every request with `-32601` and reports every
/// notification as unhandled: for a side that only makes calls.
impl Handler for () {}

/// A request from the peer.
pub struct IncomingRequest {
    /// Its params `None` when they came unread.
    pub(crate) request: Request,
    /// The params as they were on the line, unread, for a request the handler took unread
    /// ([`Handler::takes_unread`]); `None` otherwise.
    pub(crate) unread: Option<Box<[u8]>>,
    pub(crate) connection: ConnectionHandle,
}

impl IncomingRequest {
    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.request.id
    }

    /// The method called.
    pub fn method(&self) -> &str {
        &self.request.method
    }

    /// The params as raw JSON; `None` when absent, and for a request taken unread
    /// ([`is_unread`](Self::is_unread)), whose params were never checked: see
    /// [`unchecked_params`](Self::unchecked_params).
    pub fn raw_params(&self) -> Option<&RawValue> {
        self.request.params.as_deref()
    }

    /// Whether the handler took this request with its params unread
    /// ([`Handler::takes_unread`]).
    pub fn is_unread(&self) -> bool {
        self.unread.is_some()
    }

    /// The params as the peer wrote them, read or not; `None` when absent.
    pub fn unchecked_params(&self) -> Option<UncheckedJson<'_>> {
        match &self.unread {
            Some(bytes) => Some(UncheckedJson::on_line(bytes)),
            None => self.raw_params().map(UncheckedJson::from),
        }
    }

    /// The message the params carry (`{"method":…,"params":…}`, as ACP's `proxy/successor`
    /// carries one), read as [`RawNotification::carried`] reads it; `None` when the params
    /// carry none that walk can read.
    pub fn carried(&self) -> Option<CarriedMessage<'_>> {
        crate::json::carried_in(self.unchecked_params()?)
    }

    /// Decodes the params (absent params decode as `null`); unread ones are validated here.
    ///
    /// The error is the ready-made answer: `-32602 Invalid params` with the
    /// decode error's text as data.
    pub fn params<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ResponseError> {
        match &self.unread {
            Some(bytes) => serde_json::from_slice(bytes),
            None => decode_params(self.raw_params()),
        }
        .map_err(ResponseError::invalid_params)
    }

    /// `-32601 Method not found` for this request's method.
    pub fn method_not_found(&self) -> ResponseError {
        ResponseError::method_not_found(self.method())
    }

    /// The connection the request came from, to call the peer back.
    pub fn connection(&self) -> &ConnectionHandle {
        &self.connection
    }

    /// The request as a plain message. The params of a request taken unread are checked here:
    /// if they are not valid JSON (or not UTF-8), the error is the ready-made answer, `-32700`
    /// naming what is wrong, as the validating decode answers such a line under its id.
    pub fn into_request(self) -> Result<Request, ResponseError> {
        let mut request = self.request;
        if let Some(bytes) = self.unread {
            let text = String::from_utf8(bytes.into_vec()).map_err(ResponseError::parse_error)?;
            request.params = Some(RawValue::from_string(text).map_err(ResponseError::parse_error)?);
        }
        Ok(request)
    }
}

impl fmt::Debug for IncomingRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IncomingRequest")
            .field("id", &self.request.id)
            .field("method", &self.request.method)
            .field("params", &self.unchecked_params())
            .finish_non_exhaustive()
    }
}

/// A request from the peer as [`Handler::takes_unread`] sees it: its id and method read, its
/// params found but not read ([`UncheckedJson`]), all borrowed from the line just read.
#[derive(Debug, Clone, Copy)]
pub struct RawRequest<'a> {
    pub(crate) id: i64,
    pub(crate) message: RawNotification<'a>,
}

impl<'a> RawRequest<'a> {
    /// The request's id (the usual spelling's ids are non-negative integers).
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The method called.
    pub fn method(&self) -> &'a str {
        self.message.method
    }

    /// The params, unread (`null` included).
    pub fn params(&self) -> Option<UncheckedJson<'a>> {
        self.message.params
    }

    /// The message the params carry; see [`RawNotification::carried`].
    pub fn carried(&self) -> Option<CarriedMessage<'a>> {
        self.message.carried()
    }

    /// The connection the request came from.
    pub fn connection(&self) -> &'a ConnectionHandle {
        self.message.connection
    }
}

/// A notification from the peer as the forwarding path sees it
/// ([`Handler::forward_notification`]): its method read, its params found but not read
/// ([`UncheckedJson`]: possibly not even valid JSON, which the peer that decodes them answers),
/// all borrowed from the line just read.
#[derive(Debug, Clone, Copy)]
pub struct RawNotification<'a> {
    pub(crate) method: &'a str,
    pub(crate) params: Option<UncheckedJson<'a>>,
    /// Found on the way by the usual spelling's scan; else walked when asked.
    pub(crate) carried: Option<CarriedMessage<'a>>,
    pub(crate) connection: &'a ConnectionHandle,
}

impl<'a> RawNotification<'a> {
    /// The method called.
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The params, unread (`null` included); `None` when absent.
    pub fn params(&self) -> Option<UncheckedJson<'a>> {
        self.params
    }

    /// The message the params carry, when they are an object with a `method` string without
    /// escapes and neither `method` nor `params` twice (`{"method":…,"params":…}`, as ACP's
    /// `proxy/successor` carries one); its params unread. `None` otherwise: a router that
    /// needs it then declines, and the notification is validated and handled as usual. Found
    /// in the same pass as the envelope when spelled `{"method":"…","params":…}`, else when
    /// called, by a walk of the params' members (the envelope's scan skipped them whole): call
    /// it once, and only for a notification that may carry one.
    pub fn carried(&self) -> Option<CarriedMessage<'a>> {
        self.carried
            .or_else(|| self.params.and_then(crate::json::carried_in))
    }

    /// The connection the notification came from.
    pub fn connection(&self) -> &'a ConnectionHandle {
        self.connection
    }
}

/// A notification from the peer.
pub struct IncomingNotification {
    pub(crate) notification: Notification,
    pub(crate) connection: ConnectionHandle,
}

impl IncomingNotification {
    /// The method called.
    pub fn method(&self) -> &str {
        &self.notification.method
    }

    /// The params as raw JSON; `None` when absent.
    pub fn raw_params(&self) -> Option<&RawValue> {
        self.notification.params.as_deref()
    }

    /// Decodes the params (absent params decode as `null`).
    pub fn params<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        decode_params(self.raw_params())
    }

    /// Tells the connection's observer this notification was not handled
    /// (unknown method, params that did not decode). The peer is never
    /// told: notifications are not answered.
    pub fn report_unhandled(&self, reason: impl fmt::Display) {
        self.connection.report(Problem::UnhandledNotification {
            method: self.notification.method.clone(),
            reason: reason.to_string(),
        });
    }

    /// The connection the notification came from.
    pub fn connection(&self) -> &ConnectionHandle {
        &self.connection
    }

    /// The notification as a plain message.
    pub fn into_notification(self) -> Notification {
        self.notification
    }
}

impl fmt::Debug for IncomingNotification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IncomingNotification")
            .field("method", &self.notification.method)
            .field("params", &self.notification.params)
            .finish_non_exhaustive()
    }
}

/// Sends the one response to an incoming request.
///
/// Consumed by [`respond`](Self::respond) and its variants. Dropped
/// without answering, it answers by itself:
///
/// - `-32800 Request cancelled` when the peer cancelled the request with
///   `$/cancel_request`;
/// - `-32603 Internal error` otherwise (the handler returned without
///   answering, or panicked).
///
/// A responder is `Send` and `'static`: it can be moved to another task or
/// thread and answer from there. It does not keep the connection open.
pub struct Responder {
    id: RequestId,
    shared: Arc<Shared>,
    state: Arc<RequestState>,
    /// Reply room held by [`reserve`](Self::reserve), given back when the
    /// answer is queued.
    reserved: usize,
    answered: bool,
}

impl Responder {
    pub(crate) fn new(id: RequestId, shared: Arc<Shared>, state: Arc<RequestState>) -> Self {
        Responder {
            id,
            shared,
            state,
            reserved: 0,
            answered: false,
        }
    }

    /// The id of the request this answers.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Whether the peer cancelled the request. A handler running inside
    /// the connection is simply dropped on cancellation; this is for work
    /// that moved the responder elsewhere.
    pub fn is_cancelled(&self) -> bool {
        self.state.cancelled.load(Ordering::Acquire)
    }

    /// Waits until the connection's reply budget
    /// ([`ConnectionOptions::with_reply_budget`](crate::ConnectionOptions::with_reply_budget))
    /// has room for `bytes` more, and holds that room until this responder
    /// answers or is dropped.
    ///
    /// For handlers whose answers are large (a file's contents): call it with
    /// the expected size of the answer *before* producing it, so that many
    /// such handlers for a peer that reads slowly wait here instead of each
    /// holding a large answer in memory. The answer may turn out larger or
    /// smaller than reserved; the room is given back all the same.
    ///
    /// - Room is granted in the order it was asked for, as the peer reads
    ///   queued answers. A reservation larger than the whole budget is
    ///   granted once nothing else is queued or reserved, so it still goes
    ///   out, alone.
    /// - Calls add up; reserve the whole size at once where possible (two
    ///   responders each holding room and asking for more can wait for each
    ///   other).
    /// - Dropping the future before it resolves takes nothing.
    /// - Once the connection is closed it resolves at once (the answer will
    ///   not be sent anyway).
    pub async fn reserve(&mut self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.shared.reserve_reply_room(bytes, self.reserved).await;
        self.reserved += bytes;
    }

    /// Answers with `result` serialized as JSON, or with the error.
    ///
    /// A result that fails to serialize is answered with `-32603` and the
    /// serialization error as data.
    pub fn respond<T: Serialize>(self, result: Result<T, ResponseError>) {
        match result {
            Ok(value) => self.respond_ok(&value),
            Err(error) => self.respond_error(error),
        }
    }

    /// Answers with a result.
    pub fn respond_ok<T: Serialize + ?Sized>(mut self, result: &T) {
        let mut bytes = self.shared.take_buffer();
        match encode_typed_result(&mut bytes, &self.id, result) {
            Ok(()) => self.send(bytes, None),
            Err(error) => {
                let error = ResponseError::internal_error(format_args!(
                    "could not serialize the result: {error}"
                ));
                encode_error(&mut bytes, &self.id, &error);
                self.send(bytes, Some(&error));
            }
        }
    }

    /// Answers with an error.
    pub fn respond_error(mut self, error: ResponseError) {
        let mut bytes = self.shared.take_buffer();
        encode_error(&mut bytes, &self.id, &error);
        self.send(bytes, Some(&error));
    }

    /// Answers with a result that is already JSON, or with the error.
    pub fn respond_raw(mut self, result: Result<&RawValue, ResponseError>) {
        let mut bytes = self.shared.take_buffer();
        match result {
            Ok(raw) => {
                encode_result(&mut bytes, &self.id, raw.into());
                self.send(bytes, None);
            }
            Err(error) => {
                encode_error(&mut bytes, &self.id, &error);
                self.send(bytes, Some(&error));
            }
        }
    }

    /// Answers with the result of the request this one was forwarded as, spliced in unread
    /// (the forwarding path's counterpart of [`respond_raw`](Self::respond_raw)): a result the
    /// next hop wrote malformed reaches the peer as it was written, and that peer's decode
    /// answers for it.
    pub fn respond_forwarded(self, result: &ForwardedResult) {
        self.respond_unread(result.as_unchecked());
    }

    /// Answers with `result` spliced in unread.
    pub(crate) fn respond_unread(mut self, result: UncheckedJson<'_>) {
        let mut bytes = self.shared.take_buffer();
        encode_result(&mut bytes, &self.id, result);
        self.send(bytes, None);
    }

    /// Takes `bytes` of the reply budget if they are free now (see
    /// [`reserve`](Self::reserve)); returns whether it did.
    pub(crate) fn try_reserve_now(&mut self, bytes: usize) -> bool {
        let granted = bytes == 0 || self.shared.try_reserve_reply_room_now(bytes, self.reserved);
        if granted {
            self.reserved += bytes;
        }
        granted
    }

    /// What the connection knows of the request this answers.
    pub(crate) fn state(&self) -> &Arc<RequestState> {
        &self.state
    }

    /// Queues the encoded answer; `error` is what it answers with, if not a
    /// result (for tracing).
    fn send(&mut self, bytes: Vec<u8>, error: Option<&ResponseError>) {
        self.answered = true;
        let reserved = std::mem::take(&mut self.reserved);
        let encoded = bytes.len();
        let queued = self
            .shared
            .send_response(&self.id, &self.state, bytes, reserved);
        self.state.trace.responded(&self.id, encoded, error, queued);
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let error = if self.is_cancelled() {
            ResponseError::request_cancelled()
        } else if std::thread::panicking() || self.state.panicked.load(Ordering::Acquire) {
            ResponseError::internal_error("the request handler panicked")
        } else {
            ResponseError::internal_error("the request handler finished without responding")
        };
        let mut bytes = self.shared.take_buffer();
        encode_error(&mut bytes, &self.id, &error);
        self.send(bytes, Some(&error));
    }
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Responder")
            .field("id", &self.id)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}
