//! Typed [Agent Client Protocol](https://agentclientprotocol.com) connections for agents and
//! clients, keeping every rule of the protocol so that implementations cannot break them by
//! accident.
//!
//! - [`prelude`]: one glob import for writing either side.
//! - [`agent`]: implement [`agent::Agent`] and serve it; talk to the client through
//!   [`agent::ClientHandle`] and [`agent::Turn`].
//! - [`client`]: connect to an agent (a stream pair or a spawned process) and drive sessions
//!   and prompt turns through [`client::AgentHandle`] and [`client::Session`].
//! - [`fs`], [`terminal`] and [`process`]: the client-side engines for `fs/*` and
//!   `terminal/*`, and agent processes (spawning, supervision, shutdown without leftovers).
//!   They are the [`acp_host`] crate's modules, re-exported because this crate's API takes
//!   and returns their types ([`client::ClientOptions::with_file_system`],
//!   [`client::ClientOptions::with_terminals`], [`client::spawn`], [`Error::AgentExited`]),
//!   so that a client needs no second dependency. The runtime itself holds no `unsafe` code:
//!   everything that talks to the operating system directly lives in acp-host.
//!
//! Built on [`acp_jsonrpc`] (framing, correlation, cancellation, back-pressure) and
//! [`acp_types`] (the generated message types). Runs on smol out of the box; the connection
//! drivers are plain futures, so any executor can poll them.
//!
//! # Running on tokio
//!
//! [`agent::serve`] and [`client::connect`] take any futures-io reader and writer and return a
//! `Send` driver: adapt tokio's I/O types with the `tokio-util` crate's `compat` feature and
//! `tokio::spawn` the driver. `tests/tokio_executor.rs` runs a full prompt turn this way, on
//! both of tokio's runtime flavors:
//!
//! ```text
//! use futures_lite::io::BufReader;
//! use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
//!
//! // An agent on tokio's stdin and stdout (instead of `agent::serve_stdio`, which blocks the
//! // thread on smol's `block_on`):
//! let reader = BufReader::new(tokio::io::stdin().compat());
//! let writer = tokio::io::stdout().compat_write();
//! let (_client, driver) = agent::serve(MyAgent, reader, writer, AgentOptions::default());
//! driver.await?;
//!
//! // A client over any tokio stream pair (a child's pipes, a socket, `tokio::io::duplex`):
//! let (read, write) = tokio::io::split(stream);
//! let (agent, driver) = client::connect(
//!     AutoAllow,
//!     BufReader::new(read.compat()),
//!     write.compat_write(),
//!     ClientOptions::default(),
//! );
//! tokio::spawn(driver);
//! agent.initialize().await?;
//! ```
//!
//! Some parts still use smol underneath. None needs a smol executor on the calling thread, so
//! they work from tokio tasks as they are:
//!
//! - On smol's global executor (`smol::spawn`; it starts its own thread, `smol-1`, on first
//!   use; `SMOL_THREADS` sets how many): the terminal host's output collector, the background
//!   release of an unreleased [`agent::Terminal`] on drop, and the wait for the end of a
//!   [`client::PromptTurn`] dropped before its end.
//! - On a plain thread per agent process: the supervisor of [`process::AgentCommand::spawn`]
//!   (it drains stderr, observes the exit and tells the connection of [`client::spawn`]).
//! - On async-io's reactor, which runs on its own thread when no smol `block_on` drives it:
//!   the timer of [`agent::Terminal::run_with_timeout`] and of the shutdown grace periods of
//!   [`process::AgentProcess::shutdown`], and the pipes of [`stdio`], agent processes and
//!   terminals.
//! - On the blocking thread pool (`smol::unblock`): the file-system host,
//!   [`client::Interactive`], stdin or stdout that are not pipes, and the exit of an agent
//!   or a terminal command where the kernel has no pidfd (not Linux, or before 5.4).
//!
//! [`agent::serve_stdio`] blocks its thread on `smol::block_on`: on tokio, call it from
//! `main` before (or instead of) starting a runtime, or use [`stdio::stdio`] with
//! [`agent::serve`] as above.
//!
//! # Tracing
//!
//! The `tracing` cargo feature (off by default) turns on [`acp_jsonrpc`]'s: a span per
//! connection and per request (incoming and outgoing; handlers run inside their request's span,
//! so what an [`agent::Agent`] or [`client::Client`] logs is attributed to it), an event per
//! message with its method, id, direction, size and, for responses, duration, and errors,
//! refused and dropped messages at `WARN`, all with the target `acp_jsonrpc`. Any `tracing`
//! subscriber shows them, for example `tracing_subscriber::fmt().with_max_level(Level::DEBUG)
//! .init()`; the fields are listed in [`acp_jsonrpc`'s documentation](acp_jsonrpc#tracing).
//! Without the feature nothing of it is compiled.
//!
//! # Unstable methods
//!
//! The protocol's unstable methods are behind cargo features, one per upstream feature
//! (`unstable` turns on all; each turns on `acp-types/unstable`). For each, the agent
//! implements a method of [`agent::Agent`] (default `-32601`), which the runtime calls only
//! when the agent advertised the capability; the client's typed call is refused locally
//! ([`Error::NotAdvertised`], nothing sent) when the agent did not advertise it.
//!
//! | feature | methods | agent hook | client call | capability | test |
//! |---|---|---|---|---|---|
//! | `unstable-session-fork` | `session/fork` | `Agent::fork_session` | `AgentHandle::fork_session`, `Session::fork` (a new [`client::Session`]) | `sessionCapabilities.fork` | `tests/unstable.rs` |
//! | `unstable-session-archive` | `session/archive`, `session/unarchive` | `Agent::archive_session`, `unarchive_session` | `AgentHandle::archive_session`, `unarchive_session`, `Session::archive`, `unarchive` | `sessionCapabilities.archive` | `tests/unstable.rs` |
//! | `unstable-session-status` | `session/status` | `Agent::session_status` | `AgentHandle::session_status`, `Session::status` | `sessionCapabilities.status` | `tests/unstable.rs` |
//! | `unstable-session-title` | `session/set_title` | `Agent::set_session_title` | `AgentHandle::set_session_title`, `Session::set_title` | `sessionCapabilities.title` | `tests/unstable.rs` |
//! | `unstable-providers` | `providers/list`, `set`, `disable` | `Agent::list_providers`, `set_provider`, `disable_provider` | `AgentHandle::list_providers`, `set_provider`, `disable_provider` | `providers` | `tests/unstable.rs` |
//! | `unstable-auth-status` | `auth/status`, `auth/status_update` | `Agent::auth_status`; `ClientHandle::notify` | `AgentHandle::auth_status`; `Client::auth_status_update` | `auth.status` | `tests/unstable.rs` |
//! | `unstable-mcp-over-acp` | `mcp/message` (agent → client request, client → agent notification), `McpServer::Acp` | `Agent::mcp_notification`; `ClientHandle::request` | `AgentHandle::mcp_message`; `Client::mcp_message` | `mcpCapabilities.acp` | `tests/unstable.rs` |
//! | `unstable-proxy-chains` | `proxy/initialize`, `proxy/successor` | `proxy`: `Proxy::builder` hooks, `serve` | `conductor`: `Conductor::run` | — | `tests/proxy_chain.rs`, acp-conductor's `tests/chain` |
//! | `unstable-session-options` | `session/options`; `configOptions` on `session/new`, `load`, `resume`, `fork` | `Agent::session_options` (gets no session: it opens none and sends no update); initial config options reach the setup hooks, only a repeated `configId` is refused (`-32602`), unknown ids and values are the agent's to ignore | `AgentHandle::session_options`, `session_options_with`; `configOptions` on the setup requests (refused locally without `sessionCapabilities.options`, booleans without the client's own `session.configOptions.boolean`, a repeated id) | `sessionCapabilities.options` | `tests/unstable_agent.rs`, `tests/unstable_client.rs` |
//! | `unstable-session-cursors` | `cursor_update` update; `cursorId` on `session/fork` (with `unstable-session-fork`) | `SessionClient::cursor_update` (a first update without `anchor`, or a moved anchor, is refused locally), `cursor_can_fork`; a fork at a cursor not announced or not forkable is answered `-32602` before `Agent::fork_session` | `Session::cursors`, `cursor` (`client::SessionCursor`: the first anchor kept, breaches reported), `Session::fork_at` (refused locally for a cursor not announced or not forkable) | client's `session.cursors` | `tests/unstable_agent.rs`, `tests/unstable_client.rs` |
//! | `unstable-prompt-suggestions` | `prompt_suggestions_update` update | `SessionClient::prompt_suggestions` (content both sides take, no blank prompt; skipped by `SessionClient::replay`) | `Session::prompt_suggestions` (the current list, replaced by each update) | client's `session.promptSuggestions` (`image`, `audio`, `embeddedContext`) | `tests/unstable_agent.rs`, `tests/unstable_client.rs` |
//! | `unstable-end-turn-usage` | `usage` on the `session/prompt` answer | `PromptResponse::with_usage` (kept on a cancelled turn's answer) | `PromptTurn::end`'s `usage` | — | `tests/unstable_agent.rs`, `tests/unstable_client.rs` |
//! | `unstable-speed-config-category` | the `speed` config option category | types only | types only | — | `tests/unstable_client.rs` |
//! | `unstable-models` (seed-era, turns on `acp-types/models` only) | `session/set_model`, `models` in session answers | `Agent::set_model`; `ClientHandle::offer_models`, `SessionClient::offer_models` | `Session::models`, `Session::set_model` (refused with [`Error::Invalid`] for a model the session did not advertise) | the session's `models` | `tests/models.rs` |
//!
//! Protocol v2 is its own feature, `unstable-protocol-v2`, kept out of `unstable` as upstream
//! keeps `unstable_protocol_v2`: `router` serves v1 and v2 on one endpoint, picking the
//! version per connection from `initialize` (acp-types' `v2` holds the types); `agent::v2` and
//! `client::v2` are v2's agent and client sides, with v2's prompt lifecycle (docs/protocol-v2.md).
//!
//! An update kind the client did not advertise is refused by the agent's runtime before it
//! is sent, and reported (not dropped) by the client's runtime when a peer sends it anyway.
//!
//! # Stable since schema 1.20: system prompt, plans, subagents
//!
//! These were unstable before schema 1.20.0 and are always on now: no feature turns them on.
//!
//! | what | wire | agent | client | rule (`rules.rs`) | test |
//! |---|---|---|---|---|---|
//! | client system prompt | `systemPrompt {mode, content}` on `session/new`, `load`, `resume` (`fork` with `unstable-session-fork`); capability `sessionCapabilities.systemPrompt {mode?: {override?}}` | [`agent::AgentOptions::with_system_prompt`], `with_system_prompt_override`; [`agent::SessionSnapshot::system_prompt`] | `NewSessionRequest::with_system_prompt` through [`client::AgentHandle::new_session_with`] (and `load_session`, `resume_session`); [`client::AgentHandle::system_prompt_modes`] | the agent answers `-32602` before its handler (no capability, `override` not advertised, another mode, empty or non-text content); the client refuses the same without sending | `tests/system_prompt.rs` |
//! | plan operations | `plan_update {plan: items or markdown}`, `plan_removed {planId}`; client capability `plan` | [`agent::SessionClient::set_plan`], `remove_plan` (the old `plan` for a client without `plan`); `plan_update`, `plan_removed` (refused without `plan`) | [`client::ClientOptions::with_plans`]; [`SessionUpdate::PlanUpdate`](acp_types::SessionUpdate::PlanUpdate), `PlanRemoved` from [`client::PromptTurn::next`] | sent only to a client with `plan`; reported (and delivered) on receipt otherwise | `tests/plans_subagents.rs` |
//! | subagents | `subagent_update`, `session_message`, `session_message_chunk`, tool call content `{type: "session"}`; client capability `subagents` | [`agent::SessionClient::subagent_update`], `session_message`, `session_message_chunk`; `tool_call` with a `SessionReference` | [`client::ClientOptions::with_subagents`]; the typed updates from [`client::PromptTurn::next`]; each announced child followed as a [`client::Session`] of its own, read with its parent in arrival order by [`client::PromptTurn::next_in_tree`] | sent only to a client with `subagents`; reported (and delivered) on receipt otherwise | `tests/plans_subagents.rs`, acp-test's `tests/subagents.rs` |
//!
//! `PromptResponse.usage` and the other unstable payloads are fields of [`acp_types`]'
//! unstable types.
//!
//! Lenient in what it accepts: no rule looks at a config option's `category` (the `speed`
//! category passes like any other, and an unknown one decodes too) nor at an auth account's
//! `description` (on `auth/status` answers, feature `unstable-auth-status`); the agent's
//! runtime never refuses an initial config option it does not know (the spec: the agent
//! ignores it), and the client's runtime keeps every cursor and suggestion update it gets,
//! reporting the ones that break a rule.
//!
//! # Models and config options
//!
//! The seeds' model selection (`models` with `availableModels` and `currentModelId` in the
//! `session/new` and `session/load` answers, switched with `session/set_model`) is gone from
//! the current schema: an agent offers its models as a session config option of category
//! `model` ([`acp_types::SessionConfigOptionCategory::Model`]), a select, set with
//! `session/set_config_option`. Agents still send `models`, so feature `unstable-models` types
//! it from the seed-era schema pin ([`acp_types`]' `models` module). The two map one to one:
//!
//! | seed-era `models` | config option of category `model` |
//! |---|---|
//! | `availableModels[]`: `modelId`, `name`, `description` | the select's `options[]`: `value`, `name`, `description` |
//! | `currentModelId` | the option's `currentValue` |
//! | `session/set_model {sessionId, modelId}` (`Session::set_model`) | `session/set_config_option {sessionId, configId, value: modelId}` ([`client::Session::set_config_option`]) |
//! | a new answer's `models` (no update exists) | `config_option_update` |
//!
//! A client facing an agent that sends both should use the config option: it is the current
//! protocol, it is kept up to date by `config_option_update` (the seed-era `models` only by
//! the answer and the client's own `set_model`), and the agent keeps the two in step. Use
//! `models` and `set_model` only when the session has no option of category `model`. An agent
//! on this runtime that wants to serve both kinds of client offers both, and switches its model
//! in `Agent::set_model` and `Agent::set_config_option` alike.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod agent;
pub mod client;
#[cfg(feature = "unstable-proxy-chains")]
pub mod conductor;
mod error;
pub mod prelude;
#[cfg(feature = "unstable-proxy-chains")]
pub mod proxy;
mod reply;
#[cfg(feature = "unstable-protocol-v2")]
pub mod router;
mod rules;
mod session_map;
mod shape_reader;
pub mod stdio;
mod unique_id;

pub use error::{Error, Result, codes};

pub use acp_host::fs;
#[cfg(unix)]
pub use acp_host::{process, terminal};

pub use acp_jsonrpc;
pub use acp_types;

/// The README's examples, compiled as doctests so that they keep up with the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
