//! The client's system prompt (stable since schema 1.17) on the wire, both sides: an agent
//! advertises `sessionCapabilities.systemPrompt` (`{}`: append; `mode.override`: override
//! too) through `AgentOptions`; a system prompt it did not advertise, in a mode it did not
//! advertise, empty or not text is answered `-32602` before its handler runs, and the client's
//! runtime refuses to send one (nothing sent). A session keeps the system prompt it was given.

mod common;

use std::sync::{Arc, Mutex};

use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, SessionClient, Turn};
use acp_runtime::client::{self, AgentHandle, AutoAllow, ClientOptions};
use acp_runtime::{Error, Result};
use acp_types::*;
use common::{RawPeer, serve_agent, within};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// The agent side: a raw client against a runtime agent.

/// Records each session request that reached it, with the system prompt its session shows;
/// loads and resumes any session.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

fn shown(prompt: Option<SystemPrompt>) -> String {
    match prompt {
        None => "none".to_owned(),
        Some(prompt) => format!(
            "{} {:?}",
            prompt.mode,
            prompt
                .content
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<String>()
        ),
    }
}

impl Agent for Recorder {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
        response.agent_capabilities.load_session = true;
        response.agent_capabilities.session_capabilities.resume = Some(Default::default());
        Ok(response)
    }

    async fn new_session(
        &self,
        request: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        // Not registered yet: the request is what the agent reads here.
        self.0
            .lock()
            .unwrap()
            .push(format!("new: {}", shown(request.system_prompt)));
        Ok(NewSessionResponse::new("s1"))
    }

    async fn load_session(
        &self,
        _: LoadSessionRequest,
        session: SessionClient,
    ) -> Result<LoadSessionResponse> {
        self.0.lock().unwrap().push(format!(
            "load: {}",
            shown(session.snapshot().and_then(|s| s.system_prompt().cloned()))
        ));
        Ok(LoadSessionResponse::new())
    }

    async fn resume_session(
        &self,
        _: ResumeSessionRequest,
        session: SessionClient,
    ) -> Result<ResumeSessionResponse> {
        self.0.lock().unwrap().push(format!(
            "resume: {}",
            shown(session.snapshot().and_then(|s| s.system_prompt().cloned()))
        ));
        Ok(ResumeSessionResponse::new())
    }

    async fn prompt(&self, _: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        turn.message(format!(
            "system prompt: {}",
            shown(turn.snapshot().and_then(|s| s.system_prompt().cloned()))
        ))
        .await?;
        Ok(StopReason::EndTurn.into())
    }
}

async fn serve(options: AgentOptions) -> (RawPeer, Recorder, Value) {
    let (mut peer, endpoint) = RawPeer::new();
    let recorder = Recorder::default();
    let (_client, driver) =
        agent::serve(recorder.clone(), endpoint.reader, endpoint.writer, options);
    smol::spawn(driver).detach();
    let initialized = peer.initialize(json!({})).await;
    (
        peer,
        recorder,
        initialized["result"]["agentCapabilities"]["sessionCapabilities"].clone(),
    )
}

fn with_prompt(method: &str, system_prompt: Value) -> Value {
    let mut params = json!({"cwd": "/tmp", "mcpServers": [], "systemPrompt": system_prompt});
    if method != "session/new" {
        params["sessionId"] = "s1".into();
    }
    params
}

fn text_prompt(mode: &str) -> Value {
    json!({"mode": mode, "content": [{"type": "text", "text": "Be brief."}]})
}

/// The error of each refused setup request, `method: code message`.
async fn refusals(peer: &mut RawPeer, cases: &[(&str, Value)]) -> Vec<String> {
    let mut seen = Vec::new();
    for (id, (method, system_prompt)) in (1..).zip(cases) {
        let response = peer
            .request(id, method, with_prompt(method, system_prompt.clone()))
            .await;
        let error = &response["error"];
        seen.push(format!(
            "{method}: {} {}",
            error["code"],
            error["message"].as_str().unwrap_or("(no error)")
        ));
    }
    seen
}

