//! Process-group leaders, shared by agent processes and terminals: signalling a leader's
//! group, and releasing the leader. The leader stays unreaped while it is held (see
//! `exit_watch.rs`), so its group id cannot be reused while the group may be signalled.

use std::io;

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
        super::supervisor::watch(pgid);
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
        super::supervisor::forget(self.pgid);
        // Reaps the leader at once if it has exited, instead of leaving the zombie to
        // async-process's background thread.
        let _ = child.try_status();
    }

    /// Releases a leader that was reaped already (by async-process's `status`, where the
    /// exit cannot be observed without reaping): its group id may have been reused since,
    /// so nothing is sent to it.
    pub(crate) fn release_reaped(&mut self) {
        if self.child.take().is_some() {
            super::supervisor::forget(self.pgid);
        }
    }
}

impl Drop for GroupLeader {
    fn drop(&mut self) {
        self.kill_and_release();
    }
}
