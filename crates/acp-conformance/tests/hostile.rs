//! Hostile agents (floods, silence, deafness) attack the checker itself. Against each, the
//! checker binary must finish within its time limits (a hang guard, not a benchmark), report
//! the right failure, and keep its peak memory bounded.

mod common;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::BROKEN;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_acp-conformance");

/// A generous bound on the checker's peak resident set size. The checker stays far below it
/// (see docs/conformance.md); the bound only has to tell bounded from unbounded.
const PEAK_RSS_LIMIT_KIB: u64 = 200 * 1024;

/// A request limit for the floods, long enough that the flood, not the limit, ends each step
/// even on a loaded machine (a debug build reads some 20 MB/s of garbage).
const FLOOD_TIMEOUT: &str = "--timeout=20";

/// What one run of the checker showed.
struct Run {
    report: Value,
    peak_rss_kib: u64,
    elapsed: Duration,
}

impl Run {
    fn check(&self, id: &str) -> &Value {
        self.report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id} did not run"))
    }

    /// Asserts that check `id` got `verdict` with a reason containing every one of `words`.
    fn assert_verdict(&self, id: &str, verdict: &str, words: &[&str]) {
        let check = self.check(id);
        assert_eq!(check["verdict"], verdict, "{id}: {check:#}");
        let reason = check["reason"].as_str().unwrap_or_default();
        for word in words {
            assert!(reason.contains(word), "{id}: `{word}` not in `{reason}`");
        }
    }
}

/// Runs the checker (1 s request and turn limits, unless `args` give others) with `args`
/// against the broken agent with `bug`, in a 4 GiB address space; fails the test if it takes
/// longer than `hang_guard`.
fn run(bug: &str, args: &[&str], hang_guard: Duration) -> Run {
    let json = std::env::temp_dir().join(format!(
        "acp-conformance-hostile-{}-{bug}.json",
        std::process::id()
    ));
    let started = Instant::now();
    let mut child = Command::new("sh")
        .args(["-c", r#"ulimit -v 4194304 && exec "$@""#, "sh", BIN])
        .args(["--timeout", "1", "--turn-timeout", "1", "--grace-ms", "200"])
        .args(["--report-peak-rss", "--json"])
        .arg(&json)
        .args(args)
        .args(["--", BROKEN, "--bug", bug])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("acp-conformance runs");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > hang_guard {
            let _ = child.kill();
            let _ = child.wait();
            panic!("against `{bug}`, the checker was still running after {hang_guard:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(1), "against `{bug}`: {stderr}");
    let report = read_report(json);
    let peak_rss_kib = stderr
        .lines()
        .find_map(|l| l.strip_prefix("acp-conformance: peak RSS "))
        .and_then(|rest| rest.strip_suffix(" KiB"))
        .and_then(|kib| kib.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in {stderr}"));
    assert!(
        peak_rss_kib < PEAK_RSS_LIMIT_KIB,
        "against `{bug}`, the checker's peak RSS was {peak_rss_kib} KiB"
    );
    Run {
        report,
        peak_rss_kib,
        elapsed,
    }
}

fn read_report(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path).expect("a JSON report");
    std::fs::remove_file(path).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_garbage_flood_ends_the_agent_at_the_flood_limit() {
    let run = run(
        "flood-garbage",
        // Long enough for the flood limit to come first on a loaded machine.
        &[
            FLOOD_TIMEOUT,
            "--only",
            "init.response,transport.stdout_clean",
        ],
        Duration::from_secs(60),
    );
    run.assert_verdict("init.response", "fail", &["flooded", "16.0 MiB"]);
    run.assert_verdict("transport.stdout_clean", "fail", &["flooded"]);
    // Evidence keeps the first lines and counts the rest.
    let evidence = run.check("transport.stdout_clean")["evidence"].to_string();
    assert!(evidence.contains("more,"), "{evidence}");
    eprintln!("flood-garbage: {:?}, {} KiB", run.elapsed, run.peak_rss_kib);
}

#[test]
fn an_endless_line_ends_the_agent_at_the_flood_limit() {
    let run = run(
        "flood-long-line",
        &[
            FLOOD_TIMEOUT,
            "--only",
            "init.response,transport.stdout_clean",
        ],
        Duration::from_secs(60),
    );
    run.assert_verdict("init.response", "fail", &["flooded"]);
    run.assert_verdict("transport.stdout_clean", "fail", &["flooded"]);
    let evidence = run.check("transport.stdout_clean")["evidence"].to_string();
    assert!(evidence.contains("without end"), "{evidence}");
    eprintln!(
        "flood-long-line: {:?}, {} KiB",
        run.elapsed, run.peak_rss_kib
    );
}

#[test]
fn a_notification_flood_is_read_and_judged_but_not_kept() {
    let run = run(
        "flood-notifications",
        &[
            FLOOD_TIMEOUT,
            "--turn-timeout=20",
            // Listening 1.5 s after the turn's response reads more than a step keeps.
            "--grace-ms=1500",
            "--only",
            "prompt.updates_before_response,transport.stdout_clean,schema.agent_messages",
        ],
        Duration::from_secs(60),
    );
    // The flood is turn content for the session, still coming after the turn's response.
    run.assert_verdict(
        "prompt.updates_before_response",
        "fail",
        &["arrived after its `session/prompt` response"],
    );
    let evidence = run.check("prompt.updates_before_response")["evidence"].to_string();
    assert!(
        evidence.contains("read and judged but not kept"),
        "{evidence}"
    );
    // Every line was read and is valid.
    run.assert_verdict("transport.stdout_clean", "pass", &[]);
    run.assert_verdict("schema.agent_messages", "pass", &[]);
    eprintln!(
        "flood-notifications: {:?}, {} KiB",
        run.elapsed, run.peak_rss_kib
    );
}

#[test]
fn an_agent_that_floods_requests_and_never_reads_is_ended_at_the_timeout() {
    let run = run(
        "flood-requests-deaf",
        &["--only", "init.response,session.new"],
        Duration::from_secs(30),
    );
    run.assert_verdict(
        "init.response",
        "fail",
        &["timed out after 1 s", "not reading its stdin"],
    );
    run.assert_verdict("session.new", "inconclusive", &["timed out after 1 s"]);
    eprintln!(
        "flood-requests-deaf: {:?}, {} KiB",
        run.elapsed, run.peak_rss_kib
    );
}

#[test]
fn silent_and_deaf_agents_are_ended_at_the_timeout() {
    for bug in ["silent", "deaf"] {
        let run = run(
            bug,
            &["--only", "init.response,session.new"],
            Duration::from_secs(30),
        );
        run.assert_verdict("init.response", "fail", &["timed out after 1 s"]);
        run.assert_verdict("session.new", "inconclusive", &["timed out after 1 s"]);
        eprintln!("{bug}: {:?}, {} KiB", run.elapsed, run.peak_rss_kib);
    }
}

#[test]
fn the_run_timeout_ends_the_run() {
    let run = run("silent", &["--run-timeout", "2"], Duration::from_secs(30));
    let not_run = run.report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("not run: the run's time limit of 2 s"))
        })
        .count();
    assert!(not_run > 20, "{not_run} checks were not run");
    assert!(run.elapsed < Duration::from_secs(15), "{:?}", run.elapsed);
}
