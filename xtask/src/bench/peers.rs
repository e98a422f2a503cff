//! Finding, building and pairing the peers.

use super::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A resolved peer: a command line, or the reason it is unavailable.
#[derive(Clone, Debug)]
pub(super) struct Peer {
    pub(super) name: &'static str,
    pub(super) command: Result<Vec<String>, String>,
}

/// Paths the peers are found under.
pub(super) struct Layout {
    pub(super) root: PathBuf,
    pub(super) main_bin: PathBuf,
    pub(super) official_target: PathBuf,
    /// Where `bench/official-v2` is built.
    pub(super) official_v2_target: PathBuf,
    /// Where `interop/rust-sdk` (the official conductor and SDK proxy) is built in release.
    pub(super) sdk_release: PathBuf,
    /// The TypeScript peers' sources.
    pub(super) ts_src: PathBuf,
    /// Where they run (under `target/`, with their `node_modules`).
    pub(super) ts_dir: PathBuf,
    pub(super) node: Option<String>,
    /// Why our runtime's peers are unusable in this run (their build failed).
    pub(super) ours_unavailable: Option<String>,
}

impl Layout {
    pub(super) fn resolve(&self, name: &'static str, source: Source) -> Peer {
        let command = match source {
            Source::Main(bin) => existing(self.main_bin.join(bin)),
            Source::Ours(bin) => match &self.ours_unavailable {
                Some(why) => Err(why.clone()),
                None => existing(self.main_bin.join(bin)),
            },
            Source::Routed => match &self.ours_unavailable {
                Some(why) => Err(why.clone()),
                None => existing(self.main_bin.join("acp-agent")).map(|mut command| {
                    command.push("--routed".to_owned());
                    command
                }),
            },
            Source::Chain(proxies) => match &self.ours_unavailable {
                Some(why) => Err(why.clone()),
                None => existing(self.main_bin.join("acp-conductor")).and_then(|conductor| {
                    let agent = existing(self.main_bin.join("acp-agent"))?;
                    // One command line per component, as `acp-conductor agent` splits them.
                    let quoted = |path: &str| format!("'{}'", path.replace('\'', r"'\''"));
                    let mut command = vec![conductor[0].clone(), "agent".to_owned()];
                    for _ in 0..proxies {
                        command.push(format!("{} pass-through", quoted(&conductor[0])));
                    }
                    command.push(quoted(&agent[0]));
                    Ok(command)
                }),
            },
            Source::Relays(relays) => match &self.ours_unavailable {
                Some(why) => Err(why.clone()),
                None => existing(self.main_bin.join("relay")).and_then(|relay| {
                    let agent = existing(self.main_bin.join("acp-agent"))?;
                    Ok(std::iter::repeat_n(relay[0].clone(), relays)
                        .chain(agent)
                        .collect())
                }),
            },
            Source::OfficialChain {
                proxies,
                sdk_proxies,
            } => match &self.ours_unavailable {
                Some(why) => Err(why.clone()),
                None => {
                    let bin = self.sdk_release.join("target/release");
                    existing(bin.join("sdk-conductor")).and_then(|conductor| {
                        let agent = existing(self.main_bin.join("acp-agent"))?;
                        let proxy = if sdk_proxies {
                            existing(bin.join("sdk-pass-through"))?[0].clone()
                        } else {
                            let ours = existing(self.main_bin.join("acp-conductor"))?;
                            format!("{} pass-through", ours[0])
                        };
                        let mut command = vec![conductor[0].clone(), "agent".to_owned()];
                        command.extend(std::iter::repeat_n(proxy, proxies));
                        command.extend(agent);
                        Ok(command)
                    })
                }
            },
            Source::Official(bin) => existing(self.official_target.join("release").join(bin)),
            Source::OfficialV2(bin) => existing(self.official_v2_target.join("release").join(bin)),
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

pub(super) fn existing(path: PathBuf) -> Result<Vec<String>, String> {
    if path.is_file() {
        Ok(vec![path.to_string_lossy().into_owned()])
    } else {
        Err(format!("{} not built", path.display()))
    }
}

pub(super) fn find_root() -> Result<PathBuf, String> {
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

pub(super) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// The main workspace's target directory, as cargo reports it.
pub(super) fn target_dir(root: &Path) -> Result<PathBuf, String> {
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

pub(super) fn run_step(what: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("bench: {what}");
    let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

pub(super) fn which(program: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// Builds the peers, noting the optional parts that were skipped.
pub(super) fn build(
    layout: &mut Layout,
    notes: &mut Vec<String>,
    official_chains: bool,
) -> Result<(), String> {
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
            "--features",
            "routed,v2",
            "--bins",
        ]),
    );
    // The conductor and its pass-through proxy, for the `chainN` agents.
    let ours = ours.and_then(|()| {
        run_step(
            "building acp-conductor (release)",
            Command::new(cargo()).current_dir(&layout.root).args([
                "build",
                "--release",
                "-p",
                "acp-rs-conductor",
                "--features",
                "unstable",
                "--bin",
                "acp-conductor",
            ]),
        )
    });
    if let Err(e) = ours {
        notes.push(format!("our runtime's peers skipped: {e}"));
        layout.ours_unavailable = Some(e);
    }
    if official_chains && let Err(e) = build_sdk_chain(layout) {
        notes.push(format!("the official conductor's chains skipped: {e}"));
    }
    run_step(
        "building bench/official (release)",
        Command::new(cargo())
            .current_dir(layout.root.join("bench/official"))
            .env("CARGO_TARGET_DIR", &layout.official_target)
            .args(["build", "--release"]),
    )?;
    // The official SDK 5.2.0's peers (v2 and v1); optional, as the TypeScript peers are.
    if let Err(e) = run_step(
        "building bench/official-v2 (release)",
        Command::new(cargo())
            .current_dir(layout.root.join("bench/official-v2"))
            .env("CARGO_TARGET_DIR", &layout.official_v2_target)
            .args(["build", "--release"]),
    ) {
        notes.push(format!("the official SDK 5.2.0 peers skipped: {e}"));
    }
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

/// Builds the official conductor and the official SDK's pass-through proxy (release) from
/// `interop/rust-sdk`, copied to its own directory under `target/` as interop/rust-sdk.sh copies
/// it, with the committed lockfile.
fn build_sdk_chain(layout: &Layout) -> Result<(), String> {
    let from = layout.root.join("interop/rust-sdk");
    let to = &layout.sdk_release;
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    fs::create_dir_all(to.join("src/bin")).map_err(|e| err(to, e))?;
    for file in [
        "Cargo.toml",
        "Cargo.lock",
        "src/bin/sdk-conductor.rs",
        "src/bin/sdk-pass-through.rs",
    ] {
        fs::copy(from.join(file), to.join(file)).map_err(|e| err(&from.join(file), e))?;
    }
    // Only the two binaries: the manifest's other peers are not copied.
    run_step(
        "building the official conductor and SDK proxy (interop/rust-sdk, release)",
        Command::new(cargo())
            .current_dir(to)
            .env("CARGO_TARGET_DIR", to.join("target"))
            .args([
                "build",
                "--release",
                "--locked",
                "--bin",
                "sdk-conductor",
                "--bin",
                "sdk-pass-through",
            ]),
    )
}

/// Copies the TypeScript peers (package files and scripts) from the source
/// tree into their run directory under `target/`, and installs the pinned SDK
/// there with `npm ci` when the lock file changed. `node_modules` thus never
/// lands in the source tree.
pub(super) fn stage_ts(layout: &Layout, npm: &str) -> Result<(), String> {
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
pub(super) struct Pair {
    pub(super) client: Peer,
    pub(super) agent: Peer,
}

impl Pair {
    pub(super) fn name(&self) -> String {
        format!("{}/{}", self.client.name, self.agent.name)
    }
}

pub(super) fn default_pairs() -> Vec<(&'static str, &'static str)> {
    let mut pairs: Vec<(&str, &str)> = CLIENTS
        .iter()
        .filter(|(c, _)| AGENTS.iter().any(|(a, _)| a == c))
        .map(|(c, _)| (*c, *c))
        .collect();
    pairs.extend_from_slice(CROSS_PAIRS);
    pairs
}

pub(super) fn select_pairs(
    o: &Options,
    layout: &Layout,
    notes: &mut Vec<String>,
) -> Result<Vec<Pair>, String> {
    let defaults = default_pairs();
    let mut wanted: Vec<(&'static str, &'static str)> = Vec::new();
    if o.pairs.is_empty() {
        if o.chains.is_empty() {
            wanted = defaults;
        }
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
    if !o.chains.is_empty() {
        for pair in chain_pairs(&o.chains) {
            if !wanted.contains(&pair) {
                wanted.push(pair);
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
