//! Command-line options: clap's derive on [`Args`], turned into the [`Options`] a run uses.

use super::*;
use std::path::PathBuf;
use std::time::Duration;

/// Builds the bench peers (release) and runs the ACP stdio benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Repetitions per scenario, placement and pair [default: 5, 1 with --quick]
    #[arg(long, value_name = "N")]
    reps: Option<u64>,
    /// Smoke test: 1 repetition, workloads scaled down 10x
    #[arg(long)]
    quick: bool,
    /// Only scenario S: a name (hello, stream-small, stream-large, rpc, rpcpar) or a literal
    /// prompt such as "stream 1000 64"; repeatable, or comma-separated
    #[arg(long = "scenario", value_name = "S")]
    scenarios: Vec<String>,
    /// Only pair P: CLIENT/AGENT (either side may be *), or NAME for NAME/NAME; repeatable, or
    /// comma-separated
    #[arg(long = "pair", value_name = "P")]
    pairs: Vec<String>,
    /// Proxy chains with N proxies (0 to 3; repeatable, or comma-separated): our conductor, the
    /// official conductor with our pass-through proxies and with the official SDK's, each against
    /// the floor of 2N + 1 byte relays, our pair direct beside them; with no --pair, only these
    #[arg(long = "chain", value_name = "N", value_parser = chains)]
    chains: Vec<Vec<usize>>,
    /// Only placement P: free or 1cpu (taskset -c 0); repeatable, or comma-separated
    #[arg(long = "placement", value_name = "P", value_parser = placements)]
    placements: Vec<Vec<String>>,
    /// Hard per-run timeout
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    timeout: u64,
    /// A run whose processes use no CPU for this long is a hang
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    idle_timeout: u64,
    /// Also write the results as markdown tables to FILE
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Do not build; use the binaries already built
    #[arg(long)]
    no_build: bool,
    /// Skip the untimed `hello` warm-up run of every pair
    #[arg(long)]
    no_warmup: bool,
    /// Keep the per-run output directory
    #[arg(long)]
    keep: bool,
    /// List the peers, pairs and scenarios, then exit
    #[arg(long)]
    list: bool,
}

/// Options for a run.
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) reps: usize,
    pub(crate) quick: bool,
    pub(crate) scenarios: Vec<String>,
    pub(crate) pairs: Vec<String>,
    pub(crate) placements: Vec<String>,
    /// Proxy counts for `--chain`, sorted, without repeats.
    pub(crate) chains: Vec<usize>,
    pub(crate) timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) markdown: Option<PathBuf>,
    pub(crate) build: bool,
    pub(crate) warmup: bool,
    pub(crate) keep: bool,
    pub(crate) list: bool,
}

/// `--placement free,1cpu`: known placements only.
fn placements(text: &str) -> Result<Vec<String>, String> {
    let list = split(text);
    match list.iter().find(|p| !PLACEMENTS.contains(&p.as_str())) {
        Some(p) => Err(format!("unknown placement {p:?} (free or 1cpu)")),
        None => Ok(list),
    }
}

/// `--chain 0,1,3`: proxy counts the bench has peers for.
fn chains(text: &str) -> Result<Vec<usize>, String> {
    split(text)
        .iter()
        .map(|n| match n.parse::<usize>() {
            Ok(n) if n <= MAX_CHAIN => Ok(n),
            _ => Err(format!("{n:?} is not a proxy count from 0 to {MAX_CHAIN}")),
        })
        .collect()
}

/// A comma-separated list, trimmed, without empty entries.
fn split(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Args {
    /// The options of a run: the defaults filled in, the lists split.
    pub(crate) fn options(&self) -> Options {
        let mut placements: Vec<String> = self.placements.concat();
        if placements.is_empty() {
            placements = PLACEMENTS.iter().map(|p| p.to_string()).collect();
        }
        let mut chains: Vec<usize> = self.chains.concat();
        chains.sort_unstable();
        chains.dedup();
        let reps = self.reps.unwrap_or(if self.quick { 1 } else { 5 }).max(1);
        Options {
            reps: usize::try_from(reps).unwrap_or(usize::MAX),
            quick: self.quick,
            scenarios: self.scenarios.iter().flat_map(|s| split(s)).collect(),
            pairs: self.pairs.iter().flat_map(|p| split(p)).collect(),
            placements,
            chains,
            timeout: Duration::from_secs(self.timeout),
            idle_timeout: Duration::from_secs(self.idle_timeout),
            markdown: self.markdown.clone(),
            build: !self.no_build,
            warmup: !self.no_warmup,
            keep: self.keep,
            list: self.list,
        }
    }
}
