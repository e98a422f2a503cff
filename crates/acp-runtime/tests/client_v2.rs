//! The v2 client side (feature `unstable-protocol-v2`): our v2 client against our v2 agent
//! over real pipes (acceptance, the end of a prompt's work from `idle`, permission answers,
//! idempotent retries, cancel), and the [`Conversation`] reducer's upsert rules (insta,
//! proptest).
#![cfg(feature = "unstable-protocol-v2")]

mod common;

use std::sync::{Arc, Mutex};

use acp_runtime::Result;
use acp_runtime::acp_types::Patch;
use acp_runtime::acp_types::v2::*;
use acp_runtime::agent::v2 as agent_v2;
use acp_runtime::client::v2::{self, Author, Conversation, State};
use acp_runtime::prelude::AgentOptions;
use common::versions::V2Asking;
use futures_lite::future;
use proptest::prelude::*;
use smol::Unblock;

/// Allows every permission request and keeps the conversation.
#[derive(Default, Clone)]
struct Keeps {
    chat: Arc<Mutex<Conversation>>,
}

impl v2::Client for Keeps {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        let option = request.options[0].option_id.clone();
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option)),
        ))
    }

    async fn session_update(&self, update: UpdateSessionNotification) {
        self.chat.lock().unwrap().apply(&update.update);
    }
}

fn connected(client: Keeps) -> (v2::Agent, std::thread::JoinHandle<()>) {
    let (agent_in, to_agent) = std::io::pipe().unwrap();
    let (from_agent, agent_out) = std::io::pipe().unwrap();
    let served = std::thread::spawn(move || {
        let (_client, driver) = agent_v2::serve(
            V2Asking,
            futures_lite::io::BufReader::new(Unblock::new(agent_in)),
            Unblock::new(agent_out),
            AgentOptions::default(),
        );
        let _ = future::block_on(driver);
    });
    let (agent, driver) = v2::connect(
        client,
        futures_lite::io::BufReader::new(Unblock::new(from_agent)),
        Unblock::new(to_agent),
        Default::default(),
    );
    smol::spawn(driver).detach();
    (agent, served)
}

#[test]
fn config_options_delete_and_logout_reach_the_agent_and_its_answers_come_back() {
    smol::block_on(async {
        let (agent, _served) = connected(Keeps::default());
        agent
            .initialize(InitializeRequest::new(
                ProtocolVersion::V2,
                Implementation::new("t", "1"),
            ))
            .await
            .unwrap();
        let session = agent
            .new_session(NewSessionRequest::new("/work"))
            .await
            .unwrap()
            .session_id;
        let on = SetSessionConfigOptionRequestKind::Boolean(
            SetSessionConfigOptionRequestKindBoolean::new(true),
        );
        let answer = agent
            .set_config_option(SetSessionConfigOptionRequest::new(
                session.clone(),
                "fast",
                on,
            ))
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&answer.config_options).unwrap(),
            serde_json::json!([{"configId": "fast", "name": "Fast", "type": "boolean", "currentValue": true}])
        );
        let by_id =
            SetSessionConfigOptionRequestKind::Id(SetSessionConfigOptionRequestKindId::new("x"));
        let refused = agent
            .set_config_option(SetSessionConfigOptionRequest::new(
                session.clone(),
                "fast",
                by_id,
            ))
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("`fast` is a boolean"),
            "{refused}"
        );
        // Unadvertised by this agent: method not found, one answer each.
        let deleted = agent
            .delete_session(DeleteSessionRequest::new(session))
            .await
            .unwrap_err();
        assert_eq!(
            deleted.code(),
            Some(acp_jsonrpc::ErrorCode::METHOD_NOT_FOUND)
        );
        let logout = agent.logout(LogoutAuthRequest::new()).await.unwrap_err();
        assert_eq!(
            logout.code(),
            Some(acp_jsonrpc::ErrorCode::METHOD_NOT_FOUND)
        );
    });
}

fn text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.as_str(),
            _ => "?",
        })
        .collect()
}

