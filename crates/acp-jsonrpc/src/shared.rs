//! State shared between a connection's driver, its handles and responders: the outgoing queue
//! (one byte buffer that messages are appended to and the writer swaps out whole), its byte
//! budgets, the replies' room, and shutdown; the maps of requests in flight both ways are in
//! `in_flight.rs`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Waker};

use crate::budget::{BudgetScope, ByteBudget, Charge};
use crate::forwarded::Answer;
use crate::id_map::IdMap;
use crate::message::{encode_error, encode_notification};
use crate::observer::SharedObserver;
use crate::trace::{ConnectionTrace, IncomingTrace};
use crate::wakeup::Wakeup;
use crate::{Problem, RequestError, RequestId, ResponseError, oneshot};

pub(crate) use buffers::IDLE_BUFFER_MAX_CAPACITY;
use chunk::{CHUNK_CAPACITY, Chunk, LARGE_MESSAGE, MIN_FRAME_COST, frame_cost};
pub(crate) use relayed::{Delivered, RelayLink, Relayed};

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

/// What a message counts against on its way to the writer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Budget {
    /// A request or notification from a handle: holds this much of the
    /// outgoing queue's budget (see [`frame_cost`]).
    Metered(usize),
    /// A response: its length counts in the queue's `reply_bytes`.
    /// `released` is the room its responder had reserved for it, given back
    /// in the same step so that no other reserver can slip in between.
    Reply { released: usize },
    /// A `$/cancel_request` sent from a destructor, which cannot wait.
    /// Each one follows a request that held a permit, so they stay few.
    Unmetered,
}

/// Complete lines waiting for the writer. Small messages are appended to one chunk (one copy
/// each), which the writer takes whole: the hot path has no per-message queue node, allocation
/// or wake-up. A large message is a chunk of its own, written from its own buffer without being
/// copied.
struct OutgoingQueue {
    chunks: VecDeque<Chunk>,
    /// Budget used by the queued requests and notifications, over all chunks.
    metered_cost: usize,
    metered_messages: usize,
    /// Bytes of the queued responses (replies are never refused, so this may
    /// exceed the reply budget; the driver then stops reading).
    reply_bytes: usize,
    /// Of `reply_bytes`, those taken from the shared reply budget (given back as the writer
    /// takes them), and those queued beside it because it had no room for this connection
    /// (the driver reads nothing while there are any).
    charged_reply_bytes: usize,
    uncharged_reply_bytes: usize,
    /// Room of the reply budget held by responders for answers not sent yet
    /// ([`Responder::reserve`](crate::Responder::reserve)).
    reserved_bytes: usize,
    /// Reservers waiting for room, in the order they asked: a large
    /// reservation, which needs the queue to drain, is not overtaken forever
    /// by small ones.
    reservers: VecDeque<u64>,
    next_reserver: u64,
    closed: bool,
    /// The driver, when it found the queue empty.
    writer: Option<Waker>,
}

/// What the writer found in the queue.
pub(crate) enum Taken {
    /// Lines were moved into the writer's buffer.
    Lines,
    /// Nothing queued; the writer is woken when something is.
    Empty,
    /// Nothing queued and nothing will be: the connection is closed.
    Closed,
}

pub(crate) type ResponseResult = Result<Answer, RequestError>;

/// A request of ours waiting for its response.
enum PendingRequest {
    /// A task awaits it.
    Waiting {
        sender: oneshot::Sender<ResponseResult>,
        /// Its result is forwarded, not read: the forwarding scan may hand it over unread.
        forwarded: bool,
    },
    /// It relays a request of the peer of another connection, whose answer it becomes
    /// (`relay.rs`); no task awaits it.
    Relayed(Box<dyn Relayed>),
}

struct PendingRequests {
    waiters: IdMap<i64, PendingRequest>,
    /// Set once no response can arrive any more (end of input, close).
    refused: bool,
}

