//! The connection: a handle to send with, and one future that does all the
//! work.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use futures_io::{AsyncBufRead, AsyncWrite};
use futures_lite::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::handler::{Handler, IncomingNotification, IncomingRequest, LocalHandler, Responder};
use crate::line_reader::{DEFAULT_MAX_LINE_LENGTH, LineEvent, LineReader};
use crate::message::{
    encode_notification, encode_raw_notification, encode_raw_request, encode_request,
};
use crate::observer::SharedObserver;
use crate::shared::{
    CANCEL_REQUEST_METHOD, RequestState, ResponseResult, Shared, Taken, TryEnqueue,
};
use crate::task_set::TaskSet;
use crate::{
    ConnectionError, Message, Notification, Observer, Problem, Request, RequestError, RequestId,
    ResponseError,
};

/// How a [`Connection`] behaves. `ConnectionOptions::default()` is a good
/// start.
#[derive(Clone)]
pub struct ConnectionOptions {
    max_line_length: usize,
    outgoing_capacity: usize,
    max_in_flight_requests: usize,
    observer: SharedObserver,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            max_line_length: DEFAULT_MAX_LINE_LENGTH,
            outgoing_capacity: 1024,
            max_in_flight_requests: 256,
            observer: None,
        }
    }
}

impl ConnectionOptions {
    /// Lines longer than this many bytes are skipped and reported as
    /// [`Problem::LineTooLong`]. Default: 64 MiB.
    pub fn with_max_line_length(mut self, bytes: usize) -> Self {
        self.max_line_length = bytes;
        self
    }

    /// How many requests and notifications may wait for the writer before
    /// [`ConnectionHandle::notify`] and [`ConnectionHandle::request`] wait
    /// for room. Default: 1024. Counted for messages of up to 256 bytes:
    /// larger ones take their size out of the same budget (1024 × 256 bytes
    /// = 256 KiB by default), so large messages cannot pile up either. A
    /// message larger than the whole budget is queued alone. (Responses are
    /// bounded separately, by the in-flight limit.)
    pub fn with_outgoing_capacity(mut self, messages: usize) -> Self {
        self.outgoing_capacity = messages.max(1);
        self
    }

    /// How many of the peer's requests may be in flight (handled, or
    /// answered but not yet written) before the connection stops reading
    /// from the peer. Default: 256.
    pub fn with_max_in_flight_requests(mut self, requests: usize) -> Self {
        self.max_in_flight_requests = requests.max(1);
        self
    }

    /// Lets `observer` see every line read and written and every problem.
    pub fn with_observer(self, observer: impl Observer) -> Self {
        self.with_shared_observer(Arc::new(observer))
    }

    /// Like [`with_observer`](Self::with_observer), for an observer that is
    /// already shared.
    pub fn with_shared_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }
}

impl fmt::Debug for ConnectionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionOptions")
            .field("max_line_length", &self.max_line_length)
            .field("outgoing_capacity", &self.outgoing_capacity)
            .field("max_in_flight_requests", &self.max_in_flight_requests)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

