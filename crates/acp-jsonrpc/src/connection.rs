//! The handle to send with, and a connection's options (in `options.rs`). (The driver that
//! does the work is started by [`Connection`](crate::Connection), in `connect.rs`.)

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_lite::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::forwarded::Answer;
use crate::json::UncheckedJson;
use crate::message::{
    encode_notification, encode_raw_notification, encode_raw_request, encode_request,
    encode_wrapped_notification, encode_wrapped_request,
};
use crate::shared::{ResponseResult, Shared, TryEnqueue};
use crate::{ForwardedResult, Problem, RequestError, RequestId};

mod options;
pub use options::{ConnectionOptions, DEFAULT_REPLY_BUDGET};

/// Sends requests and notifications to the peer, from anywhere.
///
/// Cheap to clone; `Send` and `Sync`. Dropping every handle does not stop
/// the connection (its handler may still be answering the peer): use
/// [`close`](Self::close) for that.
#[derive(Clone)]
pub struct ConnectionHandle {
    pub(crate) shared: Arc<Shared>,
}

impl ConnectionHandle {
    /// Calls `method` on the peer and decodes the result into `R`.
    ///
    /// The params are serialized right away (params that serialize to
    /// `null`, like `()`, are left out of the message). Nothing is sent
    /// until the returned future is polled; it then waits for room in the
    /// outgoing queue, sends, and waits for the response.
    ///
    /// Dropping the future after the request was sent cancels it: the peer
    /// gets a `$/cancel_request` for its id. It fails with
    /// [`RequestError::ConnectionClosed`] if the connection closes first.
    pub fn request<R: DeserializeOwned, P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> RequestFuture<R> {
        self.request_with(method, params, decode_result::<R>)
    }