/// Per incoming request: what its responder must know when it is dropped.
#[derive(Default)]
pub(crate) struct RequestState {
    /// What the request holds of the in-flight byte budgets, given back when the last holder
    /// of this state (the handler's task, its responder, the map of requests in flight) lets
    /// go of it.
    _charge: Charge,
    pub(crate) cancelled: AtomicBool,
    pub(crate) panicked: AtomicBool,
    pub(crate) trace: IncomingTrace,
    /// Where the request was relayed to, when it was (`relay.rs`): what cancels it there.
    pub(crate) relay: OnceLock<RelayLink>,
}

pub(crate) struct Shared {
    /// The outgoing queue. Its budget is the sum of [`frame_cost`] of the
    /// queued requests and notifications: weighing by size bounds memory for
    /// large messages too, not only the number of small ones.
    outgoing: Mutex<OutgoingQueue>,
    /// Woken when the writer frees budget, or on close.
    space: Wakeup,
    outgoing_capacity: usize,
    /// Woken when reply room frees up (the writer took replies, a
    /// reservation was given back, the first waiting reserver changed), or
    /// on close.
    reply_room: Wakeup,
    reply_budget: usize,
    /// The reply budget this connection shares with others, if any
    /// ([`ConnectionOptions::with_shared_reply_budget`](crate::ConnectionOptions::with_shared_reply_budget)).
    shared_replies: Option<ByteBudget>,
    /// A copy of the queue's `reply_bytes`, which the driver checks before
    /// every line it reads without taking the lock.
    queued_reply_bytes: AtomicUsize,
    /// A copy of the queue's `uncharged_reply_bytes`, for the same check.
    uncharged_reply_bytes: AtomicUsize,
    next_id: AtomicI64,
    pending: Mutex<PendingRequests>,
    incoming: Mutex<IdMap<RequestId, Arc<RequestState>>>,
    /// What the peer's requests in flight hold, in bytes on the wire.
    in_flight: ByteBudget,
    /// The budget this connection shares with others, if any.
    shared_in_flight: Option<ByteBudget>,
    closed: AtomicBool,
    buffers: Mutex<Vec<Vec<u8>>>,
    /// Set when a forwarded line started a chunk with a chunk's worth of room
    /// ([`CHUNK_CAPACITY`]): a buffer then outgrew the idle size without that much being
    /// written, so the driver's next sleep cuts the buffers back whatever it wrote.
    pub(crate) chunk_reserved: AtomicBool,
    pub(crate) observer: SharedObserver,
    pub(crate) trace: ConnectionTrace,
}

impl Shared {
    pub(crate) fn new(
        outgoing_capacity: usize,
        (reply_budget, shared_replies): (usize, Option<ByteBudget>),
        (in_flight, shared_in_flight): (usize, Option<ByteBudget>),
        observer: SharedObserver,
    ) -> Arc<Shared> {
        Arc::new(Shared {
            outgoing: Mutex::new(OutgoingQueue {
                chunks: VecDeque::new(),
                metered_cost: 0,
                metered_messages: 0,
                reply_bytes: 0,
                charged_reply_bytes: 0,
                uncharged_reply_bytes: 0,
                reserved_bytes: 0,
                reservers: VecDeque::new(),
                next_reserver: 0,
                closed: false,
                writer: None,
            }),
            space: Wakeup::new(),
            outgoing_capacity: outgoing_capacity.max(1),
            reply_room: Wakeup::new(),
            reply_budget,
            shared_replies,
            queued_reply_bytes: AtomicUsize::new(0),
            uncharged_reply_bytes: AtomicUsize::new(0),
            next_id: AtomicI64::new(0),
            pending: Mutex::new(PendingRequests {
                waiters: IdMap::default(),
                refused: false,
            }),
            incoming: Mutex::new(IdMap::default()),
            in_flight: ByteBudget::new(in_flight),
            shared_in_flight,
            closed: AtomicBool::new(false),
            buffers: Mutex::new(Vec::new()),
            chunk_reserved: AtomicBool::new(false),
            observer,
            trace: ConnectionTrace::new(),
        })
    }

    pub(crate) fn report(&self, problem: Problem) {
        self.trace.problem(&problem);
        if let Some(observer) = &self.observer {
            observer.problem(&problem);
        }
    }

    // --- the outgoing queue ---------------------------------------------------

    pub(crate) fn outgoing_capacity(&self) -> usize {
        self.outgoing_capacity
    }

