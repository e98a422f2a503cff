//! `acp-conformance`: checks an ACP agent against the protocol's rules. See `--help`.

#![forbid(unsafe_code)]

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use acp_conformance::{Cli, ColorChoice, USAGE, checks, parse_args, run_with};

fn main() -> ExitCode {
    let cli = match parse_args(std::env::args_os().skip(1)) {
        Ok(cli) => cli,
        Err(message) => {
            eprintln!("acp-conformance: {message}");
            return ExitCode::from(2);
        }
    };
    let (options, json, expect, color, report_peak_rss) = match cli {
        Cli::Help => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Cli::Version => {
            println!("acp-conformance {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Cli::List => {
            for c in checks() {
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
        Cli::Run {
            options,
            json,
            expect,
            color,
            report_peak_rss,
        } => (options, json, expect, color, report_peak_rss),
    };
    let status = check(&options, json, expect, color);
    if report_peak_rss {
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
    options: &acp_conformance::Options,
    json: Option<std::path::PathBuf>,
    expect: Option<std::path::PathBuf>,
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
