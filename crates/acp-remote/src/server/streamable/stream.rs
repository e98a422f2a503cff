//! One SSE stream of a Streamable HTTP connection: the messages waiting to be sent (a
//! [`ByteQueue`] in the connection's stream budget), and its replay window: the events sent
//! already, numbered from 1 on this stream, kept (within the connection's [`Replay`] bounds)
//! so that a client whose stream was cut can come back with `Last-Event-ID` and get exactly
//! what it missed.
//!
//! One reader at a time sends a stream's events. A GET with `Last-Event-ID` takes the stream
//! over from a reader that still looks alive (its socket may be dead without the server
//! knowing yet: the client knows better); the old reader ends at its next step. Ids are
//! given to messages by the reader as it takes them from the queue, under the window's lock,
//! so that a reader that was taken over never numbers, nor reorders, anything.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use acp_jsonrpc::ByteBudget;
use event_listener::{Event, EventListener};

use crate::queue::ByteQueue;
use crate::share::Share;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one connection keeps of the events its streams sent: at most `limit` bytes of
/// messages and `max_events` events (the oldest event of any stream given up first) and
/// nothing older than `age`.
#[derive(Debug)]
pub(crate) struct Replay {
    limit: usize,
    max_events: usize,
    age: Duration,
    /// The client asked for the durable transport: each message sent carries its event id
    /// in `_meta["acp/cursor"]` too (see [`crate::proto::cursor`]).
    cursors: bool,
    used: AtomicUsize,
    /// Events kept now, all streams together.
    events: AtomicUsize,
    /// The server's memory ceiling, which the kept bytes are drawn from too (`used` is this
    /// connection's share of it, for its own bound).
    ceiling: ByteBudget,
    /// Stamps events in the order they were sent, across the connection's streams.
    order: AtomicU64,
    /// One trim at a time.
    trimming: Mutex<()>,
}

impl Replay {
    pub(crate) fn new(
        limit: usize,
        max_events: usize,
        age: Duration,
        cursors: bool,
        ceiling: ByteBudget,
    ) -> Arc<Replay> {
        Arc::new(Replay {
            limit,
            max_events,
            age,
            cursors,
            used: AtomicUsize::new(0),
            events: AtomicUsize::new(0),
            ceiling,
            order: AtomicU64::new(0),
            trimming: Mutex::new(()),
        })
    }

    /// Bytes of messages kept now, all streams together (for the metrics).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// Whether messages are stamped with their cursor (the client asked for the durable
    /// transport).
    pub(crate) fn cursors(&self) -> bool {
        self.cursors
    }

    /// The bytes the window keeps at most (once trimmed: see `docs/limits.md`).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Counts an event of `bytes` in, if the server's memory ceiling has room for it.
    fn keep(&self, bytes: usize) -> bool {
        if !self.ceiling.try_take(bytes) {
            return false;
        }
        self.used.fetch_add(bytes, Ordering::SeqCst);
        self.events.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Counts `events` of `bytes` out.
    fn forget(&self, bytes: usize, events: usize) {
        self.used.fetch_sub(bytes, Ordering::SeqCst);
        self.events.fetch_sub(events, Ordering::SeqCst);
        self.ceiling.give_back(bytes);
    }

    /// Gives up events of `streams` (all of one connection's) until the bounds hold: first
    /// those older than the age, then the oldest sent, whichever stream sent it.
    pub(crate) fn trim(&self, streams: &[Arc<SseStream>]) {
        let _one = lock(&self.trimming);
        if let Some(cutoff) = Instant::now().checked_sub(self.age) {
            for stream in streams {
                let (freed, events) = stream.forget_older(cutoff);
                self.forget(freed, events);
            }
        }
        while self.used.load(Ordering::SeqCst) > self.limit
            || self.events.load(Ordering::SeqCst) > self.max_events
        {
            let oldest = streams
                .iter()
                .filter_map(|s| s.oldest_order().map(|order| (order, s)))
                .min_by_key(|(order, _)| *order);
            let Some((_, stream)) = oldest else { break };
            let (freed, events) = stream.forget_oldest();
            self.forget(freed, events);
        }
    }
}

/// What an event kept costs beyond its message's bytes (counted in the window with them, so
/// that many small events cannot hold much more than the window's bytes).
const KEPT_OVERHEAD: usize = std::mem::size_of::<Kept>();

/// An event sent and kept.
#[derive(Debug)]
struct Kept {
    id: u64,
    order: u64,
    at: Instant,
    message: Vec<u8>,
}

#[derive(Debug, Default)]
struct Window {
    /// Sent events still kept: consecutive ids ending at `last_id`, oldest first.
    kept: VecDeque<Kept>,
    /// The id of the last event sent (0: none yet).
    last_id: u64,
    /// Events up to this id were handed to a transport that asked for more afterwards: a
    /// reader that does not resume starts after them.
    written: u64,
    /// The current reader (0: none), and the last reader number given.
    reader: u64,
    readers: u64,
}

impl Window {
    /// Gives back the room of a burst that is gone (a deque keeps its largest size).
    fn shrink(&mut self) {
        if self.kept.capacity() > 64 && self.kept.len() < self.kept.capacity() / 4 {
            let keep = self.kept.len() * 2;
            self.kept.shrink_to(keep);
        }
    }

