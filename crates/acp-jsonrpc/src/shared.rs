//! State shared between a connection's driver, its handles and responders.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::value::RawValue;

use crate::message::{encode_error, encode_notification};
use crate::observer::SharedObserver;
use crate::{Problem, RequestError, RequestId, Response, ResponseError, oneshot};

/// The notification either side sends to cancel one of its requests.
pub const CANCEL_REQUEST_METHOD: &str = "$/cancel_request";

/// Locks ignoring poisoning: every critical section in this crate is a
/// single insert, remove, swap or assignment, so a panic elsewhere cannot
/// leave the data half-updated, and a poisoned lock must not turn one
/// panicking handler into a dead connection.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One serialized line on its way to the writer.
pub(crate) struct Frame {
    pub(crate) bytes: Vec<u8>,
    pub(crate) kind: FrameKind,
}

/// Which budget a queued frame counts against, so the writer can give it
/// back when it takes the frame.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameKind {
    /// A request or notification from a handle: holds this much of the
    /// outgoing queue's budget (see [`frame_cost`]).
    Metered(usize),
    /// A response: counted in `queued_replies` (bounded by the in-flight
    /// limit, because the reader stops when it is reached).
    Reply,
    /// A `$/cancel_request` sent from a destructor, which cannot wait.
    /// Each one follows a request that held a permit, so they stay few.
    Unmetered,
}

pub(crate) type ResponseResult = Result<Box<RawValue>, RequestError>;

struct PendingRequests {
    waiters: HashMap<i64, oneshot::Sender<ResponseResult>>,
    /// Set once no response can arrive any more (end of input, close).
    refused: bool,
}

/// Per incoming request: what its responder must know when it is dropped.
#[derive(Default)]
pub(crate) struct RequestState {
    pub(crate) cancelled: AtomicBool,
    pub(crate) panicked: AtomicBool,
}

pub(crate) struct Shared {
    outgoing: async_channel::Sender<Frame>,
    /// The outgoing queue's budget in use: the sum of [`frame_cost`] of the
    /// queued requests and notifications. Weighing by size bounds memory for
    /// large messages too, not only the number of small ones.
    queued_cost: AtomicUsize,
    queued_messages: AtomicUsize,
    /// Woken when the writer frees budget, or on close.
    space: event_listener::Event,
    outgoing_capacity: usize,
    next_id: AtomicI64,
    pending: Mutex<PendingRequests>,
    incoming: Mutex<HashMap<RequestId, Arc<RequestState>>>,
    queued_replies: AtomicUsize,
    closed: AtomicBool,
    buffers: Mutex<Vec<Vec<u8>>>,
    pub(crate) observer: SharedObserver,
}

/// What a queued frame costs at least, in bytes: the outgoing capacity counts
/// messages of about this size, and larger ones cost their length.
const MIN_FRAME_COST: usize = 256;

/// A frame's share of the outgoing queue's budget.
fn frame_cost(len: usize) -> usize {
    len.max(MIN_FRAME_COST)
}

const POOLED_BUFFERS: usize = 64;
const POOLED_BUFFER_MAX_CAPACITY: usize = 64 * 1024;
const NEW_BUFFER_CAPACITY: usize = 256;

impl Shared {
    pub(crate) fn new(
        outgoing_capacity: usize,
        observer: SharedObserver,
    ) -> (Arc<Shared>, async_channel::Receiver<Frame>) {
        let (outgoing, outgoing_rx) = async_channel::unbounded();
        let shared = Arc::new(Shared {
            outgoing,
            queued_cost: AtomicUsize::new(0),
            queued_messages: AtomicUsize::new(0),
            space: event_listener::Event::new(),
            outgoing_capacity: outgoing_capacity.max(1),
            next_id: AtomicI64::new(0),
            pending: Mutex::new(PendingRequests {
                waiters: HashMap::new(),
                refused: false,
            }),
            incoming: Mutex::new(HashMap::new()),
            queued_replies: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            buffers: Mutex::new(Vec::new()),
            observer,
        });
        (shared, outgoing_rx)
    }

    pub(crate) fn report(&self, problem: Problem) {
        if let Some(observer) = &self.observer {
            observer.problem(&problem);
        }
    }

    // --- buffers -----------------------------------------------------------

