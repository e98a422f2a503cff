//! [`AgentOptions`]: what an agent's connection is configured with, beside its [`Agent`]
//! (super::Agent) implementation.

use std::sync::Arc;

use acp_jsonrpc::{ConnectionOptions, Observer};
use acp_types::{
    Implementation, SessionSystemPromptCapabilities, SessionSystemPromptModeCapabilities,
    SessionSystemPromptOverrideCapabilities,
};

/// Options of an agent's connection: its name and version, the limits of the connection,
/// and who observes its traffic. The counterpart of
/// [`ClientOptions`](crate::client::ClientOptions).
///
/// ```
/// use acp_runtime::agent::AgentOptions;
/// use acp_runtime::client::PrintTraffic;
///
/// let options = AgentOptions::default()
///     .with_info("my-agent", "1.2.0")
///     .with_max_in_flight_requests(64)
///     .with_observer(PrintTraffic);
/// assert_eq!(options.info().unwrap().name, "my-agent");
/// ```
#[derive(Clone)]
pub struct AgentOptions {
    info: Option<Implementation>,
    system_prompt: Option<SessionSystemPromptCapabilities>,
    connection: ConnectionOptions,
    pub(super) max_sessions: usize,
    pub(super) session_budget: usize,
    pub(super) shared_session_budget: Option<acp_jsonrpc::ByteBudget>,
}

/// Default of [`AgentOptions::with_max_sessions`]: 1024 sessions per connection.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;

/// Default of [`AgentOptions::with_session_budget`]: 16 MiB per connection.
pub const DEFAULT_SESSION_BUDGET: usize = 16 * 1024 * 1024;

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            info: None,
            system_prompt: None,
            connection: ConnectionOptions::default(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_budget: DEFAULT_SESSION_BUDGET,
            shared_session_budget: None,
        }
    }
}

