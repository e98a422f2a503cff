//! The seed-era model selection (feature `unstable-models`): a client against an agent that
//! still sends `models` (raw JSON), an agent against a raw client, and a runtime agent against
//! a runtime client in memory.
#![cfg(feature = "unstable-models")]

mod common;

use std::sync::{Arc, Mutex};

use acp_jsonrpc::memory;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, SessionClient, Turn};
use acp_runtime::client::{self, AgentHandle, AutoAllow, ClientOptions};
use acp_runtime::{Error, Result};
use acp_types::models::{
    ModelInfo, SessionModelState, SetSessionModelRequest, SetSessionModelResponse,
};
use acp_types::*;
use common::{RawPeer, within};
use serde_json::json;

const MODELS: &str = r#"{"currentModelId": "fast", "availableModels": [
    {"modelId": "fast", "name": "Fast"},
    {"modelId": "deep", "name": "Deep", "description": "Slow and thorough"}]}"#;

fn models_json() -> serde_json::Value {
    serde_json::from_str(MODELS).unwrap()
}

/// A client on a raw agent that answered `initialize` and `session/new` (with `answer`).
async fn client_with_session(answer: serde_json::Value) -> (AgentHandle, RawPeer, client::Session) {
    let (mut peer, endpoint) = RawPeer::new();
    let (agent, driver) = client::connect(
        AutoAllow,
        endpoint.reader,
        endpoint.writer,
        ClientOptions::default(),
    );
    smol::spawn(driver).detach();
    let init = agent.initialize();
    let reply = async {
        let request = peer.recv().await;
        assert_eq!(request["method"], "initialize");
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"],
            "result": {"protocolVersion": 1, "agentCapabilities": {}}}))
            .await;
    };
    let (init, ()) = futures_lite::future::zip(init, reply).await;
    init.unwrap();
    let create = agent.new_session("/tmp");
    let reply = async {
        let request = peer.recv().await;
        assert_eq!(request["method"], "session/new");
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": answer}))
            .await;
    };
    let (session, ()) = futures_lite::future::zip(create, reply).await;
    (agent, peer, session.unwrap())
}

#[test]
fn a_client_reads_and_sets_the_models_an_agent_still_sends() {
    smol::block_on(within("models against a raw agent", async {
        let (_agent, mut peer, session) =
            client_with_session(json!({"sessionId": "s1", "models": models_json()})).await;
        let models = session.models().expect("the answer's models");
        assert_eq!(models.current_model_id.as_str(), "fast");
        let ids: Vec<&str> = models
            .available_models
            .iter()
            .map(|m| m.model_id.as_str())
            .collect();
        assert_eq!(ids, ["fast", "deep"]);
        assert_eq!(
            models.available_models[1].description.as_deref(),
            Some("Slow and thorough")
        );

        // On the wire: `session/set_model` with the session and the model.
        let set = session.set_model("deep");
        let reply = async {
            let request = peer.recv().await;
            assert_eq!(request["method"], "session/set_model");
            assert_eq!(
                request["params"],
                json!({"sessionId": "s1", "modelId": "deep"})
            );
            peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
                .await;
        };
        let (set, ()) = futures_lite::future::zip(set, reply).await;
        set.unwrap();
        assert_eq!(session.models().unwrap().current_model_id.as_str(), "deep");

        // A model the session did not advertise is refused without sending anything: the next
        // message the agent sees is the prompt after it.
        let refused = session.set_model("gpt-9").await;
        assert!(
            matches!(&refused, Err(Error::Invalid(m)) if m.contains("unknown model `gpt-9`")),
            "{refused:?}"
        );
        assert_eq!(session.models().unwrap().current_model_id.as_str(), "deep");
        let _turn = session.prompt(vec!["hi".into()]).await.unwrap();
        assert_eq!(peer.recv().await["method"], "session/prompt");
    }));
}

#[test]
fn a_session_without_models_refuses_set_model_locally() {
    smol::block_on(within("no models", async {
        let (_agent, mut peer, session) = client_with_session(json!({"sessionId": "s1"})).await;
        assert_eq!(session.models(), None);
        let refused = session.set_model("fast").await;
        assert!(
            matches!(&refused, Err(Error::Invalid(m)) if m.contains("advertised no models")),
            "{refused:?}"
        );
        let _turn = session.prompt(vec!["hi".into()]).await.unwrap();
        assert_eq!(peer.recv().await["method"], "session/prompt");
    }));
}

/// Offers the models in every session it opens and switches them.
#[derive(Clone, Default)]
struct Picker {
    log: Arc<Mutex<Vec<String>>>,
}

/// Offers the models but leaves `set_model` to the trait's default.
struct Offers;

impl Agent for Offers {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        let id = agent::new_session_id();
        client.offer_models(id.clone(), offered());
        Ok(NewSessionResponse::new(id))
    }

    async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
        Ok(StopReason::EndTurn.into())
    }
}

fn offered() -> SessionModelState {
    SessionModelState::new(
        vec![
            ModelInfo::new("fast", "Fast"),
            ModelInfo::new("deep", "Deep").with_description("Slow and thorough"),
        ],
        "fast",
    )
}