    pub(crate) fn take_buffer(&self) -> Vec<u8> {
        lock(&self.buffers)
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(NEW_BUFFER_CAPACITY))
    }

    pub(crate) fn recycle(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() > POOLED_BUFFER_MAX_CAPACITY {
            return;
        }
        buffer.clear();
        let mut buffers = lock(&self.buffers);
        if buffers.len() < POOLED_BUFFERS {
            buffers.push(buffer);
        }
    }

    // --- the outgoing queue ---------------------------------------------------

    pub(crate) fn outgoing_capacity(&self) -> usize {
        self.outgoing_capacity
    }

    /// Requests and notifications queued and not yet taken by the writer.
    pub(crate) fn queued(&self) -> usize {
        self.queued_messages.load(Ordering::Acquire)
    }

    fn budget(&self) -> usize {
        self.outgoing_capacity * MIN_FRAME_COST
    }

    /// Queues a request or notification without waiting; gives the bytes
    /// back when the queue is full.
    pub(crate) fn try_enqueue_metered(&self, bytes: Vec<u8>) -> Result<(), TryEnqueue> {
        if self.is_closed() {
            self.recycle(bytes);
            return Err(TryEnqueue::Closed);
        }
        let cost = frame_cost(bytes.len());
        let mut current = self.queued_cost.load(Ordering::Acquire);
        loop {
            // A message larger than the whole budget still goes out, alone.
            if current != 0 && current + cost > self.budget() {
                return Err(TryEnqueue::Full(bytes));
            }
            match self.queued_cost.compare_exchange_weak(
                current,
                current + cost,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(actual) => current = actual,
            }
        }
        self.queued_messages.fetch_add(1, Ordering::AcqRel);
        self.push_metered(bytes, cost)
    }

    /// Queues a request or notification, waiting while the queue is full.
    pub(crate) async fn enqueue_metered(&self, mut bytes: Vec<u8>) -> Result<(), RequestError> {
        loop {
            match self.try_enqueue_metered(bytes) {
                Ok(()) => return Ok(()),
                Err(TryEnqueue::Closed) => return Err(RequestError::ConnectionClosed),
                Err(TryEnqueue::Full(returned)) => bytes = returned,
            }
            // Listen first, then retry: a wake-up between the two is not lost.
            let listener = self.space.listen();
            match self.try_enqueue_metered(bytes) {
                Ok(()) => return Ok(()),
                Err(TryEnqueue::Closed) => return Err(RequestError::ConnectionClosed),
                Err(TryEnqueue::Full(returned)) => bytes = returned,
            }
            listener.await;
        }
    }

    fn push_metered(&self, bytes: Vec<u8>, cost: usize) -> Result<(), TryEnqueue> {
        let frame = Frame {
            bytes,
            kind: FrameKind::Metered(cost),
        };
        match self.outgoing.try_send(frame) {
            Ok(()) => Ok(()),
            Err(error) => {
                self.dequeued(FrameKind::Metered(cost));
                self.recycle(error.into_inner().bytes);
                Err(TryEnqueue::Closed)
            }
        }
    }

    /// Called by the writer for every frame it takes off the queue.
    pub(crate) fn dequeued(&self, kind: FrameKind) {
        match kind {
            FrameKind::Metered(cost) => {
                self.queued_messages.fetch_sub(1, Ordering::AcqRel);
                self.queued_cost.fetch_sub(cost, Ordering::AcqRel);
                self.space.notify(usize::MAX);
            }
            FrameKind::Reply => {
                self.queued_replies.fetch_sub(1, Ordering::AcqRel);
            }
            FrameKind::Unmetered => {}
        }
    }

    /// Queues a response whose reply slot was reserved with
    /// [`reserve_reply`](Self::reserve_reply).
    fn push_reply(&self, bytes: Vec<u8>) {
        let frame = Frame {
            bytes,
            kind: FrameKind::Reply,
        };
        if let Err(error) = self.outgoing.try_send(frame) {
            // Closed: nothing will be written any more.
            self.queued_replies.fetch_sub(1, Ordering::AcqRel);
            self.recycle(error.into_inner().bytes);
        }
    }

    pub(crate) fn reserve_reply(&self) {
        self.queued_replies.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn queued_replies(&self) -> usize {
        self.queued_replies.load(Ordering::Acquire)
    }

    /// Sends an error response the connection itself decided on.
    pub(crate) fn reply_error(&self, id: &RequestId, error: &ResponseError) {
        let mut bytes = self.take_buffer();
        encode_error(&mut bytes, id, error);
        self.reserve_reply();
        self.push_reply(bytes);
    }

    /// Sends a response from a [`Responder`](crate::Responder): releases the
    /// id first, so the peer may reuse it as soon as it sees the answer.
    pub(crate) fn send_response(&self, id: &RequestId, state: &Arc<RequestState>, bytes: Vec<u8>) {
        {
            let mut incoming = lock(&self.incoming);
            if incoming.get(id).is_some_and(|s| Arc::ptr_eq(s, state)) {
                incoming.remove(id);
            }
        }
        self.push_reply(bytes);
    }

    pub(crate) fn send_cancel(&self, id: i64) {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct CancelParams {
            request_id: i64,
        }
        let mut bytes = self.take_buffer();
        if encode_notification(
            &mut bytes,
            CANCEL_REQUEST_METHOD,
            &CancelParams { request_id: id },
        )
        .is_ok()
        {
            let frame = Frame {
                bytes,
                kind: FrameKind::Unmetered,
            };
            let _ = self.outgoing.try_send(frame);
        }
    }

    // --- requests we sent ------------------------------------------------------

    pub(crate) fn next_request_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers a waiter for the response to `id`; `None` when the
    /// connection can no longer receive responses.
    pub(crate) fn register_waiter(&self, id: i64) -> Option<oneshot::Receiver<ResponseResult>> {
        let mut pending = lock(&self.pending);
        if pending.refused {
            return None;
        }
        let (sender, receiver) = oneshot::channel();
        pending.waiters.insert(id, sender);
        Some(receiver)
    }

    /// Forgets the waiter for `id`; returns whether it was still waiting.
    pub(crate) fn forget_waiter(&self, id: i64) -> bool {
        lock(&self.pending).waiters.remove(&id).is_some()
    }

    fn take_waiter(&self, id: &RequestId) -> Option<oneshot::Sender<ResponseResult>> {
        let id = id.as_i64()?;
        lock(&self.pending).waiters.remove(&id)
    }

    /// Hands a response to the request waiting for it.
    pub(crate) fn complete(&self, response: Response) {
        match self.take_waiter(&response.id) {
            Some(waiter) => waiter.send(response.result.map_err(RequestError::Response)),
            None => self.report(Problem::UnknownResponse(response)),
        }
    }

    /// Fails the request waiting for `id` (its response was malformed).
    pub(crate) fn fail_waiter(&self, id: &RequestId, error: RequestError) {
        if let Some(waiter) = self.take_waiter(id) {
            waiter.send(Err(error));
        }
    }

    /// No response can arrive any more: fail every waiting request and
    /// refuse new ones.
    pub(crate) fn refuse_requests(&self) {
        let waiters = {
            let mut pending = lock(&self.pending);
            pending.refused = true;
            std::mem::take(&mut pending.waiters)
        };
        // Dropping the senders wakes the waiters with "connection closed".
        drop(waiters);
    }

    // --- requests the peer sent --------------------------------------------------

    /// Records an incoming request as in flight; `None` when one with the
    /// same id already is.
    pub(crate) fn begin_incoming(&self, id: &RequestId) -> Option<Arc<RequestState>> {
        let mut incoming = lock(&self.incoming);
        if incoming.contains_key(id) {
            return None;
        }
        let state = Arc::new(RequestState::default());
        incoming.insert(id.clone(), state.clone());
        Some(state)
    }

    pub(crate) fn incoming_state(&self, id: &RequestId) -> Option<Arc<RequestState>> {
        lock(&self.incoming).get(id).cloned()
    }

    pub(crate) fn has_unanswered_incoming(&self) -> bool {
        !lock(&self.incoming).is_empty()
    }

    // --- shutdown -----------------------------------------------------------------

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Stops accepting messages: the writer still drains what was queued
    /// before. Every pending request fails with `ConnectionClosed`.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.outgoing.close();
        self.space.notify(usize::MAX);
        self.refuse_requests();
    }
}

pub(crate) enum TryEnqueue {
    Full(Vec<u8>),
    Closed,
}
