//! The output collector of one terminal: the task that moves a command's output into its
//! buffer and observes its exit, and the state it shares with the host.

use std::convert::Infallible;
use std::io;
use std::pin::pin;
use std::sync::{Arc, Mutex};

use futures_lite::{AsyncReadExt, future};
use smol::Async;

use super::output_budget::OutputBudget;
use super::output_buffer::OutputBuffer;
use crate::os::exit_status::ExitStatus;
use crate::os::exit_watch::ExitWatch;
use crate::os::group::GroupLeader;
use crate::os::lock;

/// Bytes requested from the output pipe per read.
const READ_CHUNK: usize = 16 * 1024;

pub(super) struct TerminalState {
    pub(super) output: OutputBuffer,
    /// What the host's terminals keep together; `output` counts against it until dropped.
    pub(super) budget: Arc<OutputBudget>,
    pub(super) exit_status: Option<ExitStatus>,
    pub(super) exit_error: Option<String>,
    pub(super) released: bool,
    /// Held, unreaped, until the command is finished (exited, output closed) or the
    /// terminal released, so that its group id cannot be reused while it may be signalled.
    pub(super) leader: GroupLeader,
}

/// Moves output into the buffer and records the exit, then keeps reading whatever the
/// command's leftover background processes still write until the pipe closes. Once both
/// happened the command is finished: what is left of its group is killed and the leader
/// reaped, and the pipe is closed, so that an unreleased finished terminal holds no process
/// and no descriptor.
pub(super) async fn collect(
    output: Async<io::PipeReader>,
    exit: ExitWatch,
    state: Arc<Mutex<TerminalState>>,
    exit_notifier: async_channel::Sender<Infallible>,
) {
    let mut chunk = vec![0; READ_CHUNK];
    // `None` once end-of-file was read: dropping it closes the pipe at once.
    let mut output = Some(output);
    let mut exit = pin!(exit.wait());

    let exit_result = loop {
        let Some(pipe) = output.as_mut() else {
            break exit.await;
        };
        let event = future::or(async { Event::Exited(exit.as_mut().await) }, async {
            Event::Read(pipe.read(&mut chunk).await)
        })
        .await;
        match event {
            Event::Exited(result) => break result,
            Event::Read(result) => absorb(&state, result, &chunk, &mut output),
        }
    };

    // Everything the leader wrote is in the pipe by now (a process's descriptors close
    // before its exit is reported), so drain what is there before publishing the exit:
    // `output` called right after `wait_for_exit` then shows the complete output.
    while let Some(pipe) = output.as_mut() {
        match future::poll_once(pipe.read(&mut chunk)).await {
            Some(result) => absorb(&state, result, &chunk, &mut output),
            None => break,
        }
    }
    {
        let mut state = lock(&state);
        // An exit caused by the release itself is not reported: waiters then learn that
        // the terminal is gone, whichever thread wins the race.
        if !state.released {
            match exit_result {
                Ok(status) => state.exit_status = Some(status),
                Err(error) => state.exit_error = Some(error.to_string()),
            }
        }
    }
    drop(exit_notifier);

    while let Some(pipe) = output.as_mut() {
        let result = pipe.read(&mut chunk).await;
        absorb(&state, result, &chunk, &mut output);
    }

    // Processes of the group that closed or redirected their output would otherwise run on
    // unnoticed until the release.
    lock(&state).leader.kill_and_release();
}

enum Event {
    Exited(io::Result<ExitStatus>),
    Read(io::Result<usize>),
}

/// Adds one read's outcome to the buffer; closes the pipe (sets `output` to `None`) when it
/// cannot deliver more.
fn absorb(
    state: &Mutex<TerminalState>,
    read: io::Result<usize>,
    chunk: &[u8],
    output: &mut Option<Async<io::PipeReader>>,
) {
    let mut state = lock(state);
    let TerminalState {
        output: kept,
        budget,
        ..
    } = &mut *state;
    match read {
        Ok(0) => {
            budget.finish(kept);
            *output = None;
        }
        Ok(length) => budget.push(kept, &chunk[..length]),
        Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
        Err(_) => {
            // A pipe read failing is not recoverable; keep what was read.
            budget.finish(kept);
            *output = None;
        }
    }
}

impl Drop for TerminalState {
    fn drop(&mut self) {
        self.budget.release(&self.output);
    }
}