#[test]
fn agent_without_the_capability_answers_any_system_prompt_with_32602() {
    smol::block_on(within("system_prompt, not advertised", async {
        let (mut peer, recorder, advertised) = serve(AgentOptions::default()).await;
        assert_eq!(advertised["systemPrompt"], Value::Null);
        let seen = refusals(
            &mut peer,
            &[
                ("session/new", text_prompt("append")),
                ("session/load", text_prompt("append")),
                ("session/resume", text_prompt("override")),
            ],
        )
        .await;
        insta::assert_snapshot!(seen.join("\n"), @r"
        session/new: -32602 a system prompt needs `sessionCapabilities.systemPrompt`, which this agent does not advertise
        session/load: -32602 a system prompt needs `sessionCapabilities.systemPrompt`, which this agent does not advertise
        session/resume: -32602 a system prompt needs `sessionCapabilities.systemPrompt`, which this agent does not advertise
        ");
        assert!(recorder.0.lock().unwrap().is_empty(), "no handler ran");
    }));
}

#[test]
fn agent_answers_unadvertised_modes_and_bad_content_with_32602_before_its_handler() {
    smol::block_on(within("system_prompt, append only", async {
        let (mut peer, recorder, advertised) =
            serve(AgentOptions::default().with_system_prompt()).await;
        assert_eq!(advertised["systemPrompt"], json!({}));
        let seen = refusals(
            &mut peer,
            &[
                ("session/new", text_prompt("override")),
                ("session/load", text_prompt("_vendor_mode")),
                ("session/resume", json!({"mode": "append", "content": []})),
                ("session/new", json!({"mode": "append", "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]})),
                ("session/new", json!({"content": [{"type": "text", "text": "no mode"}]})),
            ],
        )
        .await;
        insta::assert_snapshot!(seen.join("\n"), @r"
        session/new: -32602 a system prompt in `override` mode needs `sessionCapabilities.systemPrompt.mode.override`, which this agent does not advertise
        session/load: -32602 system prompt mode `_vendor_mode` is not supported; this agent takes `append`
        session/resume: -32602 a system prompt's content must not be empty
        session/new: -32602 a system prompt carries only text content, not `image`
        session/new: -32602 Invalid params
        ");
        // The last one does not decode (no mode): the decoder's -32602, with the reason in
        // its data.
        assert!(recorder.0.lock().unwrap().is_empty(), "no handler ran");
    }));
}

#[test]
fn agent_takes_advertised_modes_and_its_sessions_show_the_system_prompt() {
    smol::block_on(within("system_prompt, accepted", async {
        let (mut peer, recorder, advertised) =
            serve(AgentOptions::default().with_system_prompt_override()).await;
        assert_eq!(
            advertised["systemPrompt"],
            json!({"mode": {"override": {}}})
        );
        let response = peer
            .request(
                1,
                "session/new",
                with_prompt("session/new", text_prompt("override")),
            )
            .await;
        assert_eq!(response["result"]["sessionId"], "s1", "{response}");
        peer.send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
            "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}}),
        )
        .await;
        let said = peer.recv_until_response(2).await;
        assert_eq!(
            said[0]["params"]["update"]["content"]["text"],
            "system prompt: override \"Be brief.\""
        );
        let response = peer
            .request(
                3,
                "session/load",
                with_prompt("session/load", text_prompt("append")),
            )
            .await;
        assert!(response["result"].is_object(), "{response}");
        // Without one, the session shows none (the agent's own instructions).
        let response = peer
            .request(
                4,
                "session/resume",
                json!({"sessionId": "s1", "cwd": "/tmp"}),
            )
            .await;
        assert!(response["result"].is_object(), "{response}");
        assert_eq!(
            *recorder.0.lock().unwrap(),
            [
                "new: override \"Be brief.\"",
                "load: append \"Be brief.\"",
                "resume: none"
            ]
        );
    }));
}

#[test]
fn the_agents_own_capability_wins_over_the_options() {
    struct Own;
    impl Agent for Own {
        async fn initialize(
            &self,
            _: InitializeRequest,
            _: &ClientHandle,
        ) -> Result<InitializeResponse> {
            let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
            response
                .agent_capabilities
                .session_capabilities
                .system_prompt = Some(SessionSystemPromptCapabilities::new());
            Ok(response)
        }
        async fn new_session(
            &self,
            _: NewSessionRequest,
            _: &ClientHandle,
        ) -> Result<NewSessionResponse> {
            Ok(NewSessionResponse::new("s1"))
        }
        async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
            Ok(StopReason::EndTurn.into())
        }
    }
    smol::block_on(within("system_prompt, the agent's own", async {
        let options = AgentOptions::default().with_system_prompt_override();
        let mut peer = serve_agent(Own, options);
        let response = peer.initialize(json!({})).await;
        assert_eq!(
            response["result"]["agentCapabilities"]["sessionCapabilities"]["systemPrompt"],
            json!({})
        );
        let response = peer
            .request(
                1,
                "session/new",
                with_prompt("session/new", text_prompt("override")),
            )
            .await;
        assert_eq!(response["error"]["code"], -32602, "{response}");
    }));
}

// ---------------------------------------------------------------------------------------
// The client side: a runtime client against a raw agent.

async fn initialized(session_capabilities: Value) -> (AgentHandle, RawPeer) {
    let (mut peer, endpoint) = RawPeer::new();
    let (agent, driver) = client::connect(
        AutoAllow,
        endpoint.reader,
        endpoint.writer,
        ClientOptions::default(),
    );
    smol::spawn(driver).detach();
    let answer = async {
        let request = peer.recv().await;
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1,
            "agentCapabilities": {"loadSession": true, "sessionCapabilities": session_capabilities}}}))
            .await;
    };
    futures_lite::future::zip(agent.initialize(), answer)
        .await
        .0
        .unwrap();
    (agent, peer)
}

