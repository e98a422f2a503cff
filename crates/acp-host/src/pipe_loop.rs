//! A reactor-free way to run a connection over two pipes on the calling thread.
//!
//! smol's `block_on` shares one I/O reactor with async-io's helper thread. When the connection's
//! thread is busy for a moment the helper takes the reactor, and from then on every wake-up of
//! the connection is a hand-off between the two threads (futex, `epoll_pwait`,
//! `timerfd_settime`): about 30 system calls per request/response round trip instead of 4. For
//! the one case where that dominates, a process whose traffic is two pipes, [`block_on`] waits
//! with `epoll_wait(2)` on exactly those pipes plus an eventfd for wake-ups from other threads.
//! Everything else (timers, other async-io sources) keeps working: while no smol `block_on`
//! runs, async-io's helper thread drives the reactor and wakes this loop through the eventfd.
//!
//! When the future waits for the read end alone, the loop sleeps in `read(2)` on the pipe
//! itself instead, one system call per wake-up where `epoll_wait` and the read after it are two;
//! another thread's wake-up then reaches it as a signal sent to the loop's thread. The signal
//! is `SIGURG`, claimed only while its disposition is the default (an application with its own
//! handler keeps it, and its loops wait in `epoll_wait`); `ACP_PIPE_LOOP_SIGNAL=off` in the
//! environment turns the claim off, `ACP_PIPE_LOOP_SIGNAL=N` claims signal `N` instead. An
//! application must not install its own handler for that signal while a loop runs.

mod wake_signal;

use wake_signal::Slept;

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use futures_lite::{AsyncRead, AsyncWrite};

/// The wakers waiting for the pipes, shared by the pipe ends and the loop.
struct Interest {
    readable: Option<Waker>,
    writable: Option<Waker>,
    /// Cleared when a read returns `EAGAIN`, set when epoll reports the pipe readable: while
    /// clear, polling the reader costs no system call. Only cleared once a read found the pipe
    /// empty, so that any data after that is a new edge for the edge-triggered epoll.
    may_read: bool,
    may_write: bool,
    /// The last read emptied the pipe (it returned less than asked for).
    /// Writing after that usually means waiting for the peer's answer to what
    /// was written, so the next read skips straight to waiting instead of
    /// trying a read that would only return `EAGAIN`: one system call less
    /// per request/response round trip. A reader that does not write (a
    /// stream of notifications) keeps reading eagerly.
    drained: bool,
    /// How the reader tries the read end without waiting.
    read_mode: ReadMode,
    /// What the loop read while it slept in `read` ([`SLEEP_READ_BYTES`] once allocated), given
    /// to the reader from `parked_at` to `parked_end` before it reads the pipe again.
    parked: Vec<u8>,
    parked_at: usize,
    parked_end: usize,
    /// The loop's thread and the signal that interrupts its `read`, while it sleeps there. A
    /// waker signals while holding this lock and the loop clears it under the lock before it
    /// goes on, so a signal never reaches a thread that left (or another thread with its id).
    reading: Option<(libc::pid_t, libc::c_int)>,
}

/// How the reader reads the read end without waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadMode {
    /// The read end stays blocking (so that the loop can sleep in `read` on it) and the reader
    /// reads with `preadv2(RWF_NOWAIT)`: a pipe, with its status flags.
    Blocking(libc::c_int),
    /// The read end is `O_NONBLOCK` and read with `read`: anything else, or a kernel whose
    /// pipes refuse `RWF_NOWAIT`. The loop then always waits in `epoll_wait`.
    NonBlocking,
}

/// What one sleep in `read` takes at most, as the raw pair's reads do.
const SLEEP_READ_BYTES: usize = 64 * 1024;

impl Default for Interest {
    fn default() -> Self {
        Interest {
            readable: None,
            writable: None,
            may_read: true,
            may_write: true,
            drained: false,
            read_mode: ReadMode::NonBlocking,
            parked: Vec::new(),
            parked_at: 0,
            parked_end: 0,
            reading: None,
        }
    }
}

