//! Shared pieces of the ACP stdio benchmark peers.
//!
//! The bench scenario is specified in `SCENARIO.md` (see `bench/README.md`):
//! a bench client spawns a bench agent, runs `initialize`,
//! `session/new` and one `session/prompt` whose text selects a workload, and
//! prints one result line. Every peer, whatever protocol implementation it is
//! built on, uses this crate for the parts that must be identical across
//! implementations:
//!
//! - [`Scenario`]: parsing the prompt text into a workload,
//! - [`FS_CONTENT`]: the fixed `fs/read_text_file` answer,
//! - [`ClientArgs`]: the bench client's command line,
//! - [`result_line`]: the client's single output line,
//! - [`rusage`]: the resource self-report line appended to `$BENCH_RUSAGE_OUT`,
//! - [`wait_with_grace`]: the client's shutdown wait (kill after a grace period),
//! - [`join::join_all`]: the agent peers' wait for a turn's concurrent workers.

#![warn(missing_docs)]

use std::fmt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

pub mod join;
pub mod raw;
pub mod rusage;

/// The line repeated 16 times to form [`FS_CONTENT`].
const FS_LINE: &str = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n";

/// The fixed content every bench client answers `fs/read_text_file` with:
/// the scenario's line `"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n"`
/// repeated 16 times.
///
/// `SCENARIO.md` calls it "the 1024-byte string", but that line is 65 bytes
/// (62 letters and digits, `01`, and the newline), so the literal it gives is
/// 1040 bytes. The literal is what every implementation copies, so it is used
/// verbatim here; see [`FS_CONTENT_LEN`].
pub const FS_CONTENT: &str = concat!(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n",
);

/// Length of [`FS_CONTENT`] in bytes (16 × 65).
pub const FS_CONTENT_LEN: usize = 1040;

// Compile-time check that the content is 16 copies of the scenario's line.
const _: () = assert!(FS_CONTENT.len() == FS_CONTENT_LEN && FS_LINE.len() * 16 == FS_CONTENT_LEN);

/// Session id the bench agents hand out (any id is allowed by the scenario).
pub const SESSION_ID: &str = "bench-session";

/// Path the bench agents ask for in `fs/read_text_file`.
pub const FS_PATH: &str = "/tmp/x";

/// On protocol v2 (which has no `fs/*`), the id of the one option of the
/// `session/request_permission` request that stands for `fs/read_text_file`, and the option
/// every v2 bench client selects (`bench/README.md`, "Protocol v2").
pub const PERMISSION_OPTION: &str = "allow";

/// The title of that request's question.
pub const PERMISSION_TITLE: &str = "Read /tmp/x?";

/// Working directory the bench clients send in `session/new`.
pub const SESSION_CWD: &str = "/tmp";

/// The workload selected by the prompt text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Answer the prompt at once (`hello`, or any unrecognised text).
    Hello,
    /// `stream N S`: `count` `agent_message_chunk` notifications of `size` bytes of `x`.
    Stream {
        /// Number of notifications (N).
        count: u64,
        /// Text bytes per notification (S).
        size: usize,
    },
    /// `rpc N`: `count` sequential `fs/read_text_file` requests.
    Rpc {
        /// Number of requests (N).
        count: u64,
    },
    /// `rpcpar N C`: `count` `fs/read_text_file` requests with `in_flight` outstanding.
    RpcPar {
        /// Number of requests (N).
        count: u64,
        /// Requests kept in flight (C, at least 1).
        in_flight: u64,
    },
}

impl Scenario {
    /// Parses the prompt text (split on whitespace). Text that is not a
    /// well-formed workload is [`Scenario::Hello`] (answered at once).
    pub fn parse(text: &str) -> Self {
        let mut words = text.split_whitespace();
        let kind = words.next();
        let a = words.next().and_then(|w| w.parse::<u64>().ok());
        let b = words.next().and_then(|w| w.parse::<u64>().ok());
        match (kind, a, b) {
            (Some("stream"), Some(count), Some(size)) => Scenario::Stream {
                count,
                size: usize::try_from(size).unwrap_or(usize::MAX),
            },
            (Some("rpc"), Some(count), _) => Scenario::Rpc { count },
            (Some("rpcpar"), Some(count), Some(in_flight)) => Scenario::RpcPar {
                count,
                in_flight: in_flight.max(1),
            },
            _ => Scenario::Hello,
        }
    }

    /// Number of `agent_message_chunk` updates the client must count.
    pub fn expected_updates(&self) -> u64 {
        match *self {
            Scenario::Stream { count, .. } => count,
            _ => 0,
        }
    }

    /// Number of `fs/read_text_file` requests the client must answer.
    pub fn expected_rpcs(&self) -> u64 {
        match *self {
            Scenario::Rpc { count } | Scenario::RpcPar { count, .. } => count,
            _ => 0,
        }
    }