    /// Like [`request`](Self::request), with the result decoded by `decode` instead of serde:
    /// for a hand-written fast path for one result shape, which hands anything else to serde.
    ///
    /// ```
    /// use acp_jsonrpc::{ConnectionHandle, RequestError, RequestFuture};
    /// use serde_json::value::RawValue;
    ///
    /// fn length_of_result(raw: Box<RawValue>) -> Result<usize, RequestError> {
    ///     Ok(raw.get().len())
    /// }
    ///
    /// fn ask(handle: &ConnectionHandle) -> RequestFuture<usize> {
    ///     handle.request_with("status", &(), length_of_result)
    /// }
    /// ```
    pub fn request_with<R, P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        decode: fn(Box<RawValue>) -> Result<R, RequestError>,
    ) -> RequestFuture<R> {
        let id = self.shared.next_request_id();
        let mut bytes = self.shared.take_buffer();
        match encode_request(&mut bytes, &RequestId::from(id), method, params) {
            Ok(()) => self.start_request(id, method, bytes, decode),
            Err(error) => {
                self.shared.recycle(bytes);
                RequestFuture::failed(id, RequestError::Encode(error), decode)
            }
        }
    }

    /// Like [`request`](Self::request), with params and result as raw JSON.
    pub fn request_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> RequestFuture<Box<RawValue>> {
        let id = self.shared.next_request_id();
        let mut bytes = self.shared.take_buffer();
        let params = params.map(UncheckedJson::from);
        encode_raw_request(&mut bytes, &RequestId::from(id), method, params);
        self.start_request(id, method, bytes, Ok)
    }

    /// Like [`request_raw`](Self::request_raw), in two steps: the returned future resolves
    /// once the request is in the outgoing queue (after waiting for room), to a
    /// [`RequestFuture`] for its response. For routers that must keep the order of what they
    /// forward: the next message may be queued as soon as this one resolves.
    ///
    /// ```
    /// # use acp_jsonrpc::{ConnectionHandle, RequestError};
    /// async fn forward(to: &ConnectionHandle) -> Result<(), RequestError> {
    ///     let response = to.send_request_raw("ping", None).await?;
    ///     // Queued: whatever is sent from here on goes out after it.
    ///     let _result = response.await?;
    ///     Ok(())
    /// }
    /// ```
    pub async fn send_request_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<RequestFuture<Box<RawValue>>, RequestError> {
        let params = params.map(UncheckedJson::from);
        let encode =
            |out: &mut Vec<u8>, id: &RequestId| encode_raw_request(out, id, method, params);
        self.send_request_now(method, encode, false, Decode::Checked(Ok))
            .await
    }

    /// Like [`send_request_raw`](Self::send_request_raw), for a router that forwards the
    /// answer without reading it ([`Responder::respond_forwarded`](crate::Responder::respond_forwarded)):
    /// params are written as they are, unread, and on a connection whose handler forwards
    /// ([`Handler::FORWARDS`](crate::Handler::FORWARDS)) a response in the usual spelling
    /// (`{"jsonrpc":"2.0","id":…,"result":…}`) reaches it with its result unread
    /// (docs/limits.md, "What a router forwards unread"). An `error` answer is decoded and
    /// comes as [`RequestError::Response`], as for any request.
    ///
    /// ```
    /// # use acp_jsonrpc::{ConnectionHandle, RequestError, Responder};
    /// async fn forward(to: &ConnectionHandle, responder: Responder) -> Result<(), RequestError> {
    ///     let result = to.send_request_forwarded("ping", None).await?.await?;
    ///     responder.respond_forwarded(&result);
    ///     Ok(())
    /// }
    /// ```
    pub async fn send_request_forwarded(
        &self,
        method: &str,
        params: Option<UncheckedJson<'_>>,
    ) -> Result<RequestFuture<ForwardedResult>, RequestError> {
        let encode =
            |out: &mut Vec<u8>, id: &RequestId| encode_raw_request(out, id, method, params);
        self.send_request_now(method, encode, true, Decode::Forwarded(Ok))
            .await
    }

    /// Like [`send_request_forwarded`](Self::send_request_forwarded), for a request `outer`
    /// whose params carry the message `inner` with `params` (`{"method":inner,"params":…}`,
    /// as ACP's `proxy/successor` carries one), spliced into the line unread.
    ///
    /// ```
    /// # use acp_jsonrpc::{ConnectionHandle, RequestError, Responder};
    /// async fn forward(to: &ConnectionHandle, responder: Responder) -> Result<(), RequestError> {
    ///     let pending = to.send_request_forwarded_wrapped("proxy/successor", "ping", None);
    ///     responder.respond_forwarded(&pending.await?.await?);
    ///     Ok(())
    /// }
    /// ```
    pub async fn send_request_forwarded_wrapped(
        &self,
        outer: &str,
        inner: &str,
        params: Option<UncheckedJson<'_>>,
    ) -> Result<RequestFuture<ForwardedResult>, RequestError> {
        let encode = |out: &mut Vec<u8>, id: &RequestId| {
            encode_wrapped_request(out, id, outer, inner, params)
        };
        self.send_request_now(outer, encode, true, Decode::Forwarded(Ok))
            .await
    }

    /// Queues a request (waiting for room) and returns the future for its response.
    async fn send_request_now<R>(
        &self,
        method: &str,
        encode: impl FnOnce(&mut Vec<u8>, &RequestId),
        forwarded: bool,
        decode: Decode<R>,
    ) -> Result<RequestFuture<R>, RequestError> {
        let id = self.shared.next_request_id();
        let mut bytes = self.shared.take_buffer();
        encode(&mut bytes, &RequestId::from(id));
        let Some(response) = self.shared.register_waiter(id, forwarded) else {
            self.shared.recycle(bytes);
            return Err(RequestError::ConnectionClosed);
        };
        let mut guard = OutgoingRequest {
            shared: self.shared.clone(),
            id,
            sent: false,
            finished: false,
        };
        let trace = self.shared.trace.request(id, method);
        guard.shared.trace.request_sent(trace, id, bytes.len());
        guard.shared.enqueue_metered(bytes).await?;
        guard.mark_sent();
        let exchange = async move {
            let result = response.await;
            guard.mark_finished();
            result.unwrap_or(Err(RequestError::ConnectionClosed))
        };
        Ok(RequestFuture {
            id: RequestId::from(id),
            exchange: Box::pin(exchange),
            decode,
            _result: PhantomData,
        })
    }

    fn start_request<R>(
        &self,
        id: i64,
        method: &str,
        bytes: Vec<u8>,
        decode: fn(Box<RawValue>) -> Result<R, RequestError>,
    ) -> RequestFuture<R> {
        let Some(response) = self.shared.register_waiter(id, false) else {
            self.shared.recycle(bytes);
            return RequestFuture::failed(id, RequestError::ConnectionClosed, decode);
        };
        let mut guard = OutgoingRequest {
            shared: self.shared.clone(),
            id,
            sent: false,
            finished: false,
        };
        let trace = self.shared.trace.request(id, method);
        let exchange = async move {
            guard.shared.trace.request_sent(trace, id, bytes.len());
            guard.shared.enqueue_metered(bytes).await?;
            guard.mark_sent();
            let result = response.await;
            guard.mark_finished();
            result.unwrap_or(Err(RequestError::ConnectionClosed))
        };
        RequestFuture {
            id: RequestId::from(id),
            exchange: Box::pin(exchange),
            decode: Decode::Checked(decode),
            _result: PhantomData,
        }
    }

    /// Sends a notification to the peer.
    ///
    /// The params are serialized right away (params that serialize to
    /// `null` are left out). The returned future queues the message,
    /// waiting while the outgoing queue is full: that wait is the
    /// back-pressure that keeps a slow peer from growing memory. Once it
    /// resolves, the message will be written in order with everything else
    /// sent on this connection.
    pub fn notify<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> NotifyFuture {
        let mut bytes = self.shared.take_buffer();
        match encode_notification(&mut bytes, method, params) {
            Ok(()) => {
                self.shared.trace.notification_sent(method, bytes.len());
                NotifyFuture::new(self.shared.clone(), bytes)
            }
            Err(error) => {
                self.shared.recycle(bytes);
                NotifyFuture::failed(RequestError::Encode(error))
            }
        }
    }

    /// Like [`notify`](Self::notify), with params as raw JSON.
    pub fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> NotifyFuture {
        let mut bytes = self.shared.take_buffer();
        encode_raw_notification(&mut bytes, method, params.map(UncheckedJson::from));
        self.shared.trace.notification_sent(method, bytes.len());
        NotifyFuture::new(self.shared.clone(), bytes)
    }

    /// Queues a notification with raw params if the outgoing queue has room now, without
    /// waiting: for a router forwarding a message from inside
    /// [`Handler::forward_notification`](crate::Handler::forward_notification), which must
    /// not wait. The params are written as they are, unread: what the forwarding path found
    /// on the incoming line ([`RawNotification::params`](crate::RawNotification::params)), or
    /// a [`RawValue`] (`.map(Into::into)`). Returns `false`, having queued nothing, when the
    /// queue is full or the connection closed; the caller then takes the waiting path
    /// ([`notify_raw`](Self::notify_raw)), which waits for room or reports the failure.
    ///
    /// ```
    /// use acp_jsonrpc::{Connection, ConnectionOptions, memory};
    /// use serde_json::value::RawValue;
    ///
    /// let (ours, _theirs) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    /// let options = ConnectionOptions::default();
    /// let (handle, _driver) = Connection::new(ours.reader, ours.writer, (), options);
    /// let params = RawValue::from_string(r#"{"n":1}"#.to_owned()).unwrap();
    /// assert!(handle.try_notify_raw("tick", Some((&*params).into())));
    /// assert_eq!(handle.queued(), 1);
    /// ```
    pub fn try_notify_raw(&self, method: &str, params: Option<UncheckedJson<'_>>) -> bool {
        let at_least = method.len() + params.map_or(0, |params| params.as_bytes().len());
        self.try_queue(method, at_least, |out| {
            encode_raw_notification(out, method, params)
        })
    }

    /// Like [`try_notify_raw`](Self::try_notify_raw), for the notification `outer` whose
    /// params carry the message `inner` with `params` (`{"method":inner,"params":…}`, as
    /// ACP's `proxy/successor` carries one): the same line as `try_notify_raw(outer,
    /// Some(&json::inner_message(inner, params)))`, spliced in one pass without the
    /// intermediate copy.
    pub fn try_notify_wrapped(
        &self,
        outer: &str,
        inner: &str,
        params: Option<UncheckedJson<'_>>,
    ) -> bool {
        let at_least =
            outer.len() + inner.len() + params.map_or(0, |params| params.as_bytes().len());
        self.try_queue(outer, at_least, |out| {
            encode_wrapped_notification(out, outer, inner, params)
        })
    }

    /// Queues the line `encode` appends (at least `at_least` bytes long) if there is room:
    /// straight into the outgoing queue, with no buffer of its own to copy from.
    fn try_queue(&self, method: &str, at_least: usize, encode: impl Fn(&mut Vec<u8>)) -> bool {
        match self.shared.try_enqueue_encoded(at_least, encode) {
            Some(length) => {
                self.shared.trace.notification_sent(method, length);
                true
            }
            None => false,
        }
    }

    /// Closes our side of the connection.
    ///
    /// - Requests and notifications sent from now on fail with
    ///   [`RequestError::ConnectionClosed`], and so does every request
    ///   still waiting for its response.
    /// - The driver stops reading, drops the handlers still running (their
    ///   responses are not sent), writes and flushes what was queued before
    ///   this call, closes the writer (the peer sees end of input) and
    ///   resolves to `Ok(())`.
    pub fn close(&self) {
        self.shared.close();
    }

    /// Whether the connection is closed or closing: [`close`](Self::close)
    /// was called, or the driver finished or was dropped.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// How many requests and notifications wait in the outgoing queue (not
    /// counting responses); never more than
    /// [`outgoing_capacity`](Self::outgoing_capacity).
    pub fn queued(&self) -> usize {
        self.shared.queued()
    }

    /// The outgoing queue's capacity.
    pub fn outgoing_capacity(&self) -> usize {
        self.shared.outgoing_capacity()
    }

    /// Bytes of responses queued and not yet taken by the writer. May exceed
    /// [`reply_budget`](Self::reply_budget) (by less than one response when
    /// every large one was [reserved](crate::Responder::reserve) for); the
    /// connection reads nothing from the peer while it does.
    pub fn queued_reply_bytes(&self) -> usize {
        self.shared.queued_reply_bytes()
    }

    /// Bytes of the reply budget held by responders for answers they have
    /// not sent yet ([`Responder::reserve`](crate::Responder::reserve)).
    pub fn reserved_reply_bytes(&self) -> usize {
        self.shared.reserved_reply_bytes()
    }

    /// The reply budget ([`ConnectionOptions::with_reply_budget`]).
    pub fn reply_budget(&self) -> usize {
        self.shared.reply_budget()
    }

    /// Bytes the peer's requests in flight hold (their size on the wire), which stay within
    /// [`in_flight_budget`](Self::in_flight_budget) but for one request larger than it.
    pub fn in_flight_request_bytes(&self) -> usize {
        self.shared.in_flight_bytes().0
    }

    /// The in-flight byte budget ([`ConnectionOptions::with_in_flight_budget`]).
    pub fn in_flight_budget(&self) -> usize {
        self.shared.in_flight_bytes().1
    }

    /// Passes a problem to the connection's observer, if it has one.
    pub fn report(&self, problem: Problem) {
        self.shared.report(problem);
    }
}

