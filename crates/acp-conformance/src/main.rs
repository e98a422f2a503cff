//! `acp-conformance`: checks an ACP agent against the protocol's rules. See `--help`.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use acp_conformance::{DEFAULT_PROMPT, Options, Protocol, checks_for, run_with};
use clap::{Parser, ValueEnum};

/// Checks an ACP agent against the Agent Client Protocol's rules.
///
/// The agent command is run directly (no shell), once per group of checks, with the checker
/// acting as the client over its stdin and stdout.
#[derive(Debug, Parser)]
#[command(
    name = "acp-conformance",
    version,
    override_usage = "acp-conformance [OPTIONS] [--] AGENT [AGENT-ARGS...]\n       acp-conformance --list",
    after_help = EXIT_STATUS,
    args_override_self = true,
    max_term_width = 100
)]
struct Cli {
    /// Text of every prompt turn
    #[arg(long, value_name = "TEXT", default_value = DEFAULT_PROMPT)]
    prompt: String,
    /// Call `authenticate` with this auth method id after `initialize`
    #[arg(long, value_name = "METHOD")]
    auth: Option<String>,
    /// Time limit of one request; an agent that does not answer in time is ended
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = seconds)]
    timeout: Duration,
    /// Time limit of one prompt turn
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = seconds)]
    turn_timeout: Duration,
    /// Time limit of the whole run
    #[arg(long, value_name = "SECS", default_value = "1800", value_parser = seconds)]
    run_timeout: Duration,
    /// Longest line read from the agent
    #[arg(long, value_name = "MIB", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=1024))]
    max_line_mib: u16,
    /// How long to watch for late messages after a step
    #[arg(long, value_name = "MS", default_value_t = 500)]
    grace_ms: u64,
    /// Run only these checks (an id or an id prefix such as `rpc`)
    #[arg(long, value_name = "ID[,ID...]")]
    only: Vec<String>,
    /// Leave out these checks
    #[arg(long, value_name = "ID[,ID...]")]
    skip: Vec<String>,
    /// Set an environment variable for the agent (repeatable)
    #[arg(long, value_name = "NAME=VALUE", value_parser = env_var)]
    env: Vec<(String, String)>,
    /// Run the agent in DIR [default: the current directory]
    #[arg(long, value_name = "DIR")]
    agent_cwd: Option<PathBuf>,
    /// Also write the report as JSON to FILE (`-`: to stdout, no table)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Compare the verdicts with FILE's `verdicts` object; exit 1 on any difference instead of
    /// on MUST failures
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
    /// When to colour the table (auto: when stdout is a terminal)
    #[arg(long, visible_alias = "colour", value_name = "WHEN", value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    /// Print the wire traffic and the agent's stderr to stderr
    #[arg(long)]
    trace: bool,
    /// Print the checker's peak memory use to stderr at the end
    #[arg(long)]
    report_peak_rss: bool,
    /// The protocol version to check: 1, or 2 (a draft; needs a checker built with the
    /// feature `unstable-protocol-v2`)
    #[arg(long, value_name = "VERSION", default_value = "1", value_parser = protocol)]
    protocol: Protocol,
    /// List the checks (of `--protocol`) and exit
    #[arg(long)]
    list: bool,
    /// The agent's command and its arguments (options of the checker come before it, or
    /// before `--`)
    #[arg(
        value_name = "AGENT",
        required_unless_present = "list",
        trailing_var_arg = true
    )]
    command: Vec<OsString>,
}

const EXIT_STATUS: &str = "\
Exit status:
  0  no MUST check failed (with --expect: the verdicts match)
  1  a MUST check failed (with --expect: a verdict differs)
  2  bad usage, or the agent could not be started";

/// When to colour the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ColorChoice {
    /// When stdout is a terminal
    Auto,
    /// Always
    Always,
    /// Never
    Never,
}

/// `--timeout` and the like: a positive number of seconds, fractions allowed.
fn seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!("a positive number of seconds, not `{text}`")),
    }
}

/// `--protocol 1|2`.
fn protocol(text: &str) -> Result<Protocol, String> {
    match text {
        "1" => Ok(Protocol::V1),
        "2" if cfg!(feature = "unstable-protocol-v2") => Ok(Protocol::V2),
        "2" => Err(
            "this acp-conformance was built without protocol v2 (feature unstable-protocol-v2)"
                .to_owned(),
        ),
        _ => Err(format!("1 or 2, not `{text}`")),
    }
}

/// `--env NAME=VALUE`.
fn env_var(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("NAME=VALUE, not `{text}`"))
}

