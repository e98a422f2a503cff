//! The driver: the one future that reads from the peer, writes to it, and
//! polls every handler future inside itself. The in-flight limit and the reply budget decide
//! when it reads (docs/limits.md).

use std::future::Future;
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use futures_io::{AsyncBufRead, AsyncWrite};

use crate::connection::{ConnectionHandle, ConnectionOptions};
use crate::handler::{
    IncomingNotification, IncomingRequest, RawNotification, RawRequest, Responder,
};
use crate::json;
use crate::line_reader::{LineEvent, LineReader, strip_byte_order_mark};
use crate::shared::{CANCEL_REQUEST_METHOD, IDLE_BUFFER_MAX_CAPACITY, RequestState, Shared, Taken};
use crate::task_set::TaskSet;
use crate::trace::IncomingTrace;
mod panic_guard;
pub(crate) use panic_guard::PanicGuard;
use panic_guard::panic_message;

use crate::{
    ConnectionError, Message, Notification, Problem, Request, RequestError, RequestId,
    ResponseError,
};

/// A request read by the forwarding scan, as the handler's forwarding path sees it.
fn offered<'a>(found: &json::ForwardRequest<'a>, handle: &'a ConnectionHandle) -> RawRequest<'a> {
    RawRequest {
        id: found.id,
        message: RawNotification {
            method: found.scan.method,
            params: found.scan.params,
            carried: found.scan.inner,
            connection: handle,
        },
    }
}

/// The waker the driver gives to everything it polls (the writer's queue, the request tasks,
/// the notification, the transport). A wake-up while the driver is polling is only noted: the
/// driver looks at every part again in its next round anyway, and passing it on made the
/// executor poll the driver once more for nothing after each request (the waiter's wake-up,
/// then the writer's). One that arrives after the driver's last look is passed on when the
/// poll ends.
struct DriverWake {
    /// Set while the driver is being polled.
    polling: AtomicBool,
    /// A wake-up arrived since the start of the current round.
    missed: AtomicBool,
    /// The waker of whoever polls the driver.
    outer: Mutex<Option<Waker>>,
}

impl DriverWake {
    fn set_outer(&self, waker: &Waker) {
        let mut outer = self.outer.lock().unwrap_or_else(|p| p.into_inner());
        if !outer.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *outer = Some(waker.clone());
        }
    }

    /// Starts a round: every part is looked at after this, so earlier wake-ups are served.
    fn begin_round(&self) {
        self.missed.store(false, Ordering::SeqCst);
    }

    /// Ends a poll of the driver; returns whether a wake-up came after the last round began
    /// (the caller then passes it on). Paired with the order in `wake_by_ref`: one of the two
    /// sides always sees the other's store.
    fn end_poll(&self) -> bool {
        self.polling.store(false, Ordering::SeqCst);
        self.missed.load(Ordering::SeqCst)
    }
}

impl Wake for DriverWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.missed.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            let outer = self.outer.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(outer) = outer {
                outer.wake();
            }
        }
    }
}

/// Most lines read in one round before the other parts get a turn.
const READ_BATCH_LINES: usize = 64;
/// Rounds in one poll before yielding to the executor.
const ROUNDS_PER_POLL: usize = 32;
/// Bytes read in one poll before yielding to the executor. Whoever takes what the handlers
/// queue (a session's updates, say) often runs on the same thread, only between polls; 2048
/// lines of 64 KiB would be 128 MiB queued before it got a turn, far beyond the update
/// budgets, whereas short lines keep their 2048 per poll.
const READ_BYTES_PER_POLL: usize = 1 << 20;

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
pub(crate) struct Driver<R, W, MQ, MN, MF, MU, MR, Q, N> {
    shared: Arc<Shared>,
    make_request: MQ,
    make_notification: MN,
    /// The handler's forwarding path (`Handler::forward_notification`).
    forward_notification: MF,
    /// `Handler::takes_unread`: which requests the handler takes with their params unread.
    takes_unread: MU,
    /// `Handler::relay_request`: relays a request taken unread with no task, or declines.
    relay_request: MR,
    /// The handle the forwarding path lends, made once.
    handle: ConnectionHandle,
    /// `Handler::FORWARDS`: notifications are offered to the forwarding path, unvalidated.
    forwards: bool,
    /// The methods the forwarding scan has checked as UTF-8 on this connection.
    known_methods: json::KnownMethods,
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
    /// Bytes written since the buffers were last cut back: past half of
    /// [`IDLE_BUFFER_MAX_CAPACITY`], a buffer may have grown beyond it, and the next time the
    /// driver sleeps with nothing left to write they are ([`Shared::release_idle`]).
    written_since_idle: usize,
    unflushed: bool,
    /// Bytes read since this poll began (see [`READ_BYTES_PER_POLL`]).
    read_this_poll: usize,
    /// Whether a request was accepted since the request handlers were last polled (see
    /// `route`).
    fresh_requests: bool,
    max_in_flight: usize,
    /// [`ConnectionOptions::with_null_request_ids_refused`](crate::ConnectionOptions::with_null_request_ids_refused).
    refuse_null_ids: bool,
    phase: Phase,
    wake: Arc<DriverWake>,
    /// A waker for `wake`, made once.
    waker: Waker,
}

