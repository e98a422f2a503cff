//! The agent side: implement [`Agent`], serve it over any stream pair or stdio, and talk to the
//! client through [`ClientHandle`] and the session-scoped [`SessionClient`].
//!
//! The runtime keeps the protocol's rules so that the implementation does not have to:
//!
//! - `initialize` comes first. Requests before it are refused (`-32600`); requests pipelined
//!   right behind it wait for it to finish instead of racing it. The protocol version is
//!   negotiated here: the client's version when this runtime speaks it, else the latest.
//! - Capabilities are enforced both ways. Calls to the client that it did not advertise
//!   (`fs/*`, `terminal/*`, elicitation) fail locally with [`Error::NotAdvertised`](crate::Error::NotAdvertised) and send
//!   nothing; incoming calls to what this agent did not advertise (`session/load`, list, resume,
//!   close, delete, logout, prompt content types, MCP transports) are refused.
//! - Sessions live in a registry: ids from `session/new` are unique, `cwd` must be absolute,
//!   calls naming an unknown session get `-32002` with the id.
//! - At most one prompt runs per session. `session/cancel`, closing the session, or a
//!   permission request of the turn answered `cancelled` (in whatever order the client sends
//!   them) cancel the turn ([`Turn::cancelled`]): the calls to the client it waits on resolve
//!   at once as cancelled (withdrawn with `$/cancel_request`, so a client that never answers
//!   does not hang it), and the prompt answers `stopReason: cancelled` whatever the handler
//!   returns. See [`Turn`]'s "Cancellation". Updates sent during the turn are written before
//!   its response.
//! - `session/set_mode` and `session/set_config_option` are checked against what the session
//!   advertised.
//! - What the agent sends is checked against what the client advertised: `notice` and
//!   compaction updates, boolean config options, `plan_update` and `plan_removed` (`plan`),
//!   subagent updates, session messages and `session` tool call content (`subagents`) only
//!   go to a client that opted in. [`SessionClient::set_plan`] sends the old `plan` update to
//!   any other client.
//! - A client's `systemPrompt` on `session/new`, load or resume must be in a mode this agent
//!   advertises ([`AgentOptions::with_system_prompt`]); the session shows it
//!   ([`SessionSnapshot::system_prompt`]).
//!
//! The rules live in one place, shared with the client side: `src/rules.rs`.
//!
//! ```
//! use acp_runtime::prelude::*;
//!
//! struct Echo;
//!
//! impl Agent for Echo {
//!     async fn new_session(&self, _: NewSessionRequest, _: &ClientHandle) -> Result<NewSessionResponse> {
//!         Ok(NewSessionResponse::new(agent::new_session_id()))
//!     }
//!
//!     async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
//!         for block in &request.prompt {
//!             turn.message(block.clone()).await?;
//!         }
//!         Ok(StopReason::EndTurn.into())
//!     }
//! }
//!
//! // Over stdio: `agent::serve_stdio(Echo)` from `main`.
//! # let _ = agent::serve_stdio::<Echo>;
//! ```

use std::future::Future;
use std::sync::Arc;

use acp_jsonrpc::Connection;
use acp_types::SessionId;
use futures_lite::{AsyncBufRead, AsyncWrite};

mod dispatch;
mod file_content;
mod gate;
mod handler;
#[cfg(feature = "unstable-models")]
mod models;
mod options;
mod plan;
mod session;
mod snapshot;
mod state;
mod terminal;
mod unstable;
#[cfg(feature = "unstable-protocol-v2")]
pub mod v2;

use dispatch::AgentDispatch;
pub use handler::Agent;
pub use options::{AgentOptions, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_BUDGET};
pub use session::{ClientHandle, SessionClient, Turn};
pub use snapshot::SessionSnapshot;
use state::AgentState;
pub use terminal::{CommandResult, Terminal};

pub use crate::rules::{
    MAX_ADDITIONAL_DIRECTORIES, MAX_PATH_BYTES, SUPPORTED_PROTOCOL_VERSIONS, apply_config_value,
};

/// A new session id, unique within this process (`sess_<counter>_<random>`).
pub fn new_session_id() -> SessionId {
    SessionId::new(crate::unique_id::unique_id("sess"))
}

/// Serves `agent` over a reader and a writer. Returns the agent's handle on its client and the
/// connection's driver, which must be polled (on any executor) for anything to happen; it
/// resolves when the client closes the connection (its error converts into
/// [`crate::Error`], so `driver.await?` works).
///
pub fn serve<A: Agent, R, W>(
    agent: A,
    reader: R,
    writer: W,
    options: AgentOptions,
) -> (
    ClientHandle,
    impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<A, R, W>,
)
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let connection = options.connection().clone();
    let state = Arc::new(AgentState::new(options));
    let dispatch = AgentDispatch {
        agent: Arc::new(agent),
        state: state.clone(),
    };
    let (rpc, driver) = Connection::new(reader, writer, dispatch, connection);
    state.rpc.set(rpc.clone()).expect("set once");
    (ClientHandle { rpc, state }, driver)
}

/// Serves `agent` on this process's stdin and stdout until the client closes stdin. Runs the
/// connection on the calling thread.
pub fn serve_stdio<A: Agent>(agent: A) -> std::io::Result<()> {
    serve_stdio_with(agent, AgentOptions::default())
}

/// [`serve_stdio`] with options.
pub fn serve_stdio_with<A: Agent>(agent: A, options: AgentOptions) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some((pipes, reader, writer)) = crate::stdio::pipes()? {
        let (_client, driver) = serve(agent, reader, writer, options);
        return crate::stdio::run_on_pipes(&pipes, driver);
    }
    let (reader, writer) = crate::stdio::stdio()?;
    let (_client, driver) = serve(agent, reader, writer, options);
    crate::stdio::ended(smol::block_on(driver))
}