/// `--only a,b --only c`: every id, in order, without empty ones.
fn ids(lists: &[String]) -> Vec<String> {
    lists
        .iter()
        .flat_map(|list| list.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Cli {
    fn options(&self) -> Options {
        let mut options = Options::new(self.command.clone());
        options.env = self.env.iter().map(|(k, v)| (k.into(), v.into())).collect();
        options.agent_cwd = self.agent_cwd.clone();
        options.prompt = self.prompt.clone();
        options.auth = self.auth.clone();
        options.timeout = self.timeout;
        options.turn_timeout = self.turn_timeout;
        options.run_timeout = self.run_timeout;
        options.grace = Duration::from_millis(self.grace_ms);
        options.only = ids(&self.only);
        options.skip = ids(&self.skip);
        options.trace = self.trace;
        options.max_line_bytes = usize::from(self.max_line_mib) * 1024 * 1024;
        options.protocol = self.protocol;
        options
    }
}

fn main() -> ExitCode {
    // Usage errors exit with 2, `--help` and `--version` with 0 (clap's own statuses).
    let cli = Cli::parse();
    if cli.list {
        for c in checks_for(cli.protocol) {
            println!(
                "{:<32} {:<6} {}\n{:<39} {}",
                c.id,
                c.level.as_str(),
                c.spec,
                "",
                c.requirement
            );
        }
        return ExitCode::SUCCESS;
    }
    let status = check(&cli.options(), cli.json, cli.expect, cli.color);
    if cli.report_peak_rss {
        match peak_rss_kib() {
            Some(kib) => eprintln!("acp-conformance: peak RSS {kib} KiB"),
            None => eprintln!("acp-conformance: peak RSS unknown (no /proc/self/status)"),
        }
    }
    status
}

/// The process's peak resident set size so far (`VmHWM`), on Linux.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs the checks and reports; the exit status.
fn check(
    options: &Options,
    json: Option<PathBuf>,
    expect: Option<PathBuf>,
    color: ColorChoice,
) -> ExitCode {
    let json_to_stdout = json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let expected = match &expect {
        None => None,
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                serde_json::from_str::<serde_json::Value>(&text).map_err(|e| e.to_string())
            }) {
            Ok(value) => Some(value),
            Err(e) => {
                eprintln!("acp-conformance: cannot read {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
    };
    let color = match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => !json_to_stdout && std::io::stdout().is_terminal(),
    };
    let interactive = std::io::stderr().is_terminal();
    let report = run_with(options, |result| {
        if interactive {
            eprint!("\r\x1b[2K{} {}", result.id, result.verdict.name());
            let _ = std::io::stderr().flush();
        }
    });
    if interactive {
        eprint!("\r\x1b[2K");
    }
    let report = match report {
        Ok(report) => report,
        Err(message) => {
            eprintln!("acp-conformance: {message}");
            return ExitCode::from(2);
        }
    };
    if !json_to_stdout {
        print!("{}", report.render(color));
    }
    if let Some(path) = &json {
        let text = format!("{:#}\n", report.to_json());
        let written = if json_to_stdout {
            std::io::stdout().write_all(text.as_bytes())
        } else {
            std::fs::write(path, text)
        };
        if let Err(e) = written {
            eprintln!("acp-conformance: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if let (Some(expected), Some(path)) = (&expected, &expect) {
        return match report.compare(expected) {
            Err(message) => {
                eprintln!("acp-conformance: {}: {message}", path.display());
                ExitCode::from(2)
            }
            Ok(differences) if differences.is_empty() => {
                eprintln!("verdicts match {}", path.display());
                ExitCode::SUCCESS
            }
            Ok(differences) => {
                eprintln!("verdicts differ from {}:", path.display());
                for d in differences {
                    eprintln!("  {d}");
                }
                ExitCode::from(1)
            }
        };
    }
    if report.summary().must_failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("acp-conformance").chain(args.iter().copied()))
    }

    #[test]
    fn options_then_the_agent_command_with_its_own_options() {
        let cli = parse(&[
            "--timeout=2.5",
            "--only",
            "rpc, init",
            "--only=session",
            "--env",
            "A=b=c",
            "--colour",
            "never",
            "agent",
            "--timeout",
            "9",
        ])
        .unwrap();
        let options = cli.options();
        assert_eq!(options.timeout, Duration::from_millis(2500));
        assert_eq!(options.only, ["rpc", "init", "session"]);
        assert_eq!(options.env, [("A".into(), "b=c".into())]);
        assert_eq!(cli.color, ColorChoice::Never);
        assert_eq!(options.command, ["agent", "--timeout", "9"]);
        let cli = parse(&["--", "--agent-with-a-dash"]).unwrap();
        assert_eq!(cli.command, ["--agent-with-a-dash"]);
        assert_eq!(cli.options().max_line_bytes, 8 * 1024 * 1024);
        assert_eq!(cli.options().prompt, DEFAULT_PROMPT);
    }

    #[test]
    fn the_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn usage_errors() {
        for args in [
            &[][..],
            &["--no-such-option", "agent"],
            &["--timeout", "0", "agent"],
            &["--timeout", "NaN", "agent"],
            &["--max-line-mib", "1025", "agent"],
            &["--env", "novalue", "agent"],
            &["--color", "sometimes", "agent"],
            &["--protocol", "3", "agent"],
        ] {
            assert!(parse(args).is_err(), "{args:?}");
        }
        assert!(parse(&["--list"]).unwrap().list);
        assert_eq!(parse(&["agent"]).unwrap().options().protocol, Protocol::V1);
        let v2 = parse(&["--protocol", "2", "agent"]);
        assert_eq!(
            v2.map(|cli| cli.options().protocol).ok(),
            cfg!(feature = "unstable-protocol-v2").then_some(Protocol::V2)
        );
    }
}