    /// The id of the oldest event a resumption can still get.
    fn first_kept(&self) -> u64 {
        self.kept.front().map_or(self.last_id + 1, |k| k.id)
    }
}

/// Why a GET cannot read a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttachError {
    /// Another reader has it, and the GET did not say where it resumes.
    Busy,
    /// `Last-Event-ID` is beyond the last event sent on the stream.
    Ahead { last: u64 },
    /// Events after `Last-Event-ID` are no longer kept: the oldest kept is `first_kept`.
    Passed { first_kept: u64 },
}

/// A reader's place on its stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attached {
    pub(crate) reader: u64,
    /// The id of the last event the client has; the reader sends those after it.
    pub(crate) cursor: u64,
}

/// What a reader sends next.
#[derive(Debug)]
pub(crate) enum Batch {
    /// Rendered events, and the id of the last one.
    Events(Vec<u8>, u64),
    /// Nothing yet.
    Empty,
    /// The reader is done: taken over, the stream ended, or the events it still had to send
    /// are no longer kept (its client, reconnecting, will be told).
    Ended,
}

/// One SSE stream: pending messages, then the window of sent ones.
#[derive(Debug)]
pub(crate) struct SseStream {
    pub(crate) pending: ByteQueue,
    window: Mutex<Window>,
    replay: Arc<Replay>,
    /// Woken when another reader takes the stream over.
    taken_over: Event,
}

/// Appends one event, `id: <id>` then its `data:` line, to `out`.
pub(crate) fn render(out: &mut Vec<u8>, id: u64, message: &[u8]) {
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(message);
    out.extend_from_slice(b"\n\n");
}

impl SseStream {
    pub(crate) fn new(budget: Share, replay: Arc<Replay>) -> SseStream {
        SseStream {
            pending: ByteQueue::new(budget),
            window: Mutex::default(),
            replay,
            taken_over: Event::new(),
        }
    }

    /// Becomes the stream's reader. Without `resume` (a GET without `Last-Event-ID`), only
    /// if it has none, from where the last reader's transport had got to; with it, from that
    /// id, taking the stream over.
    pub(crate) fn attach(&self, resume: Option<u64>) -> Result<Attached, AttachError> {
        let mut w = lock(&self.window);
        let cursor = match resume {
            None if w.reader != 0 => return Err(AttachError::Busy),
            None => w.written.max(w.first_kept() - 1),
            Some(id) if id > w.last_id => return Err(AttachError::Ahead { last: w.last_id }),
            Some(id) if id + 1 < w.first_kept() => {
                return Err(AttachError::Passed {
                    first_kept: w.first_kept(),
                });
            }
            Some(id) => {
                w.written = w.written.max(id);
                id
            }
        };
        w.readers += 1;
        w.reader = w.readers;
        let reader = w.reader;
        drop(w);
        self.taken_over.notify(usize::MAX);
        Ok(Attached { reader, cursor })
    }

    /// The reader leaves (if it is still the stream's).
    pub(crate) fn detach(&self, reader: u64) {
        let mut w = lock(&self.window);
        if w.reader == reader {
            w.reader = 0;
        }
    }

