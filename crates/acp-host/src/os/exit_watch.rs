//! Observing a process's exit without reaping it: `waitid(WNOWAIT)`, through a pidfd where
//! the kernel has one. An unreaped process keeps its pid (and so its process group id) from
//! being reused, which is what makes signalling its group afterwards safe (see `group.rs`).

use std::io;

use super::exit_status::{ExitStatus, signal_name};

/// Waits for a process's exit without reaping it; one per group leader, for agents and
/// terminal commands alike.
pub(crate) enum ExitWatch {
    /// Linux ≥ 5.4: the pidfd turns readable on exit, and `waitid(P_PIDFD, WNOWAIT)` then
    /// reads the status. Waiting costs no thread: smol's reactor watches the descriptor.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Pidfd(smol::Async<std::os::fd::OwnedFd>),
    /// Elsewhere: a blocking `waitid(P_PID, WNOWAIT)` on smol's blocking thread pool, one
    /// pool thread while the process runs.
    Blocking(libc::pid_t),
}

impl ExitWatch {
    /// Watches `pid`, a child of this process that nobody has reaped.
    pub(crate) fn new(pid: libc::pid_t) -> Self {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(pidfd) = open_pidfd(pid) {
            return Self::Pidfd(pidfd);
        }
        Self::Blocking(pid)
    }

    /// Resolves once the process has exited; it is left unreaped. Build the future once and
    /// poll it across iterations of a loop: the fallback holds a pool thread while it waits.
    pub(crate) async fn wait(self) -> io::Result<ExitStatus> {
        match self {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Self::Pidfd(pidfd) => loop {
                if let Some(exit) = peek_pidfd(pidfd.get_ref())? {
                    return Ok(exit.into());
                }
                pidfd.readable().await?;
            },
            Self::Blocking(pid) => {
                let id = libc::id_t::try_from(pid).map_err(io::Error::other)?;
                smol::unblock(move || {
                    loop {
                        if let Some(exit) = peek_exit(libc::P_PID, id, 0)? {
                            return Ok(exit.into());
                        }
                    }
                })
                .await
            }
        }
    }
}

/// How a process ended, as `waitid` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RawExit {
    /// It exited with this code.
    Code(i32),
    /// A signal with this number killed it.
    Signal(i32),
}

/// The exit of the process `waitid` designates by `id_type` and `id`, if it has exited,
/// leaving it unreaped. Blocks until then unless `flags` has `WNOHANG`.
fn peek_exit(
    id_type: libc::idtype_t,
    id: libc::id_t,
    flags: libc::c_int,
) -> io::Result<Option<RawExit>> {
    loop {
        // SAFETY: siginfo_t is plain old data; all-zero is a valid value, and a zero
        // `si_pid` afterwards is how WNOHANG reports "still running".
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t for the duration of the call.
        let result = unsafe {
            libc::waitid(
                id_type,
                id,
                &mut info,
                libc::WEXITED | libc::WNOWAIT | flags,
            )
        };
        if result == -1 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        // SAFETY: after a successful waitid the child fields of the union are the active ones.
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if pid == 0 {
            return Ok(None);
        }
        return Ok(match info.si_code {
            libc::CLD_EXITED => Some(RawExit::Code(status)),
            libc::CLD_KILLED | libc::CLD_DUMPED => Some(RawExit::Signal(status)),
            // Only WEXITED was asked for; anything else is not an exit.
            _ => None,
        });
    }
}

/// A pidfd for `pid`, or `None` when the kernel cannot provide one that `waitid(P_PIDFD)`
/// accepts (before Linux 5.4).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_pidfd(pid: libc::pid_t) -> Option<smol::Async<std::os::fd::OwnedFd>> {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes two integers and returns a new descriptor or -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if raw < 0 {
        return None;
    }
    // SAFETY: the syscall just returned this descriptor (close-on-exec), owned by no one else.
    let pidfd = unsafe { OwnedFd::from_raw_fd(i32::try_from(raw).ok()?) };
    // Linux 5.3 has pidfd_open but not P_PIDFD; one probe tells them apart.
    peek_pidfd(&pidfd).ok()?;
    smol::Async::new(pidfd).ok()
}

/// The exit of the process behind `pidfd`, if it has exited, without waiting or reaping.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn peek_pidfd(pidfd: &std::os::fd::OwnedFd) -> io::Result<Option<RawExit>> {
    use std::os::fd::AsRawFd;
    let id = libc::id_t::try_from(pidfd.as_raw_fd()).map_err(io::Error::other)?;
    peek_exit(libc::P_PIDFD, id, libc::WNOHANG)
}

impl From<RawExit> for ExitStatus {
    fn from(exit: RawExit) -> Self {
        match exit {
            RawExit::Code(code) => ExitStatus {
                code: Some(code),
                signal: None,
            },
            RawExit::Signal(signal) => ExitStatus {
                code: None,
                signal: Some(signal_name(signal)),
            },
        }
    }
}