    /// Requests and notifications queued and not yet taken by the writer.
    pub(crate) fn queued(&self) -> usize {
        lock(&self.outgoing).metered_messages
    }

    fn budget(&self) -> usize {
        self.outgoing_capacity * MIN_FRAME_COST
    }

    /// Appends one complete line to the outgoing queue. Gives the bytes back
    /// when the queue is closed, or full for a metered message.
    fn push(&self, bytes: Vec<u8>, budget: Budget) -> Result<(), TryEnqueue> {
        let mut queue = lock(&self.outgoing);
        let released = match budget {
            Budget::Reply { released } => released,
            _ => 0,
        };
        queue.reserved_bytes -= released;
        if queue.closed {
            drop(queue);
            return Err(TryEnqueue::Closed(bytes));
        }
        let (cost, messages, reply_bytes) = match budget {
            Budget::Metered(cost) => {
                // A message larger than the whole budget still goes out, alone.
                if queue.metered_cost != 0 && queue.metered_cost + cost > self.budget() {
                    return Err(TryEnqueue::Full(bytes));
                }
                (cost, 1, 0)
            }
            Budget::Reply { .. } => (0, 0, bytes.len()),
            Budget::Unmetered => (0, 0, 0),
        };
        queue.metered_cost += cost;
        queue.metered_messages += messages;
        if reply_bytes != 0 {
            queue.reply_bytes += reply_bytes;
            self.queued_reply_bytes
                .store(queue.reply_bytes, Ordering::Release);
            if let Some(shared) = &self.shared_replies {
                let after = queue.charged_reply_bytes + reply_bytes;
                if shared.try_take_as(reply_bytes, after) {
                    queue.charged_reply_bytes = after;
                } else {
                    queue.uncharged_reply_bytes += reply_bytes;
                    self.uncharged_reply_bytes
                        .store(queue.uncharged_reply_bytes, Ordering::Release);
                }
            }
        }
        let large = bytes.len() >= LARGE_MESSAGE;
        let spare = match queue.chunks.back_mut() {
            Some(chunk) if !large && chunk.takes(bytes.len()) => {
                chunk.bytes.extend_from_slice(&bytes);
                chunk.metered_cost += cost;
                chunk.metered_messages += messages;
                chunk.reply_bytes += reply_bytes;
                Some(bytes)
            }
            _ => {
                queue.chunks.push_back(Chunk {
                    bytes,
                    large,
                    metered_cost: cost,
                    metered_messages: messages,
                    reply_bytes,
                });
                None
            }
        };
        let writer = queue.writer.take();
        drop(queue);
        if let Some(spare) = spare {
            self.recycle(spare);
        }
        if let Some(writer) = writer {
            writer.wake();
        }
        if released != 0 {
            // The reply may be smaller than what was reserved for it.
            self.reply_room.notify_all();
        }
        Ok(())
    }

    /// Queues a request or notification without waiting; gives the bytes
    /// back when the queue is full.
    pub(crate) fn try_enqueue_metered(&self, bytes: Vec<u8>) -> Result<(), TryEnqueue> {
        let cost = frame_cost(bytes.len());
        self.push(bytes, Budget::Metered(cost))
    }

