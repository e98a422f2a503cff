//! Ctrl-C during a v1 run: the first while a turn runs cancels it, the next (or one while no
//! turn runs) shuts the agent down and exits with 130.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use acp_runtime::client::{AgentHandle, Session};
use acp_runtime::process::AgentProcess;

use crate::exit;
use crate::signal::Interrupts;

/// What the Ctrl-C watcher needs: the running turn's session, the agent and its process.
pub struct Control {
    pub agent: AgentHandle,
    pub turn: Mutex<Option<RunningTurn>>,
    pub process: Mutex<Option<AgentProcess>>,
    /// Set by the watcher when it shuts the agent down to quit: it then owns the exit.
    pub quitting: AtomicBool,
}

/// The turn that runs, and whether a Ctrl-C already cancelled it (the next one quits).
pub struct RunningTurn {
    pub session: Session,
    pub cancelled: bool,
}

impl Control {
    /// Shuts the agent down (once) and prints how it ended.
    pub async fn shutdown(&self, quiet: bool) {
        self.agent.close();
        let process = self.process.lock().unwrap().take();
        if let Some(process) = process {
            let exit = process.shutdown().await;
            if !quiet {
                eprintln!("agent exited: {exit}");
            }
        }
    }

    /// The session of the running turn, to cancel, if no Ctrl-C cancelled it yet; marks it
    /// cancelled.
    fn turn_to_cancel(&self) -> Option<Session> {
        let mut turn = self.turn.lock().unwrap();
        let turn = turn.as_mut().filter(|turn| !turn.cancelled)?;
        turn.cancelled = true;
        Some(turn.session.clone())
    }
}

/// Watches for Ctrl-C: the first while a turn runs cancels it; the next during the same turn
/// (or one while no turn runs) shuts the agent down and exits with 130. Nothing here waits
/// for the permission prompt: it holds no lock while it waits for an answer.
pub async fn watch_interrupts(control: Arc<Control>, mut interrupts: Interrupts) {
    loop {
        interrupts.next().await;
        match control.turn_to_cancel() {
            Some(session) => {
                eprintln!("\nacp: cancelling the turn (Ctrl-C again to quit)");
                smol::spawn(async move {
                    let _ = session.cancel().await;
                })
                .detach();
            }
            None => {
                control.quitting.store(true, Ordering::SeqCst);
                eprintln!("\nacp: interrupted, shutting the agent down");
                control.shutdown(false).await;
                std::process::exit(exit::CANCELLED);
            }
        }
    }
}
