//! Proxy chains on the command line: the conductor's argument handling and the built-in
//! proxies that `acp-conductor` runs (see docs/proxy.md).
//!
//! - [`trace`]: a proxy that records the logical traffic of its hop as an acp-test transcript.
//! - [`policy`]: a proxy that answers permission requests by tool kind.
//!
//! The conductor itself, the proxy role and the component command lines (a command string into
//! an [`AgentCommand`](acp_runtime::process::AgentCommand), as the official conductor takes
//! them: `acp-conductor agent "proxy1 --flag" "my-agent"`) are in acp-runtime
//! ([`acp_runtime::conductor`], [`acp_runtime::conductor::command_line`],
//! [`acp_runtime::proxy`]).
//!
//! Everything is behind the `unstable` feature (proxy chains are unstable in the schema, and
//! the feature switches acp-types to the unstable schema): build with
//! `cargo build -p acp-rs-conductor --features unstable`.
#![cfg(feature = "unstable")]
#![forbid(unsafe_code)]

pub mod policy;
pub mod trace;
