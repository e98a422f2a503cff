//! Running one pair on one scenario, and measuring its processes.

use super::*;
use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What one run produced.
#[derive(Clone, Debug)]
pub(super) enum Outcome {
    Ok(Measurement),
    /// Finished, but wrong: the reason.
    Failed(String),
    /// Killed after the hard timeout or for lack of progress: the reason.
    Hang(String),
}

#[derive(Clone, Debug, Default)]
pub(super) struct Measurement {
    pub(super) prompt_ms: f64,
    pub(super) total_ms: f64,
    pub(super) client: Option<Rusage>,
    pub(super) agent: Option<Rusage>,
    /// CPU (user + sys) of every process of the run, the client and all it started (agents,
    /// conductors, proxies, relays) as they were waited for: the part of this process's
    /// children's time that the run added.
    pub(super) all_cpu_ms: Option<f64>,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Rusage {
    pub(super) cpu_ms: f64,
    pub(super) maxrss_kb: u64,
}

pub(super) struct Runner {
    pub(super) dir: PathBuf,
    pub(super) seq: usize,
    pub(super) timeout: Duration,
    pub(super) idle_timeout: Duration,
}

impl Runner {
    pub(super) fn run(&mut self, pair: &Pair, scenario: &Scenario, placement: &str) -> Outcome {
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
        let children_cpu_before = children_cpu_ms();
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
        let all_cpu_ms = children_cpu_before
            .zip(children_cpu_ms())
            .map(|(before, after)| after - before);
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
            all_cpu_ms,
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
pub(super) fn tail(s: &str, n: usize) -> String {
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
pub(super) fn parse_fields(line: &str) -> HashMap<String, String> {
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
pub(super) fn process_tree(pid: u32) -> Vec<u32> {
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

pub(super) struct Stat {
    pub(super) ppid: u32,
    pub(super) ticks: u64,
}

pub(super) fn read_stat(pid: u32) -> Option<Stat> {
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

/// The CPU time of this process's children that have ended and been waited for (and of what
/// they waited for in turn), in ms: `cutime` + `cstime` of /proc/self/stat, in clock ticks of
/// 10 ms (`getconf CLK_TCK` is 100 on Linux).
pub(super) fn children_cpu_ms() -> Option<f64> {
    let s = fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3: cutime is field 16, cstime 17.
    let ticks = f.get(13)?.parse::<u64>().ok()? + f.get(14)?.parse::<u64>().ok()?;
    Some(ticks as f64 * 10.0)
}

pub(super) fn tree_cpu_ticks(tree: &[u32]) -> (usize, u64) {
    let ticks = tree
        .iter()
        .filter_map(|p| read_stat(*p))
        .map(|s| s.ticks)
        .sum();
    (tree.len(), ticks)
}

pub(super) fn kill_tree(tree: &[u32]) {
    let _ = Command::new("kill")
        .arg("-KILL")
        .args(tree.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}
