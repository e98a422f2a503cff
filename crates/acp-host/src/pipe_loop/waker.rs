//! How another thread (or the loop's own) wakes a pipe loop: a flag for wake-ups during a poll
//! of the future, an eventfd for wake-ups while the loop sleeps in `epoll_wait(2)`, a signal
//! to its thread while it sleeps in `read(2)` (the two-pipe loop only).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Wake;

use super::ends::Interest;
use super::wake_signal;

/// The loop's waker. A wake-up sets `woken` first and then looks at where the loop sleeps; the
/// loop says where it sleeps first and then looks at `woken`: with both sequentially
/// consistent, one of the two sees the other, and no wake-up is lost.
pub(super) struct LoopWaker {
    pub(super) woken: AtomicBool,
    /// [`AWAKE`], [`IN_EPOLL`] or [`IN_READ`].
    pub(super) sleeping: AtomicU8,
    pub(super) eventfd: OwnedFd,
    /// The pipes' state, where [`Interest::reading`] names the thread to signal, for a loop
    /// that sleeps in `read`.
    interest: Option<Arc<Mutex<Interest>>>,
}

pub(super) const AWAKE: u8 = 0;
pub(super) const IN_EPOLL: u8 = 1;
pub(super) const IN_READ: u8 = 2;

impl LoopWaker {
    /// A waker with its own eventfd (non-blocking), to be watched by the loop's epoll;
    /// `interest` for a loop that may sleep in `read` on those pipes.
    pub(super) fn new(interest: Option<Arc<Mutex<Interest>>>) -> io::Result<LoopWaker> {
        // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just created and is owned by nothing else.
        let eventfd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(LoopWaker {
            woken: AtomicBool::new(false),
            sleeping: AtomicU8::new(AWAKE),
            eventfd,
            interest,
        })
    }

    /// Empties the eventfd after epoll reported it, so that the next write is a new edge.
    pub(super) fn drain_eventfd(&self) {
        let mut count: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64 from our non-blocking eventfd.
        unsafe { libc::read(self.eventfd.as_raw_fd(), (&raw mut count).cast(), 8) };
    }
}

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
                if let Some(interest) = &self.interest
                    && let Some((thread, signal)) = interest.lock().unwrap().reading
                {
                    wake_signal::interrupt(thread, signal);
                }
            }
            _ => {}
        }
    }
}
