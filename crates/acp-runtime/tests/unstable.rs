//! The unstable methods end to end, a runtime client against a runtime agent in memory: each
//! works when advertised, and is refused locally (nothing sent) when not.
#![cfg(feature = "unstable")]

mod common;

use std::sync::{Arc, Mutex};

use acp_jsonrpc::memory;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, SessionClient, Turn};
use acp_runtime::client::{self, AgentHandle, AutoAllow, Client, ClientOptions};
use acp_runtime::{Error, Result};
use acp_types::*;
use common::within;
use serde_json::json;

/// Advertises every unstable capability when `full`, none otherwise; keeps a log of what it
/// was asked.
#[derive(Clone, Default)]
struct Everything {
    full: bool,
    log: Arc<Mutex<Vec<String>>>,
}

impl Everything {
    fn note(&self, what: String) {
        self.log.lock().unwrap().push(what);
    }
}

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("valid")
}

impl Agent for Everything {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
        if self.full {
            response.agent_capabilities = from_json(json!({
                "sessionCapabilities": {"fork": {}, "archive": {}, "status": {}, "title": {}},
                "providers": {},
                "auth": {"status": {}},
                "mcpCapabilities": {"acp": true},
            }));
        }
        Ok(response)
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let asked = request.prompt[0].as_text().unwrap_or_default().to_owned();
        let sent = match asked.as_str() {
            "plan" => {
                turn.plan_update(from_json(
                    json!({"plan": {"type": "markdown", "planId": "p1", "content": "1. read"}}),
                ))
                .await
            }
            _ => turn.message(format!("cwd {}", turn.cwd().display())).await,
        };
        if let Err(Error::NotAdvertised { capability, .. }) = sent {
            turn.message(format!("refused: {capability}")).await?;
        }
        Ok(StopReason::EndTurn.into())
    }

    async fn fork_session(
        &self,
        request: ForkSessionRequest,
        source: SessionClient,
    ) -> Result<ForkSessionResponse> {
        self.note(format!(
            "fork of {} (known: {})",
            request.session_id,
            source.snapshot().is_some()
        ));
        Ok(ForkSessionResponse::new(agent::new_session_id()))
    }

    async fn archive_session(
        &self,
        request: ArchiveSessionRequest,
        _: SessionClient,
    ) -> Result<ArchiveSessionResponse> {
        self.note(format!("archive {}", request.session_id));
        Ok(ArchiveSessionResponse::new())
    }

    async fn unarchive_session(
        &self,
        request: UnarchiveSessionRequest,
        _: SessionClient,
    ) -> Result<UnarchiveSessionResponse> {
        self.note(format!("unarchive {}", request.session_id));
        Ok(UnarchiveSessionResponse::new())
    }

    async fn session_status(
        &self,
        _: SessionStatusRequest,
        _: SessionClient,
    ) -> Result<SessionStatusResponse> {
        Ok(SessionStatusResponse::new(SessionStatus::Saved))
    }

    async fn set_session_title(
        &self,
        request: SetSessionTitleRequest,
        _: SessionClient,
    ) -> Result<SetSessionTitleResponse> {
        self.note(format!("title {}", request.title));
        Ok(SetSessionTitleResponse::new(request.title))
    }

    async fn list_providers(
        &self,
        _: ListProvidersRequest,
        _: &ClientHandle,
    ) -> Result<ListProvidersResponse> {
        Ok(from_json(
            json!({"providers": [{"providerId": "openai", "supported": ["openai"], "required": false}]}),
        ))
    }

    async fn disable_provider(
        &self,
        request: DisableProviderRequest,
        _: &ClientHandle,
    ) -> Result<DisableProviderResponse> {
        self.note(format!("disable {}", request.provider_id));
        Ok(DisableProviderResponse::new())
    }

    async fn auth_status(
        &self,
        _: AuthStatusRequest,
        client: &ClientHandle,
    ) -> Result<AuthStatusResponse> {
        // Tells the client on the side, as an agent does after a login elsewhere.
        client
            .notify(&AuthStatusUpdateNotification::new(AuthState::Authenticated))
            .await?;
        Ok(AuthStatusResponse::new(AuthState::Authenticated))
    }

    async fn mcp_notification(&self, notification: MessageMcpNotification, _: &ClientHandle) {
        self.note(format!("mcp {}", notification.method));
    }
}

/// A client that records the auth updates it is told about.
#[derive(Clone, Default)]
struct Watcher {
    auth: Arc<Mutex<Vec<AuthState>>>,
}

impl Client for Watcher {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        AutoAllow.request_permission(request).await
    }

    async fn auth_status_update(&self, notification: AuthStatusUpdateNotification) {
        self.auth.lock().unwrap().push(notification.state);
    }
}

