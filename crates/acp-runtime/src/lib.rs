//! Typed [Agent Client Protocol](https://agentclientprotocol.com) connections for agents and
//! clients, keeping every rule of the protocol so that implementations cannot break them by
//! accident.
//!
//! - [`agent`]: implement [`agent::Agent`] and serve it; talk to the client through
//!   [`agent::ClientHandle`] and [`agent::Turn`].
//! - [`client`]: connect to an agent (a stream pair or a spawned process) and drive sessions
//!   and prompt turns through [`client::AgentHandle`] and [`client::Session`].
//! - [`host`]: the client-side engines for `terminal/*` and `fs/*`.
//! - [`process`]: spawning an agent command and shutting it down without leftovers.
//!
//! Built on [`acp_jsonrpc`] (framing, correlation, cancellation, back-pressure) and
//! [`acp_types`] (the generated message types). Runs on smol out of the box; the connection
//! drivers are plain futures, so any executor can poll them.

pub mod agent;
pub mod client;
mod error;
pub mod host;
pub mod process;
mod signal;
pub mod stdio;

pub use error::{Error, Result, codes};

pub use acp_jsonrpc;
pub use acp_types;