impl fmt::Debug for ConnectionHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionHandle")
            .field("closed", &self.is_closed())
            .field("queued", &self.queued())
            .finish()
    }
}

#[expect(
    clippy::boxed_local,
    reason = "shares a fn pointer type with the raw variant, which returns the box as is"
)]
fn decode_result<R: DeserializeOwned>(raw: Box<RawValue>) -> Result<R, RequestError> {
    serde_json::from_str(raw.get()).map_err(RequestError::Decode)
}

/// Keeps the waiter registration of an outgoing request tidy whatever
/// happens to its future.
struct OutgoingRequest {
    shared: Arc<Shared>,
    id: i64,
    sent: bool,
    finished: bool,
}

impl OutgoingRequest {
    fn mark_sent(&mut self) {
        self.sent = true;
    }

    fn mark_finished(&mut self) {
        self.finished = true;
    }
}

impl Drop for OutgoingRequest {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let was_waiting = self.shared.forget_waiter(self.id);
        let cancel = self.sent && was_waiting;
        self.shared.trace.request_abandoned(self.id, cancel);
        if cancel {
            self.shared.send_cancel(self.id);
        }
    }
}

/// The response to a request sent with [`ConnectionHandle::request`].
///
/// Dropping it after the request went out sends `$/cancel_request` to the
/// peer. `Send` and `'static`: it can be moved into another task.
#[must_use = "a request is only sent when its future is polled"]
pub struct RequestFuture<R> {
    id: RequestId,
    exchange: Pin<Box<dyn Future<Output = ResponseResult> + Send>>,
    decode: Decode<R>,
    _result: PhantomData<fn() -> R>,
}

