//! The ACP agent registry: read it, pick an agent's distribution for this platform, install
//! it safely, and get the command that starts it.
//!
//! The registry (<https://github.com/agentclientprotocol/registry>) lists agents with how
//! to obtain them: an npm package run by `npx`, a PyPI package run by `uvx`, or an archive
//! per platform. [`Resolver`] turns an agent id into a [`Launch`] (program, arguments,
//! environment, working directory), which acp-runtime's `AgentCommand` spawns (feature
//! `runtime`: `AgentCommand::from(launch)`).
//!
//! ```no_run
//! use acp_registry::{Resolver, Source};
//!
//! let resolver = Resolver::new().source(Source::parse("registry.json"));
//! let loaded = resolver.registry()?;
//! for agent in &loaded.registry.agents {
//!     println!("{} {} {}", agent.id, agent.version, agent.offered().join(", "));
//! }
//! let launch = resolver.launch(&loaded.registry, "gemini")?;
//! # Ok::<(), acp_registry::Error>(())
//! ```
//!
//! What it guarantees: downloads only over HTTPS (plain HTTP on loopback only), capped in
//! size, redirects and time; a given `sha256` checked before anything is unpacked; archives
//! unpacked into a scratch directory that is renamed into the cache only when complete,
//! refusing traversal, absolute paths, links that leave the directory and archives that
//! inflate past a cap; a cache filled once when several processes ask at once.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod cache;
#[cfg(feature = "cli")]
pub mod cli;
mod error;
mod extract;
mod format;
mod http;
mod launch;
mod resolver;
mod select;

pub use cache::{Cache, Installed};
pub use error::{Error, Refusal};
pub use extract::ExtractLimits;
pub use format::{
    AgentEntry, BinaryTarget, Distribution, Extra, PackageDistribution, Registry, SkippedEntry,
};
pub use http::HttpOptions;
pub use launch::Launch;
pub use resolver::{DEFAULT_MAX_AGE, DEFAULT_REGISTRY_URL, Loaded, Origin, Resolver, Source};
pub use select::{Choice, Method, Platform};