fn pair(agent_impl: Everything, client: Watcher, options: ClientOptions) -> AgentHandle {
    let (client_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (_client, agent_driver) = agent::serve(
        agent_impl,
        agent_end.reader,
        agent_end.writer,
        AgentOptions::default(),
    );
    smol::spawn(agent_driver).detach();
    let (agent, driver) = client::connect(client, client_end.reader, client_end.writer, options);
    smol::spawn(driver).detach();
    agent
}

async fn turn_text(session: &client::Session, text: &str) -> String {
    let mut turn = session.prompt(vec![text.into()]).await.unwrap();
    let mut said = String::new();
    while let Some(update) = turn.next().await {
        if let Ok(SessionUpdate::AgentMessageChunk(chunk)) = update {
            said.push_str(chunk.content.as_text().unwrap_or_default());
        }
    }
    turn.end().await.unwrap();
    said
}

#[test]
fn every_unstable_method_works_when_advertised() {
    smol::block_on(within("unstable methods", async {
        let agent_impl = Everything {
            full: true,
            ..Everything::default()
        };
        let log = agent_impl.log.clone();
        let watcher = Watcher::default();
        let auth = watcher.auth.clone();
        let agent = pair(agent_impl, watcher, ClientOptions::default());
        agent.initialize().await.unwrap();
        let dir = std::env::temp_dir();
        let session = agent.new_session(&dir).await.unwrap();

        // A fork is a session like any other: it prompts and streams, in its own directory.
        let fork = session.fork().await.unwrap();
        assert_ne!(fork.id(), session.id());
        assert_eq!(
            turn_text(&fork, "hi").await,
            format!("cwd {}", dir.display())
        );

        session.archive().await.unwrap();
        session.unarchive().await.unwrap();
        assert_eq!(session.status().await.unwrap(), SessionStatus::Saved);
        session.set_title("Notes").await.unwrap();
        let providers = agent.list_providers().await.unwrap();
        assert_eq!(providers.providers[0].provider_id.as_str(), "openai");
        agent.disable_provider("openai").await.unwrap();
        assert_eq!(
            agent.auth_status().await.unwrap().state,
            AuthState::Authenticated
        );
        agent
            .mcp_message(from_json(
                json!({"serverId": "srv", "requestId": "r1", "method": "tools/list"}),
            ))
            .await
            .unwrap();
        // The notification is handled in order, before the next request's answer.
        session.set_title("Done").await.unwrap();

        assert_eq!(*auth.lock().unwrap(), [AuthState::Authenticated]);
        assert_eq!(
            *log.lock().unwrap(),
            [
                format!("fork of {} (known: true)", session.id()),
                format!("archive {}", session.id()),
                format!("unarchive {}", session.id()),
                "title Notes".to_owned(),
                "disable openai".to_owned(),
                "mcp tools/list".to_owned(),
                "title Done".to_owned(),
            ]
        );
    }));
}

#[test]
fn unadvertised_unstable_methods_are_refused_locally() {
    smol::block_on(within("unstable refusals", async {
        let agent_impl = Everything::default();
        let log = agent_impl.log.clone();
        let agent = pair(agent_impl, Watcher::default(), ClientOptions::default());
        agent.initialize().await.unwrap();
        let session = agent.new_session(std::env::temp_dir()).await.unwrap();
        let refused = |result: Result<()>| match result {
            Err(Error::NotAdvertised { capability, .. }) => capability,
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert_eq!(
            refused(session.fork().await.map(drop)),
            "sessionCapabilities.fork"
        );
        assert_eq!(
            refused(session.archive().await),
            "sessionCapabilities.archive"
        );
        assert_eq!(
            refused(session.status().await.map(drop)),
            "sessionCapabilities.status"
        );
        assert_eq!(
            refused(session.set_title("x").await),
            "sessionCapabilities.title"
        );
        assert_eq!(refused(agent.list_providers().await.map(drop)), "providers");
        assert_eq!(refused(agent.auth_status().await.map(drop)), "auth.status");
        let message =
            from_json(json!({"serverId": "srv", "requestId": "r1", "method": "tools/list"}));
        assert_eq!(
            refused(agent.mcp_message(message).await),
            "mcpCapabilities.acp"
        );
        assert!(log.lock().unwrap().is_empty(), "nothing reached the agent");

        // Plan updates go only to a client that advertised `plan`.
        assert_eq!(turn_text(&session, "plan").await, "refused: plan");
        let mut caps = ClientCapabilities::default();
        caps.plan = Some(from_json(json!({})));
        let agent = pair(
            Everything::default(),
            Watcher::default(),
            ClientOptions::default().with_capabilities(caps),
        );
        agent.initialize().await.unwrap();
        let session = agent.new_session(std::env::temp_dir()).await.unwrap();
        let mut turn = session.prompt(vec!["plan".into()]).await.unwrap();
        let first = turn.next().await.unwrap().unwrap();
        assert!(matches!(first, SessionUpdate::PlanUpdate(_)), "{first:?}");
        turn.end().await.unwrap();
    }));
}
