//! A fake agent process: plays the agent side of a recorded transcript on stdin and stdout and
//! checks that the client says what the transcript says.
//!
//! ```text
//! acp-test-agent <transcript.jsonl> [--tmp <dir>] [--unordered] [--timeout <seconds>]
//! ```
//!
//! `--tmp` is the directory `<tmp>` stands for (the client's scratch directory). The process
//! exits with 0 when the client followed the transcript and closed stdin, and with 1 after
//! printing the difference to stderr otherwise; 2 for bad arguments.

#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::time::Duration;

use acp_test::Replay;

const USAGE: &str =
    "usage: acp-test-agent <transcript.jsonl> [--tmp <dir>] [--unordered] [--timeout <seconds>]";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut transcript = None;
    let mut tmp = None;
    let mut unordered = false;
    let mut timeout = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tmp" => tmp = args.next(),
            "--unordered" => unordered = true,
            "--timeout" => timeout = args.next().and_then(|s| s.parse::<f64>().ok()),
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ if transcript.is_none() && !arg.starts_with("--") => transcript = Some(arg),
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(transcript) = transcript else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut replay = match Replay::load(&transcript) {
        Ok(replay) => replay,
        Err(error) => {
            eprintln!("acp-test-agent: {error}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = tmp {
        replay = replay.temp_dir(dir);
    }
    if unordered {
        replay = replay.unordered();
    }
    if let Some(seconds) = timeout {
        replay = replay.timeout(Duration::from_secs_f64(seconds));
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
