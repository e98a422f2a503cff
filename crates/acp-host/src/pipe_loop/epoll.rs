//! An epoll instance for the pipe loops, edge-triggered, and the registration that takes a
//! pipe end out of it when the end lets its descriptor go.
//!
//! Edge-triggered and registered once, a wait costs no per-call registration (what made
//! `poll(2)` on the same descriptors cost more than the read it waits for); no wake-up is lost
//! because a loop only waits for an end after a read or write found it empty or full (see
//! `ends::Interest`), and any later change is an edge.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// What epoll reports for a read end whose other end is gone for good (always reported,
/// whatever was asked for).
pub(super) const HUNG_UP: u32 = (libc::EPOLLHUP | libc::EPOLLERR) as u32;

/// An epoll instance watching a loop's descriptors.
pub(super) struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    pub(super) fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes an integer and returns a new descriptor or -1.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just created and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
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

    /// Watches `fd` for `events` (edge-triggered), reported with `token`. A descriptor that is
    /// ready already is reported by the next wait.
    pub(super) fn watch(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let events = events | libc::EPOLLET as u32;
        match self.control(libc::EPOLL_CTL_ADD, fd, events, token) {
            Err(error) if error.raw_os_error() == Some(libc::EEXIST) => {
                self.control(libc::EPOLL_CTL_MOD, fd, events, token)
            }
            other => other,
        }
    }

    pub(super) fn unwatch(&self, fd: RawFd) {
        // Fails only when the descriptor is closed or not watched, and then it is not.
        let _ = self.control(libc::EPOLL_CTL_DEL, fd, 0, 0);
    }

    /// Waits for events into `events`; how many came (none when a signal interrupted it).
    pub(super) fn wait(&self, events: &mut [libc::epoll_event]) -> io::Result<usize> {
        // SAFETY: `events` is a valid array of `events.len()` epoll_event.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                events.as_mut_ptr(),
                events.len().min(libc::c_int::MAX as usize) as libc::c_int,
                -1,
            )
        };
        if n == -1 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(error);
        }
        Ok(n as usize)
    }
}

/// A descriptor watched by a shared epoll instance until this is dropped. Its holder drops it
/// before it closes the descriptor: epoll forgets a descriptor only when every duplicate of it
/// is closed (a pipe set's stdin is a duplicate of fd 0), and would report a closed one.
pub(super) struct Registration {
    epoll: Arc<Epoll>,
    fd: RawFd,
}

impl Registration {
    /// Watches `fd` for `events` on `epoll`, reported with `token`.
    pub(super) fn new(epoll: Arc<Epoll>, fd: RawFd, events: u32, token: u64) -> io::Result<Self> {
        epoll.watch(fd, events, token)?;
        Ok(Registration { epoll, fd })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.epoll.unwatch(self.fd);
    }
}