fn system_prompt(mode: SystemPromptMode) -> SystemPrompt {
    SystemPrompt::new(mode, vec!["Be brief.".into()])
}

fn new_request(prompt: SystemPrompt) -> NewSessionRequest {
    NewSessionRequest::new("/tmp", Vec::<McpServer>::new()).with_system_prompt(prompt)
}

fn refusal(error: Error) -> String {
    match error {
        Error::NotAdvertised { method, capability } => {
            format!("not advertised: {method} needs {capability}")
        }
        Error::Invalid(message) => format!("invalid: {message}"),
        other => format!("other: {other:?}"),
    }
}

#[test]
fn client_refuses_a_system_prompt_the_agent_did_not_advertise_without_sending() {
    smol::block_on(within("system_prompt, client refusals", async {
        let (agent_without, mut peer) = initialized(json!({})).await;
        assert!(agent_without.system_prompt_modes().is_empty());
        let mut seen = vec![refusal(
            agent_without
                .new_session_with(new_request(system_prompt(SystemPromptMode::Append)))
                .await
                .unwrap_err(),
        )];
        let mut load = LoadSessionRequest::new(Vec::<McpServer>::new(), "/tmp", "s1");
        load.system_prompt = Some(system_prompt(SystemPromptMode::Append));
        seen.push(refusal(agent_without.load_session(load).await.unwrap_err()));

        let (agent, mut append_only) = initialized(json!({"systemPrompt": {}})).await;
        assert_eq!(agent.system_prompt_modes(), [SystemPromptMode::Append]);
        for prompt in [
            system_prompt(SystemPromptMode::Override),
            system_prompt(SystemPromptMode::from("_vendor")),
            SystemPrompt::new(SystemPromptMode::Append, Vec::<ContentBlock>::new()),
        ] {
            seen.push(refusal(
                agent
                    .new_session_with(new_request(prompt))
                    .await
                    .unwrap_err(),
            ));
        }
        insta::assert_snapshot!(seen.join("\n"), @r"
        not advertised: a system prompt needs sessionCapabilities.systemPrompt
        not advertised: a system prompt needs sessionCapabilities.systemPrompt
        not advertised: a system prompt in `override` mode needs sessionCapabilities.systemPrompt.mode.override
        invalid: system prompt mode `_vendor` is not supported; this agent takes `append`
        invalid: a system prompt's content must not be empty
        ");
        // Nothing reached either agent: the next message each sees is the request below,
        // numbered right after `initialize`.
        let plain = first_request(
            &agent_without,
            &mut peer,
            NewSessionRequest::new("/tmp", Vec::<McpServer>::new()),
        )
        .await;
        assert_eq!(
            (&plain["id"], &plain["params"]["systemPrompt"]),
            (&json!(1), &Value::Null)
        );
        let request = first_request(
            &agent,
            &mut append_only,
            new_request(system_prompt(SystemPromptMode::Append)),
        )
        .await;
        insta::assert_json_snapshot!(request, @r#"
        {
          "id": 1,
          "jsonrpc": "2.0",
          "method": "session/new",
          "params": {
            "cwd": "/tmp",
            "mcpServers": [],
            "systemPrompt": {
              "content": [
                {
                  "text": "Be brief.",
                  "type": "text"
                }
              ],
              "mode": "append"
            }
          }
        }
        "#);
    }));
}

/// Opens a session with `request`, answered by the raw agent; the request as it arrived.
async fn first_request(
    agent: &AgentHandle,
    peer: &mut RawPeer,
    request: NewSessionRequest,
) -> Value {
    let sent = async {
        let request = peer.recv().await;
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}}))
            .await;
        request
    };
    let (opened, request) = futures_lite::future::zip(agent.new_session_with(request), sent).await;
    opened.unwrap();
    request
}

