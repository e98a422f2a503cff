//! Checks an [Agent Client Protocol](https://agentclientprotocol.com) agent against the
//! protocol's rules.
//!
//! The checker plays the client. It starts the agent command (a fresh process for each check,
//! or group of checks), talks newline-delimited JSON-RPC with it on the raw wire, and judges
//! every line the agent writes: a conformance tool has to see exactly what the agent sends,
//! including what a protocol library would reject or hide. Each check verifies one rule of
//! the specification, is marked MUST, SHOULD or MAY, and ends in a [`Verdict`]: pass, fail
//! (with the offending messages), skipped (a capability is not advertised) or inconclusive.
//!
//! ```no_run
//! use acp_conformance::{Options, run};
//!
//! let options = Options::new(["my-agent", "--acp"]);
//! let report = run(&options).expect("the agent starts");
//! print!("{}", report.render(false));
//! assert_eq!(report.summary().must_failed, 0);
//! ```
//!
//! The checks and the sentences of the specification they verify are listed in
//! `docs/conformance.md` and by `acp-conformance --list`.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod checks;
mod client;
pub mod limits;
mod options;
mod report;
mod turn;
mod wire;

pub use checks::{CheckInfo, checks, checks_for, run, run_with};
pub use options::{DEFAULT_PROMPT, Options, Protocol};
pub use report::{AgentSummary, CheckResult, Level, Report, Summary, Verdict};
