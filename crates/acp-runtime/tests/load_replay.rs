//! `session/load` replays the history before answering; the client finds it in the session.

mod common;

use acp_jsonrpc::memory;
use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, ClientHandle, SessionClient, Turn};
use acp_runtime::client::{self, AutoAllow, ClientOptions};
use acp_types::*;
use common::within;

struct Remembers;

impl Agent for Remembers {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
        response.agent_capabilities.load_session = true;
        Ok(response)
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn load_session(
        &self,
        request: LoadSessionRequest,
        session: SessionClient,
    ) -> Result<LoadSessionResponse> {
        assert_eq!(session.id(), &request.session_id);
        session
            .replay([
                SessionUpdate::user_message_chunk("What is 2 + 2?"),
                SessionUpdate::agent_message_chunk("4"),
            ])
            .await?;
        Ok(LoadSessionResponse::new())
    }

    async fn prompt(&self, _: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        turn.message("still here").await?;
        Ok(StopReason::EndTurn.into())
    }
}

#[test]
fn load_replays_history_before_answering() {
    smol::block_on(async {
        let (client_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        let (_client, agent_driver) = agent::serve(
            Remembers,
            agent_end.reader,
            agent_end.writer,
            agent::AgentOptions::default(),
        );
        smol::spawn(agent_driver).detach();
        let (agent, driver) = client::connect(
            AutoAllow,
            client_end.reader,
            client_end.writer,
            ClientOptions::default(),
        );
        smol::spawn(driver).detach();
        agent.initialize().await.unwrap();

        let request = LoadSessionRequest::new(Vec::<McpServer>::new(), "/tmp", "stored-1");
        let (session, _) = within("load", agent.load_session(request)).await.unwrap();
        // The replay is there as soon as the load returns, in order.
        let first = session
            .try_next_update()
            .expect("replayed before the response")
            .unwrap();
        let second = session
            .try_next_update()
            .expect("replayed before the response")
            .unwrap();
        assert_eq!(first, SessionUpdate::user_message_chunk("What is 2 + 2?"));
        assert_eq!(second, SessionUpdate::agent_message_chunk("4"));
        assert!(session.try_next_update().is_none());

        // The loaded session is registered at the agent: it takes prompts.
        let turn = session.prompt(vec!["and now?".into()]).await.unwrap();
        assert_eq!(
            within("prompt", turn.end()).await.unwrap().stop_reason,
            StopReason::EndTurn
        );
    });
}