/// One read end and one write end, both non-blocking, waited on by [`block_on`].
pub struct Pipes {
    interest: Arc<Mutex<Interest>>,
    read_fd: RawFd,
    write_fd: RawFd,
}

/// The read end.
pub struct PipeReader {
    fd: OwnedFd,
    interest: Arc<Mutex<Interest>>,
}

/// The write end. Closing it (or dropping it) closes the descriptor: the reader at the other
/// end sees end of input.
pub struct PipeWriter {
    fd: Option<OwnedFd>,
    interest: Arc<Mutex<Interest>>,
}

impl std::fmt::Debug for Pipes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipes")
            .field("read_fd", &self.read_fd)
            .field("write_fd", &self.write_fd)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for PipeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeReader")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for PipeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeWriter")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

/// Takes `reader` and `writer` for a loop run by [`block_on`]. The writer is made
/// non-blocking; the reader too unless it is a pipe, which stays blocking so that the loop can
/// sleep in `read` on it (its reads without waiting use `RWF_NOWAIT`).
pub fn pipes(reader: OwnedFd, writer: OwnedFd) -> io::Result<(Pipes, PipeReader, PipeWriter)> {
    let read_mode = if is_pipe(&reader) {
        ReadMode::Blocking(wake_signal::set_blocking(reader.as_raw_fd())?)
    } else {
        set_nonblocking(reader.as_raw_fd())?;
        ReadMode::NonBlocking
    };
    set_nonblocking(writer.as_raw_fd())?;
    let interest = Arc::new(Mutex::new(Interest {
        read_mode,
        ..Interest::default()
    }));
    let pipes = Pipes {
        interest: interest.clone(),
        read_fd: reader.as_raw_fd(),
        write_fd: writer.as_raw_fd(),
    };
    Ok((
        pipes,
        PipeReader {
            fd: reader,
            interest: interest.clone(),
        },
        PipeWriter {
            fd: Some(writer),
            interest,
        },
    ))
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn is_pipe(fd: &OwnedFd) -> bool {
    // SAFETY: fstat fills a struct we own.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_raw_fd(), &mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFIFO
    }
}

/// Reads what `fd` has without waiting: `EAGAIN` when it has nothing.
fn read_now(fd: RawFd, mode: ReadMode, buf: &mut [u8]) -> isize {
    match mode {
        ReadMode::Blocking(_) => {
            let iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: `iov` describes `buf`, valid for writes of its length; offset -1 reads
            // at the current position, as `read` does.
            unsafe { libc::preadv2(fd, &iov, 1, -1, libc::RWF_NOWAIT) }
        }
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
        ReadMode::NonBlocking => unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) },
    }
}

fn would_block(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::WouldBlock
}

impl AsyncRead for PipeReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let mut mode = {
            let mut interest = self.interest.lock().unwrap();
            if interest.parked_at < interest.parked_end {
                let Interest {
                    parked,
                    parked_at,
                    parked_end,
                    ..
                } = &mut *interest;
                let n = buf.len().min(*parked_end - *parked_at);
                buf[..n].copy_from_slice(&parked[*parked_at..*parked_at + n]);
                *parked_at += n;
                return Poll::Ready(Ok(n));
            }
            if !interest.may_read {
                interest.readable = Some(cx.waker().clone());
                return Poll::Pending;
            }
            interest.read_mode
        };
        loop {
            let n = read_now(self.fd.as_raw_fd(), mode, buf);
            if n >= 0 {
                let drained = (n as usize) < buf.len();
                self.interest.lock().unwrap().drained = drained;
                return Poll::Ready(Ok(n as usize));
            }
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if matches!(mode, ReadMode::Blocking(_)) && refuses_nowait(&error) {
                // An old kernel: the pipe becomes non-blocking and the loop waits in epoll.
                set_nonblocking(self.fd.as_raw_fd())?;
                mode = ReadMode::NonBlocking;
                self.interest.lock().unwrap().read_mode = mode;
                continue;
            }
            if !would_block(&error) {
                return Poll::Ready(Err(error));
            }
            let mut interest = self.interest.lock().unwrap();
            interest.may_read = false;
            interest.drained = false;
            interest.readable = Some(cx.waker().clone());
            return Poll::Pending;
        }
    }
}

