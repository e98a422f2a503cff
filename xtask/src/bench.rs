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

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const USAGE: &str = "\
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
    /// A script in `bench/official/ts`, run with `node`.
    Node(&'static str),
}

/// The bench clients, by implementation name.
pub const CLIENTS: &[(&str, Source)] = &[
    ("raw", Source::Main("raw-client")),
    ("ours", Source::Ours("acp-client")),
    ("official04", Source::Official("official04-client")),
    ("official5", Source::Official("official5-client")),
    ("ts", Source::Node("client.mjs")),
];

/// The bench agents, by implementation name.
pub const AGENTS: &[(&str, Source)] = &[
    ("raw", Source::Main("raw-agent")),
    ("ours", Source::Ours("acp-agent")),
    ("official04", Source::Official("official04-agent")),
    ("official5", Source::Official("official5-agent")),
    ("ts", Source::Node("agent.mjs")),
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
];

/// The pair every ratio is measured against.
const BASELINE: (&str, &str) = ("raw", "raw");

const PLACEMENTS: &[&str] = &["free", "1cpu"];

/// Options from the command line.
#[derive(Debug)]
struct Options {
    reps: usize,
    quick: bool,
    scenarios: Vec<String>,
    pairs: Vec<String>,
    placements: Vec<String>,
    timeout: Duration,
    idle_timeout: Duration,
    markdown: Option<PathBuf>,
    build: bool,
    warmup: bool,
    keep: bool,
    list: bool,
}