    /// Queues a request or notification that `encode` appends, without waiting: straight to
    /// the end of the queue's last chunk, under the queue's lock, when there is one to append
    /// to (the usual case while messages stream), instead of into a pooled buffer that is then
    /// copied there; otherwise as [`try_enqueue_metered`](Self::try_enqueue_metered) does.
    /// `at_least` is a lower bound of the line's length: from [`LARGE_MESSAGE`] on, the line
    /// gets a chunk of its own. Returns the line's length, or `None`, having queued nothing,
    /// when the queue is full or closed.
    pub(crate) fn try_enqueue_encoded(
        &self,
        at_least: usize,
        encode: impl Fn(&mut Vec<u8>),
    ) -> Option<usize> {
        if at_least < LARGE_MESSAGE {
            let budget = self.budget();
            let mut queue = lock(&self.outgoing);
            let queued_cost = queue.metered_cost;
            if queue.closed {
                return None;
            }
            if let Some(chunk) = queue
                .chunks
                .back_mut()
                .filter(|chunk| chunk.takes(at_least))
            {
                let start = chunk.bytes.len();
                encode(&mut chunk.bytes);
                let length = chunk.bytes.len() - start;
                let cost = frame_cost(length);
                let full = queued_cost != 0 && queued_cost + cost > budget;
                if full || length >= LARGE_MESSAGE {
                    chunk.bytes.truncate(start);
                    if full {
                        return None;
                    }
                } else {
                    chunk.metered_cost += cost;
                    chunk.metered_messages += 1;
                    queue.metered_cost += cost;
                    queue.metered_messages += 1;
                    let writer = queue.writer.take();
                    drop(queue);
                    if let Some(writer) = writer {
                        writer.wake();
                    }
                    return Some(length);
                }
            }
        }
        let mut bytes = self.take_buffer();
        if at_least < LARGE_MESSAGE {
            // This line starts a chunk that the lines forwarded after it will be appended to
            // (a stream, usually): room for a chunk's worth at once, rather than growing from
            // an idle connection's small buffer by reallocation.
            bytes.reserve(CHUNK_CAPACITY);
            self.chunk_reserved.store(true, Ordering::Relaxed);
        }
        encode(&mut bytes);
        let length = bytes.len();
        match self.try_enqueue_metered(bytes) {
            Ok(()) => Some(length),
            Err(TryEnqueue::Full(bytes) | TryEnqueue::Closed(bytes)) => {
                self.recycle(bytes);
                None
            }
        }
    }

    /// Queues a request or notification, waiting while the queue is full.
    pub(crate) async fn enqueue_metered(&self, mut bytes: Vec<u8>) -> Result<(), RequestError> {
        loop {
            match self.try_enqueue_metered(bytes) {
                Ok(()) => return Ok(()),
                Err(TryEnqueue::Closed(bytes)) => {
                    self.recycle(bytes);
                    return Err(RequestError::ConnectionClosed);
                }
                Err(TryEnqueue::Full(returned)) => bytes = returned,
            }
            // Listen first, then retry: a wake-up between the two is not lost.
            let listener = self.space.listen();
            match self.try_enqueue_metered(bytes) {
                Ok(()) => return Ok(()),
                Err(TryEnqueue::Closed(bytes)) => {
                    self.recycle(bytes);
                    return Err(RequestError::ConnectionClosed);
                }
                Err(TryEnqueue::Full(returned)) => bytes = returned,
            }
            listener.await;
        }
    }

    /// The writer's side: replaces `buffer` (written out, so empty) with the
    /// next chunk of queued lines, or registers the writer's waker when
    /// nothing is queued.
    pub(crate) fn take_queued(&self, buffer: &mut Vec<u8>, cx: &Context<'_>) -> Taken {
        debug_assert!(buffer.is_empty());
        let mut queue = lock(&self.outgoing);
        let Some(chunk) = queue.chunks.pop_front() else {
            if queue.closed {
                return Taken::Closed;
            }
            if !queue
                .writer
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
            {
                queue.writer = Some(cx.waker().clone());
            }
            return Taken::Empty;
        };
        queue.metered_cost -= chunk.metered_cost;
        queue.metered_messages -= chunk.metered_messages;
        let mut uncharge = 0;
        if chunk.reply_bytes != 0 {
            queue.reply_bytes -= chunk.reply_bytes;
            self.queued_reply_bytes
                .store(queue.reply_bytes, Ordering::Release);
            if self.shared_replies.is_some() {
                // What was queued beside the shared budget goes first: reading resumes as
                // soon as the peer has taken that much.
                let beside = chunk.reply_bytes.min(queue.uncharged_reply_bytes);
                queue.uncharged_reply_bytes -= beside;
                self.uncharged_reply_bytes
                    .store(queue.uncharged_reply_bytes, Ordering::Release);
                uncharge = (chunk.reply_bytes - beside).min(queue.charged_reply_bytes);
                queue.charged_reply_bytes -= uncharge;
            }
        }
        drop(queue);
        if let Some(shared) = &self.shared_replies
            && uncharge != 0
        {
            shared.give_back(uncharge);
        }
        let written = std::mem::replace(buffer, chunk.bytes);
        self.recycle(written);
        if chunk.reply_bytes != 0 {
            self.reply_room.notify_all();
        }
        if chunk.metered_cost != 0 {
            self.space.notify_all();
        }
        if let Some(observer) = &self.observer {
            for line in buffer.split_inclusive(|&b| b == b'\n') {
                observer.outgoing(line.strip_suffix(b"\n").unwrap_or(line));
            }
        }
        Taken::Lines
    }