    /// The reader's transport took everything up to `id`.
    pub(crate) fn written(&self, reader: u64, id: u64) {
        let mut w = lock(&self.window);
        if w.reader == reader {
            w.written = w.written.max(id);
        }
    }

    /// Listeners for what can give a waiting reader something to do: a message pushed, or
    /// the stream taken over. Made before [`take_batch`](Self::take_batch) finds nothing.
    pub(crate) fn listen(&self) -> (EventListener, EventListener) {
        (self.pending.listen_pushed(), self.taken_over.listen())
    }

    /// Up to about `max` bytes of events after `cursor`: kept ones first (a resumption), then
    /// pending messages, numbered and kept as they are taken.
    pub(crate) fn take_batch(&self, reader: u64, cursor: u64, max: usize) -> Batch {
        self.take_rendered(reader, cursor, max, render)
    }

    /// As [`take_batch`](Self::take_batch), each message as a line (a WebSocket carrying
    /// the stream sends each as a frame; the cursor is in its `_meta`).
    pub(crate) fn take_lines(&self, reader: u64, cursor: u64, max: usize) -> Batch {
        self.take_rendered(reader, cursor, max, |out, _, message| {
            out.extend_from_slice(message);
            out.push(b'\n');
        })
    }

    /// The id of the last event sent (0: none yet).
    pub(crate) fn last_id(&self) -> u64 {
        lock(&self.window).last_id
    }

    fn take_rendered(
        &self,
        reader: u64,
        cursor: u64,
        max: usize,
        render: fn(&mut Vec<u8>, u64, &[u8]),
    ) -> Batch {
        let mut w = lock(&self.window);
        if w.reader != reader {
            return Batch::Ended;
        }
        let mut out = Vec::new();
        if cursor < w.last_id {
            let first = w.first_kept();
            if cursor + 1 < first {
                return Batch::Ended;
            }
            let mut last = cursor;
            for kept in w.kept.iter().skip((cursor + 1 - first) as usize) {
                render(&mut out, kept.id, &kept.message);
                last = kept.id;
                if out.len() >= max {
                    break;
                }
            }
            return Batch::Events(out, last);
        }
        while out.len() < max {
            match self.pending.try_pop() {
                Ok(Some(mut message)) => {
                    // A line may come in a buffer grown for it: what is kept for minutes
                    // holds little more than its bytes, which are what the window counts.
                    if message.capacity() > message.len() + message.len() / 4 + 64 {
                        message.shrink_to_fit();
                    }
                    w.last_id += 1;
                    let id = w.last_id;
                    if self.replay.cursors {
                        // Kept stamped: a replay sends the very bytes, cursor included.
                        if let Some(stamped) =
                            crate::proto::cursor::stamp(&message, &id.to_string())
                        {
                            message = stamped;
                        }
                    }
                    render(&mut out, id, &message);
                    if self.replay.keep(message.len() + KEPT_OVERHEAD) {
                        w.kept.push_back(Kept {
                            id,
                            order: self.replay.order.fetch_add(1, Ordering::SeqCst),
                            at: Instant::now(),
                            message,
                        });
                    } else {
                        // The server's memory ceiling has no room to keep it: the stream's
                        // older events go too (kept ids stay consecutive), and a resumption
                        // before this event is refused, never served with a gap.
                        let (mut freed, mut events) = (0, 0);
                        for kept in w.kept.drain(..) {
                            freed += kept.message.len() + KEPT_OVERHEAD;
                            events += 1;
                        }
                        self.replay.forget(freed, events);
                    }
                }
                Ok(None) => break,
                Err(()) if out.is_empty() => return Batch::Ended,
                Err(()) => break,
            }
        }
        if out.is_empty() {
            Batch::Empty
        } else {
            Batch::Events(out, w.last_id)
        }
    }

    /// Whether `reader`, given [`Batch::Ended`], ended without the stream being finished:
    /// taken over, or with events it still had to send given up.
    pub(crate) fn broken(&self, reader: u64) -> bool {
        let w = lock(&self.window);
        w.reader != reader || !self.pending.is_finished()
    }

    fn oldest_order(&self) -> Option<u64> {
        lock(&self.window).kept.front().map(|k| k.order)
    }

