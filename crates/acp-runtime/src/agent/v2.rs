//! The agent side of protocol v2 (feature `unstable-protocol-v2`): implement [`v2::Agent`](Agent),
//! serve it alone with [`serve`] (on stdio: [`serve_stdio`]) or beside a v1 agent with the
//! [version router](crate::router).
//!
//! v2 changes how a prompt lives: `session/prompt` is answered `{messageId}` as soon as the
//! prompt is accepted, and the turn is reported in `session/update`s: the `user_message`
//! echo, `state_update` `running`, the agent's messages, tool calls and plans (upserts), and
//! `state_update` `idle` with the stop reason. The runtime keeps that lifecycle, with the
//! rules v1 has (initialization first, sessions bounded per connection, one turn per session,
//! cancellation that wins):
//!
//! - A prompt sent during a turn waits for it, in order of arrival (at most
//!   [`MAX_HELD_PROMPTS`] per session); it is answered when it is accepted. `session/cancel`
//!   and `session/close` withdraw the waiting prompts (`-32800`) and cancel the turn, which
//!   ends `idle` with `stopReason: cancelled`; `session/close` answers once it has.
//! - A prompt with an `idempotencyKey` that was accepted before is answered with the first
//!   `messageId` and not run again (the last [`MAX_IDEMPOTENCY_KEYS`] keys per session); a
//!   retry that arrives while the first waits is answered when the first is.
//! - Messages carry agent-made `messageId`s ([`Turn::say`] streams one message's chunks), and
//!   an error from [`Agent::prompt`] ends the turn `idle` with `stopReason: error`.
//! - `session/resume` with `replayFrom: {"type": "start"}` replays the [`History`] the agent
//!   retains, then `replay_complete`, then a `state_update` with the session's current state
//!   (sent with or without replay), then the answer.
//! - Requests with a `null` id are refused (`-32600`), as v2 requires; `initialize` asking for
//!   a version below 2 gets `-32022` with `{requested, supported: [2]}`.
//!
//! ```
//! use acp_runtime::agent::v2::{self, Turn};
//! use acp_runtime::prelude::v2::{IdleStateUpdateKind, NewSessionRequest, NewSessionResponse, PromptRequest};
//! use acp_runtime::Result;
//!
//! struct Echo;
//!
//! impl v2::Agent for Echo {
//!     async fn new_session(&self, _: NewSessionRequest, _: &v2::Client) -> Result<NewSessionResponse> {
//!         Ok(NewSessionResponse::new(acp_runtime::agent::new_session_id().0))
//!     }
//!
//!     async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<IdleStateUpdateKind> {
//!         turn.say(format!("you sent {} blocks", request.prompt.len())).await?;
//!         Ok(IdleStateUpdateKind::EndTurn)
//!     }
//! }
//!
//! // Over stdio beside a v1 agent: `acp_runtime::router::router().with_v1(..).with_v2(Echo)`.
//! # let _ = v2::serve::<Echo, futures_lite::io::Empty, futures_lite::io::Sink>;
//! ```

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use acp_jsonrpc::Connection;
use futures_lite::{AsyncBufRead, AsyncWrite};

mod dispatch;
mod handler;
mod history;
mod session;
mod sessions;

pub use handler::Agent;
pub use history::{DEFAULT_HISTORY_BYTES, DEFAULT_HISTORY_SESSIONS, History, Retained};
pub use session::{Client, Session, Turn, new_message_id};
pub use sessions::{MAX_HELD_PROMPTS, MAX_IDEMPOTENCY_KEYS};

use super::AgentOptions;

/// Serves a v2 `agent` alone on this process's stdin and stdout until the client closes stdin,
/// on the calling thread and the same I/O path as [`agent::serve_stdio`](super::serve_stdio)
/// (so that v1 and v2 cost the same but for the protocol). A client asking for version 1 gets
/// `-32022`; serve both with the [version router](crate::router).
pub fn serve_stdio<A: Agent>(agent: A, options: AgentOptions) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some((pipes, reader, writer)) = crate::stdio::pipes()? {
        let (_client, driver) = serve(agent, reader, writer, options);
        return crate::stdio::run_on_pipes(&pipes, driver);
    }
    let (reader, writer) = crate::stdio::stdio()?;
    let (_client, driver) = serve(agent, reader, writer, options);
    crate::stdio::ended(smol::block_on(driver))
}

/// Serves a v2 `agent` over a reader and a writer, with the limits of `options` (sessions,
/// session bytes, connection options; `null` request ids are refused whatever they say).
/// Returns the agent's handle on its client and the connection's driver, which must be polled
/// for anything to happen; it resolves when the client closes the connection, cancelling the
/// turns still running.
pub fn serve<A: Agent, R, W>(
    agent: A,
    reader: R,
    writer: W,
    options: AgentOptions,
) -> (
    Client,
    impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<A, R, W>,
)
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let connection = options
        .connection()
        .clone()
        .with_null_request_ids_refused(true);
    let history = agent.history().cloned();
    let shared = Arc::new(session::Shared {
        rpc: OnceLock::new(),
        sessions: sessions::Sessions::new(
            options.max_sessions,
            options.session_budget,
            options.shared_session_budget.clone(),
        ),
        history,
        client: Mutex::new(None),
    });
    let dispatch = dispatch::Dispatch {
        agent: Arc::new(agent),
        shared: shared.clone(),
        init: Arc::default(),
        _end: Arc::new(dispatch::ConnectionEnd(shared.clone())),
    };
    let (rpc, driver) = Connection::new(reader, writer, dispatch, connection);
    shared.rpc.set(rpc).expect("set once");
    (Client { shared }, driver)
}
