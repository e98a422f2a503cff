//! Small agents of both protocol versions (feature `unstable-protocol-v2`), for the suites
//! of the version router and the client connector.

use acp_runtime::acp_types::v2 as wire;
use acp_runtime::agent::v2;
use acp_runtime::prelude::*;

/// A v1 agent that names the client it met in its answer's `agentInfo`.
pub struct V1Agent;

impl Agent for V1Agent {
    async fn initialize(
        &self,
        request: InitializeRequest,
        _: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let met = request
            .client_info
            .map_or("nobody".to_owned(), |info| info.name);
        Ok(InitializeResponse::new(ProtocolVersion::LATEST)
            .with_agent_info(Implementation::new(format!("v1 met {met}"), "1.0")))
    }
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new("s1"))
    }
    async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// A v2 agent with the default `initialize` (which advertises sessions) that answers every
/// prompt with one sentence.
pub struct V2Agent;

impl v2::Agent for V2Agent {
    async fn new_session(
        &self,
        _: wire::NewSessionRequest,
        _: &v2::Client,
    ) -> Result<wire::NewSessionResponse> {
        Ok(wire::NewSessionResponse::new("s2"))
    }
    async fn prompt(
        &self,
        _: wire::PromptRequest,
        turn: v2::Turn,
    ) -> Result<wire::IdleStateUpdateKind> {
        turn.say("hello from v2").await?;
        Ok(wire::IdleStateUpdateKind::EndTurn)
    }
}