/// `preadv2` or `RWF_NOWAIT` unknown to this kernel, or refused for this descriptor.
fn refuses_nowait(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL)
    )
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        // The loop sleeps in `read` only for a reader that waits; this one never will again.
        self.interest.lock().unwrap().readable = None;
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let Some(fd) = self.fd.as_ref().map(AsRawFd::as_raw_fd) else {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        };
        {
            let mut interest = self.interest.lock().unwrap();
            if !interest.may_write {
                interest.writable = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        loop {
            // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
            let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
            if n >= 0 {
                let mut interest = self.interest.lock().unwrap();
                if interest.drained {
                    interest.drained = false;
                    interest.may_read = false;
                }
                return Poll::Ready(Ok(n as usize));
            }
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if !would_block(&error) {
                return Poll::Ready(Err(error));
            }
            let mut interest = self.interest.lock().unwrap();
            interest.may_write = false;
            interest.writable = Some(cx.waker().clone());
            return Poll::Pending;
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered here: every write went to the pipe.
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.fd = None;
        Poll::Ready(Ok(()))
    }
}

/// Wakes the loop: a flag for wake-ups during a poll of the future, the eventfd for wake-ups
/// while the loop sleeps in `epoll_wait(2)`, a signal to its thread while it sleeps in `read`.
struct LoopWaker {
    woken: AtomicBool,
    /// [`AWAKE`], [`IN_EPOLL`] or [`IN_READ`].
    sleeping: AtomicU8,
    eventfd: OwnedFd,
    /// The pipes' state, where [`Interest::reading`] names the thread to signal.
    interest: Arc<Mutex<Interest>>,
}

const AWAKE: u8 = 0;
const IN_EPOLL: u8 = 1;
const IN_READ: u8 = 2;

impl Wake for LoopWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        match self.sleeping.load(Ordering::SeqCst) {
            IN_EPOLL => {
                let one: u64 = 1;
                // SAFETY: writes 8 bytes from a valid u64 to our eventfd.
                unsafe { libc::write(self.eventfd.as_raw_fd(), (&raw const one).cast(), 8) };
            }
            IN_READ => {
                if let Some((thread, signal)) = self.interest.lock().unwrap().reading {
                    wake_signal::interrupt(thread, signal);
                }
            }
            _ => {}
        }
    }
}

/// An epoll instance watching the loop's descriptors, edge-triggered. Edge-triggered and
/// registered once, a wait costs no per-call registration (what made `poll(2)` on the same
/// descriptors cost more than the read it waits for); no wake-up is lost because the loop only
/// sleeps on a pipe after a read or write found it empty or full (see [`Interest`]), and any
/// later change is an edge.
struct Epoll {
    fd: OwnedFd,
}

/// What an epoll event is about.
const EVENTFD: u64 = 0;
const READ_END: u64 = 1;
const WRITE_END: u64 = 2;

impl Epoll {
    fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes an integer and returns a new descriptor or -1.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just created and is owned by nothing else.
        let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
        Ok(Epoll { fd })
    }

    fn control(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: `event` is a valid epoll_event; the kernel validates the descriptors.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut event) } == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watches `fd` for `events` (edge-triggered). On failure the caller treats the descriptor
    /// as ready, so that the read or write itself reports what is wrong.
    fn watch(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let events = events | libc::EPOLLET as u32;
        match self.control(libc::EPOLL_CTL_ADD, fd, events, token) {
            Err(error) if error.raw_os_error() == Some(libc::EEXIST) => {
                self.control(libc::EPOLL_CTL_MOD, fd, events, token)
            }
            other => other,
        }
    }

    fn unwatch(&self, fd: RawFd) {
        // Fails only when the descriptor is closed already, which unwatches it too.
        let _ = self.control(libc::EPOLL_CTL_DEL, fd, 0, 0);
    }

    /// Waits for events; returns (eventfd, read end, write end) readiness.
    fn wait(&self) -> io::Result<(bool, bool, bool)> {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
        // SAFETY: `events` is a valid array of 4 epoll_event.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                -1,
            )
        };
        if n == -1 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                return Ok((false, false, false));
            }
            return Err(error);
        }
        let mut ready = (false, false, false);
        for event in &events[..n as usize] {
            match event.u64 {
                EVENTFD => ready.0 = true,
                READ_END => ready.1 = true,
                _ => ready.2 = true,
            }
        }
        Ok(ready)
    }
}

