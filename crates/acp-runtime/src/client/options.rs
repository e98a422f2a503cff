//! [`ClientOptions`]: what a client advertises, which built-in hosts serve the agent's calls,
//! and the limits of the connection.

use std::sync::Arc;

use acp_jsonrpc::{ConnectionOptions, Observer};
use acp_types::*;

use super::family::{DEFAULT_MAX_SUBAGENTS, DEFAULT_SUBAGENT_UPDATE_BUDGET};
use super::tool_calls::{DEFAULT_MAX_TOOL_CALLS, DEFAULT_TOOL_CALL_BUDGET};
use super::updates::{DEFAULT_SESSION_UPDATE_BUDGET, DEFAULT_UNOPENED_UPDATE_BUDGET};
use acp_host::fs::FsHost;
use acp_host::terminal::TerminalHost;

/// Options of a client connection: what it advertises and which built-in hosts serve the
/// agent's calls.
#[derive(Clone)]
pub struct ClientOptions {
    pub(super) capabilities: ClientCapabilities,
    pub(super) info: Option<Implementation>,
    pub(super) fs: Option<Arc<FsHost>>,
    pub(super) fs_unrestricted: bool,
    pub(super) terminals: Option<Arc<TerminalHost>>,
    pub(super) connection: ConnectionOptions,
    pub(super) session_update_budget: usize,
    pub(super) unopened_update_budget: usize,
    pub(super) max_subagents: usize,
    pub(super) subagent_update_budget: usize,
    pub(super) max_tool_calls: usize,
    pub(super) tool_call_budget: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            capabilities: ClientCapabilities::default(),
            info: Some(Implementation::new(
                "acp-runtime",
                env!("CARGO_PKG_VERSION"),
            )),
            fs: None,
            fs_unrestricted: false,
            terminals: None,
            connection: ConnectionOptions::default(),
            session_update_budget: DEFAULT_SESSION_UPDATE_BUDGET,
            unopened_update_budget: DEFAULT_UNOPENED_UPDATE_BUDGET,
            max_subagents: DEFAULT_MAX_SUBAGENTS,
            subagent_update_budget: DEFAULT_SUBAGENT_UPDATE_BUDGET,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            tool_call_budget: DEFAULT_TOOL_CALL_BUDGET,
        }
    }
}

impl ClientOptions {
    /// Serves `fs/read_text_file` and `fs/write_text_file` with `host`, limited to each
    /// session's `cwd` and additional directories, and advertises both.
    pub fn with_file_system(mut self, host: FsHost) -> Self {
        self.capabilities.fs.read_text_file = true;
        self.capabilities.fs.write_text_file = true;
        self.fs = Some(Arc::new(host));
        self
    }

    /// Lets the file system host reach any absolute path, not only the session's directories.
    pub fn with_unrestricted_file_system(mut self) -> Self {
        self.fs_unrestricted = true;
        self
    }

    /// Serves `terminal/*` with `host` and advertises `terminal`. Pass an
    /// `Arc<TerminalHost>` to keep a handle of your own, for example to show a terminal's
    /// output when a tool call embeds it.
    pub fn with_terminals(mut self, host: impl Into<Arc<TerminalHost>>) -> Self {
        self.capabilities.terminal = true;
        self.terminals = Some(host.into());
        self
    }

    /// Advertises `plan`: the agent may send `plan_update` and `plan_removed` (several plans
    /// by id, item lists or markdown), which arrive as [`SessionUpdate::PlanUpdate`] and
    /// [`SessionUpdate::PlanRemoved`]. Without it an agent on this runtime sends the old
    /// `plan` update only.
    ///
    /// ```
    /// use acp_runtime::client::ClientOptions;
    ///
    /// let options = ClientOptions::default().with_plans().with_subagents();
    /// assert!(options.capabilities().plan.is_some());
    /// assert!(options.capabilities().subagents.is_some());
    /// ```
    pub fn with_plans(mut self) -> Self {
        self.capabilities.plan = Some(PlanCapabilities::new());
        self
    }

    /// Advertises `subagents`: the agent may announce child sessions (`subagent_update`),
    /// record messages between sessions (`session_message`, `session_message_chunk`) and
    /// embed a session in a tool call (content of type `session`).
    pub fn with_subagents(mut self) -> Self {
        self.capabilities.subagents = Some(SubagentCapabilities::new());
        self
    }

