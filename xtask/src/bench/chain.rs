//! `--chain N`: a pair through proxy chains, each measured against the floor of as many
//! processes on the path. A conductor with N proxies puts 2N + 1 processes between the client
//! and the agent (the conductor's own hop to each component and back out), so its floor is our
//! pair through 2N + 1 byte relays (`bench/peers` `relay`), run in the same repetitions.

use super::*;

/// The largest `--chain N` the bench has peers for (see [`AGENTS`]).
pub(crate) const MAX_CHAIN: usize = 3;

/// The columns of the hop table.
pub(super) const HOP_HEADER: &[&str] = &[
    "path (agent)",
    "proxies",
    "ok",
    "prompt ms (median)",
    "µs/op",
    "× floor (2N+1 relays)",
    "× direct",
    "CPU all ms",
    "CPU × floor",
];

/// What runs for one proxy count: (agent name, what it is), the floor first.
fn paths(proxies: usize) -> Vec<(String, &'static str)> {
    let mut paths = vec![
        (format!("relay{}", 2 * proxies + 1), "floor: byte relays"),
        (format!("chain{proxies}"), "our conductor, our pass-through"),
        (
            format!("official-chain{proxies}"),
            "official conductor 5.0.0, our pass-through",
        ),
    ];
    if proxies > 0 {
        paths.push((
            format!("official-chain{proxies}-sdk"),
            "official conductor 5.0.0, official Proxy.v1()",
        ));
    }
    paths
}

/// The agent name `name` as the static string [`AGENTS`] holds.
fn agent(name: &str) -> &'static str {
    AGENTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, _)| *n)
        .unwrap_or_else(|| panic!("no bench agent {name:?} for --chain (see AGENTS)"))
}

/// The (client, agent) pairs `--chain` runs: ours direct, then every path of every count.
pub(super) fn chain_pairs(chains: &[usize]) -> Vec<(&'static str, &'static str)> {
    let mut pairs = vec![("ours", "ours")];
    for &n in chains {
        for (name, _) in paths(n) {
            pairs.push(("ours", agent(&name)));
        }
    }
    pairs
}

/// One row per path and proxy count: its median against the floor's and the direct pair's.
pub(super) fn hop_rows(
    scenario: &Scenario,
    groups: &BTreeMap<String, Group>,
    chains: &[usize],
) -> Vec<Row> {
    let prompt = |agent: &str| groups.get(&format!("ours/{agent}")).and_then(Group::prompt);
    let ratio = |p: Option<f64>, base: Option<f64>| match (p, base) {
        (Some(p), Some(b)) if b > 0.0 => format!("{:.2}", p / b),
        _ => "–".to_owned(),
    };
    let cpu = |agent: &str| {
        groups
            .get(&format!("ours/{agent}"))
            .and_then(|g| g.median_of(|m| m.all_cpu_ms))
    };
    let direct = prompt("ours");
    let mut rows = Vec::new();
    for &n in chains {
        let paths = paths(n);
        let floor = prompt(&paths[0].0);
        let floor_cpu = cpu(&paths[0].0);
        for (agent, what) in &paths {
            let g = groups.get(&format!("ours/{agent}"));
            let p = prompt(agent);
            let per_op = match (p, scenario.ops) {
                (Some(p), ops) if ops > 0 => format!("{:.2}", p * 1000.0 / ops as f64),
                _ => "–".to_owned(),
            };
            rows.push(Row {
                cells: vec![
                    format!("{what} ({agent})"),
                    n.to_string(),
                    g.map_or_else(|| "–".to_owned(), |g| format!("{}", g.ok.len())),
                    fmt_ms(p),
                    per_op,
                    ratio(p, floor),
                    ratio(p, direct),
                    fmt_ms(cpu(agent)),
                    ratio(cpu(agent), floor_cpu),
                ],
            });
        }
    }
    rows
}
