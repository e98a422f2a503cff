//! The operating-system layer under the agent-process supervisor (`crate::process`) and the
//! terminal host (`crate::host`): process groups, exit watching without reaping, the process
//! supervisor that kills groups when this process dies, and the epoll loop over two pipes.
//!
//! Nothing here knows about agents, terminals or the protocol; both users build on it and it
//! imports neither.

pub(crate) mod exit_watch;
pub(crate) mod group;
#[cfg(target_os = "linux")]
pub(crate) mod pipe_loop;
pub(crate) mod supervisor;
