//! The stable session methods and elicitation working end to end, a runtime client against a
//! runtime agent in memory: resume, list (page after page), delete, logout, the whole answer
//! kept by `Session`, and elicitation in form and url mode with its completion.

mod common;

use std::sync::{Arc, Mutex};

use acp_jsonrpc::memory;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, SessionClient, Turn};
use acp_runtime::client::{self, AgentHandle, AutoAllow, Client, ClientOptions};
use acp_runtime::{Error, Result};
use acp_types::*;
use common::within;
use serde_json::json;

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("valid")
}

/// Stores sessions; lists them two per page; elicits on prompt.
#[derive(Clone, Default)]
struct Keeper {
    log: Arc<Mutex<Vec<String>>>,
}

impl Agent for Keeper {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
        response.agent_capabilities = from_json(json!({
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}},
            "auth": {"logout": {}},
        }));
        Ok(response)
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(from_json(json!({
            "sessionId": agent::new_session_id(),
            "_meta": {"vendor": {"tier": "gold"}},
        })))
    }

    async fn resume_session(
        &self,
        request: ResumeSessionRequest,
        session: SessionClient,
    ) -> Result<ResumeSessionResponse> {
        self.log.lock().unwrap().push(format!(
            "resume {} in {}",
            request.session_id,
            session.snapshot().unwrap().cwd().display()
        ));
        Ok(ResumeSessionResponse::new())
    }

    async fn list_sessions(
        &self,
        request: ListSessionsRequest,
        _: &ClientHandle,
    ) -> Result<ListSessionsResponse> {
        let page: usize = request.cursor.as_deref().unwrap_or("0").parse().unwrap();
        let sessions: Vec<SessionInfo> = (page * 2..page * 2 + 2)
            .filter(|n| *n < 5)
            .map(|n| SessionInfo::new(format!("stored-{n}"), "/work"))
            .collect();
        let mut response = ListSessionsResponse::new(sessions);
        response.next_cursor = (page < 2).then(|| (page + 1).to_string());
        Ok(response)
    }

    async fn delete_session(
        &self,
        request: DeleteSessionRequest,
        _: SessionClient,
    ) -> Result<DeleteSessionResponse> {
        self.log
            .lock()
            .unwrap()
            .push(format!("delete {}", request.session_id));
        Ok(DeleteSessionResponse::new())
    }

    async fn logout(&self, _: LogoutRequest, _: &ClientHandle) -> Result<LogoutResponse> {
        self.log.lock().unwrap().push("logout".into());
        Ok(LogoutResponse::new())
    }

    async fn prompt(&self, _: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let schema: ElicitationSchema = from_json(json!({
            "type": "object",
            "properties": {"name": {"type": "string", "title": "Name"}},
            "required": ["name"],
        }));
        let form = turn.elicit_form("Who are you?", schema).await?;
        let url = turn
            .elicit_url("Sign in", "login-1", "https://example.com/login")
            .await;
        turn.elicitation_complete("login-1").await?;
        turn.message(format!(
            "form: {}; url: {}",
            serde_json::to_value(&form).unwrap()["action"],
            match url {
                Err(Error::NotAdvertised { capability, .. }) => format!("refused ({capability})"),
                other => format!("{other:?}"),
            }
        ))
        .await?;
        Ok(StopReason::EndTurn.into())
    }
}

/// Fills every form with a name; records completions.
#[derive(Clone, Default)]
struct FormFiller {
    completed: Arc<Mutex<Vec<String>>>,
}

impl Client for FormFiller {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        AutoAllow.request_permission(request).await
    }

    async fn create_elicitation(
        &self,
        request: CreateElicitationRequest,
    ) -> Result<CreateElicitationResponse> {
        assert!(matches!(
            request.kind,
            CreateElicitationRequestKind::Form(_)
        ));
        Ok(from_json(
            json!({"action": "accept", "content": {"name": "Ada"}}),
        ))
    }

    async fn elicitation_complete(&self, notification: CompleteElicitationNotification) {
        self.completed
            .lock()
            .unwrap()
            .push(notification.elicitation_id.to_string());
    }
}

