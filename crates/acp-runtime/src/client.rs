//! The client side: connect to an agent, initialize, and drive sessions and prompt turns.
//!
//! - [`connect`] runs a connection over any stream pair; [`spawn`] starts an agent command
//!   (see [`crate::process`]) and connects to it.
//! - [`AgentHandle::initialize`] negotiates the version (an agent answering a version this
//!   runtime does not speak is a typed [`Error::UnsupportedProtocolVersion`](crate::Error::UnsupportedProtocolVersion), and the
//!   connection closes) and records the agent's capabilities, which every later call is
//!   checked against before anything is sent.
//! - [`Session::prompt`] sends a prompt and returns a [`PromptTurn`] that yields the turn's
//!   updates in order, then its stop reason. [`Session::cancel`] sends `session/cancel`,
//!   answers the session's pending permission requests with `cancelled` (a MUST of the spec),
//!   and marks its unfinished tool calls cancelled.
//! - Updates that arrive before the `session/new` response, or between turns, are kept and
//!   delivered ([`Session::next_update`]).
//! - Routing an update never waits, so a session nobody reads never holds up responses,
//!   other sessions or cancellation. Each session keeps updates up to a budget in bytes
//!   ([`ClientOptions::with_session_update_budget`], 16 MiB); what arrives while it is full
//!   is dropped and met, in its place in the stream, as [`Error::UpdatesDropped`](crate::Error::UpdatesDropped). Updates
//!   for ids this client has not opened share one smaller budget
//!   ([`ClientOptions::with_unopened_update_budget`], 1 MiB, at most 16 ids); what is dropped
//!   there is reported by [`AgentHandle::take_dropped_updates`].
//! - Subagents (schema 1.20): a session the agent announces with a `subagent_update` is
//!   followed, with its parent, at any depth: its updates arrive under its own id and wait in
//!   a queue of its own ([`Session::subagents`], [`AgentHandle::session`]), or are read with
//!   the parent's, in order, as one tree ([`PromptTurn::next_in_tree`],
//!   [`Session::next_in_tree`]). At most [`ClientOptions::with_max_subagents`] (64) are
//!   followed; their queues share [`ClientOptions::with_subagent_update_budget`] (16 MiB).
//!   What is not followed is said in the parent's stream
//!   ([`Error::SubagentNotFollowed`](crate::Error::SubagentNotFollowed)).
//! - Requests from the agent go to your [`Client`]; [`ClientOptions::with_file_system`] and
//!   [`ClientOptions::with_terminals`] serve `fs/*` and `terminal/*` with the complete
//!   implementations of [`crate::fs`] and [`crate::terminal`], and advertise them.
//!
//! ```no_run
//! use acp_runtime::client::{self, AutoAllow, ClientOptions};
//! use acp_runtime::process::AgentCommand;
//!
//! smol::block_on(async {
//!     let (agent, driver, _process) =
//!         client::spawn(AutoAllow, AgentCommand::new("my-agent"), ClientOptions::default())?;
//!     smol::spawn(driver).detach();
//!     agent.initialize().await?;
//!     let session = agent.new_session("/home/me/project").await?;
//!     let mut turn = session.prompt(vec!["Hello".into()]).await?;
//!     while let Some(update) = turn.next().await {
//!         println!("{update:?}");
//!     }
//!     println!("stop reason: {:?}", turn.end().await?);
//!     Ok::<_, acp_runtime::Error>(())
//! })
//! .unwrap();
//! ```

mod connect;
#[cfg(feature = "unstable-protocol-v2")]
pub mod connector;
mod dispatch;
mod dropped;
mod family;
mod handle;
mod handler;
#[cfg(feature = "unstable-models")]
mod models;
mod options;
mod session;
mod session_tree;
mod spawned;
mod state;
mod subagents;
mod text_chunk;
mod tool_calls;
mod traffic;
#[cfg(any(
    feature = "unstable-session-fork",
    feature = "unstable-session-archive",
    feature = "unstable-session-status",
    feature = "unstable-session-title",
    feature = "unstable-providers",
    feature = "unstable-auth-status",
    feature = "unstable-mcp-over-acp",
    feature = "unstable-session-options",
    feature = "unstable-session-cursors",
    feature = "unstable-prompt-suggestions",
))]
mod unstable;
mod unstable_state;
mod updates;
#[cfg(feature = "unstable-protocol-v2")]
pub mod v2;

pub use connect::connect;
pub use dropped::{DROP_REPORTS_KEPT, DropReason, DroppedUpdates, UnopenedUpdate};
pub use family::{DEFAULT_MAX_SUBAGENTS, DEFAULT_SUBAGENT_UPDATE_BUDGET};
pub use family::{MAX_SUBAGENT_TEXT_BYTES, Subagent};
pub use handle::AgentHandle;
pub use handler::{AutoAllow, AutoReject, Client, Interactive};
pub use options::ClientOptions;
pub use session::{PromptTurn, Session};
pub use session_tree::TreeUpdate;
pub use spawned::{run_spawned, spawn};
pub use subagents::UNFOLLOWED_REMEMBERED;
pub use tool_calls::ToolCallState;
pub use tool_calls::{DEFAULT_MAX_TOOL_CALLS, DEFAULT_TOOL_CALL_BUDGET};
pub use traffic::PrintTraffic;
#[cfg(feature = "unstable-session-cursors")]
pub use unstable_state::{CURSOR_BUDGET, SessionCursor};
pub use updates::{DEFAULT_SESSION_UPDATE_BUDGET, DEFAULT_UNOPENED_UPDATE_BUDGET};

pub use crate::rules::{
    MAX_TOOL_CALL_ID_BYTES, MAX_TOOL_CALL_TITLE_BYTES, SUPPORTED_PROTOCOL_VERSIONS,
};
