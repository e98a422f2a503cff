//! Proxy chains on the command line: the conductor's argument handling and the built-in
//! proxies that `acp-conductor` runs (see docs/proxy.md).
//!
//! - [`command_line`]: a component's command string into an
//!   [`AgentCommand`](acp_runtime::process::AgentCommand), as the official conductor takes them
//!   (`acp-conductor agent "proxy1 --flag" "my-agent"`).
//! - [`trace`]: a proxy that records the logical traffic of its hop as an acp-test transcript.
//! - [`policy`]: a proxy that answers permission requests by tool kind.
//!
//! The conductor itself and the proxy role are in acp-runtime
//! ([`acp_runtime::conductor`], [`acp_runtime::proxy`]).
//!
//! Everything is behind the `unstable` feature (proxy chains are unstable in the schema, and
//! the feature switches acp-types to the unstable schema): build with
//! `cargo build -p acp-rs-conductor --features unstable`.
#![cfg(feature = "unstable")]
#![forbid(unsafe_code)]

/// Component command lines (moved to acp-runtime, so that `acp --proxy` shares them).
pub use acp_runtime::conductor::command_line;
pub mod policy;
pub mod trace;
