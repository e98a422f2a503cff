//! The operating-system layer under the agent-process supervisor (`crate::process`) and the
//! terminal host (`crate::terminal`): process groups (`group`), exit watching without reaping
//! (`exit_watch`), the one exit status (`exit_status`), and the process supervisor that kills
//! the groups when this process dies (`supervisor`). The epoll loop over two pipes is the
//! public `crate::pipe_loop`.
//!
//! Nothing here knows about agents, terminals or the protocol; it imports neither of its
//! users.

pub(crate) mod exit_status;
pub(crate) mod exit_watch;
pub(crate) mod group;
pub(crate) mod supervisor;

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex shared with a supervision task. A poisoned lock only means a thread panicked
/// mid-update; every update of this state leaves it consistent, so keep going rather than
/// cascading the panic into the task that must still reap and kill.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