impl<R, W, MQ, MN, MF, MU, MR, Q, N> Driver<R, W, MQ, MN, MF, MU, MR, Q, N>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
    MQ: Fn(IncomingRequest, Responder, PanicGuard) -> Q + Unpin,
    MN: Fn(IncomingNotification) -> N + Unpin,
    MF: Fn(&RawNotification<'_>) -> bool + Unpin,
    MU: Fn(&RawRequest<'_>) -> bool + Unpin,
    MR: Fn(&RawRequest<'_>, Responder) -> Result<(), Responder> + Unpin,
    Q: Future<Output = ()>,
    N: Future<Output = ()>,
{
    pub(crate) fn start(
        reader: R,
        writer: W,
        options: ConnectionOptions,
        make_request: MQ,
        make_notification: MN,
        (forward_notification, takes_unread, relay_request): (MF, MU, MR),
        forwards: bool,
    ) -> (ConnectionHandle, Self) {
        let shared = Shared::new(
            options.outgoing_capacity,
            (options.reply_budget, options.shared_reply_budget),
            (options.in_flight_budget, options.shared_in_flight_budget),
            options.observer,
        );
        let wake = Arc::new(DriverWake {
            polling: AtomicBool::new(false),
            missed: AtomicBool::new(false),
            outer: Mutex::new(None),
        });
        let driver = Driver {
            shared: shared.clone(),
            make_request,
            make_notification,
            forward_notification,
            takes_unread,
            relay_request,
            handle: ConnectionHandle {
                shared: shared.clone(),
            },
            forwards,
            known_methods: json::KnownMethods::default(),
            reader: LineReader::with_max_line_length(reader, options.max_line_length),
            writer,
            requests: TaskSet::new(),
            notification: Box::pin(None),
            notification_method: String::new(),
            write_buffer: Vec::new(),
            written: 0,
            written_since_idle: 0,
            unflushed: false,
            read_this_poll: 0,
            fresh_requests: false,
            max_in_flight: options.max_in_flight_requests,
            refuse_null_ids: options.refuse_null_ids,
            phase: Phase::Running,
            wake: wake.clone(),
            waker: Waker::from(wake),
        };
        (ConnectionHandle { shared }, driver)
    }

    fn handle(&self) -> ConnectionHandle {
        self.handle.clone()
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
                        self.written_since_idle += n;
                        self.unflushed = true;
                        progress = true;
                    }
                    Poll::Ready(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                    Poll::Ready(Err(error)) => return Err(error),
                    Poll::Pending => return Ok(progress),
                }
            }
            self.shared.release_written(&mut self.write_buffer);
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

    /// The driver is going to sleep with everything queued written: a burst is over, and the
    /// buffers are cut back to what an idle connection keeps. Not each time the queue runs dry
    /// in the middle of a burst (a stream through a router drains it between most reads): the
    /// next chunk would then start small and grow by reallocation, line after line. A buffer
    /// can only have grown past the idle size if more than half of it was written since, or
    /// if a forwarded line reserved a chunk's worth of room (`Shared::chunk_reserved`).
    fn release_idle(&mut self) {
        if !self.write_buffer.is_empty() {
            return;
        }
        let grown = self.written_since_idle > IDLE_BUFFER_MAX_CAPACITY / 2
            || self.shared.chunk_reserved.load(Ordering::Relaxed);
        if grown {
            self.shared.chunk_reserved.store(false, Ordering::Relaxed);
            self.shared.release_idle(&mut self.write_buffer);
            self.written_since_idle = 0;
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

    /// Whether reading must wait: a notification is being handled (the
    /// ordering contract), or the peer is not reading our answers and taking
    /// more of its requests would only grow memory. Nothing else may stop
    /// the reader: the responses and `$/cancel_request`s that free running
    /// handlers come through it.
    fn reading_paused(&self) -> bool {
        self.notification.is_some() || self.shared.replies_over_budget()
    }

    fn poll_reader(&mut self, cx: &mut Context<'_>) -> io::Result<bool> {
        let mut progress = false;
        let mut length = 0;
        for _ in 0..READ_BATCH_LINES {
            if self.phase != Phase::Running
                || self.reading_paused()
                || self.read_this_poll >= READ_BYTES_PER_POLL
            {
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
                    length = line.len();
                    self.read_this_poll += length;
                    if let Some(observer) = &self.shared.observer {
                        observer.incoming(line);
                    }
                    let line = match strip_byte_order_mark(line) {
                        None => line,
                        Some(rest) => {
                            self.shared.report(Problem::ByteOrderMark);
                            if rest.is_empty() {
                                // Nothing but marks: a blank line.
                                progress = true;
                                continue;
                            }
                            rest
                        }
                    };
                    // A response or a request as most writers spell one (`id` second): one
                    // test of the line's head, so that a notification pays for one scan only.
                    let with_id = self.forwards && json::starts_with_id(line);
                    // A response to a request whose result is forwarded: handed over unread.
                    if with_id
                        && let Some(found) = json::forwardable_response(line)
                        && self.shared.complete_forwarded(found.id, found.result)
                    {
                        let id = RequestId::from(found.id);
                        self.shared.trace.response_received(&id, length, None);
                        self.reader.release_line();
                        progress = true;
                        // As for a decoded response (below): its answer is likely written next.
                        if self.reader.input_exhausted() || self.shared.shared_replies_nearly_full()
                        {
                            break;
                        }
                        continue;
                    }
                    // A request the handler takes with its params unread: its envelope read
                    // exactly, then relayed with no task, or handled with its params copied as
                    // they are.
                    if with_id
                        && let Some(found) = json::forwardable_request(line, &self.known_methods)
                        && (self.takes_unread)(&offered(&found, &self.handle))
                    {
                        // Requests read before it start first (see `route`), so that the relay
                        // sees every earlier message under way.
                        if self.fresh_requests {
                            self.fresh_requests = false;
                            self.requests.poll(cx);
                        }
                        let id = RequestId::from(found.id);
                        let method = found.scan.method;
                        let trace = self.shared.trace.request_received_as(&id, method, length);
                        let running = self.requests.len();
                        let admitted =
                            self.shared
                                .admit(&id, (self.max_in_flight, running), length, trace);
                        if let Some(state) = admitted {
                            let responder =
                                Responder::new(id.clone(), self.shared.clone(), state.clone());
                            let relayed =
                                (self.relay_request)(&offered(&found, &self.handle), responder);
                            if let Err(responder) = relayed {
                                let request = Request {
                                    id,
                                    method: method.to_owned(),
                                    params: None,
                                };
                                let unread =
                                    found.scan.params.map(|params| Box::from(params.as_bytes()));
                                self.start_request(request, unread, responder, state);
                            }
                        }
                        self.reader.release_line();
                        progress = true;
                        if self.reader.input_exhausted() || self.shared.shared_replies_nearly_full()
                        {
                            break;
                        }
                        continue;
                    }
                    if self.forwards
                        && !with_id
                        && let Some(found) =
                            json::forwardable_notification(line, &self.known_methods)
                        && found.method != CANCEL_REQUEST_METHOD
                    {
                        // Requests read before it start first (see `route`), so that
                        // the forwarding path sees every earlier message under way.
                        if self.fresh_requests {
                            self.fresh_requests = false;
                            self.requests.poll(cx);
                        }
                        let offered = RawNotification {
                            method: found.method,
                            params: found.params,
                            carried: found.inner,
                            connection: &self.handle,
                        };
                        if (self.forward_notification)(&offered) {
                            self.shared
                                .trace
                                .notification_received(found.method, length);
                            self.reader.release_line();
                            progress = true;
                            continue;
                        }
                    }
                    // Declined by the forwarding path, or not offered: validated whole, and
                    // answered as JSON-RPC says if malformed.
                    Ok(Message::from_slice(line))
                }
            };
            // Decoded (or skipped): the line is no longer needed.
            self.reader.release_line();
            progress = true;
            match decoded {
                Ok(Ok(message)) => {
                    let expects_a_write =
                        matches!(message, Message::Request(_) | Message::Response(_));
                    let trace = self.shared.trace.received(&message, length);
                    self.route(message, length, trace, cx);
                    // A request (or a response some task waits for) will
                    // likely be answered by a write. When nothing more is
                    // buffered, let that happen before reading again: the
                    // read would most likely find the pipe empty, and after
                    // the write the transport can go straight to waiting.
                    // So too while the server's shared reply budget is nearly full: each
                    // answer then decides whether reading goes on, one request at a time.
                    if expects_a_write
                        && (self.reader.input_exhausted()
                            || self.shared.shared_replies_nearly_full())
                    {
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

    /// Hands a message of `length` bytes on the wire to where it goes.
    fn route(
        &mut self,
        message: Message,
        length: usize,
        trace: IncomingTrace,
        cx: &mut Context<'_>,
    ) {
        match message {
            Message::Request(request) => self.accept_request(request, None, length, trace),
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
                // Requests accepted before this notification get their first poll now, so that
                // every handler starts in the order its message arrived: a router that forwards
                // at its first poll keeps a request ahead of a later notification.
                if self.fresh_requests {
                    self.fresh_requests = false;
                    self.requests.poll(cx);
                }
                self.notification
                    .set(Some((self.make_notification)(notification)));
                // Most handlers finish at once; then reading goes on without
                // a round trip through the main loop.
                self.poll_notification(cx);
            }
            Message::Response(response) => self.shared.complete(response),
        }
    }

    fn accept_request(
        &mut self,
        request: Request,
        unread: Option<Box<[u8]>>,
        length: usize,
        trace: IncomingTrace,
    ) {
        if self.refuse_null_ids && request.id.is_null() {
            let error = ResponseError::null_request_id();
            self.shared.reply_error(&request.id, &error);
            self.shared.report(Problem::NullRequestId {
                method: request.method,
            });
            return;
        }
        let running = self.requests.len();
        let limits = (self.max_in_flight, running);
        let Some(state) = self.shared.admit(&request.id, limits, length, trace) else {
            return;
        };
        let responder = Responder::new(request.id.clone(), self.shared.clone(), state.clone());
        self.start_request(request, unread, responder, state);
    }

    /// Makes the task that handles an admitted request.
    fn start_request(
        &mut self,
        request: Request,
        unread: Option<Box<[u8]>>,
        responder: Responder,
        state: Arc<RequestState>,
    ) {
        let guard = PanicGuard {
            id: request.id.clone(),
            state: state.clone(),
            shared: self.shared.clone(),
        };
        let request = IncomingRequest {
            request,
            unread,
            connection: self.handle(),
        };
        let task = (self.make_request)(request, responder, guard);
        self.requests.insert(task, state);
        self.fresh_requests = true;
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
            // Dropping the handler drops its responder, which answers -32800; a relayed
            // request's responder waits on the next hop, where it is cancelled too.
            self.requests.remove_where(|task| Arc::ptr_eq(task, &state));
            if let Some(link) = state.relay.get()
                && let Some(next) = link.next.upgrade()
            {
                next.cancel_relay(link.id);
            }
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
        self.read_this_poll = 0;
        for _ in 0..ROUNDS_PER_POLL {
            self.wake.begin_round();
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
                self.fresh_requests = false;
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
                self.release_idle();
                return Poll::Pending;
            }
            if self.read_this_poll >= READ_BYTES_PER_POLL {
                break;
            }
        }
        // Plenty done: let the executor run others, and come back.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<R, W, MQ, MN, MF, MU, MR, Q, N> Future for Driver<R, W, MQ, MN, MF, MU, MR, Q, N>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
    MQ: Fn(IncomingRequest, Responder, PanicGuard) -> Q + Unpin,
    MN: Fn(IncomingNotification) -> N + Unpin,
    MF: Fn(&RawNotification<'_>) -> bool + Unpin,
    MU: Fn(&RawRequest<'_>) -> bool + Unpin,
    MR: Fn(&RawRequest<'_>, Responder) -> Result<(), Responder> + Unpin,
    Q: Future<Output = ()>,
    N: Future<Output = ()>,
{
    type Output = Result<(), ConnectionError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let _entered = this.shared.trace.enter();
        this.wake.set_outer(cx.waker());
        this.wake.polling.store(true, Ordering::SeqCst);
        let waker = this.waker.clone();
        let result = this.poll_rounds(&mut Context::from_waker(&waker));
        if this.wake.end_poll() && result.is_pending() {
            cx.waker().wake_by_ref();
        }
        if let Poll::Ready(result) = &result {
            this.shared.trace.finished(result);
        }
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
impl<R, W, MQ, MN, MF, MU, MR, Q, N> Drop for Driver<R, W, MQ, MN, MF, MU, MR, Q, N> {
    fn drop(&mut self) {
        self.shared.close();
    }
}