/// Runs `future` to completion on this thread, sleeping in `read(2)` on the read end while only
/// the reader waits, and otherwise in `epoll_wait(2)` on the pipes' descriptors and an eventfd,
/// instead of in a reactor. Wakers may be woken from any thread.
pub fn block_on<F: Future>(pipes: &Pipes, future: F) -> io::Result<F::Output> {
    // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
    let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if raw == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just created and is owned by nothing else.
    let eventfd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    let epoll = Epoll::new()?;
    epoll.watch(eventfd.as_raw_fd(), libc::EPOLLIN as u32, EVENTFD)?;
    let state = Arc::new(LoopWaker {
        woken: AtomicBool::new(false),
        sleeping: AtomicU8::new(AWAKE),
        eventfd,
        interest: pipes.interest.clone(),
    });
    let mut reader_sleep = ReadSleep::new(pipes);
    let waker = Waker::from(state.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    // The pipes are watched from the first time a reader or writer waits on them (the
    // descriptors are open then: the reader or writer holding them is alive). The read end
    // stays watched; the write end only while a writer waits, since it is rarely full.
    let mut read_watched = false;
    let mut write_watched = false;
    loop {
        state.woken.store(false, Ordering::SeqCst);
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Ok(output);
        }
        if state.woken.load(Ordering::SeqCst) {
            continue;
        }
        let (want_read, want_write, read_sleep) = {
            let mut interest = pipes.interest.lock().unwrap();
            let (want_read, want_write) =
                (interest.readable.is_some(), interest.writable.is_some());
            let read_sleep = if want_read && !want_write {
                reader_sleep.prepare(pipes.read_fd, &mut interest)
            } else {
                None
            };
            (want_read, want_write, read_sleep)
        };
        if let Some(sleep) = read_sleep {
            reader_sleep.sleep(sleep, pipes, &state);
            continue;
        }
        let (mut read_ready, mut write_ready) = (false, false);
        if want_read && !read_watched {
            read_watched = true;
            read_ready = epoll
                .watch(pipes.read_fd, libc::EPOLLIN as u32, READ_END)
                .is_err();
        }
        if want_write && !write_watched {
            write_watched = true;
            write_ready = epoll
                .watch(pipes.write_fd, libc::EPOLLOUT as u32, WRITE_END)
                .is_err();
        } else if !want_write && write_watched {
            write_watched = false;
            epoll.unwatch(pipes.write_fd);
        }
        if !read_ready && !write_ready {
            state.sleeping.store(IN_EPOLL, Ordering::SeqCst);
            // A wake-up between the poll of the future and here found `sleeping` false: check.
            let ready = if state.woken.load(Ordering::SeqCst) {
                Ok((false, false, false))
            } else {
                epoll.wait()
            };
            state.sleeping.store(AWAKE, Ordering::SeqCst);
            let (event, read, write) = ready?;
            if event {
                let mut count: u64 = 0;
                // SAFETY: reads 8 bytes into a valid u64 from our non-blocking eventfd.
                unsafe { libc::read(state.eventfd.as_raw_fd(), (&raw mut count).cast(), 8) };
            }
            (read_ready, write_ready) = (read, write);
        }
        let wake = {
            let mut interest = pipes.interest.lock().unwrap();
            if read_ready {
                // Data came after the read that found the pipe empty: a write must not make the
                // reader wait for another edge, which may never come.
                interest.drained = false;
                interest.may_read = true;
            }
            interest.may_write |= write_ready;
            [
                if read_ready {
                    interest.readable.take()
                } else {
                    None
                },
                if write_ready {
                    interest.writable.take()
                } else {
                    None
                },
            ]
        };
        for waker in wake.into_iter().flatten() {
            waker.wake();
        }
    }
}

