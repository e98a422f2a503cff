//! The kit's protocol v2 part (feature `unstable-protocol-v2`): a scripted v2 agent and a
//! scripted v2 client over the recorded in-memory pair, the transcript pinned with v2's random
//! ids normalized, the permission branches and a cancel.
#![cfg(feature = "unstable-protocol-v2")]

use acp_runtime::acp_types::v2::*;
use acp_test::v2::{self, PermissionAnswer, ScriptedAgent, ScriptedClient, Step};

fn init() -> InitializeRequest {
    InitializeRequest::new(ProtocolVersion::V2, Implementation::new("test", "1"))
}

fn look() -> Step {
    Step::ToolCall(
        ToolCallUpdate::new("look")
            .with_title("Look")
            .with_status(ToolCallStatus::Pending),
    )
}

fn scripted_turn() -> ScriptedAgent {
    ScriptedAgent::new().turn([
        Step::think("Let me look."),
        look(),
        Step::permission(
            "Look?",
            [
                Step::ToolCall(ToolCallUpdate::new("look").with_status(ToolCallStatus::Completed)),
                Step::say("Looked."),
            ],
            [
                Step::ToolCall(ToolCallUpdate::new("look").with_status(ToolCallStatus::Failed)),
                Step::say("Not allowed."),
            ],
        ),
        Step::end(IdleStateUpdateKind::EndTurn),
    ])
}

/// One prompt's turn against `agent` with `client`: (stop reason, normalized transcript).
fn one_turn(agent: ScriptedAgent, client: ScriptedClient) -> (IdleStateUpdateKind, String) {
    smol::block_on(async {
        let pair = v2::connect(agent, client);
        pair.agent().initialize(init()).await.unwrap();
        let session = pair
            .agent()
            .new_session(NewSessionRequest::new("/work"))
            .await
            .unwrap();
        let turn = pair
            .agent()
            .prompt(PromptRequest::new(
                session.session_id,
                vec![ContentBlock::from("Look around")],
            ))
            .await
            .unwrap();
        let stop = turn.finished().await.unwrap();
        (stop, pair.finish().await.render())
    })
}

#[test]
fn an_allowed_turn_is_pinned_with_its_ids_normalized() {
    let client = ScriptedClient::new();
    let (stop, transcript) = one_turn(scripted_turn(), client.clone());
    assert_eq!(stop, IdleStateUpdateKind::EndTurn);
    assert_eq!(client.said(), ["Look around", "Looked."]);
    assert_eq!(client.permission_requests()[0].title, "Look?");
    insta::assert_snapshot!(transcript);
}

#[test]
fn a_rejected_permission_takes_the_other_branch() {
    let client = ScriptedClient::new().answer(PermissionAnswer::Reject);
    let (stop, _) = one_turn(scripted_turn(), client.clone());
    assert_eq!(stop, IdleStateUpdateKind::EndTurn);
    assert_eq!(client.said(), ["Look around", "Not allowed."]);
    let chat = client.conversation();
    assert_eq!(chat.tool_calls()[0].status, Some(ToolCallStatus::Failed));
}

#[test]
fn a_cancelled_turn_ends_cancelled_and_the_agent_saw_the_prompt() {
    let agent = ScriptedAgent::new().turn([
        Step::say("Working"),
        Step::WaitForCancel,
        Step::end(IdleStateUpdateKind::EndTurn),
    ]);
    let stop = smol::block_on(async {
        let pair = v2::connect(agent.clone(), ScriptedClient::new());
        pair.agent().initialize(init()).await.unwrap();
        let session = pair
            .agent()
            .new_session(NewSessionRequest::new("/work"))
            .await
            .unwrap();
        let turn = pair
            .agent()
            .prompt(PromptRequest::new(
                session.session_id.clone(),
                vec![ContentBlock::from("Go")],
            ))
            .await
            .unwrap();
        pair.agent().cancel(&session.session_id).await.unwrap();
        let stop = turn.finished().await.unwrap();
        pair.finish().await;
        stop
    });
    assert_eq!(stop, IdleStateUpdateKind::Cancelled);
    assert_eq!(agent.prompts().len(), 1);
}