    /// The chunk text of a `stream` workload (`size` bytes of `x`), empty otherwise.
    pub fn chunk_text(&self) -> String {
        match *self {
            Scenario::Stream { size, .. } => "x".repeat(size),
            _ => String::new(),
        }
    }
}

/// The bench client's command line: `CLIENT "<prompt text>" AGENT_PROGRAM [AGENT_ARGS...]`.
#[derive(Debug, Clone)]
pub struct ClientArgs {
    /// The prompt text sent in `session/prompt`.
    pub prompt: String,
    /// The agent program to spawn.
    pub agent_program: String,
    /// Arguments for the agent program.
    pub agent_args: Vec<String>,
}

impl ClientArgs {
    /// Parses `std::env::args()`; on a usage error prints a message and exits with status 2.
    pub fn from_env() -> Self {
        let mut args = std::env::args();
        let me = args.next().unwrap_or_else(|| "client".to_owned());
        match (args.next(), args.next()) {
            (Some(prompt), Some(agent_program)) => ClientArgs {
                prompt,
                agent_program,
                agent_args: args.collect(),
            },
            _ => {
                eprintln!("usage: {me} \"<prompt text>\" AGENT_PROGRAM [AGENT_ARGS...]");
                std::process::exit(2);
            }
        }
    }

    /// The parsed workload of [`ClientArgs::prompt`].
    pub fn scenario(&self) -> Scenario {
        Scenario::parse(&self.prompt)
    }
}

/// Milliseconds elapsed since `since`, as a float.
pub fn ms_since(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// The client's measurements, printed with [`fmt::Display`] as the single output line.
#[derive(Debug, Clone)]
pub struct ResultLine<'a> {
    /// Implementation name of the client (`impl=`).
    pub impl_name: &'a str,
    /// Prompt text (`prompt="..."`).
    pub prompt: &'a str,
    /// Counted `agent_message_chunk` updates.
    pub updates: u64,
    /// Answered `fs/read_text_file` requests.
    pub rpcs: u64,
    /// Milliseconds from sending `session/prompt` to completion.
    pub prompt_ms: f64,
    /// Milliseconds from client start to completion.
    pub total_ms: f64,
}

impl fmt::Display for ResultLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "impl={} prompt=\"{}\" updates={} rpcs={} prompt_ms={:.3} total_ms={:.3}",
            self.impl_name, self.prompt, self.updates, self.rpcs, self.prompt_ms, self.total_ms
        )
    }
}

/// Formats the client's single output line (see [`ResultLine`]).
pub fn result_line(
    impl_name: &str,
    prompt: &str,
    updates: u64,
    rpcs: u64,
    prompt_ms: f64,
    total_ms: f64,
) -> String {
    ResultLine {
        impl_name,
        prompt,
        updates,
        rpcs,
        prompt_ms,
        total_ms,
    }
    .to_string()
}

/// Waits for `child` to exit; kills it if it is still running after `grace`.
///
/// Call it after closing the child's stdin. Polls with a short, growing sleep
/// (the agent normally exits within a millisecond of stdin EOF).
pub fn wait_with_grace(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    let deadline = Instant::now() + grace;
    let mut nap = Duration::from_micros(50);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            // The process may exit between try_wait and kill; kill errors are then harmless.
            let _ = child.kill();
            return child.wait();
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(5));
    }
}

/// The grace period a bench client gives its agent to exit after stdin EOF.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_sixteen_lines() {
        assert_eq!(FS_CONTENT.len(), FS_CONTENT_LEN);
        assert_eq!(FS_CONTENT, FS_LINE.repeat(16));
        assert!(FS_CONTENT.lines().all(|l| l == FS_LINE.trim_end()));
    }

    #[test]
    fn parses_scenarios() {
        assert_eq!(Scenario::parse("hello"), Scenario::Hello);
        assert_eq!(Scenario::parse(""), Scenario::Hello);
        assert_eq!(
            Scenario::parse("stream 200000 64"),
            Scenario::Stream {
                count: 200_000,
                size: 64
            }
        );
        assert_eq!(
            Scenario::parse("  rpc   20000 "),
            Scenario::Rpc { count: 20_000 }
        );
        assert_eq!(
            Scenario::parse("rpcpar 100000 64"),
            Scenario::RpcPar {
                count: 100_000,
                in_flight: 64
            }
        );
        assert_eq!(Scenario::parse("stream x 1"), Scenario::Hello);
        assert_eq!(Scenario::parse("stream 3 2").chunk_text(), "xx");
        assert_eq!(Scenario::parse("rpcpar 5 2").expected_rpcs(), 5);
        assert_eq!(Scenario::parse("stream 5 2").expected_updates(), 5);
    }

    #[test]
    fn formats_result_line() {
        assert_eq!(
            result_line("raw", "rpc 3", 0, 3, 1.5, 2.25),
            "impl=raw prompt=\"rpc 3\" updates=0 rpcs=3 prompt_ms=1.500 total_ms=2.250"
        );
    }
}
