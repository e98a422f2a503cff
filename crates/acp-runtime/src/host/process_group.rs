//! Running a command as the leader of its own process group, and ending that group.
//!
//! The leader is deliberately left unreaped (a zombie once it exits) until its
//! [`SpawnedGroup::leader`] is released: the kernel never reuses the id of an unreaped
//! process, so as long as we hold the leader, `killpg(pgid)` can only reach processes of
//! this group and never an unrelated group that happens to get the same id later. Exit is
//! observed without reaping through a pidfd and `waitid(WNOWAIT)`. From the spawn until its
//! release the group is also registered with the process supervisor (`supervisor.rs`), which
//! kills it if this process dies first.

use std::future::Future;
use std::io::{self, PipeReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::pin::Pin;

use async_process::Stdio;
use smol::Async;

use super::terminal::TerminalExitStatus;
use crate::os::group::GroupLeader;

/// What to run; mirrors the `terminal/create` parameters that concern the process.
pub(crate) struct GroupCommand<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub cwd: &'a Path,
}

/// A freshly started process group.
pub(crate) struct SpawnedGroup {
    /// Keeps the leader unreaped (see the module docs); dropping it kills the group and hands
    /// the leader to async-process, which reaps it in the background.
    pub leader: GroupLeader,
    /// The read end of the single pipe that is both stdout and stderr of the leader.
    pub output: Async<PipeReader>,
    pub exit: ExitWatch,
}

/// Starts `command` in a new process group with stdin closed and stdout and stderr sharing
/// one pipe, so the output arrives in exactly the order the process wrote it.
pub(crate) fn spawn(command: &GroupCommand<'_>) -> io::Result<SpawnedGroup> {
    let (reader, writer) = io::pipe()?;
    let stderr_writer = writer.try_clone()?;

    let mut std_command = std::process::Command::new(command.program);
    std_command
        .args(command.args)
        .envs(command.env.iter().map(|(name, value)| (name, value)))
        .current_dir(command.cwd)
        .process_group(0);
    let mut async_command = async_process::Command::from(std_command);
    async_command
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(stderr_writer)
        .reap_on_drop(true)
        .kill_on_drop(false);
    let mut child = async_command.spawn()?;
    let exit = ExitWatch::new(&mut child);
    // Dropping `leader` on an early return kills the group: nobody would ever own it.
    let leader = GroupLeader::new(child);
    // The command still owns our copies of the write end; the reader sees end-of-file
    // only once every write end is closed, so they must go now.
    drop(async_command);

    let output = Async::new(reader)?;
    Ok(SpawnedGroup {
        leader,
        output,
        exit,
    })
}

type ReapingWait = Pin<Box<dyn Future<Output = io::Result<std::process::ExitStatus>> + Send>>;

/// How the exit of the leader is observed.
pub(crate) enum ExitWatch {
    /// Linux ≥ 5.4: the pidfd becomes readable on exit, and `waitid(P_PIDFD, WNOWAIT)`
    /// reads the status while leaving the leader unreaped.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Pidfd(Async<std::os::fd::OwnedFd>),
    /// Elsewhere: async-process waits for and reaps the leader. After that, a group kill
    /// is only safe while some other member of the group keeps its id alive.
    Reaping(ReapingWait),
}

impl ExitWatch {
    fn new(child: &mut async_process::Child) -> Self {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        // A pid always fits in pid_t; `Child::id` merely widens it to u32.
        if let Some(pidfd) = crate::os::exit_watch::open_pidfd(child.id() as libc::pid_t) {
            return Self::Pidfd(pidfd);
        }
        // The returned future owns its own handle to the child, not a borrow.
        Self::Reaping(Box::pin(child.status()))
    }

    /// Whether waiting reaps the leader, after which its group must not be signalled any
    /// more (see [`GroupLeader::release_reaped`]).
    pub(crate) fn reaps_leader(&self) -> bool {
        matches!(self, Self::Reaping(_))
    }

    /// Resolves once the leader has exited.
    pub(crate) async fn wait(self) -> io::Result<TerminalExitStatus> {
        match self {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Self::Pidfd(pidfd) => loop {
                if let Some(exit) = crate::os::exit_watch::peek_pidfd(pidfd.get_ref())? {
                    return Ok(exit.into());
                }
                pidfd.readable().await?;
            },
            Self::Reaping(status) => {
                let status = status.await?;
                Ok(TerminalExitStatus {
                    exit_code: status.code().and_then(|code| u32::try_from(code).ok()),
                    signal: status.signal().map(signal_name),
                })
            }
        }
    }
}

impl From<crate::os::exit_watch::RawExit> for TerminalExitStatus {
    fn from(exit: crate::os::exit_watch::RawExit) -> Self {
        match exit {
            crate::os::exit_watch::RawExit::Code(code) => TerminalExitStatus {
                exit_code: u32::try_from(code).ok(),
                signal: None,
            },
            crate::os::exit_watch::RawExit::Signal(signal) => TerminalExitStatus {
                exit_code: None,
                signal: Some(signal_name(signal)),
            },
        }
    }
}

/// The conventional name of a signal number, such as `"SIGKILL"` for 9, as reported in
/// a terminal's exit status; numbers without a standard name become `"SIG<number>"`.
///
/// ```
/// use acp_runtime::host::signal_name;
///
/// assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
/// assert_eq!(signal_name(64), "SIG64");
/// ```
pub fn signal_name(signal: i32) -> String {
    let known: &[(i32, &str)] = &[
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGTERM, "SIGTERM"),
        #[cfg(any(target_os = "linux", target_os = "android"))]
        (libc::SIGSTKFLT, "SIGSTKFLT"),
        (libc::SIGCHLD, "SIGCHLD"),
        (libc::SIGCONT, "SIGCONT"),
        (libc::SIGSTOP, "SIGSTOP"),
        (libc::SIGTSTP, "SIGTSTP"),
        (libc::SIGTTIN, "SIGTTIN"),
        (libc::SIGTTOU, "SIGTTOU"),
        (libc::SIGURG, "SIGURG"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
        (libc::SIGVTALRM, "SIGVTALRM"),
        (libc::SIGPROF, "SIGPROF"),
        (libc::SIGWINCH, "SIGWINCH"),
        (libc::SIGIO, "SIGIO"),
        #[cfg(any(target_os = "linux", target_os = "android"))]
        (libc::SIGPWR, "SIGPWR"),
        (libc::SIGSYS, "SIGSYS"),
    ];
    known
        .iter()
        .find(|(number, _)| *number == signal)
        .map_or_else(|| format!("SIG{signal}"), |(_, name)| (*name).to_owned())
}
