//! Statistics, tables and the machine description.

use super::*;
use std::collections::BTreeMap;
use std::process::Command;

/// Statistics of one (scenario, placement, pair) group.
#[derive(Default, Debug)]
pub(super) struct Group {
    pub(super) ok: Vec<Measurement>,
    pub(super) failures: Vec<String>,
    pub(super) hangs: Vec<String>,
    pub(super) skipped: usize,
}

pub(super) fn median(mut v: Vec<f64>) -> Option<f64> {
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
    pub(super) fn median_of(&self, f: impl Fn(&Measurement) -> Option<f64>) -> Option<f64> {
        median(self.ok.iter().filter_map(f).collect())
    }
    pub(super) fn prompt(&self) -> Option<f64> {
        self.median_of(|m| Some(m.prompt_ms))
    }
    pub(super) fn status(&self, reps: usize) -> String {
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
pub(super) struct Row {
    pub(super) cells: Vec<String>,
}

pub(super) const HEADER: &[&str] = &[
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

pub(super) fn fmt_ms(v: Option<f64>) -> String {
    match v {
        None => "–".to_owned(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) if v >= 1.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
    }
}

pub(super) fn rows(
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

pub(super) fn text_table(rows: &[Row]) -> String {
    text_table_with(HEADER, rows)
}

pub(super) fn text_table_with(header: &[&str], rows: &[Row]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
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
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut out = line(&header);
    for r in rows {
        out += &line(&r.cells);
    }
    out
}

pub(super) fn markdown_table(rows: &[Row]) -> String {
    markdown_table_with(HEADER, rows)
}

pub(super) fn markdown_table_with(header: &[&str], rows: &[Row]) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out += &format!(
        "|{}\n",
        header
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

pub(super) fn machine() -> String {
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

pub(super) fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}