    /// Queues a response, giving back the `released` bytes of reply room
    /// its responder held. A response is never refused (a responder cannot
    /// wait): the reply budget is kept by the driver, which stops reading
    /// while it is exceeded, and by reservers, who wait for room.
    /// Returns false when the connection is closed and the response dropped.
    fn push_reply(&self, bytes: Vec<u8>, released: usize) -> bool {
        match self.push(bytes, Budget::Reply { released }) {
            Ok(()) => true,
            Err(TryEnqueue::Closed(bytes) | TryEnqueue::Full(bytes)) => {
                // Closed: nothing will be written any more.
                self.recycle(bytes);
                false
            }
        }
    }

    pub(crate) fn reply_budget(&self) -> usize {
        self.reply_budget
    }

    /// Bytes of responses queued and not yet taken by the writer.
    pub(crate) fn queued_reply_bytes(&self) -> usize {
        self.queued_reply_bytes.load(Ordering::Acquire)
    }

    /// Whether the peer is so far behind reading our answers that taking
    /// more of its requests would only grow memory.
    pub(crate) fn replies_over_budget(&self) -> bool {
        self.queued_reply_bytes() > self.reply_budget
            || self.uncharged_reply_bytes.load(Ordering::Acquire) != 0
    }

    /// Whether the shared reply budget is nearly full, so that each request's answer is best
    /// seen (charged, or pausing the reading) before the next request is read: a batch of
    /// requests read at once would otherwise all be answered beside it.
    pub(crate) fn shared_replies_nearly_full(&self) -> bool {
        self.shared_replies
            .as_ref()
            .is_some_and(ByteBudget::is_nearly_full)
    }

    pub(crate) fn reserved_reply_bytes(&self) -> usize {
        lock(&self.outgoing).reserved_bytes
    }

    /// Waits until the reply budget has room for `bytes` more, then takes
    /// it, for a responder that already holds `held`. Dropping the future
    /// before it resolves takes nothing.
    pub(crate) async fn reserve_reply_room(&self, bytes: usize, held: usize) {
        let mut place = ReserverPlace {
            shared: self,
            ticket: None,
        };
        loop {
            if self.try_reserve_reply_room(bytes, held, &mut place.ticket, true) {
                return;
            }
            // Listen first, then retry: a wake-up between the two is not lost.
            let listener = self.reply_room.listen();
            if self.try_reserve_reply_room(bytes, held, &mut place.ticket, true) {
                return;
            }
            listener.await;
        }
    }

    /// Takes `bytes` of reply room if they are free now and nobody waits for room, without
    /// taking a place in line; returns whether it did (for the relays, which cannot wait).
    pub(crate) fn try_reserve_reply_room_now(&self, bytes: usize, held: usize) -> bool {
        self.try_reserve_reply_room(bytes, held, &mut None, false)
    }

