//! The pipe loop over any number of pipe pairs: one epoll instance, each end registered once
//! (edge-triggered) with a token of its own that routes its readiness to its waker, pairs
//! added while the loop runs and removed when their ends are dropped.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

use super::ends::{Interest, PipeReader, PipeWriter, set_nonblocking, short_read_empties};
use super::epoll::{Epoll, HUNG_UP, Registration};
use super::waker::{AWAKE, IN_EPOLL, LoopWaker};

/// The eventfd's token. A pair numbered `n` (from 1) has the tokens `2n` (read end) and
/// `2n + 1` (write end), never reused.
const EVENTFD: u64 = 0;

/// How many events one `epoll_wait` takes at most; more wait for the next.
const EVENTS_PER_WAIT: usize = 64;

/// Any number of pipe pairs (a read end and a write end each) waited on by one loop on the
/// calling thread, [`PipeSet::block_on`]: what a process that talks over several pipes at once
/// (a conductor: its client and each component of its chain) runs on instead of a reactor.
///
/// The set is a handle: clones add to the same set, from inside the future the loop runs
/// (a conductor starts its components there) or from any other thread. A pair leaves the set
/// when its two ends are dropped. Unlike [`block_on`](super::block_on) over one pair, this loop
/// always waits in `epoll_wait(2)`, never in `read(2)`, and reads every pipe non-blocking.
///
/// ```
/// use acp_host::pipe_loop::PipeSet;
/// use futures_lite::{AsyncReadExt, AsyncWriteExt};
///
/// // Two pairs, each a pipe to write into and a pipe to read from, as a child's stdin and
/// // stdout would be.
/// let set = PipeSet::new()?;
/// let (mut peers, mut ends) = (Vec::new(), Vec::new());
/// for _ in 0..2 {
///     let (ours_read, theirs_write) = std::io::pipe()?;
///     let (theirs_read, ours_write) = std::io::pipe()?;
///     peers.push((theirs_read, theirs_write));
///     ends.push(set.add(ours_read.into(), ours_write.into())?);
/// }
/// // The peers echo what they read.
/// let echoes: Vec<_> = peers
///     .into_iter()
///     .map(|(mut input, mut output)| {
///         std::thread::spawn(move || std::io::copy(&mut input, &mut output).unwrap())
///     })
///     .collect();
/// let answers = set.block_on(async {
///     let mut answers = Vec::new();
///     for (index, (reader, writer)) in ends.iter_mut().enumerate() {
///         writer.write_all(format!("hello {index}\n").as_bytes()).await?;
///         let mut answer = [0u8; 8];
///         reader.read_exact(&mut answer).await?;
///         answers.push(String::from_utf8_lossy(&answer).into_owned());
///     }
///     std::io::Result::Ok(answers)
/// })??;
/// assert_eq!(answers, ["hello 0\n", "hello 1\n"]);
/// // Closing the write ends, the peers see end of input and stop.
/// let (_readers, writers): (Vec<_>, Vec<_>) = ends.into_iter().unzip();
/// drop(writers);
/// for echo in echoes {
///     echo.join().unwrap();
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct PipeSet {
    shared: Arc<SetShared>,
}

struct SetShared {
    epoll: Arc<Epoll>,
    waker: Arc<LoopWaker>,
    /// Each registered end's pair by its token. Weak: a pair is owned by its ends, and an
    /// entry whose pair is gone is removed at the next [`PipeSet::add`].
    routes: Mutex<HashMap<u64, Weak<Mutex<Interest>>>>,
    /// The number of the next pair added.
    next_pair: AtomicU64,
    /// Set while a thread runs [`PipeSet::block_on`]: one loop per set.
    running: AtomicBool,
}

impl std::fmt::Debug for PipeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeSet")
            .field(
                "pairs_added",
                &(self.shared.next_pair.load(Ordering::Relaxed) - 1),
            )
            .finish_non_exhaustive()
    }
}

impl PipeSet {
    /// An empty set: an epoll instance and the eventfd through which other threads wake its
    /// loop.
    pub fn new() -> io::Result<PipeSet> {
        let epoll = Arc::new(Epoll::new()?);
        let waker = Arc::new(LoopWaker::new(None)?);
        epoll.watch(waker.eventfd.as_raw_fd(), libc::EPOLLIN as u32, EVENTFD)?;
        Ok(PipeSet {
            shared: Arc::new(SetShared {
                epoll,
                waker,
                routes: Mutex::new(HashMap::new()),
                next_pair: AtomicU64::new(1),
                running: AtomicBool::new(false),
            }),
        })
    }

