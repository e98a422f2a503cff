//! A fake agent process: plays the agent side of a recorded transcript on stdin and stdout and
//! checks that the client says what the transcript says.
//!
//! ```text
//! acp-test-agent <transcript.jsonl> [--tmp <dir>] [--unordered] [--timeout <seconds>]
//! ```
//!
//! `--tmp` is the directory `<tmp>` stands for (the client's scratch directory). The process
//! exits with 0 when the client followed the transcript and closed stdin, and with 1 after
//! printing the difference to stderr otherwise; 2 for bad arguments (clap's usage errors, and a
//! transcript that does not load).

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use acp_test::Replay;
use clap::Parser;

/// Plays the agent side of a recorded transcript on stdin and stdout, and checks that the
/// client says what the transcript says.
#[derive(Debug, Parser)]
#[command(
    name = "acp-test-agent",
    version,
    args_override_self = true,
    after_help = "Exit status: 0 when the client followed the transcript and closed stdin; 1 \
                  after printing the difference to stderr; 2 for bad arguments or a transcript \
                  that does not load."
)]
struct Args {
    /// The transcript to play (acp-test JSON Lines: {"dir", "msg"} per line)
    #[arg(value_name = "TRANSCRIPT")]
    transcript: PathBuf,
    /// The directory `<tmp>` stands for in the transcript (the client's scratch directory)
    #[arg(long, value_name = "DIR")]
    tmp: Option<PathBuf>,
    /// Accept the client's messages in any order within each run of consecutive messages
    /// from it (for clients whose concurrent handlers may answer in either order)
    #[arg(long)]
    unordered: bool,
    /// Give up waiting for each message of the client after SECS (fractions allowed)
    /// [default: 5]
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    timeout: Option<Duration>,
}

/// `--timeout SECS`.
fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| format!("seconds (such as 5 or 0.5), not {text:?}"))
}

fn main() -> ExitCode {
    // Usage errors exit with 2, `--help` and `--version` with 0 (clap's statuses).
    let args = Args::parse();
    let mut replay = match Replay::load(&args.transcript) {
        Ok(replay) => replay,
        Err(error) => {
            eprintln!("acp-test-agent: {error}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = args.tmp {
        replay = replay.temp_dir(dir);
    }
    if args.unordered {
        replay = replay.unordered();
    }
    if let Some(timeout) = args.timeout {
        replay = replay.timeout(timeout);
    }
    let (reader, writer) = match acp_runtime::stdio::stdio() {
        Ok(stdio) => stdio,
        Err(error) => {
            eprintln!("acp-test-agent: cannot use stdin and stdout: {error}");
            return ExitCode::from(2);
        }
    };
    match smol::block_on(replay.play_agent(reader, writer)) {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{error}");
            ExitCode::from(1)
        }
    }
}