fn connect(keeper: Keeper, filler: FormFiller) -> AgentHandle {
    let (client_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (_client, agent_driver) = agent::serve(
        keeper,
        agent_end.reader,
        agent_end.writer,
        AgentOptions::default(),
    );
    smol::spawn(agent_driver).detach();
    let mut caps = ClientCapabilities::default();
    caps.elicitation = Some(from_json(json!({"form": {}})));
    let options = ClientOptions::default().with_capabilities(caps);
    let (agent, driver) = client::connect(filler, client_end.reader, client_end.writer, options);
    smol::spawn(driver).detach();
    agent
}

#[test]
fn resume_list_delete_and_logout() {
    smol::block_on(within("session methods", async {
        let keeper = Keeper::default();
        let log = keeper.log.clone();
        let agent = connect(keeper, FormFiller::default());
        agent.initialize().await.unwrap();

        let listed = agent.list_all_sessions(None).await.unwrap();
        let ids: Vec<_> = listed.iter().map(|s| s.session_id.to_string()).collect();
        assert_eq!(
            ids,
            ["stored-0", "stored-1", "stored-2", "stored-3", "stored-4"]
        );

        let (session, _) = agent
            .resume_session(ResumeSessionRequest::new("stored-3", "/work"))
            .await
            .unwrap();
        assert_eq!(session.id().as_str(), "stored-3");
        agent.delete_session("stored-4").await.unwrap();
        agent.logout().await.unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            ["resume stored-3 in /work", "delete stored-4", "logout"]
        );
    }));
}

#[test]
fn a_session_keeps_the_whole_answer() {
    smol::block_on(within("session answer", async {
        let agent = connect(Keeper::default(), FormFiller::default());
        agent.initialize().await.unwrap();
        let session = agent.new_session("/work").await.unwrap();
        assert_eq!(
            serde_json::to_value(session.meta().unwrap()).unwrap(),
            json!({"vendor": {"tier": "gold"}})
        );

        // What agents of the seed era still send, not in this schema, is kept all the same.
        let (mut peer, endpoint) = common::RawPeer::new();
        let (agent, driver) = client::connect(
            AutoAllow,
            endpoint.reader,
            endpoint.writer,
            ClientOptions::default(),
        );
        smol::spawn(driver).detach();
        let answer = async {
            let init = peer.recv().await;
            peer.send(
                json!({"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": 1}}),
            )
            .await;
            let new = peer.recv().await;
            peer.send(json!({"jsonrpc": "2.0", "id": new["id"], "result": {"sessionId": "s1",
                "models": {"currentModelId": "fast", "availableModels": [{"modelId": "fast", "name": "Fast"}]}}}))
                .await;
        };
        let open = async {
            agent.initialize().await.unwrap();
            agent.new_session("/work").await.unwrap()
        };
        let (session, ()) = futures_lite::future::zip(open, answer).await;
        let answer: serde_json::Value =
            serde_json::from_str(session.answer().unwrap().get()).unwrap();
        assert_eq!(answer["models"]["currentModelId"], "fast");
    }));
}

#[test]
fn elicitation_in_form_mode_and_completion_reach_the_client() {
    smol::block_on(within("elicitation", async {
        let filler = FormFiller::default();
        let completed = filler.completed.clone();
        let agent = connect(Keeper::default(), filler);
        agent.initialize().await.unwrap();
        let session = agent.new_session("/work").await.unwrap();
        let mut turn = session.prompt(vec!["hi".into()]).await.unwrap();
        let mut said = String::new();
        while let Some(update) = turn.next().await {
            if let Ok(SessionUpdate::AgentMessageChunk(chunk)) = update {
                said.push_str(chunk.content.as_text().unwrap_or_default());
            }
        }
        turn.end().await.unwrap();
        // The client advertised form mode only: the url request was refused before sending.
        assert_eq!(said, r#"form: "accept"; url: refused (elicitation.url)"#);
        assert_eq!(*completed.lock().unwrap(), ["login-1"]);
    }));
}
