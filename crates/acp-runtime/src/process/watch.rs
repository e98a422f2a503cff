//! The per-agent supervision thread: drains stderr, observes the exit without reaping, then
//! kills what is left of the group and reaps the leader.

use std::convert::Infallible;
use std::io;
use std::pin::pin;
use std::sync::{Arc, Mutex};

use async_process::ChildStderr;
use futures_lite::future;

use crate::os::group::GroupLeader;

use super::exit::{AgentExit, AgentExitStatus, ShutdownStep};
use super::lock;
use super::stderr::{STDERR_READ_CHUNK, StderrDrain, StderrLineCallback, StderrTail};

/// State shared by the handle and the background task.
pub(super) struct Shared {
    /// Held unreaped until the exit is observed and the group killed (see the module docs);
    /// a group signal is sent only while this lock is held and the leader is still here.
    pub(super) leader: Mutex<GroupLeader>,
    pub(super) stderr: Mutex<StderrTail>,
    pub(super) outcome: Mutex<Outcome>,
}

pub(super) struct Outcome {
    pub(super) step: ShutdownStep,
    pub(super) exit: Option<AgentExit>,
}

impl Shared {
    /// Notes the step about to be taken, unless the agent has already exited.
    pub(super) fn begin(&self, step: ShutdownStep) {
        let mut outcome = lock(&self.outcome);
        if outcome.exit.is_none() {
            outcome.step = step;
        }
    }

    /// Sends `signal` to the group unless the leader was reaped already. Failure is
    /// ignored: the group is gone already, or (EPERM) there is nothing better to try.
    pub(super) fn signal_group(&self, signal: libc::c_int) {
        let _ = lock(&self.leader).signal(signal);
    }

    /// Kills whatever the leader left behind in its group, then reaps the leader.
    fn kill_leftovers_and_reap(&self) {
        lock(&self.leader).kill_and_release();
    }
}

pub(super) struct Supervision {
    pub(super) stderr: ChildStderr,
    pub(super) exit: ExitWatch,
    pub(super) shared: Arc<Shared>,
    pub(super) stderr_line: Option<StderrLineCallback>,
    pub(super) exit_notifier: async_channel::Sender<Infallible>,
    pub(super) handle_dropped: async_channel::Receiver<Infallible>,
}

/// The background task: drains stderr until the agent exits, then kills the leftovers of
/// its group, records the exit, and keeps draining stderr for whatever escaped the group
/// for as long as the handle exists.
pub(super) async fn supervise(supervision: Supervision) {
    let Supervision {
        stderr,
        exit,
        shared,
        stderr_line,
        exit_notifier,
        handle_dropped,
    } = supervision;
    let mut drain = StderrDrain {
        stderr,
        open: true,
        chunk: vec![0; STDERR_READ_CHUNK],
        shared: &shared,
        stderr_line,
    };
    // Built once and polled across iterations: the blocking fallback holds a thread.
    let mut exit = pin!(exit.wait());

    let status = loop {
        if !drain.open {
            break exit.await;
        }
        let event = future::or(async { Event::Exited(exit.as_mut().await) }, async {
            Event::Read(drain.read().await)
        })
        .await;
        match event {
            Event::Exited(status) => break status,
            Event::Read(read) => drain.absorb(read),
        }
    };
    // Also reached when the exit could not be watched (an error from the OS): an agent
    // that cannot be supervised is not left running either.
    shared.kill_leftovers_and_reap();
    // Everything the leader wrote is in the pipe by now (a process's descriptors are
    // closed before its exit is reported): take it in before recording the exit, so that
    // the recorded tail is complete.
    while drain.open {
        match future::poll_once(drain.read()).await {
            Some(read) => drain.absorb(read),
            None => break,
        }
    }
    {
        let mut outcome = lock(&shared.outcome);
        let step = outcome.step;
        outcome.exit = Some(AgentExit {
            status: status.unwrap_or(AgentExitStatus::UNKNOWN),
            step,
            stderr_tail: lock(&shared.stderr).text(),
        });
    }
    drop(exit_notifier);

    while drain.open {
        let read = future::or(async { Some(drain.read().await) }, async {
            let _ = handle_dropped.recv().await;
            None
        })
        .await;
        match read {
            Some(read) => drain.absorb(read),
            None => break,
        }
    }
}

enum Event {
    Exited(io::Result<AgentExitStatus>),
    Read(io::Result<usize>),
}

/// Waits for the leader's exit without reaping it.
pub(super) enum ExitWatch {
    /// Linux ≥ 5.4: the pidfd turns readable on exit, and `waitid(P_PIDFD, WNOWAIT)` then
    /// reads the status.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Pidfd(smol::Async<std::os::fd::OwnedFd>),
    /// Elsewhere: a blocking `waitid(P_PID, WNOWAIT)` on smol's blocking thread pool.
    Blocking(libc::pid_t),
}

impl ExitWatch {
    pub(super) fn new(pid: libc::pid_t) -> Self {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(pidfd) = crate::os::exit_watch::open_pidfd(pid) {
            return Self::Pidfd(pidfd);
        }
        Self::Blocking(pid)
    }

    async fn wait(self) -> io::Result<AgentExitStatus> {
        match self {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Self::Pidfd(pidfd) => loop {
                if let Some(exit) = crate::os::exit_watch::peek_pidfd(pidfd.get_ref())? {
                    return Ok(exit.into());
                }
                pidfd.readable().await?;
            },
            Self::Blocking(pid) => {
                let id = libc::id_t::try_from(pid).map_err(io::Error::other)?;
                smol::unblock(move || {
                    loop {
                        if let Some(exit) = crate::os::exit_watch::peek_exit(libc::P_PID, id, 0)? {
                            return Ok(exit.into());
                        }
                    }
                })
                .await
            }
        }
    }
}
