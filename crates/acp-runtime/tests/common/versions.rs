//! Small agents of both protocol versions (feature `unstable-protocol-v2`), for the suites
//! of the version router, the client connector, the v2 client and the v2 chain.

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

/// A v2 agent whose turn is a chunk, a tool call that asks permission, the reply, `idle`; a
/// prompt that says `wait` runs until cancelled (the turn then ends `cancelled` whatever it
/// returns).
pub struct V2Asking;

impl v2::Agent for V2Asking {
    async fn new_session(
        &self,
        _: wire::NewSessionRequest,
        _: &v2::Client,
    ) -> Result<wire::NewSessionResponse> {
        Ok(wire::NewSessionResponse::new("s1"))
    }

    async fn prompt(
        &self,
        request: wire::PromptRequest,
        turn: v2::Turn,
    ) -> Result<wire::IdleStateUpdateKind> {
        if matches!(request.prompt.first(), Some(wire::ContentBlock::Text(t)) if t.text == "wait") {
            turn.cancelled().await;
            return Ok(wire::IdleStateUpdateKind::Cancelled);
        }
        turn.say("hi ").await?;
        let call = wire::ToolCallId::new("c1");
        turn.tool_call(
            wire::ToolCallUpdate::new(call.clone())
                .with_title("Look")
                .with_status(wire::ToolCallStatus::Pending),
        )
        .await?;
        let options = vec![wire::PermissionOption::new(
            "yes",
            "Yes",
            wire::PermissionOptionKind::AllowOnce,
        )];
        let outcome = turn
            .request_permission(wire::RequestPermissionRequest::new(
                turn.session().id().clone(),
                "Look?",
                options,
            ))
            .await?;
        let status = match outcome {
            wire::RequestPermissionOutcome::Selected(_) => wire::ToolCallStatus::Completed,
            _ => wire::ToolCallStatus::Failed,
        };
        turn.tool_call(wire::ToolCallUpdate::new(call).with_status(status))
            .await?;
        turn.say("there").await?;
        Ok(wire::IdleStateUpdateKind::EndTurn)
    }

    /// Offers one boolean option, `fast`, set to what the client asks.
    async fn set_config_option(
        &self,
        request: wire::SetSessionConfigOptionRequest,
        _: &v2::Session,
    ) -> Result<wire::SetSessionConfigOptionResponse> {
        let wire::SetSessionConfigOptionRequestKind::Boolean(set) = request.kind else {
            return Err(acp_runtime::Error::invalid_params("`fast` is a boolean"));
        };
        let fast = wire::SessionConfigOption::new(
            "fast",
            "Fast",
            wire::SessionConfigOptionKind::Boolean(wire::SessionConfigBoolean::new(set.value)),
        );
        Ok(wire::SetSessionConfigOptionResponse::new(vec![fast]))
    }
}
