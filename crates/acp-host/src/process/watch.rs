//! The per-agent supervision thread: drains stderr, observes the exit without reaping, then
//! kills what is left of the group, reaps the leader, and tells whoever waits.

use std::convert::Infallible;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::{Arc, Mutex};

use async_process::ChildStderr;
use futures_lite::future;

use super::exit::{AgentExit, ShutdownStep};
use super::stderr::{STDERR_READ_CHUNK, StderrDrain, StderrLineCallback, StderrTail};
use crate::os::exit_status::ExitStatus;
use crate::os::exit_watch::ExitWatch;
use crate::os::group::GroupLeader;
use crate::os::lock;

/// Called once with the recorded exit (see `AgentProcess::on_exit`).
pub(super) type ExitCallback = Box<dyn FnOnce(&AgentExit) + Send>;

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
    /// Called when `exit` is set; registered under the same lock, so none is missed.
    pub(super) on_exit: Vec<ExitCallback>,
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
    pub(super) fn signal(&self, signal: libc::c_int) {
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
        tail: &shared.stderr,
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
    let (exit, callbacks) = {
        let mut outcome = lock(&shared.outcome);
        let exit = AgentExit {
            status: status.unwrap_or(ExitStatus::UNKNOWN),
            step: outcome.step,
            stderr_tail: lock(&shared.stderr).text(),
        };
        outcome.exit = Some(exit.clone());
        (exit, std::mem::take(&mut outcome.on_exit))
    };
    drop(exit_notifier);
    // Outside the lock, so that a callback may look at the process; a panic in one must not
    // end the drain below.
    for callback in callbacks {
        let _ = catch_unwind(AssertUnwindSafe(|| callback(&exit)));
    }

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
    Exited(io::Result<ExitStatus>),
    Read(io::Result<usize>),
}
