//! Process groups, shared by agent processes and terminals: starting a command as the leader
//! of a new group, signalling the group, and releasing the leader.
//!
//! The leader is deliberately left unreaped (a zombie once it exits) while its
//! [`GroupLeader`] is held: the kernel never reuses the id of an unreaped process, so as long
//! as it is held, `killpg(pgid)` can only reach processes of this group and never an
//! unrelated group that got the same id later. Its exit is observed without reaping by an
//! [`ExitWatch`]. From the spawn until the release the group is also registered with the
//! process supervisor (`supervisor.rs`), which kills it if this process dies first.

use std::io;
use std::os::unix::process::CommandExt;

use async_process::{ChildStderr, ChildStdin, ChildStdout, Stdio};

use super::exit_watch::ExitWatch;
use super::supervisor;

/// The standard streams of a group leader to be spawned.
pub(crate) struct GroupStdio {
    pub(crate) stdin: Stdio,
    pub(crate) stdout: Stdio,
    pub(crate) stderr: Stdio,
}

/// A command just started as the leader of a new process group.
pub(crate) struct SpawnedGroup {
    /// Keeps the leader unreaped; dropping it kills the group.
    pub(crate) leader: GroupLeader,
    /// Resolves on the leader's exit, leaving it unreaped.
    pub(crate) exit: ExitWatch,
    /// The pipes asked for with [`Stdio::piped`], `None` for the others.
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: Option<ChildStdout>,
    pub(crate) stderr: Option<ChildStderr>,
}

/// Starts `command` as the leader of a new process group, with `stdio`, and has the supervisor
/// watch the group.
///
/// The descriptors given in `stdio` are closed in this process before it returns, so that a
/// pipe whose write end went to the command reads end-of-file once the command's processes
/// are done with it.
pub(crate) fn spawn(
    mut command: std::process::Command,
    stdio: GroupStdio,
) -> io::Result<SpawnedGroup> {
    command.process_group(0);
    let mut command = async_process::Command::from(command);
    command
        .stdin(stdio.stdin)
        .stdout(stdio.stdout)
        .stderr(stdio.stderr)
        // Killing is the leader's job, and it reaches the whole group rather than only the
        // leader; reaping on drop stays as a backstop.
        .kill_on_drop(false)
        .reap_on_drop(true);
    let mut child = command.spawn()?;
    // The command keeps its copies of the descriptors given as stdio until dropped.
    drop(command);
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    // A pid always fits in pid_t; `Child::id` merely widens it to u32.
    let exit = ExitWatch::new(child.id() as libc::pid_t);
    Ok(SpawnedGroup {
        // From here on, dropping it (on any early return of the caller) kills the group:
        // nobody would ever own it.
        leader: GroupLeader::new(child),
        exit,
        stdin,
        stdout,
        stderr,
    })
}

/// Sends `signal` to every process of group `pgid`. A group that no longer exists is not an
/// error.
pub(crate) fn kill_group(pgid: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
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

/// The leader of a process group this crate started (an agent or a terminal command),
/// held unreaped for as long as the group may be signalled.
///
/// The process supervisor watches the group from [`spawn`] until
/// [`kill_and_release`](Self::kill_and_release), and kills it if this process dies first.
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
    fn new(child: async_process::Child) -> Self {
        // A pid always fits in pid_t; `Child::id` merely widens it to u32.
        let pgid = child.id() as libc::pid_t;
        supervisor::watch(pgid);
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
        kill_group(self.pgid, signal)
    }

    /// Kills whatever is left of the group with SIGKILL, stops the supervisor's watch, and
    /// reaps the leader if it has exited; a leader still running (it dies of the SIGKILL) is
    /// reaped in the background by async-process. Does nothing the second time.
    pub(crate) fn kill_and_release(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Failure leaves nothing better to try: EPERM cannot happen for our own children.
        let _ = kill_group(self.pgid, libc::SIGKILL);
        // Every member got SIGKILL, so nothing of the group outlives this process from here
        // on; and the id cannot be reused yet, as the leader is not reaped.
        supervisor::forget(self.pgid);
        // Reaps the leader at once if it has exited, instead of leaving the zombie to
        // async-process's background thread.
        let _ = child.try_status();
    }
}

impl Drop for GroupLeader {
    fn drop(&mut self) {
        self.kill_and_release();
    }
}
