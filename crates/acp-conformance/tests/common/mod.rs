//! Running the checker against the test agents of this crate.

#![allow(dead_code)]

use std::time::Duration;

use acp_conformance::{Options, Report, Verdict, run};

pub const BROKEN: &str = env!("CARGO_BIN_EXE_broken-agent");
pub const REFERENCE: &str = env!("CARGO_BIN_EXE_conformance-reference-agent");

/// Options for a quick run: the test agents answer at once, so short limits suffice.
pub fn options(command: &[&str], only: &[&str]) -> Options {
    let mut options = Options::new(command.iter().copied());
    options.timeout = Duration::from_secs(4);
    options.turn_timeout = Duration::from_secs(4);
    options.grace = Duration::from_millis(200);
    options.only = only.iter().map(|s| (*s).to_owned()).collect();
    options
}

pub fn check(command: &[&str], only: &[&str]) -> Report {
    run(&options(command, only)).expect("the agent starts")
}

/// Every check that did not pass, with its verdict, for assertion messages.
pub fn not_passed(report: &Report) -> Vec<String> {
    report
        .results
        .iter()
        .filter(|r| r.verdict != Verdict::Pass)
        .map(|r| format!("{}: {:?}", r.id, r.verdict))
        .collect()
}
