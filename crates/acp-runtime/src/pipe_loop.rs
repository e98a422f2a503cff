//! A reactor-free way to run a connection over two pipes on the calling thread.
//!
//! smol's `block_on` shares one I/O reactor with async-io's helper thread. When the connection's
//! thread is busy for a moment the helper takes the reactor, and from then on every wake-up of
//! the connection is a hand-off between the two threads (futex, `epoll_pwait`,
//! `timerfd_settime`): about 30 system calls per request/response round trip instead of 4. For
//! the one case where that dominates, a process whose traffic is two pipes, [`block_on`] waits
//! with `poll(2)` on exactly those pipes plus an eventfd for wake-ups from other threads.
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
    /// Cleared when a read returns `EAGAIN`, set when `poll(2)` reports the pipe readable:
    /// while clear, polling the reader costs no system call (`poll(2)` is level-triggered,
    /// so nothing is missed).
    may_read: bool,
    may_write: bool,
    /// The last read emptied the pipe (it returned less than asked for).
    /// Writing after that usually means waiting for the peer's answer to what
    /// was written, so the next read skips straight to `poll(2)` instead of
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
pub(crate) struct Pipes {
    interest: Arc<Mutex<Interest>>,
    read_fd: RawFd,
    write_fd: RawFd,
}

/// The read end.
pub(crate) struct PipeReader {
    fd: OwnedFd,
    interest: Arc<Mutex<Interest>>,
}

/// The write end. Closing it (or dropping it) closes the descriptor: the reader at the other
/// end sees end of input.
pub(crate) struct PipeWriter {
    fd: Option<OwnedFd>,
    interest: Arc<Mutex<Interest>>,
}

/// Takes `reader` and `writer` (made non-blocking) for a loop run by [`block_on`].
pub(crate) fn pipes(
    reader: OwnedFd,
    writer: OwnedFd,
) -> io::Result<(Pipes, PipeReader, PipeWriter)> {
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
/// while the loop sleeps in `poll(2)`.
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

/// Runs `future` to completion on this thread, sleeping in `poll(2)` on the pipes' descriptors
/// and an eventfd instead of in a reactor.
pub(crate) fn block_on<F: Future>(pipes: &Pipes, future: F) -> io::Result<F::Output> {
    // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
    let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if raw == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just created and is owned by nothing else.
    let eventfd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    let state = Arc::new(LoopWaker {
        woken: AtomicBool::new(false),
        sleeping: AtomicBool::new(false),
        eventfd,
    });
    let waker = Waker::from(state.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
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
        let mut fds = [
            libc::pollfd {
                fd: state.eventfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if want_read { pipes.read_fd } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if want_write { pipes.write_fd } else { -1 },
                events: libc::POLLOUT,
                revents: 0,
            },
        ];
        state.sleeping.store(true, Ordering::SeqCst);
        // A wake-up between the poll of the future and here found `sleeping` false: check.
        if !state.woken.load(Ordering::SeqCst) {
            // SAFETY: `fds` is a valid array of three pollfd; negative fds are ignored.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if n == -1 {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    state.sleeping.store(false, Ordering::SeqCst);
                    return Err(error);
                }
            }
        }
        state.sleeping.store(false, Ordering::SeqCst);
        if fds[0].revents != 0 {
            let mut count: u64 = 0;
            // SAFETY: reads 8 bytes into a valid u64 from our non-blocking eventfd.
            unsafe { libc::read(state.eventfd.as_raw_fd(), (&raw mut count).cast(), 8) };
        }
        let (read_ready, write_ready) = (fds[1].revents != 0, fds[2].revents != 0);
        let wake = {
            let mut interest = pipes.interest.lock().unwrap();
            interest.may_read |= read_ready;
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
pub(crate) async fn join_woken<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let (mut out_a, mut out_b) = (None, None);
    let flag_a = Arc::new(WokenFlag::new());
    let flag_b = Arc::new(WokenFlag::new());
    let waker_a = Waker::from(flag_a.clone());
    let waker_b = Waker::from(flag_b.clone());
    std::future::poll_fn(|cx| {
        flag_a.set_parent(cx.waker());
        flag_b.set_parent(cx.waker());
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