/// How a [`RequestFuture`] turns the answer into its output: from a result read as JSON, or
/// from one forwarded unread.
enum Decode<R> {
    Checked(fn(Box<RawValue>) -> Result<R, RequestError>),
    Forwarded(fn(ForwardedResult) -> Result<R, RequestError>),
}

impl<R> Clone for Decode<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Decode<R> {}

impl<R> Decode<R> {
    fn apply(self, answer: Answer) -> Result<R, RequestError> {
        match self {
            Decode::Checked(decode) => decode(answer.into_checked()?),
            Decode::Forwarded(decode) => decode(ForwardedResult(answer)),
        }
    }
}

impl<R> RequestFuture<R> {
    fn failed(
        id: i64,
        error: RequestError,
        decode: fn(Box<RawValue>) -> Result<R, RequestError>,
    ) -> Self {
        RequestFuture {
            id: RequestId::from(id),
            exchange: Box::pin(std::future::ready(Err(error))),
            decode: Decode::Checked(decode),
            _result: PhantomData,
        }
    }

    /// The id the request has on the wire.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Waits for the response or for `timer`, whichever comes first. When
    /// the timer wins, the request is cancelled (the peer gets
    /// `$/cancel_request`) and the result is [`RequestError::TimedOut`].
    ///
    /// Any future works as a timer, so no runtime is implied: with smol,
    /// `smol::Timer::after(duration)`; with tokio,
    /// `tokio::time::sleep(duration)`.
    pub async fn with_timeout<T: Future>(self, timer: T) -> Result<R, RequestError> {
        self.or(async {
            timer.await;
            Err(RequestError::TimedOut)
        })
        .await
    }
}

