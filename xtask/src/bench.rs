//! `cargo xtask bench`: build and run the ACP stdio benchmark.
//!
//! The scenario (bench client, bench agent, workloads, output and resource
//! report lines) is specified in `SCENARIO.md`; the peers live in
//! `bench/peers` (crate `acp-bench`: the raw baseline, and our runtime's
//! peers) and `bench/official` (a standalone workspace with peers on the
//! official SDKs, plus an optional TypeScript SDK pair in `bench/official/ts`).
//!
//! One invocation builds everything in release mode, then runs every
//! scenario in every placement, alternating the pairs round-robin (for each
//! repetition, each pair runs once), and prints per scenario, placement and
//! pair: the median prompt and total time, the prompt-time range, the CPU
//! time and peak RSS of both processes, and the ratio of the median prompt
//! time to the raw pair's in the same run.
//!
//! Pairs are data: a list of named clients, a list of named agents
//! ([`CLIENTS`], [`AGENTS`]), every implementation against itself, plus the
//! cross pairs in [`CROSS_PAIRS`]. A peer whose binary is missing is skipped
//! with a note.
//!
//! Only the standard library and `serde_json` are used.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::time::{Duration, Instant};

mod args;
mod chain;
mod peers;
mod report;
mod runner;
#[cfg(test)]
mod tests;

pub use args::Args;
use args::Options;
use chain::*;
use peers::*;
use report::*;
use runner::*;

/// The named workloads: (name, full prompt, `--quick` prompt).
const SCENARIOS: &[(&str, &str, &str)] = &[
    ("hello", "hello", "hello"),
    ("stream-small", "stream 200000 64", "stream 20000 64"),
    ("stream-large", "stream 2000 65536", "stream 200 65536"),
    ("rpc", "rpc 20000", "rpc 2000"),
    ("rpcpar", "rpcpar 100000 64", "rpcpar 10000 64"),
];