/// Creates connections. See the [crate documentation](crate) for the whole
/// picture, including what closing and dropping do.
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
        )
    }
}

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
        let id = self.shared.next_request_id();
        let mut bytes = self.shared.take_buffer();
        match encode_request(&mut bytes, &RequestId::from(id), method, params) {
            Ok(()) => self.start_request(id, bytes, decode_result::<R>),
            Err(error) => {
                self.shared.recycle(bytes);
                RequestFuture::failed(id, RequestError::Encode(error), decode_result::<R>)
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
        encode_raw_request(&mut bytes, &RequestId::from(id), method, params);
        self.start_request(id, bytes, Ok)
    }

    fn start_request<R>(
        &self,
        id: i64,
        bytes: Vec<u8>,
        decode: fn(Box<RawValue>) -> Result<R, RequestError>,
    ) -> RequestFuture<R> {
        let Some(response) = self.shared.register_waiter(id) else {
            self.shared.recycle(bytes);
            return RequestFuture::failed(id, RequestError::ConnectionClosed, decode);
        };
        let mut guard = OutgoingRequest {
            shared: self.shared.clone(),
            id,
            sent: false,
            finished: false,
        };
        let exchange = async move {
            guard.shared.enqueue_metered(bytes).await?;
            guard.mark_sent();
            let result = response.await;
            guard.mark_finished();
            result.unwrap_or(Err(RequestError::ConnectionClosed))
        };
        RequestFuture {
            id: RequestId::from(id),
            exchange: Box::pin(exchange),
            decode,
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
            Ok(()) => NotifyFuture::new(self.shared.clone(), bytes),
            Err(error) => {
                self.shared.recycle(bytes);
                NotifyFuture::failed(RequestError::Encode(error))
            }
        }
    }

    /// Like [`notify`](Self::notify), with params as raw JSON.
    pub fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> NotifyFuture {
        let mut bytes = self.shared.take_buffer();
        encode_raw_notification(&mut bytes, method, params);
        NotifyFuture::new(self.shared.clone(), bytes)
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
        if self.sent && was_waiting {
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
    decode: fn(Box<RawValue>) -> Result<R, RequestError>,
    _result: PhantomData<fn() -> R>,
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
            decode,
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
            Poll::Ready(result) => Poll::Ready(result.and_then(self.decode)),
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

// ---------------------------------------------------------------------------
// Handler futures.

/// Turns a panicking request handler into a report and a `-32603`.
struct PanicGuard {
    id: RequestId,
    state: Arc<RequestState>,
    shared: Arc<Shared>,
}

impl PanicGuard {
    fn run<F: Future<Output = ()>>(self, handler: F) -> Guarded<F> {
        Guarded {
            handler,
            guard: self,
        }
    }
}

pin_project_lite::pin_project! {
    /// A request handler future under a [`PanicGuard`]. A combinator rather
    /// than an `async fn`, which would store the handler future twice (as
    /// its argument and as the pinned local it polls).
    struct Guarded<F> {
        #[pin]
        handler: F,
        guard: PanicGuard,
    }
}

impl<F: Future<Output = ()>> Future for Guarded<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let handler = this.handler;
        match std::panic::catch_unwind(AssertUnwindSafe(|| handler.poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => {
                // Recorded before the handler future (and any responder in
                // it) is dropped, so that the responder answers -32603.
                this.guard.state.panicked.store(true, Ordering::Release);
                this.guard.shared.report(Problem::RequestHandlerPanicked {
                    id: this.guard.id.clone(),
                    message: panic_message(payload.as_ref()),
                });
                Poll::Ready(())
            }
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "(a panic payload that is not a string)".to_owned()
    }
}

// ---------------------------------------------------------------------------
// The driver.

/// Most lines read in one round before the other parts get a turn.
const READ_BATCH_LINES: usize = 64;
/// Rounds in one poll before yielding to the executor.
const ROUNDS_PER_POLL: usize = 32;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Reading, writing, handling.
    Running,
    /// The peer's input ended: waiting for our handlers to finish.
    InputEnded,
    /// Writing what is left, then closing the writer.
    Closing,
    /// Finished.
    Done,
}

/// The driver, generic over the handler's futures (`Q` for requests, `N` for
/// notifications) and the functions that make them, so that they are stored
/// unboxed and their allocations reused.
struct Driver<R, W, MQ, MN, Q, N> {
    shared: Arc<Shared>,
    make_request: MQ,
    make_notification: MN,
    reader: LineReader<R>,
    writer: W,
    requests: TaskSet<Q, Arc<RequestState>>,
    /// The notification being handled (notifications are handled one at a
    /// time, in order), in a box kept for the next one.
    notification: Pin<Box<Option<N>>>,
    /// Its method, for the report if its handler panics.
    notification_method: String,
    write_buffer: Vec<u8>,
    written: usize,
    unflushed: bool,
    max_in_flight: usize,
    phase: Phase,
}

impl<R, W, MQ, MN, Q, N> Driver<R, W, MQ, MN, Q, N>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
    MQ: Fn(IncomingRequest, Responder, PanicGuard) -> Q + Unpin,
    MN: Fn(IncomingNotification) -> N + Unpin,
    Q: Future<Output = ()>,
    N: Future<Output = ()>,
{
    fn start(
        reader: R,
        writer: W,
        options: ConnectionOptions,
        make_request: MQ,
        make_notification: MN,
    ) -> (ConnectionHandle, Self) {
        let shared = Shared::new(options.outgoing_capacity, options.observer);
        let driver = Driver {
            shared: shared.clone(),
            make_request,
            make_notification,
            reader: LineReader::with_max_line_length(reader, options.max_line_length),
            writer,
            requests: TaskSet::new(),
            notification: Box::pin(None),
            notification_method: String::new(),
            write_buffer: Vec::new(),
            written: 0,
            unflushed: false,
            max_in_flight: options.max_in_flight_requests,
            phase: Phase::Running,
        };
        (ConnectionHandle { shared }, driver)
    }

    fn handle(&self) -> ConnectionHandle {
        ConnectionHandle {
            shared: self.shared.clone(),
        }
    }

    /// Writes queued frames, batching whatever is available, and flushes
    /// once the queue is empty. Returns whether anything happened.
    fn poll_writer(&mut self, cx: &mut Context<'_>) -> io::Result<bool> {
        let mut progress = false;
        loop {
            while self.written < self.write_buffer.len() {
                match Pin::new(&mut self.writer).poll_write(cx, &self.write_buffer[self.written..])
                {
                    Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                    Poll::Ready(Ok(n)) => {
                        self.written += n;
                        self.unflushed = true;
                        progress = true;
                    }
                    Poll::Ready(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                    Poll::Ready(Err(error)) => return Err(error),
                    Poll::Pending => return Ok(progress),
                }
            }
            self.write_buffer.clear();
            self.written = 0;

            let closed = match self.shared.take_queued(&mut self.write_buffer, cx) {
                Taken::Lines => {
                    progress = true;
                    continue;
                }
                Taken::Empty => false,
                Taken::Closed => true,
            };

            // The queue is momentarily empty: now is the time to flush.
            if self.unflushed {
                match Pin::new(&mut self.writer).poll_flush(cx) {
                    Poll::Ready(Ok(())) => {
                        self.unflushed = false;
                        progress = true;
                    }
                    Poll::Ready(Err(error)) => return Err(error),
                    Poll::Pending => return Ok(progress),
                }
            }
            if closed {
                // Only `Shared::close` closes the queue, and it has been
                // drained: the connection is over.
                match Pin::new(&mut self.writer).poll_close(cx) {
                    Poll::Ready(Ok(())) => {
                        self.phase = Phase::Done;
                        return Ok(true);
                    }
                    Poll::Ready(Err(error)) => return Err(error),
                    Poll::Pending => return Ok(progress),
                }
            }
            return Ok(progress);
        }
    }

    /// Polls the notification being handled; returns whether it finished.
    fn poll_notification(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(task) = self.notification.as_mut().as_pin_mut() else {
            return false;
        };
        let finished = match std::panic::catch_unwind(AssertUnwindSafe(|| task.poll(cx))) {
            Ok(poll) => poll.is_ready(),
            Err(payload) => {
                self.shared.report(Problem::NotificationHandlerPanicked {
                    method: self.notification_method.clone(),
                    message: panic_message(payload.as_ref()),
                });
                true
            }
        };
        if finished {
            self.notification.set(None);
        }
        finished
    }

    /// Whether reading must wait: a notification is being handled, or the
    /// peer has too many requests in flight (back-pressure on the peer).
    fn reading_paused(&self) -> bool {
        self.notification.is_some()
            || self.requests.len() >= self.max_in_flight
            || self.shared.queued_replies() >= self.max_in_flight
    }

    fn poll_reader(&mut self, cx: &mut Context<'_>) -> io::Result<bool> {
        let mut progress = false;
        for _ in 0..READ_BATCH_LINES {
            if self.phase != Phase::Running || self.reading_paused() {
                break;
            }
            let decoded = match self.reader.poll_read_line(cx) {
                Poll::Pending => break,
                Poll::Ready(Err(error)) if error.kind() == io::ErrorKind::Interrupted => continue,
                Poll::Ready(Err(error)) => return Err(error),
                Poll::Ready(Ok(None)) => {
                    self.phase = Phase::InputEnded;
                    // No response can arrive any more.
                    self.shared.refuse_requests();
                    return Ok(true);
                }
                Poll::Ready(Ok(Some(LineEvent::TooLong { length }))) => {
                    Err(Problem::LineTooLong { length })
                }
                Poll::Ready(Ok(Some(LineEvent::Line(line)))) => {
                    if let Some(observer) = &self.shared.observer {
                        observer.incoming(line);
                    }
                    Ok(Message::from_slice(line))
                }
            };
            progress = true;
            match decoded {
                Ok(Ok(message)) => {
                    let expects_a_write =
                        matches!(message, Message::Request(_) | Message::Response(_));
                    self.route(message, cx);
                    // A request (or a response some task waits for) will
                    // likely be answered by a write. When nothing more is
                    // buffered, let that happen before reading again: the
                    // read would most likely find the pipe empty, and after
                    // the write the transport can go straight to waiting.
                    if expects_a_write && self.reader.input_exhausted() {
                        break;
                    }
                }
                Ok(Err(error)) => {
                    if let Some(id) = error.response_id() {
                        let failure = RequestError::MalformedResponse(error.detail().to_owned());
                        self.shared.fail_waiter(id, failure);
                    }
                    if let Some(reply) = error.reply()
                        && let Err(reply_error) = &reply.result
                    {
                        self.shared.reply_error(&reply.id, reply_error);
                    }
                    self.shared.report(Problem::Malformed(error));
                }
                Err(problem) => self.shared.report(problem),
            }
        }
        Ok(progress)
    }

    fn route(&mut self, message: Message, cx: &mut Context<'_>) {
        match message {
            Message::Request(request) => self.accept_request(request),
            Message::Notification(notification) if notification.method == CANCEL_REQUEST_METHOD => {
                self.cancel_incoming(&notification)
            }
            Message::Notification(notification) => {
                self.notification_method.clear();
                self.notification_method.push_str(&notification.method);
                let notification = IncomingNotification {
                    notification,
                    connection: self.handle(),
                };
                self.notification
                    .set(Some((self.make_notification)(notification)));
                // Most handlers finish at once; then reading goes on without
                // a round trip through the main loop.
                self.poll_notification(cx);
            }
            Message::Response(response) => self.shared.complete(response),
        }
    }

    fn accept_request(&mut self, request: Request) {
        let Some(state) = self.shared.begin_incoming(&request.id) else {
            let error = ResponseError::invalid_request(format_args!(
                "a request with id {} is already in flight",
                request.id
            ));
            self.shared.reply_error(&request.id, &error);
            self.shared.report(Problem::DuplicateRequestId(request.id));
            return;
        };
        self.shared.reserve_reply();
        let responder = Responder::new(request.id.clone(), self.shared.clone(), state.clone());
        let guard = PanicGuard {
            id: request.id.clone(),
            state: state.clone(),
            shared: self.shared.clone(),
        };
        let request = IncomingRequest {
            request,
            connection: self.handle(),
        };
        let task = (self.make_request)(request, responder, guard);
        self.requests.insert(task, state);
    }

    fn cancel_incoming(&mut self, notification: &Notification) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct CancelParams {
            request_id: RequestId,
        }
        let id = match notification.params::<CancelParams>() {
            Ok(params) => params.request_id,
            Err(error) => {
                self.shared
                    .report(Problem::InvalidCancelRequest(error.to_string()));
                return;
            }
        };
        // Unknown ids are normal: the request may have just been answered.
        if let Some(state) = self.shared.incoming_state(&id) {
            state.cancelled.store(true, Ordering::Release);
            // Dropping the handler drops its responder, which answers -32800.
            self.requests.remove_where(|task| Arc::ptr_eq(task, &state));
        }
    }

    /// Moves to `Closing`: nothing more is read or handled; what is queued
    /// gets written.
    fn begin_closing(&mut self) {
        self.phase = Phase::Closing;
        self.shared.close();
        self.notification.set(None);
        self.requests.clear();
    }

    fn poll_rounds(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ConnectionError>> {
        for _ in 0..ROUNDS_PER_POLL {
            if self.phase == Phase::Done {
                return Poll::Ready(Ok(()));
            }
            if self.shared.is_closed() && self.phase != Phase::Closing {
                self.begin_closing();
            }
            let mut progress = self.poll_writer(cx).map_err(ConnectionError::Write)?;
            if self.phase == Phase::Done {
                return Poll::Ready(Ok(()));
            }
            if self.phase != Phase::Closing {
                if self.requests.poll(cx) {
                    progress = true;
                    // Write what the handlers answered before reading on
                    // (see `poll_reader`).
                    self.poll_writer(cx).map_err(ConnectionError::Write)?;
                    if self.phase == Phase::Done {
                        return Poll::Ready(Ok(()));
                    }
                }
                progress |= self.poll_notification(cx);
                progress |= self.poll_reader(cx).map_err(ConnectionError::Read)?;
            }
            if self.phase == Phase::InputEnded
                && self.requests.is_empty()
                && self.notification.is_none()
                && !self.shared.has_unanswered_incoming()
            {
                self.begin_closing();
                progress = true;
            }
            if !progress {
                return Poll::Pending;
            }
        }
        // Plenty done: let the executor run others, and come back.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<R, W, MQ, MN, Q, N> Future for Driver<R, W, MQ, MN, Q, N>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
    MQ: Fn(IncomingRequest, Responder, PanicGuard) -> Q + Unpin,
    MN: Fn(IncomingNotification) -> N + Unpin,
    Q: Future<Output = ()>,
    N: Future<Output = ()>,
{
    type Output = Result<(), ConnectionError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let result = this.poll_rounds(cx);
        if let Poll::Ready(Err(_)) = &result {
            this.phase = Phase::Done;
            this.shared.close();
            this.notification.set(None);
            this.requests.clear();
        }
        result
    }
}

/// Dropping the driver ends the connection at once: nothing more is read
/// or written, and handles and waiting requests see it closed.
impl<R, W, MQ, MN, Q, N> Drop for Driver<R, W, MQ, MN, Q, N> {
    fn drop(&mut self) {
        self.shared.close();
    }
}