    /// Adds a pair: `reader` to read from and `writer` to write to, both made non-blocking and
    /// watched by the set's epoll instance from now on, until their ends are dropped (or the
    /// writer closed). They must be descriptors epoll can watch (pipes, sockets, terminals):
    /// a regular file is refused with the `EPERM` of `epoll_ctl(2)`.
    ///
    /// The ends are [`AsyncRead`](futures_lite::AsyncRead) and
    /// [`AsyncWrite`](futures_lite::AsyncWrite); they wait only while polled inside this set's
    /// [`block_on`](Self::block_on) (polled elsewhere, their wakers are woken by it when it runs).
    pub fn add(&self, reader: OwnedFd, writer: OwnedFd) -> io::Result<(PipeReader, PipeWriter)> {
        set_nonblocking(reader.as_raw_fd())?;
        set_nonblocking(writer.as_raw_fd())?;
        let interest = Arc::new(Mutex::new(Interest {
            read_edges: short_read_empties(&reader),
            ..Interest::default()
        }));
        let pair = self.shared.next_pair.fetch_add(1, Ordering::Relaxed);
        let (read_token, write_token) = (2 * pair, 2 * pair + 1);
        {
            let mut routes = self.shared.routes.lock().unwrap();
            routes.retain(|_, pair| pair.strong_count() > 0);
            // Before the registrations: an end that is ready already is reported at once.
            routes.insert(read_token, Arc::downgrade(&interest));
            routes.insert(write_token, Arc::downgrade(&interest));
        }
        let epoll = &self.shared.epoll;
        let read_registration = Registration::new(
            epoll.clone(),
            reader.as_raw_fd(),
            libc::EPOLLIN as u32,
            read_token,
        )?;
        // Registered once and for good: the kernel reports a pipe writable again only when a
        // read empties a full one, so a write end that never fills costs no wake-up.
        let write_registration = Registration::new(
            epoll.clone(),
            writer.as_raw_fd(),
            libc::EPOLLOUT as u32,
            write_token,
        )?;
        Ok((
            PipeReader {
                registration: Some(read_registration),
                fd: reader,
                interest: interest.clone(),
            },
            PipeWriter {
                registration: Some(write_registration),
                fd: Some(writer),
                interest,
            },
        ))
    }

    /// Runs `future` to completion on this thread, waiting in `epoll_wait(2)` on the set's
    /// pipes and its eventfd instead of in a reactor. Wakers may be woken from any thread;
    /// timers and other async-io sources keep working (async-io's helper thread drives them
    /// while no smol `block_on` runs, and wakes this loop). Pairs may be added meanwhile.
    ///
    /// An error if another thread runs this set's loop already, or if `epoll_wait` fails.
    pub fn block_on<F: Future>(&self, future: F) -> io::Result<F::Output> {
        if self.shared.running.swap(true, Ordering::AcqRel) {
            return Err(io::Error::other(
                "this pipe set's loop runs on another thread",
            ));
        }
        let _running = Running(&self.shared.running);
        let state = &self.shared.waker;
        let waker = Waker::from(state.clone());
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS_PER_WAIT];
        let mut ready = Vec::new();
        loop {
            state.woken.store(false, Ordering::SeqCst);
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return Ok(output);
            }
            // Until a waker was woken: an event nobody waits for (a write end reported
            // writable, data for a reader not yet polled) costs a wait, not a poll.
            while !state.woken.load(Ordering::SeqCst) {
                state.sleeping.store(IN_EPOLL, Ordering::SeqCst);
                // A wake-up between the check above and here found the loop awake: check.
                let count = if state.woken.load(Ordering::SeqCst) {
                    Ok(0)
                } else {
                    self.shared.epoll.wait(&mut events)
                };
                state.sleeping.store(AWAKE, Ordering::SeqCst);
                self.shared.route(&events[..count?], &mut ready);
                for waker in ready.drain(..) {
                    waker.wake();
                }
            }
        }
    }
}

impl SetShared {
    /// Marks each end in `events` ready and collects the wakers waiting for it into `ready`.
    fn route(&self, events: &[libc::epoll_event], ready: &mut Vec<Waker>) {
        if events.is_empty() {
            return;
        }
        let routes = self.routes.lock().unwrap();
        for event in events {
            let token = event.u64;
            if token == EVENTFD {
                self.waker.drain_eventfd();
                continue;
            }
            // A pair dropped since the event was queued: nobody waits for it.
            let Some(pair) = routes.get(&token).and_then(Weak::upgrade) else {
                continue;
            };
            let mut interest = pair.lock().unwrap();
            if token % 2 == 0 {
                // Data came after the read that found the pipe empty: a write must not make
                // the reader wait for another edge, which may never come.
                interest.drained = false;
                interest.may_read = true;
                interest.read_reports += 1;
                interest.read_hung_up |= event.events & HUNG_UP != 0;
                ready.extend(interest.readable.take());
            } else {
                interest.may_write = true;
                ready.extend(interest.writable.take());
            }
        }
    }
}

/// Clears the set's running flag when its loop returns (or unwinds).
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
