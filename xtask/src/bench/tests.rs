//! Tests of the benchmark runner: parsing the peers' result and rusage lines, scenario counts,
//! medians, and the default pairs.

use super::*;

#[test]
fn parses_result_and_rusage_lines() {
    let f =
        parse_fields("impl=raw prompt=\"stream 2 64\" updates=2 rpcs=0 prompt_ms=1.5 total_ms=2.0");
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

#[test]
fn every_chain_path_is_a_bench_agent() {
    for n in 0..=MAX_CHAIN {
        let pairs = chain_pairs(&[n]);
        assert_eq!(pairs[0], ("ours", "ours"));
        let relays = format!("relay{}", 2 * n + 1);
        assert!(pairs.iter().any(|(_, a)| *a == relays), "{pairs:?}");
    }
}

#[test]
fn every_cross_pair_names_a_client_and_an_agent() {
    for (client, agent) in CROSS_PAIRS {
        assert!(CLIENTS.iter().any(|(c, _)| c == client), "{client}");
        assert!(AGENTS.iter().any(|(a, _)| a == agent), "{agent}");
    }
    // The protocol v2 pairs run by default: ours and the official SDK's, each way.
    for pair in [("ours-v2", "sdk52-v2"), ("sdk52-v2", "ours-v2")] {
        assert!(default_pairs().contains(&pair), "{pair:?}");
    }
}