#[test]
fn a_prompt_is_accepted_then_finishes_with_the_idle_after_its_echo() {
    let keeps = Keeps::default();
    let (agent, served) = connected(keeps.clone());
    smol::block_on(async {
        let init = agent
            .initialize(InitializeRequest::new(
                ProtocolVersion::V2,
                Implementation::new("t", "1"),
            ))
            .await
            .unwrap();
        assert!(init.capabilities.session.is_some());
        let session = agent
            .new_session(NewSessionRequest::new("/work"))
            .await
            .unwrap()
            .session_id;
        let request = PromptRequest::new(session.clone(), vec![ContentBlock::from("look")])
            .with_idempotency_key(IdempotencyKey::new("k1"));
        let turn = agent.prompt(request.clone()).await.unwrap();
        assert_eq!(turn.finished().await.unwrap(), IdleStateUpdateKind::EndTurn);
        {
            let chat = keeps.chat.lock().unwrap();
            let messages: Vec<(Author, String)> = chat
                .messages()
                .iter()
                .map(|m| (m.author, text(&m.content)))
                .collect();
            assert_eq!(
                messages,
                [
                    (Author::User, "look".into()),
                    (Author::Agent, "hi there".into())
                ]
            );
            assert_eq!(chat.messages()[0].id, *turn.message_id());
            let call = &chat.tool_calls()[0];
            assert_eq!(
                (call.title.as_deref(), call.status.clone()),
                (Some("Look"), Some(ToolCallStatus::Completed))
            );
            assert_eq!(
                chat.state(),
                Some(&State::Idle(Some(IdleStateUpdateKind::EndTurn)))
            );
        }
        // A retry with the same key: the first answer, nothing run again.
        let again = agent.prompt(request).await.unwrap();
        assert_eq!(again.message_id(), turn.message_id());
        assert_eq!(
            again.finished().await.unwrap(),
            IdleStateUpdateKind::EndTurn
        );
        assert_eq!(keeps.chat.lock().unwrap().messages().len(), 2);
        // Cancel: the work ends `cancelled`.
        let waiting = agent
            .prompt(PromptRequest::new(
                session.clone(),
                vec![ContentBlock::from("wait")],
            ))
            .await
            .unwrap();
        agent.cancel(&session).await.unwrap();
        assert_eq!(
            waiting.finished().await.unwrap(),
            IdleStateUpdateKind::Cancelled
        );
    });
    // Closing our side ends the agent's input, and so its connection.
    agent.close();
    served.join().unwrap();
}

fn chunk(id: &str, text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(
        MessageId::new(id),
        ContentBlock::from(text),
    ))
}

#[test]
fn upserts_replace_what_they_set_clear_null_and_keep_what_they_omit() {
    let mut chat = Conversation::default();
    chat.apply(&SessionUpdate::AgentMessage(
        AgentMessage::new("m1").with_content(vec![ContentBlock::from("A")]),
    ));
    chat.apply(&chunk("m1", "B"));
    assert_eq!(text(&chat.messages()[0].content), "AB");
    // Omitted content: unchanged.
    chat.apply(&SessionUpdate::AgentMessage(AgentMessage::new("m1")));
    assert_eq!(text(&chat.messages()[0].content), "AB");
    // Full content replaces content and chunks; chunks append after it.
    chat.apply(&SessionUpdate::AgentMessage(
        AgentMessage::new("m1").with_content(vec![ContentBlock::from("C")]),
    ));
    chat.apply(&chunk("m1", "D"));
    assert_eq!(text(&chat.messages()[0].content), "CD");
    // null clears.
    let mut cleared = AgentMessage::new("m1");
    cleared.content = Patch::Clear;
    chat.apply(&SessionUpdate::AgentMessage(cleared));
    assert_eq!(text(&chat.messages()[0].content), "");
    // A tool call: set, keep, clear per field.
    chat.apply(&SessionUpdate::ToolCallUpdate(
        ToolCallUpdate::new("t")
            .with_title("Read")
            .with_kind(ToolKind::Read),
    ));
    let mut update = ToolCallUpdate::new("t").with_status(ToolCallStatus::InProgress);
    update.kind = Patch::Clear;
    chat.apply(&SessionUpdate::ToolCallUpdate(update));
    let call = &chat.tool_calls()[0];
    insta::assert_debug_snapshot!(call);
}

#[test]
fn terminal_output_is_joined_as_bytes_so_a_split_character_survives() {
    let mut chat = Conversation::default();
    // "é" is C3 A9: one byte in each chunk (base64 "ww==" and "qQ==").
    for data in ["ww==", "qQ=="] {
        chat.apply(&SessionUpdate::TerminalOutputChunk(
            TerminalOutputChunk::new("term", data),
        ));
    }
    assert_eq!(chat.terminals()[0].text(), "é");
    let changed = chat.apply(&SessionUpdate::TerminalOutputChunk(
        TerminalOutputChunk::new("term", "not base64!"),
    ));
    insta::assert_debug_snapshot!(changed);
}

proptest! {
    /// Chunks of one message in any split join to the whole text, and messages keep the order
    /// of their first appearance whatever the interleaving.
    #[test]
    fn chunks_join_per_message_in_any_split(whole in "[a-zé ]{0,40}", cuts in proptest::collection::vec(0usize..40, 0..6)) {
        let chars: Vec<char> = whole.chars().collect();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(chars.len())).collect();
        cuts.sort_unstable();
        let mut chat = Conversation::default();
        chat.apply(&chunk("first", "x"));
        let mut from = 0;
        for cut in cuts.into_iter().chain([chars.len()]) {
            let piece: String = chars[from..cut].iter().collect();
            chat.apply(&chunk("m", &piece));
            chat.apply(&chunk("first", ""));
            from = cut;
        }
        prop_assert_eq!(chat.messages().len(), 2);
        prop_assert_eq!(text(&chat.messages()[1].content), whole);
        prop_assert_eq!(chat.messages()[0].id.0.as_str(), "first");
    }
}
