//! Each protocol rule of `src/rules.rs`, on both sides: the agent's runtime answering a client
//! that breaks it, and the client's runtime refusing to break it (nothing sent) or reporting
//! an agent that does.

mod common;

use std::sync::{Arc, Mutex};

use acp_jsonrpc::{Observer, Problem};
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, SessionClient, Turn};
use acp_runtime::client::{self, AgentHandle, AutoAllow, ClientOptions};
use acp_runtime::{Error, Result};
use acp_types::*;
use common::{RawPeer, serve_agent, within};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// The agent side: a raw client breaks the rules against a runtime agent.

/// An agent that advertises nothing optional, offers a mode and a select option in every
/// session, and on prompt sends the update its text names.
struct Plain;

fn update(value: Value) -> SessionUpdate {
    serde_json::from_value(value).expect("a valid update")
}

impl Agent for Plain {
    async fn new_session(
        &self,
        request: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        let mut response = NewSessionResponse::new(agent::new_session_id());
        response.modes = Some(SessionModeState::new(
            "ask",
            vec![SessionMode::new("ask", "Ask")],
        ));
        let mut options = vec![SessionConfigOption::new(
            "model",
            "Model",
            SessionConfigSelect::new("fast", vec![SessionConfigSelectOption::new("fast", "Fast")]),
        )];
        if request.cwd.ends_with("boolean") {
            options.push(SessionConfigOption::new(
                "web",
                "Web",
                SessionConfigBoolean::new(true),
            ));
        }
        response.config_options = Some(options);
        Ok(response)
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let asked = request.prompt[0].as_text().unwrap_or_default().to_owned();
        let sent = match asked.as_str() {
            "notice" => turn
                .update(update(json!({"sessionUpdate": "notice", "severity": "info", "title": "hi"})))
                .await,
            "compaction" => turn
                .update(update(json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"})))
                .await,
            "boolean" => {
                turn.config_option_update(vec![SessionConfigOption::new(
                    "web",
                    "Web",
                    SessionConfigBoolean::new(false),
                )])
                .await
            }
            _ => Ok(()),
        };
        let report = match sent {
            Ok(()) => "sent".to_owned(),
            Err(Error::NotAdvertised { capability, .. }) => format!("refused: {capability}"),
            Err(other) => format!("failed: {other}"),
        };
        turn.message(report).await?;
        Ok(StopReason::EndTurn.into())
    }

    async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        session: SessionClient,
    ) -> Result<SetSessionConfigOptionResponse> {
        let options = session
            .snapshot()
            .and_then(|s| s.config_options().map(<[_]>::to_vec))
            .unwrap_or_default();
        Ok(SetSessionConfigOptionResponse::new(
            agent::apply_config_value(options, &request),
        ))
    }
}

fn serve() -> RawPeer {
    serve_agent(Plain, AgentOptions::default())
}

async fn session(peer: &mut RawPeer, id: i64, cwd: &str) -> Value {
    let response = peer
        .request(id, "session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    response["result"]["sessionId"].clone()
}

/// An initialized agent and a session (id 1) opened on it in `/tmp`.
async fn serve_with_session() -> (RawPeer, Value) {
    let mut peer = serve();
    peer.initialize(json!({})).await;
    let id = session(&mut peer, 1, "/tmp").await;
    (peer, id)
}

fn error_of(response: &Value) -> (i64, String) {
    let error = &response["error"];
    (
        error["code"].as_i64().unwrap_or_default(),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The text of the last `agent_message_chunk` before the prompt's response.
async fn prompt_report(peer: &mut RawPeer, id: i64, session: &Value, text: &str) -> String {
    peer.send_prompt(id, session, text).await;
    let messages = peer.recv_until_response(id).await;
    messages
        .iter()
        .rev()
        .find_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn agent_answers_an_unadvertised_method_with_32601() {
    smol::block_on(within("agent_method", async {
        let mut peer = serve();
        peer.initialize(json!({})).await;
        let response = peer
            .request(
                1,
                "session/load",
                json!({"sessionId": "s", "cwd": "/tmp", "mcpServers": []}),
            )
            .await;
        assert_eq!(error_of(&response).0, -32601);
        assert_eq!(
            response["error"]["data"]["reason"],
            "this agent does not advertise `loadSession`"
        );
    }));
}

#[test]
fn agent_refuses_relative_directories() {
    smol::block_on(within("absolute_cwd", async {
        let mut peer = serve();
        peer.initialize(json!({})).await;
        let response = peer
            .request(
                1,
                "session/new",
                json!({"cwd": "relative", "mcpServers": []}),
            )
            .await;
        assert_eq!(
            error_of(&response),
            (
                -32602,
                "cwd must be an absolute path, got `relative`".into()
            )
        );
        let response = peer
            .request(2, "session/new", json!({"cwd": "/tmp", "additionalDirectories": ["also/relative"], "mcpServers": []}))
            .await;
        assert_eq!(
            error_of(&response),
            (
                -32602,
                "additionalDirectories must be an absolute path, got `also/relative`".into()
            )
        );
    }));
}

#[test]
fn agent_refuses_unadvertised_mcp_transports_and_prompt_content() {
    smol::block_on(within("mcp_servers, prompt_content", async {
        let mut peer = serve();
        peer.initialize(json!({})).await;
        let response = peer
            .request(1, "session/new", json!({"cwd": "/tmp", "mcpServers": [{"type": "http", "name": "web", "url": "http://x", "headers": []}]}))
            .await;
        assert_eq!(
            error_of(&response),
            (-32602, "MCP server `web` over http needs `mcpCapabilities.http`, which this agent does not advertise".into())
        );
        let id = session(&mut peer, 2, "/tmp").await;
        let response = peer
            .request(3, "session/prompt", json!({"sessionId": id, "prompt": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}))
            .await;
        assert_eq!(
            error_of(&response),
            (-32602, "a prompt with an image needs `promptCapabilities.image`, which this agent does not advertise".into())
        );
    }));
}

#[test]
fn agent_checks_modes_config_values_and_unknown_sessions() {
    smol::block_on(within("mode, config_value, unknown_session", async {
        let (mut peer, id) = serve_with_session().await;
        let response = peer
            .request(
                2,
                "session/set_mode",
                json!({"sessionId": id, "modeId": "yolo"}),
            )
            .await;
        assert_eq!(error_of(&response).0, -32602);
        assert!(error_of(&response).1.starts_with("unknown mode `yolo`"));
        let response = peer
            .request(
                3,
                "session/set_config_option",
                json!({"sessionId": id, "configId": "model", "value": "slow"}),
            )
            .await;
        assert_eq!(error_of(&response).0, -32602);
        assert!(
            error_of(&response)
                .1
                .contains("`slow` is not a value of config option `model`")
        );
        let response = peer
            .request(
                4,
                "session/set_mode",
                json!({"sessionId": "nope", "modeId": "ask"}),
            )
            .await;
        assert_eq!(error_of(&response).0, -32002);
        assert_eq!(response["error"]["data"]["sessionId"], "nope");
    }));
}

#[test]
fn agent_refuses_a_boolean_value_from_a_client_that_did_not_opt_in() {
    smol::block_on(within("config_value (boolean)", async {
        let (mut peer, id) = serve_with_session().await;
        let response = peer
            .request(
                2,
                "session/set_config_option",
                json!({"sessionId": id, "configId": "model", "type": "boolean", "value": true}),
            )
            .await;
        assert_eq!(
            error_of(&response),
            (-32602, "setting `model` to a boolean needs `session.configOptions.boolean`, which the sender did not advertise".into())
        );
    }));
}

#[test]
fn agent_sends_notices_and_compaction_only_to_clients_that_opted_in() {
    smol::block_on(within("session_update", async {
        let (mut peer, id) = serve_with_session().await;
        assert_eq!(
            prompt_report(&mut peer, 2, &id, "notice").await,
            "refused: session.notices"
        );
        assert_eq!(
            prompt_report(&mut peer, 3, &id, "compaction").await,
            "refused: session.compaction"
        );

        let mut peer = serve();
        peer.initialize(json!({"session": {"notices": {}, "compaction": {}}}))
            .await;
        let id = session(&mut peer, 1, "/tmp").await;
        peer.send_prompt(2, &id, "notice").await;
        let messages = peer.recv_until_response(2).await;
        assert!(
            messages
                .iter()
                .any(|m| m["params"]["update"]["sessionUpdate"] == "notice"),
            "{messages:?}"
        );
        assert_eq!(prompt_report(&mut peer, 3, &id, "compaction").await, "sent");
    }));
}

#[test]
fn agent_offers_boolean_config_options_only_to_clients_that_opted_in() {
    smol::block_on(within("offered_config_options", async {
        let mut peer = serve();
        peer.initialize(json!({})).await;
        // The agent's own answer breaks the rule: its bug, answered as an internal error.
        let response = peer
            .request(
                1,
                "session/new",
                json!({"cwd": "/boolean", "mcpServers": []}),
            )
            .await;
        let (code, message) = error_of(&response);
        assert_eq!(code, -32603);
        assert!(
            message.contains("the boolean config option `web`"),
            "{message}"
        );
        let id = session(&mut peer, 2, "/tmp").await;
        assert_eq!(
            prompt_report(&mut peer, 3, &id, "boolean").await,
            "refused: session.configOptions.boolean"
        );

        let mut peer = serve();
        peer.initialize(json!({"session": {"configOptions": {"boolean": {}}}}))
            .await;
        let response = peer
            .request(
                1,
                "session/new",
                json!({"cwd": "/boolean", "mcpServers": []}),
            )
            .await;
        let id = response["result"]["sessionId"].clone();
        let response = peer
            .request(
                2,
                "session/set_config_option",
                json!({"sessionId": id, "configId": "web", "type": "boolean", "value": false}),
            )
            .await;
        assert!(response["result"]["configOptions"].is_array(), "{response}");
        assert_eq!(prompt_report(&mut peer, 3, &id, "boolean").await, "sent");
    }));
}

#[test]
fn agent_refuses_elicitation_modes_the_client_did_not_advertise() {
    smol::block_on(within("client_method (elicitation)", async {
        let (peer, endpoint) = RawPeer::new();
        let (client, driver) = agent::serve(
            Plain,
            endpoint.reader,
            endpoint.writer,
            AgentOptions::default(),
        );
        smol::spawn(driver).detach();
        let mut peer = peer;
        peer.initialize(json!({"elicitation": {"form": {}}})).await;
        let request: CreateElicitationRequest = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in", "elicitationId": "e1",
            "url": "https://example.com", "sessionId": "s1"
        }))
        .unwrap();
        let refused = client.request(&request).await.unwrap_err();
        assert!(
            matches!(
                refused,
                Error::NotAdvertised {
                    capability: "elicitation.url",
                    ..
                }
            ),
            "{refused:?}"
        );
        let refused = client
            .ext_method(
                "vendor/no-underscore",
                &serde_json::value::RawValue::from_string("{}".into()).unwrap(),
            )
            .await
            .unwrap_err();
        assert!(matches!(refused, Error::Invalid(_)), "{refused:?}");
    }));
}

#[test]
fn agent_fills_in_its_info_from_the_options() {
    smol::block_on(within("agent info", async {
        let options = AgentOptions::default().with_info("plain", "9.9.9");
        let mut peer = serve_agent(Plain, options);
        let response = peer.initialize(json!({})).await;
        assert_eq!(
            response["result"]["agentInfo"],
            json!({"name": "plain", "version": "9.9.9"})
        );
    }));
}

// ---------------------------------------------------------------------------------------
// The client side: a runtime client against a raw agent.

/// Collects the problems a connection reports.
#[derive(Clone, Default)]
struct Problems(Arc<Mutex<Vec<String>>>);

impl Observer for Problems {
    fn problem(&self, problem: &Problem) {
        if let Problem::PeerBrokeRule { method, rule } = problem {
            self.0.lock().unwrap().push(format!("{method}: {rule}"));
        }
    }
}

fn connect(options: ClientOptions) -> (AgentHandle, RawPeer) {
    let (peer, endpoint) = RawPeer::new();
    let (agent, driver) = client::connect(AutoAllow, endpoint.reader, endpoint.writer, options);
    smol::spawn(driver).detach();
    (agent, peer)
}

/// Runs `call` while the raw agent answers the one request it sends, which must be a
/// `method`, with `result`.
async fn answered<T>(
    peer: &mut RawPeer,
    method: &str,
    call: impl std::future::Future<Output = T>,
    result: Value,
) -> T {
    let answer = async {
        let request = peer.recv().await;
        assert_eq!(request["method"], method, "{request}");
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
            .await;
    };
    futures_lite::future::zip(call, answer).await.0
}

async fn initialized(capabilities: Value, options: ClientOptions) -> (AgentHandle, RawPeer) {
    let (agent, mut peer) = connect(options);
    answered(
        &mut peer,
        "initialize",
        agent.initialize(),
        json!({"protocolVersion": 1, "agentCapabilities": capabilities}),
    )
    .await
    .unwrap();
    (agent, peer)
}

fn select_option() -> Value {
    json!({"id": "model", "name": "Model", "type": "select", "currentValue": "fast",
        "options": [{"value": "fast", "name": "Fast"}]})
}

#[test]
fn client_refuses_unadvertised_methods_and_rule_breaking_calls_without_sending() {
    smol::block_on(within("client refusals", async {
        let (agent, mut peer) = initialized(json!({}), ClientOptions::default()).await;
        let refused = agent
            .load_session(LoadSessionRequest::new(
                Vec::<McpServer>::new(),
                "/tmp",
                "s",
            ))
            .await
            .unwrap_err();
        assert!(
            matches!(
                refused,
                Error::NotAdvertised {
                    capability: "loadSession",
                    ..
                }
            ),
            "{refused:?}"
        );
        let refused = agent.new_session("relative").await.unwrap_err();
        assert!(matches!(refused, Error::Invalid(_)), "{refused:?}");
        let mut request = NewSessionRequest::new("/tmp", Vec::<McpServer>::new());
        request.additional_directories = Some(vec!["relative".into()]);
        let refused = agent.new_session_with(request).await.unwrap_err();
        assert!(
            matches!(refused, Error::Invalid(ref m) if m.contains("additionalDirectories")),
            "{refused:?}"
        );
        let http: McpServer = serde_json::from_value(
            json!({"type": "http", "name": "web", "url": "http://x", "headers": []}),
        )
        .unwrap();
        let refused = agent
            .new_session_with(NewSessionRequest::new("/tmp", vec![http]))
            .await
            .unwrap_err();
        assert!(
            matches!(
                refused,
                Error::NotAdvertised {
                    capability: "mcpCapabilities.http",
                    ..
                }
            ),
            "{refused:?}"
        );
        let refused = agent
            .ext_method(
                "vendor/x",
                &serde_json::value::RawValue::from_string("{}".into()).unwrap(),
            )
            .await
            .unwrap_err();
        assert!(matches!(refused, Error::Invalid(_)), "{refused:?}");

        let session = answered(
            &mut peer,
            "session/new",
            agent.new_session("/tmp"),
            json!({"sessionId": "s1", "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}]},
                "configOptions": [select_option()]}),
        )
        .await
        .unwrap();
        let image: ContentBlock = serde_json::from_value(
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
        )
        .unwrap();
        let refused = session.prompt(vec![image]).await.unwrap_err();
        assert!(
            matches!(
                refused,
                Error::NotAdvertised {
                    capability: "promptCapabilities.image",
                    ..
                }
            ),
            "{refused:?}"
        );
        let refused = session.set_mode("yolo").await.unwrap_err();
        assert!(
            matches!(refused, Error::Invalid(ref m) if m.starts_with("unknown mode")),
            "{refused:?}"
        );
        let refused = session
            .set_config_option("model", "slow")
            .await
            .unwrap_err();
        assert!(
            matches!(refused, Error::Invalid(ref m) if m.contains("`slow`")),
            "{refused:?}"
        );
        // A boolean value needs the client's own opt-in.
        let refused = session.set_config_option("model", true).await.unwrap_err();
        assert!(
            matches!(refused, Error::Invalid(ref m) if m.contains("own `session.configOptions.boolean`")),
            "{refused:?}"
        );
        // Nothing of the above reached the agent: the next message it sees is this one.
        answered(
            &mut peer,
            "session/set_config_option",
            session.set_config_option("model", "fast"),
            json!({"configOptions": [select_option()]}),
        )
        .await
        .unwrap();
    }));
}

#[test]
fn client_reports_updates_and_options_it_did_not_opt_into_and_still_delivers_them() {
    smol::block_on(within("session_update on receipt", async {
        let problems = Problems::default();
        let options = ClientOptions::default().with_observer(problems.clone());
        let (agent, mut peer) = initialized(json!({}), options).await;
        let boolean = json!({"id": "web", "name": "Web", "type": "boolean", "currentValue": true});
        let session = answered(
            &mut peer,
            "session/new",
            agent.new_session("/tmp"),
            json!({"sessionId": "s1", "configOptions": [boolean]}),
        )
        .await
        .unwrap();
        assert_eq!(
            session.config_options().unwrap().len(),
            1,
            "taken all the same"
        );
        peer.send(
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
            "update": {"sessionUpdate": "notice", "severity": "info", "title": "hi"}}}),
        )
        .await;
        let delivered = session.next_update().await.unwrap().unwrap();
        assert!(
            matches!(delivered, SessionUpdate::Notice(_)),
            "{delivered:?}"
        );
        let problems = problems.0.lock().unwrap().clone();
        assert_eq!(
            problems,
            [
                "session/new: the boolean config option `web` needs `session.configOptions.boolean`, which was not advertised",
                "session/update: a `notice` update needs `session.notices`, which was not advertised",
            ]
        );
    }));
}