#[test]
fn client_sends_override_to_an_agent_that_advertised_it() {
    smol::block_on(within("system_prompt, override", async {
        let (agent, mut peer) =
            initialized(json!({"systemPrompt": {"mode": {"override": {}}}})).await;
        assert_eq!(
            agent.system_prompt_modes(),
            [SystemPromptMode::Append, SystemPromptMode::Override]
        );
        let request = first_request(
            &agent,
            &mut peer,
            new_request(system_prompt(SystemPromptMode::Override)),
        )
        .await;
        assert_eq!(request["params"]["systemPrompt"]["mode"], "override");
    }));
}

/// `session/fork` (feature `unstable-session-fork`) keeps the same rule on both sides.
#[cfg(feature = "unstable-session-fork")]
#[test]
fn fork_keeps_the_system_prompt_rule_on_both_sides() {
    struct Forks;
    impl Agent for Forks {
        async fn initialize(
            &self,
            _: InitializeRequest,
            _: &ClientHandle,
        ) -> Result<InitializeResponse> {
            let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
            response.agent_capabilities.session_capabilities.fork = Some(Default::default());
            Ok(response)
        }
        async fn new_session(
            &self,
            _: NewSessionRequest,
            _: &ClientHandle,
        ) -> Result<NewSessionResponse> {
            Ok(NewSessionResponse::new("s1"))
        }
        async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
            Ok(StopReason::EndTurn.into())
        }
        async fn fork_session(
            &self,
            _: ForkSessionRequest,
            _: SessionClient,
        ) -> Result<ForkSessionResponse> {
            panic!("the runtime refuses the fork before it gets here")
        }
    }
    smol::block_on(within("system_prompt on fork", async {
        let mut peer = serve_agent(Forks, AgentOptions::default().with_system_prompt());
        peer.initialize(json!({})).await;
        let response = peer
            .request(
                1,
                "session/fork",
                with_prompt("session/fork", text_prompt("override")),
            )
            .await;
        assert_eq!(response["error"]["code"], -32602, "{response}");

        let (agent, _peer) = initialized(json!({"fork": {}, "systemPrompt": {}})).await;
        let request = ForkSessionRequest::new("s1", "/tmp")
            .with_system_prompt(system_prompt(SystemPromptMode::Override));
        let refused = agent.fork_session(request).await.map(drop).unwrap_err();
        assert!(
            matches!(
                refused,
                Error::NotAdvertised {
                    capability: "sessionCapabilities.systemPrompt.mode.override",
                    ..
                }
            ),
            "{refused:?}"
        );
    }));
}
