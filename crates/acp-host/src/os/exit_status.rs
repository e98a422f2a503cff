//! How a process ended: the one exit status of agents and terminal commands.

use std::fmt;

/// How a process this crate started ended: an agent ([`AgentExit::status`]) or a
/// terminal's command ([`TerminalHost::wait_for_exit`], [`TerminalOutput::exit_status`]).
///
/// Exactly one field is set, except when the exit could not be observed (the operating
/// system refused to report it), where both are `None`. Its protocol form,
/// `TerminalExitStatus`, is the connection layer's to build (acp-runtime answers
/// `terminal/output` and `terminal/wait_for_exit` with it).
///
/// ```
/// use acp_host::process::ExitStatus;
///
/// let status = ExitStatus { code: Some(0), signal: None };
/// assert!(status.success());
/// assert_eq!(status.to_string(), "exit code 0");
///
/// let killed = ExitStatus { code: None, signal: Some("SIGKILL".into()) };
/// assert_eq!(killed.to_string(), "signal SIGKILL");
/// ```
///
/// [`AgentExit::status`]: crate::process::AgentExit::status
/// [`TerminalHost::wait_for_exit`]: crate::terminal::TerminalHost::wait_for_exit
/// [`TerminalOutput::exit_status`]: crate::terminal::TerminalOutput::exit_status
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExitStatus {
    /// The exit code, if the process exited normally.
    pub code: Option<i32>,
    /// The name of the signal that ended the process, such as `"SIGKILL"` (see
    /// [`signal_name`]).
    pub signal: Option<String>,
}

impl ExitStatus {
    /// The status of an exit that could not be observed.
    pub(crate) const UNKNOWN: Self = Self {
        code: None,
        signal: None,
    };

    /// Whether the process exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// `exit code 3`, `signal SIGKILL`, or `an unknown status`.
impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.code, &self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(signal)) => write!(f, "signal {signal}"),
            (None, None) => f.write_str("an unknown status"),
        }
    }
}

/// The conventional name of a signal number, such as `"SIGKILL"` for 9, as reported in
/// an [`ExitStatus`]; numbers without a standard name become `"SIG<number>"`.
///
/// ```
/// use acp_host::process::signal_name;
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
