//! Command-line options and usage text.

use super::*;
use std::path::PathBuf;
use std::time::Duration;

pub(super) const USAGE: &str = "\
usage: cargo xtask bench [OPTIONS]

Builds the bench peers (release) and runs the ACP stdio benchmark.

options:
  --reps N            repetitions per scenario, placement and pair (default 5)
  --quick             smoke test: 1 repetition, workloads scaled down 10x
  --scenario S        only scenario S: a name (hello, stream-small, stream-large,
                      rpc, rpcpar) or a literal prompt such as \"stream 1000 64\";
                      repeatable, or comma-separated
  --pair P            only pair P: CLIENT/AGENT (either side may be *), or NAME
                      for NAME/NAME; repeatable, or comma-separated
  --placement P       only placement P: free or 1cpu (taskset -c 0)
  --timeout SECS      hard per-run timeout (default 120)
  --idle-timeout SECS a run whose processes use no CPU for this long is a hang
                      (default 10)
  --markdown FILE     also write the results as markdown tables to FILE
  --no-build          do not build; use the binaries already built
  --no-warmup         skip the untimed `hello` warm-up run of every pair
  --keep              keep the per-run output directory
  --list              list the peers, pairs and scenarios, then exit
  -h, --help          this help";

/// Options from the command line.
#[derive(Debug)]
pub(super) struct Options {
    pub(super) reps: usize,
    pub(super) quick: bool,
    pub(super) scenarios: Vec<String>,
    pub(super) pairs: Vec<String>,
    pub(super) placements: Vec<String>,
    pub(super) timeout: Duration,
    pub(super) idle_timeout: Duration,
    pub(super) markdown: Option<PathBuf>,
    pub(super) build: bool,
    pub(super) warmup: bool,
    pub(super) keep: bool,
    pub(super) list: bool,
}

pub(super) fn parse_options(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        reps: 5,
        quick: false,
        scenarios: Vec::new(),
        pairs: Vec::new(),
        placements: Vec::new(),
        timeout: Duration::from_secs(120),
        idle_timeout: Duration::from_secs(10),
        markdown: None,
        build: true,
        warmup: true,
        keep: false,
        list: false,
    };
    let mut reps = None;
    // Tolerate being handed the subcommand name itself.
    let args = match args.first().map(String::as_str) {
        Some("bench") => &args[1..],
        _ => args,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{name} needs a value\n\n{USAGE}"))
        };
        let list = |v: String| -> Vec<String> {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        match flag {
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            "--reps" => reps = Some(parse_num(&value("--reps")?, "--reps")?.max(1) as usize),
            "--quick" => o.quick = true,
            "--scenario" => o.scenarios.extend(list(value("--scenario")?)),
            "--pair" => o.pairs.extend(list(value("--pair")?)),
            "--placement" => {
                for p in list(value("--placement")?) {
                    if !PLACEMENTS.contains(&p.as_str()) {
                        return Err(format!("unknown placement {p:?} (free or 1cpu)"));
                    }
                    o.placements.push(p);
                }
            }
            "--timeout" => {
                o.timeout = Duration::from_secs(parse_num(&value("--timeout")?, "--timeout")?)
            }
            "--idle-timeout" => {
                o.idle_timeout =
                    Duration::from_secs(parse_num(&value("--idle-timeout")?, "--idle-timeout")?)
            }
            "--markdown" => o.markdown = Some(PathBuf::from(value("--markdown")?)),
            "--no-build" => o.build = false,
            "--no-warmup" => o.warmup = false,
            "--keep" => o.keep = true,
            "--list" => o.list = true,
            other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    o.reps = reps.unwrap_or(if o.quick { 1 } else { 5 });
    if o.placements.is_empty() {
        o.placements = PLACEMENTS.iter().map(|p| p.to_string()).collect();
    }
    Ok(Some(o))
}

pub(super) fn parse_num(s: &str, name: &str) -> Result<u64, String> {
    s.parse()
        .map_err(|_| format!("{name}: not a non-negative integer: {s:?}"))
}
