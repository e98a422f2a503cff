//! How an agent ended, and why it could not be started.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::os::exit_status::ExitStatus;

/// The steps of [`AgentProcess::shutdown`], in order; an [`AgentExit`] names the last one
/// taken before the agent exited.
///
/// [`AgentProcess::shutdown`]: super::AgentProcess::shutdown
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShutdownStep {
    /// No step: the agent exited before shutdown began (it crashed, or chose to).
    NotRequested,
    /// Step 1: its stdin was closed; a well-behaved agent exits on end-of-file.
    StdinClosed,
    /// Step 2: it was still running after the shutdown grace, and its group got SIGTERM.
    Terminated,
    /// Step 3: it was still running after the SIGTERM grace, and its group got SIGKILL.
    /// Also reported when the [`AgentProcess`](super::AgentProcess) was dropped while the
    /// agent ran.
    Killed,
}

impl fmt::Display for ShutdownStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShutdownStep::NotRequested => "before shutdown",
            ShutdownStep::StdinClosed => "after its stdin was closed",
            ShutdownStep::Terminated => "after SIGTERM",
            ShutdownStep::Killed => "after SIGKILL",
        })
    }
}

/// Everything known about the agent's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentExit {
    /// How the process ended.
    pub status: ExitStatus,
    /// The last shutdown step taken before the exit was observed.
    pub step: ShutdownStep,
    /// The stderr tail right after the exit (see
    /// [`AgentProcess::stderr_tail`](super::AgentProcess::stderr_tail)).
    pub stderr_tail: String,
}

/// The status, followed by the shutdown step unless the agent exited before shutdown:
/// `exit code 3`, `signal SIGKILL after SIGKILL`.
impl fmt::Display for AgentExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            ShutdownStep::NotRequested => write!(f, "{}", self.status),
            step => write!(f, "{} {step}", self.status),
        }
    }
}

impl From<AgentExit> for AgentProcessError {
    fn from(exit: AgentExit) -> Self {
        AgentProcessError::Crashed {
            status: exit.status,
            stderr_tail: exit.stderr_tail,
        }
    }
}

/// Why an agent could not be started, or why it is gone.
#[derive(Debug, thiserror::Error)]
pub enum AgentProcessError {
    /// The program does not exist: no file at the given path, or, for a bare name, no
    /// executable of that name in any directory of `PATH`.
    #[error("agent program `{program}` not found{}", describe_search(.searched_path.as_deref()))]
    NotFound {
        /// The program that was asked for.
        program: String,
        /// The `PATH` that was searched (empty if unset); `None` when the program was a
        /// path, which is used as is.
        searched_path: Option<String>,
    },
    /// The configured working directory does not exist or is not a directory.
    #[error("agent working directory `{}` does not exist or is not a directory", .0.display())]
    MissingCwd(PathBuf),
    /// The program exists but could not be started (not executable, permissions, missing
    /// interpreter, resource limits).
    #[error("could not start agent program `{program}`: {source}")]
    Spawn {
        /// The program that was asked for.
        program: String,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// The agent exited while the connection still needed it. Built from an [`AgentExit`]
    /// with `From`.
    #[error("agent exited with {status}; {}", describe_tail(.stderr_tail))]
    Crashed {
        /// How it ended.
        status: ExitStatus,
        /// Its last stderr lines.
        stderr_tail: String,
    },
}

fn describe_search(searched_path: Option<&str>) -> String {
    match searched_path {
        None => String::new(),
        Some("") => " (PATH is empty or unset)".to_owned(),
        Some(path) => format!(" in any directory of PATH ({path})"),
    }
}

fn describe_tail(stderr_tail: &str) -> String {
    if stderr_tail.is_empty() {
        "it wrote nothing to stderr".to_owned()
    } else {
        format!("last stderr lines:\n{stderr_tail}")
    }
}
