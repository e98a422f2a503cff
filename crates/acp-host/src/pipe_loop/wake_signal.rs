//! Sleeping in `read(2)` on the pipe itself, interruptible by a signal from another thread.
//!
//! Waiting for a pipe with `epoll_wait(2)` and then reading costs one system call more per
//! wake-up than a blocking `read` (measured in docs/performance-stdio.md, "One system call per
//! wake-up"). A blocking `read` cannot also wait for the loop's eventfd, so a wake-up from
//! another thread (async-io's helper, a blocking pool, a channel) reaches a loop sleeping in
//! `read` as a signal sent to its thread ([`interrupt`]). The handler makes the pipe's open file
//! description non-blocking: a `read` the signal interrupted is restarted (`SA_RESTART`) and
//! returns `EAGAIN` at once, and a `read` the loop had not yet entered when the signal came does
//! the same, which closes the window between checking the wake-up flag and sleeping.
//!
//! The signal is `SIGURG` (ignored by default; used by nothing but out-of-band socket data),
//! claimed only while its disposition is the default one: an application that has a handler of
//! its own keeps it and the loop waits in `epoll_wait` instead. `ACP_PIPE_LOOP_SIGNAL=off` in
//! the environment turns the claim off, `ACP_PIPE_LOOP_SIGNAL=N` claims signal `N` instead. A
//! thread that blocks the signal never sleeps in `read` either. An application must not replace
//! the handler once a pipe loop has claimed it.

use std::cell::Cell;
use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The environment variable that chooses the signal (`off`, or a number).
const SIGNAL_VARIABLE: &str = "ACP_PIPE_LOOP_SIGNAL";

thread_local! {
    /// The descriptor this thread sleeps in `read` on, -1 when it does not: what the handler
    /// makes non-blocking. Const-initialized and without a destructor, so that the handler's
    /// access is a plain thread-local load (the thread touched it before it could be signalled).
    static SLEEPING_ON: AtomicI32 = const { AtomicI32::new(-1) };
    /// The status flags of [`SLEEPING_ON`]'s open file description (blocking), so that the
    /// handler and the loop each set them with one `fcntl`.
    static SLEEPING_FLAGS: AtomicI32 = const { AtomicI32::new(0) };
    /// Set by the handler when it made [`SLEEPING_ON`] non-blocking.
    static MADE_NON_BLOCKING: AtomicBool = const { AtomicBool::new(false) };
    /// Whether this thread has checked that it does not block the signal, and the answer.
    static UNBLOCKED: Cell<Option<bool>> = const { Cell::new(None) };
}

/// The signal that interrupts a loop sleeping in `read`, if this process could claim one.
pub(super) fn claimed() -> Option<libc::c_int> {
    static CLAIMED: OnceLock<Option<libc::c_int>> = OnceLock::new();
    let signal = (*CLAIMED.get_or_init(claim))?;
    // Checked again on every call (one system call per `block_on`, not per wake-up): a handler
    // installed after the claim, or a blocked signal, means this loop must not sleep in `read`.
    (ours_installed(signal) && unblocked_here(signal)).then_some(signal)
}

fn claim() -> Option<libc::c_int> {
    let signal = match std::env::var(SIGNAL_VARIABLE) {
        Err(_) => libc::SIGURG,
        Ok(text) => match text.trim().parse::<libc::c_int>() {
            Ok(number) if number > 0 => number,
            _ => return None,
        },
    };
    // SAFETY: `sigaction` reads and writes plain structs we own; the handler only makes
    // async-signal-safe calls (`fcntl`) and touches atomics.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut current) == -1
            || current.sa_sigaction != libc::SIG_DFL
        {
            return None;
        }
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
        ours.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut ours.sa_mask);
        (libc::sigaction(signal, &ours, std::ptr::null_mut()) == 0).then_some(signal)
    }
}

fn ours_installed(signal: libc::c_int) -> bool {
    // SAFETY: queries the disposition into a struct we own.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == handler as extern "C" fn(libc::c_int) as libc::sighandler_t
    }
}