/// What [`block_on`] needs to sleep in `read` on the read end: the signal that interrupts it
/// (none: it never sleeps there), its thread, and its own duplicate of the read end (opened at
/// the first sleep, closed when `block_on` returns), which the signal handler may touch even
/// if the future dropped the reader meanwhile.
struct ReadSleep {
    signal: Option<libc::c_int>,
    thread: libc::pid_t,
    fd: Option<OwnedFd>,
    /// Sleeps left in `epoll_wait` after another thread woke a sleep in `read`: a signal costs
    /// more than the eventfd (about 3 µs of CPU more per wake-up, docs/performance.md), so a
    /// loop that other threads wake often (files read on the blocking pool, say) waits in
    /// `epoll_wait` and tries `read` again only after [`EPOLL_TURNS_AFTER_SIGNAL`] sleeps.
    epoll_turns: u32,
}

/// See [`ReadSleep::epoll_turns`].
const EPOLL_TURNS_AFTER_SIGNAL: u32 = 64;

/// One sleep in `read`: the descriptor, its status flags, the buffer to read into.
struct Sleep {
    fd: RawFd,
    flags: libc::c_int,
    buffer: Vec<u8>,
}

impl ReadSleep {
    fn new(pipes: &Pipes) -> ReadSleep {
        let blocking = matches!(
            pipes.interest.lock().unwrap().read_mode,
            ReadMode::Blocking(_)
        );
        ReadSleep {
            signal: if blocking {
                wake_signal::claimed()
            } else {
                None
            },
            thread: wake_signal::this_thread(),
            fd: None,
            epoll_turns: 0,
        }
    }

    /// Called under the interest lock while only the reader waits: whether to sleep in
    /// `read`, and if so on which descriptor into which buffer, with the thread registered for
    /// wake-ups by signal. A reader that waits is alive (dropping it clears its waker under
    /// this lock), so its descriptor is open to duplicate.
    fn prepare(&mut self, read_fd: RawFd, interest: &mut Interest) -> Option<Sleep> {
        let signal = self.signal?;
        let ReadMode::Blocking(flags) = interest.read_mode else {
            return None;
        };
        if interest.parked_at < interest.parked_end {
            return None;
        }
        if self.epoll_turns > 0 {
            self.epoll_turns -= 1;
            return None;
        }
        let fd = match &self.fd {
            Some(fd) => fd.as_raw_fd(),
            None => {
                // SAFETY: duplicates the read end, open while its reader waits (see above).
                let raw = unsafe { libc::fcntl(read_fd, libc::F_DUPFD_CLOEXEC, 0) };
                if raw == -1 {
                    // Out of descriptors, say: this loop waits in `epoll_wait` from now on.
                    self.signal = None;
                    return None;
                }
                // SAFETY: the descriptor was just created and is owned by nothing else.
                let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
                self.fd.insert(fd).as_raw_fd()
            }
        };
        let mut buffer = std::mem::take(&mut interest.parked);
        if buffer.len() < SLEEP_READ_BYTES {
            buffer = vec![0; SLEEP_READ_BYTES];
        }
        interest.reading = Some((self.thread, signal));
        Some(Sleep { fd, flags, buffer })
    }