impl Agent for Picker {
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
        client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        let id = agent::new_session_id();
        client.offer_models(id.clone(), offered());
        Ok(NewSessionResponse::new(id))
    }

    async fn load_session(
        &self,
        _: LoadSessionRequest,
        session: SessionClient,
    ) -> Result<LoadSessionResponse> {
        session.offer_models(offered());
        Ok(LoadSessionResponse::new())
    }

    async fn prompt(&self, _: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let current = turn.current_model_id().map(|m| m.to_string());
        turn.message(format!("model {}", current.unwrap_or_default()))
            .await?;
        Ok(StopReason::EndTurn.into())
    }

    async fn set_model(
        &self,
        request: SetSessionModelRequest,
        session: SessionClient,
    ) -> Result<SetSessionModelResponse> {
        self.log.lock().unwrap().push(format!(
            "{} from {} to {}",
            session.id(),
            session.current_model_id().unwrap(),
            request.model_id
        ));
        Ok(SetSessionModelResponse::new())
    }
}

fn pair(picker: impl Agent) -> AgentHandle {
    let (client_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (_client, agent_driver) = agent::serve(
        picker,
        agent_end.reader,
        agent_end.writer,
        AgentOptions::default(),
    );
    smol::spawn(agent_driver).detach();
    let (agent, driver) = client::connect(
        AutoAllow,
        client_end.reader,
        client_end.writer,
        ClientOptions::default(),
    );
    smol::spawn(driver).detach();
    agent
}

async fn said(session: &client::Session) -> String {
    let mut turn = session.prompt(vec!["which".into()]).await.unwrap();
    let mut text = String::new();
    while let Some(update) = turn.next().await {
        if let SessionUpdate::AgentMessageChunk(chunk) = update.unwrap() {
            text.push_str(chunk.content.as_text().unwrap_or_default());
        }
    }
    text
}

#[test]
fn a_runtime_agent_offers_models_and_switches_them() {
    smol::block_on(within("runtime pair", async {
        let picker = Picker::default();
        let agent = pair(picker.clone());
        agent.initialize().await.unwrap();
        let session = agent.new_session("/tmp").await.unwrap();
        assert_eq!(session.models(), Some(offered()));
        assert_eq!(said(&session).await, "model fast");

        session.set_model("deep").await.unwrap();
        assert_eq!(session.models().unwrap().current_model_id.as_str(), "deep");
        assert_eq!(said(&session).await, "model deep");
        assert_eq!(
            *picker.log.lock().unwrap(),
            [format!("{} from fast to deep", session.id())]
        );
        assert!(matches!(
            session.set_model("gpt-9").await,
            Err(Error::Invalid(_))
        ));

        // `session/load` answers carry them too.
        let load = LoadSessionRequest::new(Vec::<McpServer>::new(), "/tmp", session.id().clone());
        let (loaded, _) = agent.load_session(load).await.unwrap();
        assert_eq!(loaded.models(), Some(offered()));
    }));
}

#[test]
fn the_default_hook_answers_method_not_found() {
    smol::block_on(within("default hook", async {
        let agent = pair(Offers);
        agent.initialize().await.unwrap();
        let session = agent.new_session("/tmp").await.unwrap();
        let error = session.set_model("deep").await.unwrap_err();
        assert!(
            matches!(&error, Error::Rpc(e) if e.code == acp_jsonrpc::ErrorCode::METHOD_NOT_FOUND),
            "{error:?}"
        );
        // Not recorded: the agent did not switch.
        assert_eq!(session.models().unwrap().current_model_id.as_str(), "fast");
    }));
}

#[test]
fn the_agent_runtime_checks_set_model_against_the_offer() {
    smol::block_on(within("agent rules", async {
        let (mut peer, endpoint) = RawPeer::new();
        let picker = Picker::default();
        let (_client, driver) = agent::serve(
            picker.clone(),
            endpoint.reader,
            endpoint.writer,
            AgentOptions::default(),
        );
        smol::spawn(driver).detach();
        peer.initialize(json!({})).await;
        let created = peer
            .request(1, "session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await;
        // The answer carries the offered models as the seed-era `models` member.
        assert_eq!(created["result"]["models"], models_json(), "{created}");
        let id = created["result"]["sessionId"].clone();

        let unknown_model = peer
            .request(
                2,
                "session/set_model",
                json!({"sessionId": id, "modelId": "gpt-9"}),
            )
            .await;
        assert_eq!(unknown_model["error"]["code"], -32602, "{unknown_model}");
        let unknown_session = peer
            .request(
                3,
                "session/set_model",
                json!({"sessionId": "nope", "modelId": "deep"}),
            )
            .await;
        assert_eq!(
            unknown_session["error"]["code"], -32002,
            "{unknown_session}"
        );
        let bad_params = peer
            .request(4, "session/set_model", json!({"sessionId": id}))
            .await;
        assert_eq!(bad_params["error"]["code"], -32602, "{bad_params}");
        assert!(picker.log.lock().unwrap().is_empty());

        let set = peer
            .request(
                5,
                "session/set_model",
                json!({"sessionId": id, "modelId": "deep"}),
            )
            .await;
        assert_eq!(set["result"], json!({}), "{set}");
        assert_eq!(picker.log.lock().unwrap().len(), 1);
    }));
}