fn unblocked_here(signal: libc::c_int) -> bool {
    UNBLOCKED.with(|known| {
        if let Some(answer) = known.get() {
            return answer;
        }
        // SAFETY: queries this thread's mask into a set we own.
        let answer = unsafe {
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) == 0
                && libc::sigismember(&mask, signal) == 0
        };
        known.set(Some(answer));
        answer
    })
}

extern "C" fn handler(_: libc::c_int) {
    // SAFETY: `__errno_location` is this thread's errno; the handler leaves it as it found it,
    // since the interrupted code may be about to read it.
    let errno = unsafe { *libc::__errno_location() };
    let fd = SLEEPING_ON.with(|fd| fd.load(Ordering::Relaxed));
    if fd >= 0 {
        let flags = SLEEPING_FLAGS.with(|flags| flags.load(Ordering::Relaxed));
        // SAFETY: `fd` is the loop's own duplicate of the read end, open for as long as it is
        // published in `SLEEPING_ON` (the loop clears it before closing); fcntl is
        // async-signal-safe.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } == 0 {
            MADE_NON_BLOCKING.with(|made| made.store(true, Ordering::Relaxed));
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// This thread's id, for [`interrupt`].
pub(super) fn this_thread() -> libc::pid_t {
    // SAFETY: gettid takes nothing and cannot fail.
    unsafe { libc::gettid() }
}

/// Sends `signal` to `thread` of this process. The caller holds the lock that keeps the thread
/// in its sleep (so it is alive and still ours).
pub(super) fn interrupt(thread: libc::pid_t, signal: libc::c_int) {
    // SAFETY: tgkill takes integers; a thread of this process that is alive (see above).
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), thread, signal) };
}

/// How a sleep in `read` ended.
pub(super) enum Slept {
    /// It read this many bytes (0: end of input).
    Read(usize),
    /// A signal (ours, after which the caller looks at its wake-up flag, or another) ended it.
    Interrupted,
    /// `EAGAIN` that no handler of ours caused: something else made the pipe's open file
    /// description non-blocking (a process sharing it), and `read` no longer sleeps on it.
    NotBlocking,
}

/// Sleeps in `read(2)` on `fd` (blocking, its status flags `flags`) into `buf`, unless
/// `woken_meanwhile` says a wake-up came first.
///
/// `woken_meanwhile` is asked after `fd` is published to the handler: a wake-up that found the
/// loop asleep and signalled it before that would find nothing to make non-blocking and the
/// `read` would sleep through it; after it, the signal either comes before the question (which
/// then sees the wake-up) or makes the `read` return at once.
pub(super) fn sleep_in_read(
    fd: RawFd,
    flags: libc::c_int,
    buf: &mut [u8],
    woken_meanwhile: impl FnOnce() -> bool,
) -> io::Result<Slept> {
    SLEEPING_FLAGS.with(|known| known.store(flags, Ordering::Relaxed));
    SLEEPING_ON.with(|on| on.store(fd, Ordering::Relaxed));
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    let (n, error) = if woken_meanwhile() {
        (0, Some(io::Error::from(io::ErrorKind::Interrupted)))
    } else {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        (n, (n < 0).then(io::Error::last_os_error))
    };
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    SLEEPING_ON.with(|on| on.store(-1, Ordering::Relaxed));
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    // A handler that ran after the line above did nothing; one that ran before it is seen here.
    let ours = MADE_NON_BLOCKING.with(|made| made.swap(false, Ordering::Relaxed));
    if ours {
        // SAFETY: fcntl on the caller's descriptor, with integer arguments.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    match error {
        None => Ok(Slept::Read(n as usize)),
        Some(error) if error.kind() == io::ErrorKind::Interrupted => Ok(Slept::Interrupted),
        Some(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(if ours {
            Slept::Interrupted
        } else {
            Slept::NotBlocking
        }),
        Some(error) => Err(error),
    }
}

/// Clears `O_NONBLOCK` on `fd`'s open file description; returns its status flags.
pub(super) fn set_blocking(fd: RawFd) -> io::Result<libc::c_int> {
    // SAFETY: fcntl on a descriptor the caller owns, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK != 0 {
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(flags & !libc::O_NONBLOCK)
}