fn parse_options(args: &[String]) -> Result<Option<Options>, String> {
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

fn parse_num(s: &str, name: &str) -> Result<u64, String> {
    s.parse()
        .map_err(|_| format!("{name}: not a non-negative integer: {s:?}"))
}

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

/// A resolved peer: a command line, or the reason it is unavailable.
#[derive(Clone, Debug)]
struct Peer {
    name: &'static str,
    command: Result<Vec<String>, String>,
}

/// Paths the peers are found under.
struct Layout {
    root: PathBuf,
    main_bin: PathBuf,
    official_target: PathBuf,
    /// The TypeScript peers' sources.
    ts_src: PathBuf,
    /// Where they run (under `target/`, with their `node_modules`).
    ts_dir: PathBuf,
    node: Option<String>,
    /// Why our runtime's peers are unusable in this run (their build failed).
    ours_unavailable: Option<String>,
}

impl Layout {
    fn resolve(&self, name: &'static str, source: Source) -> Peer {
        let command = match source {
            Source::Main(bin) => existing(self.main_bin.join(bin)),
            Source::Ours(bin) => match &self.ours_unavailable {
                Some(why) => Err(why.clone()),
                None => existing(self.main_bin.join(bin)),
            },
            Source::Official(bin) => existing(self.official_target.join("release").join(bin)),
            Source::Node(script) => match &self.node {
                None => Err("node not found".to_owned()),
                Some(node) => {
                    let script = self.ts_dir.join(script);
                    if !self.ts_dir.join("node_modules").is_dir() {
                        Err(format!("{} not installed", self.ts_dir.display()))
                    } else {
                        existing(script).map(|mut c| {
                            c.insert(0, node.clone());
                            c
                        })
                    }
                }
            },
        };
        Peer { name, command }
    }
}

fn existing(path: PathBuf) -> Result<Vec<String>, String> {
    if path.is_file() {
        Ok(vec![path.to_string_lossy().into_owned()])
    } else {
        Err(format!("{} not built", path.display()))
    }
}

fn find_root() -> Result<PathBuf, String> {
    let is_root =
        |p: &Path| p.join("bench/peers/Cargo.toml").is_file() && p.join("Cargo.toml").is_file();
    let manifest_parent = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf);
    if let Some(p) = manifest_parent.filter(|p| is_root(p)) {
        return Ok(p);
    }
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    cwd.ancestors()
        .find(|p| is_root(p))
        .map(Path::to_path_buf)
        .ok_or_else(|| "cannot find the workspace root (with bench/peers)".to_owned())
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// The main workspace's target directory, as cargo reports it.
fn target_dir(root: &Path) -> Result<PathBuf, String> {
    let out = Command::new(cargo())
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err("cargo metadata failed".to_owned());
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    meta["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata: no target_directory".to_owned())
}

fn run_step(what: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("bench: {what}");
    let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

fn which(program: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// Builds the peers, noting the optional parts that were skipped.
fn build(layout: &mut Layout, notes: &mut Vec<String>) -> Result<(), String> {
    // The raw baseline first, without our runtime: it must build even while
    // the runtime does not.
    run_step(
        "building the raw peers (release)",
        Command::new(cargo()).current_dir(&layout.root).args([
            "build",
            "--release",
            "-p",
            "acp-bench",
            "--no-default-features",
            "--bins",
        ]),
    )?;
    let ours = run_step(
        "building our runtime's peers (release)",
        Command::new(cargo()).current_dir(&layout.root).args([
            "build",
            "--release",
            "-p",
            "acp-bench",
            "--bins",
        ]),
    );
    if let Err(e) = ours {
        notes.push(format!("our runtime's peers skipped: {e}"));
        layout.ours_unavailable = Some(e);
    }
    run_step(
        "building bench/official (release)",
        Command::new(cargo())
            .current_dir(layout.root.join("bench/official"))
            .env("CARGO_TARGET_DIR", &layout.official_target)
            .args(["build", "--release"]),
    )?;
    if layout.ts_src.join("package.json").is_file() {
        match (&layout.node, which("npm")) {
            (Some(_), Some(npm)) => {
                if let Err(e) = stage_ts(layout, &npm) {
                    notes.push(format!("TypeScript peers skipped: {e}"));
                }
            }
            _ => notes.push("TypeScript peers skipped: node/npm not found".to_owned()),
        }
    }
    Ok(())
}

/// Copies the TypeScript peers (package files and scripts) from the source
/// tree into their run directory under `target/`, and installs the pinned SDK
/// there with `npm ci` when the lock file changed. `node_modules` thus never
/// lands in the source tree.
fn stage_ts(layout: &Layout, npm: &str) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    fs::create_dir_all(&layout.ts_dir).map_err(|e| err(&layout.ts_dir, e))?;
    let entries = fs::read_dir(&layout.ts_src).map_err(|e| err(&layout.ts_src, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == "package.json" || name == "package-lock.json" || name.ends_with(".mjs") {
            let to = layout.ts_dir.join(&*name);
            fs::copy(entry.path(), &to).map_err(|e| err(&to, e))?;
        }
    }
    let lock = fs::read(layout.ts_dir.join("package-lock.json")).unwrap_or_default();
    let marker = layout
        .ts_dir
        .join("node_modules/.installed-package-lock.json");
    if fs::read(&marker).ok().as_deref() != Some(&lock[..]) {
        run_step(
            "installing the TypeScript SDK (npm ci)",
            Command::new(npm)
                .current_dir(&layout.ts_dir)
                .args(["ci", "--no-audit", "--no-fund"]),
        )?;
        fs::write(&marker, &lock).map_err(|e| err(&marker, e))?;
    }
    Ok(())
}

/// A (client, agent) pair to run.
#[derive(Clone, Debug)]
struct Pair {
    client: Peer,
    agent: Peer,
}

impl Pair {
    fn name(&self) -> String {
        format!("{}/{}", self.client.name, self.agent.name)
    }
}

fn default_pairs() -> Vec<(&'static str, &'static str)> {
    let mut pairs: Vec<(&str, &str)> = CLIENTS
        .iter()
        .filter(|(c, _)| AGENTS.iter().any(|(a, _)| a == c))
        .map(|(c, _)| (*c, *c))
        .collect();
    pairs.extend_from_slice(CROSS_PAIRS);
    pairs
}

fn select_pairs(
    o: &Options,
    layout: &Layout,
    notes: &mut Vec<String>,
) -> Result<Vec<Pair>, String> {
    let defaults = default_pairs();
    let mut wanted: Vec<(&'static str, &'static str)> = Vec::new();
    if o.pairs.is_empty() {
        wanted = defaults;
    } else {
        let client_name = |n: &str| CLIENTS.iter().find(|(c, _)| *c == n).map(|(c, _)| *c);
        let agent_name = |n: &str| AGENTS.iter().find(|(a, _)| *a == n).map(|(a, _)| *a);
        for f in &o.pairs {
            let (c, a) = f.split_once('/').unwrap_or((f, f));
            if c != "*" && client_name(c).is_none() {
                return Err(format!("unknown client {c:?} in --pair {f}"));
            }
            if a != "*" && agent_name(a).is_none() {
                return Err(format!("unknown agent {a:?} in --pair {f}"));
            }
            let matches: Vec<(&str, &str)> = match (client_name(c), agent_name(a)) {
                (Some(c), Some(a)) => vec![(c, a)],
                _ => defaults
                    .iter()
                    .filter(|(dc, da)| (c == "*" || c == *dc) && (a == "*" || a == *da))
                    .copied()
                    .collect(),
            };
            for m in matches {
                if !wanted.contains(&m) {
                    wanted.push(m);
                }
            }
        }
    }
    let peer = |list: &[(&'static str, Source)], name: &str| {
        let (n, s) = list.iter().find(|(n, _)| *n == name).expect("known name");
        layout.resolve(n, *s)
    };
    let mut pairs = Vec::new();
    for (c, a) in wanted {
        let pair = Pair {
            client: peer(CLIENTS, c),
            agent: peer(AGENTS, a),
        };
        match (&pair.client.command, &pair.agent.command) {
            (Ok(_), Ok(_)) => pairs.push(pair),
            (Err(e), _) => notes.push(format!("pair {} skipped: client {e}", pair.name())),
            (_, Err(e)) => notes.push(format!("pair {} skipped: agent {e}", pair.name())),
        }
    }
    Ok(pairs)
}

/// What one run produced.
#[derive(Clone, Debug)]
enum Outcome {
    Ok(Measurement),
    /// Finished, but wrong: the reason.
    Failed(String),
    /// Killed after the hard timeout or for lack of progress: the reason.
    Hang(String),
}

#[derive(Clone, Debug, Default)]
struct Measurement {
    prompt_ms: f64,
    total_ms: f64,
    client: Option<Rusage>,
    agent: Option<Rusage>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Rusage {
    cpu_ms: f64,
    maxrss_kb: u64,
}

struct Runner {
    dir: PathBuf,
    seq: usize,
    timeout: Duration,
    idle_timeout: Duration,
}

impl Runner {
    fn run(&mut self, pair: &Pair, scenario: &Scenario, placement: &str) -> Outcome {
        self.seq += 1;
        let base = self.dir.join(format!("run{:05}", self.seq));
        let rusage_path = base.with_extension("rusage");
        let out_path = base.with_extension("out");
        let err_path = base.with_extension("err");
        let (Ok(client), Ok(agent)) = (&pair.client.command, &pair.agent.command) else {
            return Outcome::Failed("peer unavailable".to_owned());
        };
        let mut argv: Vec<String> = Vec::new();
        if placement == "1cpu" {
            argv.extend(["taskset".to_owned(), "-c".to_owned(), "0".to_owned()]);
        }
        argv.extend(client.iter().cloned());
        argv.push(scenario.prompt.clone());
        argv.extend(agent.iter().cloned());

        let files = (fs::File::create(&out_path), fs::File::create(&err_path));
        let (Ok(out), Ok(err)) = files else {
            return Outcome::Failed("cannot create output files".to_owned());
        };
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .env("BENCH_RUSAGE_OUT", &rusage_path)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => return Outcome::Failed(format!("spawn {}: {e}", argv[0])),
        };
        let pid = child.id();
        let (tx, rx) = mpsc::channel::<std::io::Result<ExitStatus>>();
        let waiter = std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });

        let started = Instant::now();
        let mut last_cpu = None;
        let mut last_progress = Instant::now();
        let mut hang = None;
        let status = loop {
            match rx.recv_timeout(Duration::from_millis(500)) {
                Ok(status) => break status,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(std::io::Error::other("waiter thread died"));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let tree = process_tree(pid);
            let cpu = tree_cpu_ticks(&tree);
            if last_cpu != Some(cpu) {
                last_cpu = Some(cpu);
                last_progress = Instant::now();
            }
            let reason = if started.elapsed() >= self.timeout {
                Some(format!("timeout after {} s", self.timeout.as_secs()))
            } else if last_progress.elapsed() >= self.idle_timeout {
                Some(format!(
                    "no CPU progress for {} s",
                    self.idle_timeout.as_secs()
                ))
            } else {
                None
            };
            if let Some(reason) = reason {
                kill_tree(&tree);
                hang = Some(reason);
                break rx
                    .recv()
                    .unwrap_or_else(|_| Err(std::io::Error::other("waiter thread died")));
            }
        };
        let _ = waiter.join();
        let stderr_tail = || tail(&fs::read_to_string(&err_path).unwrap_or_default(), 3);
        if let Some(reason) = hang {
            return Outcome::Hang(reason);
        }
        let status = match status {
            Ok(s) => s,
            Err(e) => return Outcome::Failed(format!("wait: {e}")),
        };
        let stdout = fs::read_to_string(&out_path).unwrap_or_default();
        let Some(line) = stdout.lines().find(|l| l.starts_with("impl=")) else {
            return Outcome::Failed(format!("{status}, no result line; {}", stderr_tail()));
        };
        if !status.success() {
            return Outcome::Failed(format!("client exited with {status}; {}", stderr_tail()));
        }
        let fields = parse_fields(line);
        let num = |k: &str| fields.get(k).and_then(|v| v.parse::<f64>().ok());
        let (Some(updates), Some(rpcs), Some(prompt_ms), Some(total_ms)) = (
            num("updates"),
            num("rpcs"),
            num("prompt_ms"),
            num("total_ms"),
        ) else {
            return Outcome::Failed(format!("malformed result line: {line}"));
        };
        if updates as u64 != scenario.updates || rpcs as u64 != scenario.rpcs {
            return Outcome::Failed(format!(
                "wrong counts: updates={updates} rpcs={rpcs}, expected {} and {}",
                scenario.updates, scenario.rpcs
            ));
        }
        let mut m = Measurement {
            prompt_ms,
            total_ms,
            ..Measurement::default()
        };
        for l in fs::read_to_string(&rusage_path).unwrap_or_default().lines() {
            let f = parse_fields(l);
            let n = |k: &str| f.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            let r = Rusage {
                cpu_ms: (n("user_us") + n("sys_us")) as f64 / 1000.0,
                maxrss_kb: n("maxrss_kb"),
            };
            match f.get("role").map(String::as_str) {
                Some("client") => m.client = Some(r),
                Some("agent") => m.agent = Some(r),
                _ => {}
            }
        }
        Outcome::Ok(m)
    }
}

/// The last `n` non-empty lines of `s`, joined with " | ".
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    let t = lines[start..].join(" | ");
    if t.is_empty() {
        "no stderr".to_owned()
    } else {
        format!("stderr: {t}")
    }
}

/// Parses `key=value key="quoted value" ...`.
fn parse_fields(line: &str) -> HashMap<String, String> {
    let mut map = HashMap::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let (value, next) = if let Some(q) = after.strip_prefix('"') {
            match q.find('"') {
                Some(end) => (&q[..end], &q[end + 1..]),
                None => (q, ""),
            }
        } else {
            after.split_once(' ').unwrap_or((after, ""))
        };
        map.insert(key.trim().to_owned(), value.to_owned());
        rest = next.trim_start();
    }
    map
}

/// `pid` and all its descendants (from `/proc`).
fn process_tree(pid: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(stat) = read_stat(p) {
                children.entry(stat.ppid).or_default().push(p);
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        if let Some(c) = children.get(&tree[i]) {
            tree.extend(c);
        }
        i += 1;
    }
    tree
}

struct Stat {
    ppid: u32,
    ticks: u64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    Some(Stat {
        ppid: f.get(1)?.parse().ok()?,
        ticks: f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?,
    })
}

fn tree_cpu_ticks(tree: &[u32]) -> (usize, u64) {
    let ticks = tree
        .iter()
        .filter_map(|p| read_stat(*p))
        .map(|s| s.ticks)
        .sum();
    (tree.len(), ticks)
}

fn kill_tree(tree: &[u32]) {
    let _ = Command::new("kill")
        .arg("-KILL")
        .args(tree.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

/// Statistics of one (scenario, placement, pair) group.
#[derive(Default, Debug)]
struct Group {
    ok: Vec<Measurement>,
    failures: Vec<String>,
    hangs: Vec<String>,
    skipped: usize,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl Group {
    fn median_of(&self, f: impl Fn(&Measurement) -> Option<f64>) -> Option<f64> {
        median(self.ok.iter().filter_map(f).collect())
    }
    fn prompt(&self) -> Option<f64> {
        self.median_of(|m| Some(m.prompt_ms))
    }
    fn status(&self, reps: usize) -> String {
        let n = self.ok.len();
        if !self.hangs.is_empty() {
            // After a hang the remaining repetitions are skipped (see the notes).
            match n {
                0 => "HANG".to_owned(),
                _ => format!("HANG, {n}/{reps} ok"),
            }
        } else if !self.failures.is_empty() {
            format!("FAIL {}/{reps}", self.failures.len())
        } else {
            format!("{n}/{reps}")
        }
    }
}

/// One output row.
struct Row {
    cells: Vec<String>,
}

const HEADER: &[&str] = &[
    "pair (client/agent)",
    "ok",
    "prompt ms (median)",
    "min–max",
    "total ms",
    "µs/op",
    "× raw",
    "CPU client ms",
    "CPU agent ms",
    "RSS client MiB",
    "RSS agent MiB",
];

fn fmt_ms(v: Option<f64>) -> String {
    match v {
        None => "–".to_owned(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) if v >= 1.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
    }
}

fn rows(
    scenario: &Scenario,
    pairs: &[Pair],
    groups: &BTreeMap<String, Group>,
    reps: usize,
) -> Vec<Row> {
    let baseline = groups
        .get(&format!("{}/{}", BASELINE.0, BASELINE.1))
        .and_then(Group::prompt);
    pairs
        .iter()
        .map(|pair| {
            let g = groups.get(&pair.name());
            let empty = Group::default();
            let g = g.unwrap_or(&empty);
            let prompt = g.prompt();
            let min = g.ok.iter().map(|m| m.prompt_ms).min_by(f64::total_cmp);
            let max = g.ok.iter().map(|m| m.prompt_ms).max_by(f64::total_cmp);
            let range = match (min, max) {
                (Some(a), Some(b)) => format!("{}–{}", fmt_ms(Some(a)), fmt_ms(Some(b))),
                _ => "–".to_owned(),
            };
            let per_op = match (prompt, scenario.ops) {
                (Some(p), ops) if ops > 0 => format!("{:.2}", p * 1000.0 / ops as f64),
                _ => "–".to_owned(),
            };
            let ratio = match (prompt, baseline) {
                (Some(p), Some(b)) if b > 0.0 => format!("{:.2}", p / b),
                _ => "–".to_owned(),
            };
            let cpu = |side: fn(&Measurement) -> Option<Rusage>| {
                fmt_ms(g.median_of(|m| side(m).map(|r| r.cpu_ms)))
            };
            let rss = |side: fn(&Measurement) -> Option<Rusage>| match g
                .median_of(|m| side(m).map(|r| r.maxrss_kb as f64))
            {
                Some(kb) => format!("{:.1}", kb / 1024.0),
                None => "–".to_owned(),
            };
            Row {
                cells: vec![
                    pair.name(),
                    g.status(reps),
                    fmt_ms(prompt),
                    range,
                    fmt_ms(g.median_of(|m| Some(m.total_ms))),
                    per_op,
                    ratio,
                    cpu(|m| m.client),
                    cpu(|m| m.agent),
                    rss(|m| m.client),
                    rss(|m| m.agent),
                ],
            }
        })
        .collect()
}

fn text_table(rows: &[Row]) -> String {
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(&r.cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - c.chars().count();
            if i == 0 {
                let _ = write!(s, "{c}{}", " ".repeat(pad));
            } else {
                let _ = write!(s, "  {}{c}", " ".repeat(pad));
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    let mut out = line(&header);
    for r in rows {
        out += &line(&r.cells);
    }
    out
}

fn markdown_table(rows: &[Row]) -> String {
    let mut out = format!("| {} |\n", HEADER.join(" | "));
    out += &format!(
        "|{}\n",
        HEADER
            .iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
            .collect::<String>()
    );
    for r in rows {
        out += &format!("| {} |\n", r.cells.join(" | "));
    }
    out
}

fn machine() -> String {
    let lscpu = Command::new("lscpu")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    let model = lscpu
        .lines()
        .find_map(|l| l.strip_prefix("Model name:"))
        .map(str::trim)
        .unwrap_or("unknown CPU")
        .to_owned();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let guest = lscpu
        .lines()
        .find_map(|l| l.strip_prefix("Hypervisor vendor:"))
        .map(|h| format!(" ({} guest)", h.trim()))
        .unwrap_or_default();
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{model}{guest}, {cpus} CPUs available, Linux {}",
        kernel.trim()
    )
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}

/// Runs `cargo xtask bench` with `args` (the arguments after `bench`).
pub fn run(args: &[String]) -> Result<(), String> {
    let Some(o) = parse_options(args)? else {
        return Ok(());
    };
    let root = find_root()?;
    let target = target_dir(&root)?;
    let node = which("node");
    let mut layout = Layout {
        main_bin: target.join("release"),
        // Fixed, whatever CARGO_TARGET_DIR says: the official peers' workspace
        // is separate and keeps its own build under the main `target/`.
        official_target: root.join("target").join("official"),
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
        build(&mut layout, &mut notes)?;
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
            .chain(args.iter().filter(|a| *a != "bench").cloned())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_result_and_rusage_lines() {
        let f = parse_fields(
            "impl=raw prompt=\"stream 2 64\" updates=2 rpcs=0 prompt_ms=1.5 total_ms=2.0",
        );
        assert_eq!(f["prompt"], "stream 2 64");
        assert_eq!(f["updates"], "2");
        assert_eq!(f["total_ms"], "2.0");
        let r = parse_fields("role=agent impl=raw pid=1 user_us=10 sys_us=5 maxrss_kb=99");
        assert_eq!(r["maxrss_kb"], "99");
    }

    #[test]
    fn scenario_counts() {
        let s = Scenario::new("x", "rpcpar 100 64");
        assert_eq!((s.updates, s.rpcs, s.ops), (0, 100, 100));
        let s = Scenario::new("x", "stream 7 64");
        assert_eq!((s.updates, s.rpcs), (7, 0));
        assert_eq!(Scenario::new("x", "hello").ops, 0);
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }

    #[test]
    fn default_pairs_start_with_the_baseline() {
        assert_eq!(default_pairs()[0], BASELINE);
    }
}