    /// Sleeps in `read` until data, end of input, an error or another thread's wake-up; hands
    /// what it read to the reader and wakes it.
    fn sleep(&mut self, sleep: Sleep, pipes: &Pipes, state: &LoopWaker) {
        let Sleep {
            fd,
            flags,
            mut buffer,
        } = sleep;
        state.sleeping.store(IN_READ, Ordering::SeqCst);
        // A wake-up between the poll of the future and here found the loop awake: checked
        // once the handler knows the descriptor (see `sleep_in_read`).
        let outcome = wake_signal::sleep_in_read(fd, flags, &mut buffer, || {
            state.woken.load(Ordering::SeqCst)
        });
        state.sleeping.store(AWAKE, Ordering::SeqCst);
        let read = match outcome {
            Ok(Slept::Read(n)) => Some(n),
            Ok(Slept::Interrupted) => {
                if state.woken.load(Ordering::SeqCst) {
                    self.epoll_turns = EPOLL_TURNS_AFTER_SIGNAL;
                }
                None
            }
            // The pipe no longer blocks (another process sharing it made it non-blocking):
            // sleeping in `read` would spin, so this loop waits in `epoll_wait` from now on.
            Ok(Slept::NotBlocking) => {
                self.signal = None;
                None
            }
            // The reader's next read meets the error again and reports it; this loop waits in
            // `epoll_wait` from now on.
            Err(_) => {
                self.signal = None;
                Some(0)
            }
        };
        let waker = {
            let mut interest = pipes.interest.lock().unwrap();
            interest.reading = None;
            if let Some(n) = read {
                interest.parked_at = 0;
                interest.parked_end = n;
                interest.may_read = true;
                interest.drained = n > 0 && n < buffer.len();
            }
            interest.parked = buffer;
            read.and_then(|_| interest.readable.take())
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Runs two futures to completion side by side, like `futures_lite::future::zip`, but polls
/// each only when it was woken. The connection's driver and the code consuming it share one
/// thread; polling both on every wake-up of either cost a poll of the consumer (its channel
/// and response futures) per message the driver handled.
pub async fn join_woken<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let (mut out_a, mut out_b) = (None, None);
    let flag_a = Arc::new(WokenFlag::new());
    let flag_b = Arc::new(WokenFlag::new());
    let waker_a = Waker::from(flag_a.clone());
    let waker_b = Waker::from(flag_b.clone());
    // Which waker the flags hold ([`Waker::data`] and [`Waker::vtable`], as `will_wake`
    // compares them): polled again by the same task, the flags' locks are not taken (two per
    // poll, on every message of the stdio pair). The flags keep that waker alive, so an equal
    // pair always names the one they hold.
    let mut parent = None;
    std::future::poll_fn(|cx| {
        let waker = cx.waker();
        let identity = (waker.data() as usize, waker.vtable() as *const _ as usize);
        if parent != Some(identity) {
            flag_a.set_parent(waker);
            flag_b.set_parent(waker);
            parent = Some(identity);
        }
        if out_a.is_none()
            && flag_a.take()
            && let Poll::Ready(output) = a.as_mut().poll(&mut Context::from_waker(&waker_a))
        {
            out_a = Some(output);
        }
        if out_b.is_none()
            && flag_b.take()
            && let Poll::Ready(output) = b.as_mut().poll(&mut Context::from_waker(&waker_b))
        {
            out_b = Some(output);
        }
        if out_a.is_some() && out_b.is_some() {
            return Poll::Ready((out_a.take().unwrap(), out_b.take().unwrap()));
        }
        Poll::Pending
    })
    .await
}

/// One future's wake-up flag in [`join_woken`]; waking it also wakes the joined future.
struct WokenFlag {
    woken: AtomicBool,
    parent: Mutex<Option<Waker>>,
}

impl WokenFlag {
    fn new() -> Self {
        WokenFlag {
            woken: AtomicBool::new(true),
            parent: Mutex::new(None),
        }
    }

    fn set_parent(&self, waker: &Waker) {
        let mut parent = self.parent.lock().unwrap();
        if !parent.as_ref().is_some_and(|p| p.will_wake(waker)) {
            *parent = Some(waker.clone());
        }
    }

    fn take(&self) -> bool {
        self.woken.swap(false, Ordering::AcqRel)
    }
}

impl Wake for WokenFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.woken.swap(true, Ordering::AcqRel)
            && let Some(parent) = self.parent.lock().unwrap().as_ref()
        {
            parent.wake_by_ref();
        }
    }
}
