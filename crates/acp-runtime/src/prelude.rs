//! One glob import for writing an agent or a client: the protocol's types from
//! [`acp_types`], the runtime's error, and the traits, handles and options of both sides.
//!
//! Nothing here collides: `acp_types` keeps the JSON-RPC envelope's types out of its root,
//! and the runtime's names differ from the protocol's.
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
//!         if request.prompt.is_empty() {
//!             return Err(Error::invalid_params("an empty prompt"));
//!         }
//!         for block in &request.prompt {
//!             turn.message(block.clone()).await?;
//!         }
//!         Ok(StopReason::EndTurn.into())
//!     }
//! }
//! # let _ = agent::serve_stdio::<Echo>;
//! ```

pub use acp_types::*;

pub use crate::agent::{self, Agent, AgentOptions, ClientHandle, SessionClient, Turn};
pub use crate::client::{
    self, AgentHandle, AutoAllow, AutoReject, Client, ClientOptions, PromptTurn, Session,
};
pub use crate::{Error, Result};
