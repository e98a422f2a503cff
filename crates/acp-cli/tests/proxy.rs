//! `acp --proxy CMD … -- AGENT` (feature `unstable`): a proxy chain conducted by acp itself,
//! every member a real process over pipes: pass-through proxies (acp re-run as one) in
//! front of the bundled demo agent.
#![cfg(feature = "unstable")]

use std::process::{Command, Output, Stdio};

mod common;

use common::{ACP, run, scratch, text};

const PASS_THROUGH: &str = "--serve-pass-through-proxy";

fn acp(args: &[&str]) -> Output {
    run(Command::new(ACP).args(args).stdin(Stdio::null()))
}

/// The command line of a pass-through proxy, quoted as `--proxy` splits it.
fn pass_through() -> String {
    format!("'{ACP}' {PASS_THROUGH}")
}

/// The demo's update stream as `--json` prints it, with this run's session id and scratch
/// directory taken out.
fn updates(output: &Output, dir: &std::path::Path) -> Vec<String> {
    let stdout = text(&output.stdout).replace(dir.to_str().unwrap(), "DIR");
    // The demo agent's session ids are `sess_N_RANDOM`: each becomes SESSION.
    // Every line names its session, and a subagent's announcement the subagent too.
    stdout
        .lines()
        .map(|line| {
            let mut line = line.to_owned();
            while let Some(at) = line.find("\"sess_") {
                let tail = &line[at + 1..];
                let end = tail.find(['"', '-']).unwrap_or(tail.len());
                line = format!("{}\"SESSION{}", &line[..at], &tail[end..]);
            }
            line
        })
        .collect()
}

#[test]
fn a_turn_through_two_pass_through_proxies_is_the_direct_turn() {
    let (direct_dir, chain_dir) = (scratch("direct"), scratch("chain"));
    let direct = acp(&[
        "--yes",
        "--json",
        "-p",
        "summarize",
        "--cwd",
        direct_dir.to_str().unwrap(),
        "--",
        ACP,
        "--serve-demo-agent",
    ]);
    let proxy = pass_through();
    let chained = acp(&[
        "--yes",
        "--json",
        "-p",
        "summarize",
        "--cwd",
        chain_dir.to_str().unwrap(),
        "--proxy",
        &proxy,
        "--proxy",
        &proxy,
        "--",
        ACP,
        "--serve-demo-agent",
    ]);
    assert!(direct.status.success(), "{}", text(&direct.stderr));
    assert!(chained.status.success(), "{}", text(&chained.stderr));
    let direct_updates = updates(&direct, &direct_dir);
    assert!(direct_updates.len() > 10, "{direct_updates:?}");
    assert_eq!(updates(&chained, &chain_dir), direct_updates);
    assert!(chain_dir.join("summary.txt").exists());
}

#[test]
fn the_demo_agent_is_the_default_end_of_the_chain() {
    let dir = scratch("demo");
    let proxy = pass_through();
    let output = acp(&[
        "--yes",
        "-p",
        "summarize",
        "--cwd",
        dir.to_str().unwrap(),
        "--proxy",
        &proxy,
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("Done. notes.txt has 3 lines, and I wrote summary.txt."),
        "{}",
        text(&output.stdout)
    );
    // The agent's name and version came back through the proxy.
    assert!(
        text(&output.stderr).contains("connected to acp-demo-agent"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_proxy_that_cannot_start_is_named() {
    let dir = scratch("missing");
    let output = acp(&[
        "--yes",
        "-p",
        "hi",
        "--cwd",
        dir.to_str().unwrap(),
        "--proxy",
        "/nonexistent/proxy --x",
    ]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("chain component 0 (`/nonexistent/proxy --x`)"),
        "{stderr}"
    );
}

#[test]
fn usage_errors() {
    for args in [
        &["--proxy", "'open", "-p", "hi"][..],
        &["--proxy", "p", "--", "ws://127.0.0.1:1/acp"][..],
        &["--proxy", "   ", "-p", "hi"][..],
    ] {
        let output = acp(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
}

/// `--protocol 2` and `auto` through acp's own chain: the pass-through proxies (served through
/// the proxy router) and the demo agent (through the agent router) all speak v2, and the turn
/// is the one `--protocol 2` gets directly.
#[cfg(feature = "unstable-protocol-v2")]
#[test]
fn protocol_2_runs_through_the_chain_as_it_runs_directly() {
    let proxy = pass_through();
    let run = |protocol: &str, proxies: usize| {
        let dir = scratch("v2chain");
        let mut args = vec![
            "--protocol",
            protocol,
            "--yes",
            "-p",
            "Summarize my notes",
            "--cwd",
            dir.to_str().unwrap(),
        ];
        for _ in 0..proxies {
            args.extend(["--proxy", proxy.as_str()]);
        }
        let output = acp(&args);
        let stderr = text(&output.stderr);
        assert!(output.status.success(), "{protocol} × {proxies}: {stderr}");
        assert!(
            stderr.contains("(protocol 2)"),
            "{protocol} × {proxies}: {stderr}"
        );
        text(&output.stdout)
    };
    let direct = run("2", 0);
    assert!(direct.contains("[turn ended: end_turn]"), "{direct}");
    assert_eq!(run("2", 2), direct);
    assert_eq!(run("auto", 1), direct);
}
