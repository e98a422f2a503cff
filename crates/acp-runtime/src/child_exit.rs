//! Process-group leaders, shared by agent processes and terminals: observing a leader's exit
//! without reaping it, signalling its group, and releasing it. An unreaped leader keeps its
//! pid (and so its process group id) from being reused, which is what makes signalling the
//! group afterwards safe.

use std::io;

/// How a process ended, as `waitid` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RawExit {
    /// It exited with this code.
    Code(i32),
    /// A signal with this number killed it.
    Signal(i32),
}

/// The exit of the process `waitid` designates by `id_type` and `id`, if it has exited,
/// leaving it unreaped. Blocks until then unless `flags` has `WNOHANG`.
pub(crate) fn peek_exit(
    id_type: libc::idtype_t,
    id: libc::id_t,
    flags: libc::c_int,
) -> io::Result<Option<RawExit>> {
    loop {
        // SAFETY: siginfo_t is plain old data; all-zero is a valid value, and a zero
        // `si_pid` afterwards is how WNOHANG reports "still running".
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t for the duration of the call.
        let result = unsafe {
            libc::waitid(
                id_type,
                id,
                &mut info,
                libc::WEXITED | libc::WNOWAIT | flags,
            )
        };
        if result == -1 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        // SAFETY: after a successful waitid the child fields of the union are the active ones.
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if pid == 0 {
            return Ok(None);
        }
        return Ok(match info.si_code {
            libc::CLD_EXITED => Some(RawExit::Code(status)),
            libc::CLD_KILLED | libc::CLD_DUMPED => Some(RawExit::Signal(status)),
            // Only WEXITED was asked for; anything else is not an exit.
            _ => None,
        });
    }
}

/// A pidfd for `pid`, or `None` when the kernel cannot provide one that `waitid(P_PIDFD)`
/// accepts (before Linux 5.4).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn open_pidfd(pid: libc::pid_t) -> Option<smol::Async<std::os::fd::OwnedFd>> {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes two integers and returns a new descriptor or -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if raw < 0 {
        return None;
    }
    // SAFETY: the syscall just returned this descriptor (close-on-exec), owned by no one else.
    let pidfd = unsafe { OwnedFd::from_raw_fd(i32::try_from(raw).ok()?) };
    // Linux 5.3 has pidfd_open but not P_PIDFD; one probe tells them apart.
    peek_pidfd(&pidfd).ok()?;
    smol::Async::new(pidfd).ok()
}

/// The exit of the process behind `pidfd`, if it has exited, without waiting or reaping.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn peek_pidfd(pidfd: &std::os::fd::OwnedFd) -> io::Result<Option<RawExit>> {
    use std::os::fd::AsRawFd;
    let id = libc::id_t::try_from(pidfd.as_raw_fd()).map_err(io::Error::other)?;
    peek_exit(libc::P_PIDFD, id, libc::WNOHANG)
}

/// Sends `signal` to every process of group `pgid`. A group that no longer exists is not an
/// error.
pub(crate) fn signal_group(pgid: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    // Never 0 or 1 (or below): those reach this process's own group or every process.
    if pgid <= 1 {
        return Ok(());
    }
    // SAFETY: `killpg` only sends a signal; it has no memory-safety preconditions.
    if unsafe { libc::killpg(pgid, signal) } == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(error)
    }
}

/// The leader of a process group the runtime started (an agent or a terminal command),
/// held unreaped for as long as the group may be signalled.
///
/// The kernel never reuses the id of an unreaped process, so while the leader is held a
/// signal to its group id can only reach that group. The process supervisor (see
/// `supervisor.rs`) watches the group from [`new`](Self::new) until
/// [`kill_and_release`](Self::kill_and_release) or
/// [`release_reaped`](Self::release_reaped), and kills it if this process dies first.
///
/// Dropping it kills the group and releases the leader.
pub(crate) struct GroupLeader {
    pgid: libc::pid_t,
    /// `None` once released: no group signal is sent any more.
    child: Option<async_process::Child>,
}

impl GroupLeader {
    /// Takes charge of `child`, spawned as the leader of a new process group, and has the
    /// supervisor watch its group.
    pub(crate) fn new(child: async_process::Child) -> Self {
        // A pid always fits in pid_t; `Child::id` merely widens it to u32.
        let pgid = child.id() as libc::pid_t;
        crate::supervisor::watch(pgid);
        Self {
            pgid,
            child: Some(child),
        }
    }

    /// The group id, which is the leader's pid.
    pub(crate) fn pgid(&self) -> libc::pid_t {
        self.pgid
    }

    /// Sends `signal` to the group while the leader is held; once it was released the group
    /// is gone (or out of reach) and nothing is sent.
    pub(crate) fn signal(&self, signal: libc::c_int) -> io::Result<()> {
        if self.child.is_none() {
            return Ok(());
        }
        signal_group(self.pgid, signal)
    }

    /// Kills whatever is left of the group with SIGKILL, stops the supervisor's watch, and
    /// reaps the leader if it has exited; a leader still running (it dies of the SIGKILL) is
    /// reaped in the background by async-process. Does nothing the second time.
    pub(crate) fn kill_and_release(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Failure leaves nothing better to try: EPERM cannot happen for our own children.
        let _ = signal_group(self.pgid, libc::SIGKILL);
        // Every member got SIGKILL, so nothing of the group outlives this process from here
        // on; and the id cannot be reused yet, as the leader is not reaped.
        crate::supervisor::forget(self.pgid);
        // Reaps the leader at once if it has exited, instead of leaving the zombie to
        // async-process's background thread.
        let _ = child.try_status();
    }

    /// Releases a leader that was reaped already (by async-process's `status`, where the
    /// exit cannot be observed without reaping): its group id may have been reused since,
    /// so nothing is sent to it.
    pub(crate) fn release_reaped(&mut self) {
        if self.child.take().is_some() {
            crate::supervisor::forget(self.pgid);
        }
    }
}

impl Drop for GroupLeader {
    fn drop(&mut self) {
        self.kill_and_release();
    }
}