impl AgentOptions {
    /// Sets the name and version the agent answers in `initialize` (`agentInfo`), unless its
    /// [`Agent::initialize`](super::Agent::initialize) sets one itself.
    pub fn with_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Some(Implementation::new(name, version));
        self
    }

    /// The name and version answered in `initialize`.
    pub fn info(&self) -> Option<&Implementation> {
        self.info.as_ref()
    }

    /// Advertises `sessionCapabilities.systemPrompt` (`{}`: the `append` mode), unless the
    /// agent's [`Agent::initialize`](super::Agent::initialize) sets it itself. The client's
    /// system prompt then reaches the agent's session
    /// ([`SessionSnapshot::system_prompt`](super::SessionSnapshot::system_prompt)); one in a mode
    /// not advertised is answered `-32602` before the agent sees the request.
    ///
    /// ```
    /// use acp_runtime::agent::AgentOptions;
    ///
    /// let options = AgentOptions::default().with_system_prompt();
    /// let advertised = options.system_prompt().unwrap();
    /// assert!(advertised.mode.is_none(), "append only");
    /// ```
    pub fn with_system_prompt(mut self) -> Self {
        self.system_prompt = Some(SessionSystemPromptCapabilities::new());
        self
    }

    /// Advertises `sessionCapabilities.systemPrompt` with `mode.override`: the client may
    /// append to the agent's instructions or replace them.
    ///
    /// ```
    /// use acp_runtime::agent::AgentOptions;
    ///
    /// let options = AgentOptions::default().with_system_prompt_override();
    /// let advertised = options.system_prompt().unwrap();
    /// assert!(advertised.mode.as_ref().unwrap().r#override.is_some());
    /// ```
    pub fn with_system_prompt_override(mut self) -> Self {
        self.system_prompt = Some(
            SessionSystemPromptCapabilities::new().with_mode(
                SessionSystemPromptModeCapabilities::new()
                    .with_override(SessionSystemPromptOverrideCapabilities::new()),
            ),
        );
        self
    }

    /// The system prompt capability `initialize` advertises (see
    /// [`with_system_prompt`](Self::with_system_prompt)).
    pub fn system_prompt(&self) -> Option<&SessionSystemPromptCapabilities> {
        self.system_prompt.as_ref()
    }

    /// Watches every message in and out, and every problem of the connection (see
    /// [`Observer`]).
    pub fn with_observer(mut self, observer: impl Observer) -> Self {
        self.connection = self.connection.with_observer(observer);
        self
    }

    /// Like [`with_observer`](Self::with_observer), for an observer that is shared.
    pub fn with_shared_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.connection = self.connection.with_shared_observer(observer);
        self
    }

    /// How many of the client's requests are handled at once; more are answered with an
    /// error (see [`ConnectionOptions::with_max_in_flight_requests`]).
    pub fn with_max_in_flight_requests(mut self, requests: usize) -> Self {
        self.connection = self.connection.with_max_in_flight_requests(requests);
        self
    }

    /// The longest line accepted from the client, in bytes (see
    /// [`ConnectionOptions::with_max_line_length`]).
    pub fn with_max_line_length(mut self, bytes: usize) -> Self {
        self.connection = self.connection.with_max_line_length(bytes);
        self
    }

    /// How many bytes of answers may wait to be written (see
    /// [`ConnectionOptions::with_reply_budget`]).
    pub fn with_reply_budget(mut self, bytes: usize) -> Self {
        self.connection = self.connection.with_reply_budget(bytes);
        self
    }

    /// How many sessions one connection keeps at once (default [`DEFAULT_MAX_SESSIONS`],
    /// 1024). A `session/new` (`load`, `resume`, `fork` of an id not open) beyond it is
    /// refused with `-32602` before it reaches the [`Agent`](super::Agent); `session/close`
    /// makes room.
    pub fn with_max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How many bytes the sessions of one connection keep together (default
    /// [`DEFAULT_SESSION_BUDGET`], 16 MiB): each its directories and MCP servers (as encoded
    /// JSON) and a few hundred bytes. Refused like [`with_max_sessions`](Self::with_max_sessions)
    /// past it. (Each directory is at most the platform's path limit,
    /// [`MAX_PATH_BYTES`](super::MAX_PATH_BYTES), whatever the budget.)
    pub fn with_session_budget(mut self, bytes: usize) -> Self {
        self.session_budget = bytes;
        self
    }

    /// Makes what the sessions of this connection keep draw on `budget` too, shared with
    /// other connections (a server's memory ceiling, under its reserve's rule: see
    /// `acp_jsonrpc::ByteBudget::with_reserve`): a session that does not fit is refused
    /// like one beyond [`with_session_budget`](Self::with_session_budget), before the
    /// [`Agent`](super::Agent) is called. (The v1 side's sessions; v2's keep their own
    /// budget only.)
    ///
    /// ```
    /// let server = acp_jsonrpc::ByteBudget::new(256 << 20);
    /// let options = acp_runtime::agent::AgentOptions::default().with_shared_session_budget(server);
    /// # let _ = options;
    /// ```
    pub fn with_shared_session_budget(mut self, budget: acp_jsonrpc::ByteBudget) -> Self {
        self.shared_session_budget = Some(budget);
        self
    }

    /// How many bytes the client's requests in flight may hold together (see
    /// [`ConnectionOptions::with_in_flight_budget`]).
    pub fn with_in_flight_budget(mut self, bytes: usize) -> Self {
        self.connection = self.connection.with_in_flight_budget(bytes);
        self
    }

    /// Makes the client's requests in flight draw from `budget` too, shared with other
    /// connections: a server gives one to all its clients (see
    /// [`ConnectionOptions::with_shared_in_flight_budget`]).
    pub fn with_shared_in_flight_budget(mut self, budget: acp_jsonrpc::ByteBudget) -> Self {
        self.connection = self.connection.with_shared_in_flight_budget(budget);
        self
    }

    /// Makes the answers waiting to be written to the client draw from `budget` too, shared
    /// with other connections: a server gives one to all its clients (see
    /// [`ConnectionOptions::with_shared_reply_budget`]).
    pub fn with_shared_reply_budget(mut self, budget: acp_jsonrpc::ByteBudget) -> Self {
        self.connection = self.connection.with_shared_reply_budget(budget);
        self
    }

    /// Every option of the underlying JSON-RPC connection at once (replaces the observer
    /// and limits set before).
    pub fn with_connection_options(mut self, options: ConnectionOptions) -> Self {
        self.connection = options;
        self
    }

    pub(crate) fn connection(&self) -> &ConnectionOptions {
        &self.connection
    }
}

impl From<ConnectionOptions> for AgentOptions {
    fn from(connection: ConnectionOptions) -> Self {
        AgentOptions {
            connection,
            ..AgentOptions::default()
        }
    }
}

impl std::fmt::Debug for AgentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOptions")
            .field("info", &self.info)
            .field("max_sessions", &self.max_sessions)
            .field("session_budget", &self.session_budget)
            .field("shared_session_budget", &self.shared_session_budget)
            .field("system_prompt", &self.system_prompt)
            .finish_non_exhaustive()
    }
}
