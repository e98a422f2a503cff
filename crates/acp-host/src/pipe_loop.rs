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

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
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
}

impl Default for Interest {
    fn default() -> Self {
        Interest {
            readable: None,
            writable: None,
            may_read: true,
            may_write: true,
            drained: false,
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

/// Takes `reader` and `writer` (made non-blocking) for a loop run by [`block_on`].
pub fn pipes(reader: OwnedFd, writer: OwnedFd) -> io::Result<(Pipes, PipeReader, PipeWriter)> {
    set_nonblocking(&reader)?;
    set_nonblocking(&writer)?;
    let interest = Arc::new(Mutex::new(Interest::default()));
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

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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
        {
            let mut interest = self.interest.lock().unwrap();
            if !interest.may_read {
                interest.readable = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        loop {
            // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                let drained = (n as usize) < buf.len();
                self.interest.lock().unwrap().drained = drained;
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
            interest.may_read = false;
            interest.drained = false;
            interest.readable = Some(cx.waker().clone());
            return Poll::Pending;
        }
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
/// while the loop sleeps in `epoll_wait(2)`.
struct LoopWaker {
    woken: AtomicBool,
    sleeping: AtomicBool,
    eventfd: OwnedFd,
}

impl Wake for LoopWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a valid u64 to our eventfd.
            unsafe { libc::write(self.eventfd.as_raw_fd(), (&raw const one).cast(), 8) };
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

/// Runs `future` to completion on this thread, sleeping in `epoll_wait(2)` on the pipes'
/// descriptors and an eventfd instead of in a reactor.
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
        sleeping: AtomicBool::new(false),
        eventfd,
    });
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
        let (want_read, want_write) = {
            let interest = pipes.interest.lock().unwrap();
            (interest.readable.is_some(), interest.writable.is_some())
        };
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
            state.sleeping.store(true, Ordering::SeqCst);
            // A wake-up between the poll of the future and here found `sleeping` false: check.
            let ready = if state.woken.load(Ordering::SeqCst) {
                Ok((false, false, false))
            } else {
                epoll.wait()
            };
            state.sleeping.store(false, Ordering::SeqCst);
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
