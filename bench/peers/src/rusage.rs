//! The resource self-report line every bench peer appends to `$BENCH_RUSAGE_OUT`.
//!
//! Format (one line, space-separated `key=value`):
//!
//! ```text
//! role=<client|agent> impl=<name> pid=<pid> user_us=<int> sys_us=<int> maxrss_kb=<VmHWM> vcsw=<int> ivcsw=<int> wall_ms=<float>
//! ```
//!
//! CPU times and context switches come from `getrusage(RUSAGE_SELF)` (all
//! threads of the process, not its children). Peak memory is `VmHWM` from
//! `/proc/self/status`, not `ru_maxrss` (which Linux inherits across `exec`
//! from the forking parent's image).

use std::fmt;
use std::io::Write as _;
use std::time::Instant;

/// Environment variable naming the file the report line is appended to.
pub const ENV_VAR: &str = "BENCH_RUSAGE_OUT";

/// Which side of the connection a peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The bench client (spawns the agent).
    Client,
    /// The bench agent.
    Agent,
}

impl Role {
    /// The role's name in the report line.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Agent => "agent",
        }
    }
}

/// One resource sample of the current process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// User CPU time, microseconds.
    pub user_us: u64,
    /// System CPU time, microseconds.
    pub sys_us: u64,
    /// Peak resident set size (`VmHWM`), KiB; 0 if unavailable.
    pub maxrss_kb: u64,
    /// Voluntary context switches.
    pub vcsw: u64,
    /// Involuntary context switches.
    pub ivcsw: u64,
}

impl Usage {
    /// Samples `getrusage(RUSAGE_SELF)` and `VmHWM` now.
    pub fn sample() -> Self {
        // SAFETY: `rusage` is a plain C struct for which all-zero bytes is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable `rusage`; RUSAGE_SELF is a valid `who`.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let (user_us, sys_us, vcsw, ivcsw) = if rc == 0 {
            (
                timeval_us(ru.ru_utime),
                timeval_us(ru.ru_stime),
                nonneg(ru.ru_nvcsw),
                nonneg(ru.ru_nivcsw),
            )
        } else {
            (0, 0, 0, 0)
        };
        Usage {
            user_us,
            sys_us,
            maxrss_kb: vm_hwm_kb().unwrap_or(0),
            vcsw,
            ivcsw,
        }
    }
}

fn timeval_us(tv: libc::timeval) -> u64 {
    nonneg(tv.tv_sec) * 1_000_000 + nonneg(tv.tv_usec)
}

fn nonneg<T: TryInto<u64>>(v: T) -> u64 {
    v.try_into().unwrap_or(0)
}

/// Reads `VmHWM` (peak resident set size, KiB) from `/proc/self/status`.
pub fn vm_hwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm(&status)
}

fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line["VmHWM:".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A complete report line (see the module documentation for the format).
#[derive(Debug, Clone)]
pub struct Report<'a> {
    /// Which peer this is.
    pub role: Role,
    /// Implementation name.
    pub impl_name: &'a str,
    /// Process id.
    pub pid: u32,
    /// Resource usage.
    pub usage: Usage,
    /// Wall-clock milliseconds since the peer started.
    pub wall_ms: f64,
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let u = &self.usage;
        write!(
            f,
            "role={} impl={} pid={} user_us={} sys_us={} maxrss_kb={} vcsw={} ivcsw={} wall_ms={:.3}",
            self.role.as_str(),
            self.impl_name,
            self.pid,
            u.user_us,
            u.sys_us,
            u.maxrss_kb,
            u.vcsw,
            u.ivcsw,
            self.wall_ms
        )
    }
}

/// Samples this process and appends its report line to `$BENCH_RUSAGE_OUT`.
///
/// Does nothing if the variable is unset or empty. `started` is the instant
/// the peer took at the start of `main` (for `wall_ms`). The line is written
/// with a single `write` on an `O_APPEND` file, so the client's and the
/// agent's lines never interleave.
pub fn report(role: Role, impl_name: &str, started: Instant) -> std::io::Result<()> {
    let Some(path) = std::env::var_os(ENV_VAR).filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let line = Report {
        role,
        impl_name,
        pid: std::process::id(),
        usage: Usage::sample(),
        wall_ms: crate::ms_since(started),
    }
    .to_string()
        + "\n";
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(line.as_bytes())
}

/// Like [`report`], but prints a warning to stderr instead of returning an error.
pub fn report_or_warn(role: Role, impl_name: &str, started: Instant) {
    if let Err(e) = report(role, impl_name, started) {
        eprintln!("{impl_name} {}: cannot write {ENV_VAR}: {e}", role.as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vm_hwm() {
        let status = "Name:\tx\nVmPeak:\t  100 kB\nVmHWM:\t    4321 kB\nVmRSS:\t 12 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(4321));
        assert_eq!(parse_vm_hwm("Name: x\n"), None);
    }

    #[test]
    fn samples_this_process() {
        let u = Usage::sample();
        assert!(u.maxrss_kb > 0);
    }

    #[test]
    fn formats_report() {
        let r = Report {
            role: Role::Agent,
            impl_name: "raw",
            pid: 7,
            usage: Usage {
                user_us: 1,
                sys_us: 2,
                maxrss_kb: 3,
                vcsw: 4,
                ivcsw: 5,
            },
            wall_ms: 6.0,
        };
        assert_eq!(
            r.to_string(),
            "role=agent impl=raw pid=7 user_us=1 sys_us=2 maxrss_kb=3 vcsw=4 ivcsw=5 wall_ms=6.000"
        );
    }
}