/// Where a peer's program comes from.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// A binary of the main workspace's `acp-bench` package.
    Main(&'static str),
    /// A binary of `acp-bench` built on our runtime (its `runtime` feature).
    Ours(&'static str),
    /// A binary of the `bench/official` workspace.
    Official(&'static str),
    /// A binary of the `bench/official-v2` workspace (the official Rust SDK 5.2.0, whose v2 API
    /// 5.0 lacks).
    OfficialV2(&'static str),
    /// A script in `bench/official/ts`, run with `node`.
    Node(&'static str),
    /// Our bench agent served through the version router (`acp-agent --routed`): the router's
    /// cost on v1.
    Routed,
    /// Our bench agent behind `acp-conductor agent` with this many `acp-conductor
    /// pass-through` proxies in front of it: the cost of a conductor and of each hop.
    Chain(usize),
    /// Our bench agent behind this many byte relays (`bench/peers` `relay`): the floor of as many
    /// processes on the path, for `--chain`.
    Relays(usize),
    /// Our bench agent behind the official conductor (`agent-client-protocol-conductor` 5.0.0,
    /// built from `interop/rust-sdk`) with this many pass-through proxies: ours, or the official
    /// SDK's `Proxy.v1()` (`sdk_proxies`).
    OfficialChain { proxies: usize, sdk_proxies: bool },
}

/// The bench clients, by implementation name.
pub const CLIENTS: &[(&str, Source)] = &[
    ("raw", Source::Main("raw-client")),
    ("ours", Source::Ours("acp-client")),
    ("official04", Source::Official("official04-client")),
    ("official5", Source::Official("official5-client")),
    ("ts", Source::Node("client.mjs")),
    // Protocol v2 (bench/README.md, "Protocol v2"), and the SDK's v1 peers on the same 5.2.0.
    ("ours-v2", Source::Ours("acp-client-v2")),
    ("sdk52", Source::OfficialV2("sdk52-client")),
    ("sdk52-v2", Source::OfficialV2("sdk52-v2-client")),
];

/// The bench agents, by implementation name.
pub const AGENTS: &[(&str, Source)] = &[
    ("raw", Source::Main("raw-agent")),
    ("ours", Source::Ours("acp-agent")),
    ("official04", Source::Official("official04-agent")),
    ("official5", Source::Official("official5-agent")),
    ("ts", Source::Node("agent.mjs")),
    ("ours-v2", Source::Ours("acp-agent-v2")),
    ("sdk52", Source::OfficialV2("sdk52-agent")),
    ("sdk52-v2", Source::OfficialV2("sdk52-v2-agent")),
    // Our agent through the version router (docs/protocol-v2.md), only with `--pair`.
    ("routed", Source::Routed),
    // Proxy chains (docs/proxy.md), only with `--pair`: not in the default pairs.
    ("chain0", Source::Chain(0)),
    ("chain1", Source::Chain(1)),
    ("chain2", Source::Chain(2)),
    ("chain3", Source::Chain(3)),
    // The floor under a chain of N proxies: 2N + 1 byte relays (`--chain`).
    ("relay1", Source::Relays(1)),
    ("relay3", Source::Relays(3)),
    ("relay5", Source::Relays(5)),
    ("relay7", Source::Relays(7)),
    // The official conductor with N of our pass-through proxies, or N of the official SDK's.
    (
        "official-chain0",
        Source::OfficialChain {
            proxies: 0,
            sdk_proxies: false,
        },
    ),
    (
        "official-chain1",
        Source::OfficialChain {
            proxies: 1,
            sdk_proxies: false,
        },
    ),
    (
        "official-chain2",
        Source::OfficialChain {
            proxies: 2,
            sdk_proxies: false,
        },
    ),
    (
        "official-chain3",
        Source::OfficialChain {
            proxies: 3,
            sdk_proxies: false,
        },
    ),
    (
        "official-chain1-sdk",
        Source::OfficialChain {
            proxies: 1,
            sdk_proxies: true,
        },
    ),
    (
        "official-chain2-sdk",
        Source::OfficialChain {
            proxies: 2,
            sdk_proxies: true,
        },
    ),
    (
        "official-chain3-sdk",
        Source::OfficialChain {
            proxies: 3,
            sdk_proxies: true,
        },
    ),
];

/// Cross-implementation pairs run by default, as (client, agent), after every
/// implementation against itself.
pub const CROSS_PAIRS: &[(&str, &str)] = &[
    // One side raw: isolates the other side's cost.
    ("raw", "ours"),
    ("ours", "raw"),
    ("raw", "official5"),
    ("official5", "raw"),
    ("raw", "official04"),
    ("official04", "raw"),
    // Ours against theirs.
    ("ours", "official5"),
    ("official5", "ours"),
    ("ours", "official04"),
    ("official04", "ours"),
    ("ours", "ts"),
    ("ts", "ours"),
    // The official SDKs against each other.
    ("official5", "official04"),
    ("official04", "official5"),
    ("ts", "official5"),
    ("official5", "ts"),
    // Protocol v2: ours against the official Rust SDK's v2 peers.
    ("ours-v2", "sdk52-v2"),
    ("sdk52-v2", "ours-v2"),
];

/// The pair every ratio is measured against.
const BASELINE: (&str, &str) = ("raw", "raw");

const PLACEMENTS: &[&str] = &["free", "1cpu"];

/// A workload to run.
#[derive(Clone, Debug)]
struct Scenario {
    name: String,
    prompt: String,
    updates: u64,
    rpcs: u64,
    /// Operations for the per-operation time (notifications or requests).
    ops: u64,
}

impl Scenario {
    fn new(name: &str, prompt: &str) -> Self {
        let words: Vec<&str> = prompt.split_whitespace().collect();
        let num = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
        let (updates, rpcs) = match (words.first().copied(), num(1), num(2)) {
            (Some("stream"), Some(n), Some(_)) => (n, 0),
            (Some("rpc"), Some(n), _) => (0, n),
            (Some("rpcpar"), Some(n), Some(_)) => (0, n),
            _ => (0, 0),
        };
        Scenario {
            name: name.to_owned(),
            prompt: prompt.to_owned(),
            updates,
            rpcs,
            ops: updates + rpcs,
        }
    }
}

fn select_scenarios(o: &Options) -> Result<Vec<Scenario>, String> {
    let named = |(name, full, quick): &(&str, &str, &str)| {
        Scenario::new(name, if o.quick { quick } else { full })
    };
    if o.scenarios.is_empty() {
        return Ok(SCENARIOS.iter().map(named).collect());
    }
    o.scenarios
        .iter()
        .map(|s| {
            if let Some(def) = SCENARIOS.iter().find(|(n, ..)| n == s) {
                Ok(named(def))
            } else if let Some(def) = SCENARIOS.iter().find(|(_, full, _)| full == s) {
                Ok(named(def))
            } else if s.contains(' ') {
                Ok(Scenario::new(&s.replace(' ', "-"), s))
            } else {
                let names: Vec<&str> = SCENARIOS.iter().map(|(n, ..)| *n).collect();
                Err(format!(
                    "unknown scenario {s:?}: one of {} or a literal prompt",
                    names.join(", ")
                ))
            }
        })
        .collect()
}

/// Runs `cargo xtask bench` with `args`.
pub fn run(args: Args) -> Result<(), String> {
    let o = args.options();
    let root = find_root()?;
    let target = target_dir(&root)?;
    let node = which("node");
    let mut layout = Layout {
        main_bin: target.join("release"),
        // Fixed, whatever CARGO_TARGET_DIR says: the official peers' workspace
        // is separate and keeps its own build under the main `target/`.
        official_target: root.join("target").join("official"),
        official_v2_target: root.join("target").join("official-v2"),
        sdk_release: root.join("target").join("bench-rust-sdk"),
        ts_src: root.join("bench/official/ts"),
        ts_dir: root.join("target").join("official").join("ts"),
        root,
        node,
        ours_unavailable: None,
    };
    let scenarios = select_scenarios(&o)?;
    let mut notes = Vec::new();

    if o.list {
        println!("clients:");
        for (n, s) in CLIENTS {
            let p = layout.resolve(n, *s);
            println!(
                "  {n:<12} {}",
                p.command.map_or_else(|e| e, |c| c.join(" "))
            );
        }
        println!("agents:");
        for (n, s) in AGENTS {
            let p = layout.resolve(n, *s);
            println!(
                "  {n:<12} {}",
                p.command.map_or_else(|e| e, |c| c.join(" "))
            );
        }
        println!("default pairs (client/agent):");
        for (c, a) in default_pairs() {
            println!("  {c}/{a}");
        }
        println!("scenarios{}:", if o.quick { " (--quick)" } else { "" });
        for s in &scenarios {
            println!("  {:<13} {:?}", s.name, s.prompt);
        }
        return Ok(());
    }

    if o.build {
        build(&mut layout, &mut notes, !o.chains.is_empty())?;
    }
    if o.placements.iter().any(|p| p == "1cpu") && which("taskset").is_none() {
        return Err("taskset not found (needed for the 1cpu placement)".to_owned());
    }
    let pairs = select_pairs(&o, &layout, &mut notes)?;
    for n in &notes {
        eprintln!("bench: note: {n}");
    }
    if pairs.is_empty() {
        return Err("no pair to run".to_owned());
    }

    let dir = std::env::temp_dir().join(format!("acp-bench-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut runner = Runner {
        dir: dir.clone(),
        seq: 0,
        timeout: o.timeout,
        idle_timeout: o.idle_timeout,
    };
    let load_before = loadavg();
    let started = Instant::now();

    // Warm-up: one untimed `hello` per pair (page cache, and incompatible pairs
    // are found here instead of in every scenario).
    let mut pairs_run = Vec::new();
    if o.warmup {
        let hello = Scenario::new("hello", "hello");
        let mut warm = Runner {
            dir: dir.clone(),
            seq: 100_000,
            timeout: o.timeout.min(Duration::from_secs(30)),
            idle_timeout: o.idle_timeout,
        };
        for pair in &pairs {
            match warm.run(pair, &hello, "free") {
                Outcome::Ok(_) => pairs_run.push(pair.clone()),
                Outcome::Failed(e) | Outcome::Hang(e) => {
                    let n = format!("pair {} excluded: warm-up `hello` failed: {e}", pair.name());
                    eprintln!("bench: {n}");
                    notes.push(n);
                }
            }
        }
    } else {
        pairs_run = pairs.clone();
    }

    let mut text = String::new();
    let mut md = String::new();
    for scenario in &scenarios {
        let _ = writeln!(md, "### `{}` (`{}`)\n", scenario.name, scenario.prompt);
        for placement in &o.placements {
            let mut groups: BTreeMap<String, Group> = BTreeMap::new();
            for rep in 0..o.reps {
                for pair in &pairs_run {
                    let g = groups.entry(pair.name()).or_default();
                    // A hang is deterministic in practice: do not wait for it again.
                    if !g.hangs.is_empty() {
                        g.skipped += 1;
                        continue;
                    }
                    let t = Instant::now();
                    let outcome = runner.run(pair, scenario, placement);
                    let label = format!(
                        "[{} {placement} {}/{}] {}",
                        scenario.name,
                        rep + 1,
                        o.reps,
                        pair.name()
                    );
                    match outcome {
                        Outcome::Ok(m) => {
                            eprintln!("{label}: prompt {} ms", fmt_ms(Some(m.prompt_ms)));
                            g.ok.push(m);
                        }
                        Outcome::Failed(e) => {
                            eprintln!("{label}: FAILED: {e}");
                            g.failures.push(e);
                        }
                        Outcome::Hang(e) => {
                            eprintln!(
                                "{label}: HANG ({e}, killed after {:.0} s)",
                                t.elapsed().as_secs_f64()
                            );
                            g.hangs.push(e);
                        }
                    }
                }
            }
            let table_rows = rows(scenario, &pairs_run, &groups, o.reps);
            let heading = format!(
                "{} (\"{}\"), placement {placement}, {} rep(s)",
                scenario.name, scenario.prompt, o.reps
            );
            let table = text_table(&table_rows);
            println!("\n{heading}\n{table}");
            let _ = writeln!(text, "\n{heading}\n{table}");
            let _ = writeln!(
                md,
                "Placement `{placement}`:\n\n{}",
                markdown_table(&table_rows)
            );
            if !o.chains.is_empty() {
                let hops = hop_rows(scenario, &groups, &o.chains);
                let table = text_table_with(HOP_HEADER, &hops);
                println!("hops against the relay floor\n{table}");
                let _ = writeln!(text, "hops against the relay floor\n{table}");
                let _ = writeln!(
                    md,
                    "Hops, placement `{placement}`:\n\n{}",
                    markdown_table_with(HOP_HEADER, &hops)
                );
            }
            for pair in &pairs_run {
                let Some(g) = groups.get(&pair.name()) else {
                    continue;
                };
                let mut problems: Vec<String> = g.failures.clone();
                problems.extend(g.hangs.iter().map(|h| format!("hang: {h}")));
                if g.skipped > 0 {
                    problems.push(format!("{} later rep(s) skipped after the hang", g.skipped));
                }
                if !problems.is_empty() {
                    problems.dedup();
                    notes.push(format!(
                        "{} {placement} {}: {}",
                        scenario.name,
                        pair.name(),
                        problems.join("; ")
                    ));
                }
            }
        }
    }

    let elapsed = started.elapsed().as_secs_f64() / 60.0;
    let load_after = loadavg();
    if !notes.is_empty() {
        println!("notes:");
        for n in &notes {
            println!("- {n}");
        }
    }
    println!(
        "\nbench: {:.1} min; load average before {load_before}, after {load_after}",
        elapsed
    );

    if let Some(path) = &o.markdown {
        let command = std::iter::once("cargo xtask bench".to_owned())
            // The command line as given (after the task's name), for the record.
            .chain(std::env::args().skip(2))
            .collect::<Vec<_>>()
            .join(" ");
        let mut doc = String::new();
        let _ = writeln!(doc, "Machine: {}.\n", machine());
        let _ = writeln!(doc, "Command: `{command}`\n");
        let _ = writeln!(
            doc,
            "{} repetition(s) per scenario, placement and pair, pairs alternated round-robin; \
             run time {elapsed:.1} min; load average {load_before} before, {load_after} after. \
             Times are medians; `× raw` is the median prompt time over the raw pair's; \
             `µs/op` is the median prompt time per notification or request; CPU is user+sys \
             of each process (getrusage), RSS its peak (VmHWM).\n",
            o.reps
        );
        doc += &md;
        if !notes.is_empty() {
            doc += "Notes:\n\n";
            for n in &notes {
                let _ = writeln!(doc, "- {n}");
            }
        }
        let mut f = fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        f.write_all(doc.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("bench: wrote {}", path.display());
    }

    if o.keep {
        eprintln!("bench: run outputs kept in {}", dir.display());
    } else {
        let _ = fs::remove_dir_all(&dir);
    }
    Ok(())
}