    /// Grants `bytes` when they fit in the budget, or when nothing but the
    /// asker's own reservation is queued or held (so that a reply larger than
    /// the whole budget still goes out, alone). Waiting reservers are served
    /// in order, except that one already holding room may add to it: it
    /// gives its room back only when it answers, so making it wait behind
    /// others that wait for that room would deadlock. Otherwise takes a place
    /// in line, once, in `ticket`, if it is to `queue_up`.
    fn try_reserve_reply_room(
        &self,
        bytes: usize,
        held: usize,
        ticket: &mut Option<u64>,
        queue_up: bool,
    ) -> bool {
        let mut queue = lock(&self.outgoing);
        let first = held != 0
            || match ticket {
                Some(ticket) => queue.reservers.front() == Some(ticket),
                None => queue.reservers.is_empty(),
            };
        let used = queue.reply_bytes + queue.reserved_bytes;
        let fits = used == held || used.saturating_add(bytes) <= self.reply_budget;
        if queue.closed || (first && fits) {
            if let Some(ticket) = ticket.take()
                && let Some(position) = queue.reservers.iter().position(|t| *t == ticket)
            {
                queue.reservers.remove(position);
            }
            queue.reserved_bytes += bytes;
            let others_wait = !queue.reservers.is_empty();
            drop(queue);
            if others_wait {
                // The next in line may fit as well.
                self.reply_room.notify_all();
            }
            return true;
        }
        if queue_up && ticket.is_none() && held == 0 {
            let next = queue.next_reserver;
            queue.next_reserver += 1;
            queue.reservers.push_back(next);
            *ticket = Some(next);
        }
        false
    }

    /// Sends an error response the connection itself decided on.
    pub(crate) fn reply_error(&self, id: &RequestId, error: &ResponseError) {
        let mut bytes = self.take_buffer();
        encode_error(&mut bytes, id, error);
        self.trace.error_sent(id, bytes.len(), error);
        self.push_reply(bytes, 0);
    }

    /// Sends a response from a [`Responder`](crate::Responder) that held
    /// `reserved` bytes of reply room: releases the id first, so the peer may
    /// reuse it as soon as it sees the answer. Returns false when the
    /// connection is closed and the response dropped.
    pub(crate) fn send_response(
        &self,
        id: &RequestId,
        state: &Arc<RequestState>,
        bytes: Vec<u8>,
        reserved: usize,
    ) -> bool {
        {
            let mut incoming = lock(&self.incoming);
            if incoming.get(id).is_some_and(|s| Arc::ptr_eq(s, state)) {
                incoming.remove(id);
            }
        }
        self.push_reply(bytes, reserved)
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
            self.trace
                .notification_sent(CANCEL_REQUEST_METHOD, bytes.len());
            if let Err(TryEnqueue::Closed(bytes) | TryEnqueue::Full(bytes)) =
                self.push(bytes, Budget::Unmetered)
            {
                self.recycle(bytes);
            }
        } else {
            self.recycle(bytes);
        }
    }

    // --- shutdown -----------------------------------------------------------------

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Stops accepting messages: the writer still drains what was queued
    /// before. Every pending request fails with `ConnectionClosed`.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let writer = {
            let mut queue = lock(&self.outgoing);
            queue.closed = true;
            queue.writer.take()
        };
        if let Some(writer) = writer {
            writer.wake();
        }
        self.space.notify_all();
        self.reply_room.notify_all();
        self.refuse_requests();
        self.abandon_relays();
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Responses never written (the connection ended first) give back what they hold of
        // the shared reply budget.
        let queue = self.outgoing.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = &self.shared_replies
            && queue.charged_reply_bytes != 0
        {
            shared.give_back(queue.charged_reply_bytes);
        }
    }
}

/// Why an incoming request was not taken.
pub(crate) enum Refusal {
    DuplicateId,
    TooMany,
    /// The request's bytes do not fit in the budget of `limit` bytes of `scope`.
    TooLarge {
        scope: BudgetScope,
        limit: usize,
    },
}

/// A reserver's place in line, given up when its wait ends or is dropped.
struct ReserverPlace<'a> {
    shared: &'a Shared,
    ticket: Option<u64>,
}

impl Drop for ReserverPlace<'_> {
    fn drop(&mut self) {
        let Some(ticket) = self.ticket else {
            return;
        };
        let was_first = {
            let mut queue = lock(&self.shared.outgoing);
            let position = queue.reservers.iter().position(|t| *t == ticket);
            if let Some(position) = position {
                queue.reservers.remove(position);
            }
            position == Some(0)
        };
        if was_first {
            // Whoever is first now may fit.
            self.shared.reply_room.notify_all();
        }
    }
}

/// Why a message was not queued; the bytes come back for reuse.
pub(crate) enum TryEnqueue {
    Full(Vec<u8>),
    Closed(Vec<u8>),
}

mod buffers;
mod chunk;
mod in_flight;
mod relayed;