#[test]
fn client_answers_elicitation_modes_it_did_not_advertise_with_32602() {
    smol::block_on(within("client_method on receipt", async {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(serde_json::from_value(json!({"form": {}})).unwrap());
        let options = ClientOptions::default().with_capabilities(capabilities);
        let (_agent, mut peer) = initialized(json!({}), options).await;
        peer.send(json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": {
            "mode": "url", "message": "Sign in", "elicitationId": "e1", "url": "https://example.com", "sessionId": "s1"}}))
            .await;
        let response = peer.recv().await;
        assert_eq!(
            error_of(&response),
            (-32602, "an elicitation in url mode needs `elicitation.url`, which this client does not advertise".into())
        );
        peer.send(json!({"jsonrpc": "2.0", "id": 8, "method": "fs/read_text_file", "params": {"sessionId": "s1", "path": "/etc/hostname"}}))
            .await;
        let response = peer.recv().await;
        assert_eq!(error_of(&response).0, -32601);
        assert_eq!(
            response["error"]["data"]["reason"],
            "this client does not advertise `fs.readTextFile`"
        );
    }));
}

#[test]
fn client_capability_builders_merge() {
    use acp_runtime::fs::FsHost;
    use acp_runtime::terminal::TerminalHost;
    let mut extra = ClientCapabilities::default();
    extra.elicitation = Some(serde_json::from_value(json!({"form": {}})).unwrap());
    let options = ClientOptions::default()
        .with_file_system(FsHost::new())
        .with_terminals(TerminalHost::new())
        .with_capabilities(extra);
    let advertised = options.capabilities();
    assert!(advertised.fs.read_text_file && advertised.fs.write_text_file && advertised.terminal);
    assert!(advertised.elicitation.is_some());
}