    /// Gives up the oldest event kept: the bytes and the events (0 or 1) freed.
    fn forget_oldest(&self) -> (usize, usize) {
        let mut w = lock(&self.window);
        let freed = w
            .kept
            .pop_front()
            .map_or((0, 0), |k| (k.message.len() + KEPT_OVERHEAD, 1));
        w.shrink();
        freed
    }

    /// Gives up the events sent before `cutoff`: the bytes and the events freed.
    fn forget_older(&self, cutoff: Instant) -> (usize, usize) {
        let mut w = lock(&self.window);
        let (mut freed, mut events) = (0, 0);
        while w.kept.front().is_some_and(|k| k.at < cutoff) {
            if let Some(kept) = w.kept.pop_front() {
                freed += kept.message.len() + KEPT_OVERHEAD;
                events += 1;
            }
        }
        w.shrink();
        (freed, events)
    }

    /// Drops what the stream keeps (the connection is gone).
    pub(crate) fn abort(&self) {
        self.pending.abort();
        let (mut freed, mut events) = (0, 0);
        for kept in lock(&self.window).kept.drain(..) {
            freed += kept.message.len() + KEPT_OVERHEAD;
            events += 1;
        }
        self.replay.forget(freed, events);
        self.taken_over.notify(usize::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(replay: &Arc<Replay>) -> Arc<SseStream> {
        Arc::new(SseStream::new(Share::alone(1 << 20), replay.clone()))
    }

    fn events(batch: Batch) -> (String, u64) {
        match batch {
            Batch::Events(bytes, last) => (String::from_utf8(bytes).unwrap(), last),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn resumes_exactly_after_the_last_event_id() {
        smol::block_on(async {
            let replay = Replay::new(
                1 << 20,
                usize::MAX,
                Duration::from_secs(60),
                false,
                ByteBudget::new(usize::MAX),
            );
            let s = stream(&replay);
            for m in ["a", "b", "c"] {
                s.pending.push(m.as_bytes().to_vec()).await.unwrap();
            }
            let first = s.attach(None).unwrap();
            assert_eq!(first.cursor, 0);
            let (text, last) = events(s.take_batch(first.reader, 0, 16));
            assert_eq!(text, "id: 1\ndata: a\n\nid: 2\ndata: b\n\n");
            assert_eq!(last, 2);
            assert_eq!(s.attach(None).unwrap_err(), AttachError::Busy);
            // The client got event 1 only; it comes back and takes the stream over.
            let second = s.attach(Some(1)).unwrap();
            assert!(matches!(s.take_batch(first.reader, 2, 64), Batch::Ended));
            let (text, last) = events(s.take_batch(second.reader, 1, 64));
            assert_eq!((text.as_str(), last), ("id: 2\ndata: b\n\n", 2));
            let (text, _) = events(s.take_batch(second.reader, 2, 64));
            assert_eq!(text, "id: 3\ndata: c\n\n");
            assert!(matches!(s.take_batch(second.reader, 3, 64), Batch::Empty));
            assert_eq!(
                s.attach(Some(4)).unwrap_err(),
                AttachError::Ahead { last: 3 }
            );
            assert_eq!(replay.used(), 3 * (1 + KEPT_OVERHEAD));
        });
    }

    #[test]
    fn the_oldest_event_of_the_connection_goes_first() {
        smol::block_on(async {
            let replay = Replay::new(
                2 * (1 + KEPT_OVERHEAD),
                usize::MAX,
                Duration::from_secs(60),
                false,
                ByteBudget::new(usize::MAX),
            );
            let (a, b) = (stream(&replay), stream(&replay));
            let (ra, rb) = (a.attach(None).unwrap(), b.attach(None).unwrap());
            a.pending.push(b"1".to_vec()).await.unwrap();
            events(a.take_batch(ra.reader, 0, 64));
            b.pending.push(b"2".to_vec()).await.unwrap();
            b.pending.push(b"3".to_vec()).await.unwrap();
            events(b.take_batch(rb.reader, 0, 64));
            replay.trim(&[a.clone(), b.clone()]);
            assert_eq!(replay.used(), 2 * (1 + KEPT_OVERHEAD));
            // `a`'s event was the oldest: a resumption before it is refused, not gapped.
            assert_eq!(
                a.attach(Some(0)).unwrap_err(),
                AttachError::Passed { first_kept: 2 }
            );
            assert!(a.attach(Some(1)).is_ok(), "nothing missed, nothing needed");
            assert!(b.attach(Some(0)).is_ok());
            // Too old now: everything goes.
            let replay = Replay::new(
                1 << 20,
                usize::MAX,
                Duration::ZERO,
                false,
                ByteBudget::new(usize::MAX),
            );
            let c = stream(&replay);
            let rc = c.attach(None).unwrap();
            c.pending.push(b"x".to_vec()).await.unwrap();
            events(c.take_batch(rc.reader, 0, 64));
            std::thread::sleep(Duration::from_millis(2));
            replay.trim(std::slice::from_ref(&c));
            assert_eq!(replay.used(), 0);
            assert_eq!(
                c.attach(Some(0)).unwrap_err(),
                AttachError::Passed { first_kept: 2 }
            );
        });
    }

    #[test]
    fn cursors_are_kept_with_the_event_and_events_are_bounded_in_number() {
        smol::block_on(async {
            let replay = Replay::new(
                1 << 20,
                2,
                Duration::from_secs(60),
                true,
                ByteBudget::new(usize::MAX),
            );
            let s = stream(&replay);
            let r = s.attach(None).unwrap();
            for m in [
                r#"{"method":"a","params":{}}"#,
                r#"{"id":1,"result":null}"#,
                r#"{"method":"c","params":{"x":1}}"#,
            ] {
                s.pending.push(m.as_bytes().to_vec()).await.unwrap();
            }
            let (text, _) = events(s.take_batch(r.reader, 0, 1024));
            insta::assert_snapshot!(text, @r#"
            id: 1
            data: {"method":"a","params":{"_meta":{"acp/cursor":"1"}}}

            id: 2
            data: {"id":1,"result":null}

            id: 3
            data: {"method":"c","params":{"_meta":{"acp/cursor":"3"},"x":1}}
            "#);
            replay.trim(std::slice::from_ref(&s));
            assert_eq!(replay.events.load(Ordering::SeqCst), 2, "the event cap");
            // A resumption gets the very bytes, cursors included.
            let again = s.attach(Some(1)).unwrap();
            let (replayed, _) = events(s.take_batch(again.reader, 1, 1024));
            assert!(text.ends_with(&replayed), "{replayed}");
            assert_eq!(
                s.attach(Some(0)).unwrap_err(),
                AttachError::Passed { first_kept: 2 }
            );
        });
    }

    #[test]
    fn the_window_draws_on_the_memory_ceiling_and_gives_up_what_does_not_fit() {
        smol::block_on(async {
            let ceiling = ByteBudget::new(2 * (1 + KEPT_OVERHEAD));
            let replay = Replay::new(
                1 << 20,
                usize::MAX,
                Duration::from_secs(60),
                false,
                ceiling.clone(),
            );
            let s = stream(&replay);
            let r = s.attach(None).unwrap();
            for m in ["a", "b"] {
                s.pending.push(m.as_bytes().to_vec()).await.unwrap();
            }
            events(s.take_batch(r.reader, 0, 64));
            assert_eq!(ceiling.used(), 2 * (1 + KEPT_OVERHEAD));
            // No room for the third: sent, not kept, and the older ones go with it.
            s.pending.push(b"c".to_vec()).await.unwrap();
            let (text, _) = events(s.take_batch(r.reader, 2, 64));
            assert_eq!(text, "id: 3\ndata: c\n\n");
            assert_eq!((ceiling.used(), replay.used()), (0, 0));
            assert_eq!(
                s.attach(Some(1)).unwrap_err(),
                AttachError::Passed { first_kept: 4 }
            );
            let again = s.attach(Some(3)).unwrap();
            s.pending.push(b"d".to_vec()).await.unwrap();
            events(s.take_batch(again.reader, 3, 64));
            assert_eq!(ceiling.used(), 1 + KEPT_OVERHEAD);
            s.abort();
            assert_eq!(ceiling.used(), 0, "what the connection kept is given back");
        });
    }
}