impl<R> Future for RequestFuture<R> {
    type Output = Result<R, RequestError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.exchange.as_mut().poll(cx) {
            Poll::Ready(result) => {
                let decode = self.decode;
                Poll::Ready(result.and_then(|answer| decode.apply(answer)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<R> fmt::Debug for RequestFuture<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestFuture")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Queues a notification; see [`ConnectionHandle::notify`].
#[must_use = "a notification is only sent when its future is polled"]
pub struct NotifyFuture {
    state: NotifyState,
}

enum NotifyState {
    Ready(Arc<Shared>, Vec<u8>),
    Failed(RequestError),
    Waiting(Pin<Box<dyn Future<Output = Result<(), RequestError>> + Send>>),
    Done,
}

impl NotifyFuture {
    fn new(shared: Arc<Shared>, bytes: Vec<u8>) -> Self {
        NotifyFuture {
            state: NotifyState::Ready(shared, bytes),
        }
    }

    fn failed(error: RequestError) -> Self {
        NotifyFuture {
            state: NotifyState::Failed(error),
        }
    }
}

impl Future for NotifyFuture {
    type Output = Result<(), RequestError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match std::mem::replace(&mut self.state, NotifyState::Done) {
                NotifyState::Ready(shared, bytes) => match shared.try_enqueue_metered(bytes) {
                    Ok(()) => return Poll::Ready(Ok(())),
                    Err(TryEnqueue::Closed(bytes)) => {
                        shared.recycle(bytes);
                        return Poll::Ready(Err(RequestError::ConnectionClosed));
                    }
                    Err(TryEnqueue::Full(bytes)) => {
                        // Only a full queue pays for the boxed wait.
                        self.state = NotifyState::Waiting(Box::pin(async move {
                            shared.enqueue_metered(bytes).await
                        }));
                    }
                },
                NotifyState::Failed(error) => return Poll::Ready(Err(error)),
                NotifyState::Waiting(mut waiting) => {
                    let poll = waiting.as_mut().poll(cx);
                    if poll.is_pending() {
                        self.state = NotifyState::Waiting(waiting);
                    }
                    return poll;
                }
                NotifyState::Done => panic!("NotifyFuture polled after completion"),
            }
        }
    }
}

impl fmt::Debug for NotifyFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotifyFuture").finish_non_exhaustive()
    }
}