    /// Adds to the advertised capabilities (for methods your [`Client`](super::Client) serves
    /// itself). Merges with what is advertised already: what the built-in hosts of
    /// [`with_file_system`](Self::with_file_system) and [`with_terminals`](Self::with_terminals)
    /// advertise stays advertised, and so do [`with_plans`](Self::with_plans) and
    /// [`with_subagents`](Self::with_subagents), whatever the order of the calls.
    pub fn with_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        let hosts = (self.fs.is_some(), self.terminals.is_some());
        let before = std::mem::replace(&mut self.capabilities, capabilities);
        self.capabilities.fs.read_text_file |= hosts.0;
        self.capabilities.fs.write_text_file |= hosts.0;
        self.capabilities.terminal |= hosts.1;
        if self.capabilities.plan.is_none() {
            self.capabilities.plan = before.plan;
        }
        if self.capabilities.subagents.is_none() {
            self.capabilities.subagents = before.subagents;
        }
        self
    }

    /// Sets the name and version sent in `initialize`.
    pub fn with_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Some(Implementation::new(name, version));
        self
    }

    /// Watches every message in and out, and every problem of the connection (see
    /// [`Observer`]; [`PrintTraffic`](super::PrintTraffic) prints them).
    pub fn with_observer(mut self, observer: impl Observer) -> Self {
        self.connection = self.connection.with_observer(observer);
        self
    }

    /// Options of the underlying JSON-RPC connection (observer, limits).
    pub fn with_connection_options(mut self, options: ConnectionOptions) -> Self {
        self.connection = options;
        self
    }

    /// How many bytes of updates each session keeps for the application before it drops
    /// further ones (default [`DEFAULT_SESSION_UPDATE_BUDGET`], 16 MiB). An update costs its
    /// size on the wire plus a few hundred bytes. One update larger than the budget is still
    /// kept when nothing else waits. Dropped updates are never silent: the application meets
    /// [`Error::UpdatesDropped`](crate::Error::UpdatesDropped) where they would have been. Reading updates as they come
    /// ([`PromptTurn::next`](super::PromptTurn::next), [`Session::next_update`](super::Session::next_update)) keeps a session far below it.
    pub fn with_session_update_budget(mut self, bytes: usize) -> Self {
        self.session_update_budget = bytes;
        self
    }

    /// How many bytes of updates are kept, over all session ids this client has not opened,
    /// until it opens them (default [`DEFAULT_UNOPENED_UPDATE_BUDGET`], 1 MiB; at most 16
    /// ids). Agents send a few updates (commands, modes) for a session before answering
    /// `session/new`; the rest is dropped and reported, to the application
    /// ([`AgentHandle::take_dropped_updates`](super::AgentHandle::take_dropped_updates)) and
    /// the observer, and a session opened later meets
    /// [`Error::UpdatesDropped`](crate::Error::UpdatesDropped) first.
    pub fn with_unopened_update_budget(mut self, bytes: usize) -> Self {
        self.unopened_update_budget = bytes;
        self
    }

    /// How many subagents (sessions the agent announced with `subagent_update`, at any depth)
    /// the connection follows at once (default [`DEFAULT_MAX_SUBAGENTS`], 64). At the limit,
    /// a subagent that is idle, has had every update taken and follows no children is retired
    /// to make room: its stream ends, and it is followed again (what its parent said of it
    /// kept) when an update or announcement comes for it. Without such a one, the new
    /// subagent is not followed, and its updates are dropped: the parent's stream says so
    /// with [`Error::SubagentNotFollowed`](crate::Error::SubagentNotFollowed). A followed
    /// subagent is forgotten with the session it belongs to.
    pub fn with_max_subagents(mut self, subagents: usize) -> Self {
        self.max_subagents = subagents;
        self
    }

    /// How many bytes of updates the queues of all followed subagents keep together, beside
    /// each one's own [session budget](Self::with_session_update_budget) (default
    /// [`DEFAULT_SUBAGENT_UPDATE_BUDGET`], 16 MiB). What does not fit is dropped and met in
    /// the subagent's stream as [`Error::UpdatesDropped`](crate::Error::UpdatesDropped).
    ///
    /// ```
    /// use acp_runtime::client::ClientOptions;
    ///
    /// let options = ClientOptions::default()
    ///     .with_subagents()
    ///     .with_max_subagents(8)
    ///     .with_subagent_update_budget(4 << 20);
    /// # drop(options);
    /// ```
    pub fn with_subagent_update_budget(mut self, bytes: usize) -> Self {
        self.subagent_update_budget = bytes;
        self
    }

    /// How many tool calls each session remembers for
    /// [`Session::tool_call`](super::Session::tool_call) (default [`DEFAULT_MAX_TOOL_CALLS`],
    /// 4096). Past it, the finished calls reported longest ago are forgotten first, then the
    /// unfinished ones; the updates themselves still reach the application.
    pub fn with_max_tool_calls(mut self, calls: usize) -> Self {
        self.max_tool_calls = calls;
        self
    }

    /// How many bytes each session's memory of its tool calls may take (default
    /// [`DEFAULT_TOOL_CALL_BUDGET`], 1 MiB); a call costs twice its id plus about 100 bytes.
    /// Forgets like [`with_max_tool_calls`](Self::with_max_tool_calls). Ids longer than
    /// [`MAX_TOOL_CALL_ID_BYTES`](super::MAX_TOOL_CALL_ID_BYTES) are never remembered: their
    /// update reaches the application as
    /// [`Error::InvalidUpdate`](crate::Error::InvalidUpdate), raw, with the reason.
    pub fn with_tool_call_budget(mut self, bytes: usize) -> Self {
        self.tool_call_budget = bytes;
        self
    }

    /// How many bytes the agent's requests in flight may hold together (default
    /// [`DEFAULT_IN_FLIGHT_BUDGET`](acp_jsonrpc::DEFAULT_IN_FLIGHT_BUDGET), 64 MiB; see
    /// [`ConnectionOptions::with_in_flight_budget`]). A request that can wait (a permission
    /// the user has not answered, `terminal/wait_for_exit`) holds its params meanwhile.
    pub fn with_in_flight_budget(mut self, bytes: usize) -> Self {
        self.connection = self.connection.with_in_flight_budget(bytes);
        self
    }

    /// The capabilities `initialize` will advertise.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("capabilities", &self.capabilities)
            .field("info", &self.info)
            .field("file_system", &self.fs.is_some())
            .field("terminals", &self.terminals.is_some())
            .finish_non_exhaustive()
    }
}
