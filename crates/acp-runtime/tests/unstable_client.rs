//! Schema 1.20's unstable items on the client's side, against a raw agent on the wire: the
//! `session/options` call and initial config options (refused locally when the agent did not
//! advertise them), the cursors and prompt suggestions a session keeps (breaches reported,
//! never refused), forks at a cursor, the turn's token usage, and the types-only items (the
//! `speed` category, auth account descriptions) passing untouched.
#![cfg(feature = "unstable")]

mod common;

use std::sync::{Arc, Mutex};

use acp_runtime::Error;
use acp_runtime::client::{self, AgentHandle, AutoAllow, ClientOptions};
use acp_types::*;
use common::{RawPeer, within};
use serde_json::{Value, json};

/// Keeps the text of every problem the connection reports.
struct ProblemLog(Arc<Mutex<Vec<String>>>);

impl acp_jsonrpc::Observer for ProblemLog {
    fn problem(&self, problem: &acp_jsonrpc::Problem) {
        self.0.lock().unwrap().push(problem.to_string());
    }
}

type Problems = Arc<Mutex<Vec<String>>>;

/// A client with these capabilities on a raw agent, and the problems its connection reports.
fn start(capabilities: Value) -> (AgentHandle, RawPeer, Problems) {
    let problems = Problems::default();
    let options = ClientOptions::default()
        .with_capabilities(serde_json::from_value(capabilities).unwrap())
        .with_connection_options(
            acp_jsonrpc::ConnectionOptions::default().with_observer(ProblemLog(problems.clone())),
        );
    let (peer, endpoint) = RawPeer::new();
    let (agent, driver) = client::connect(AutoAllow, endpoint.reader, endpoint.writer, options);
    smol::spawn(driver).detach();
    (agent, peer, problems)
}

async fn initialize(agent: &AgentHandle, peer: &mut RawPeer, capabilities: Value) {
    let answer = async {
        let request = peer.recv().await;
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"],
            "result": {"protocolVersion": 1, "agentCapabilities": capabilities}}))
            .await;
    };
    futures_lite::future::zip(agent.initialize(), answer)
        .await
        .0
        .unwrap();
}

/// A client with `capabilities`, initialized by a raw agent with `agent_capabilities`.
async fn start_initialized(
    capabilities: Value,
    agent_capabilities: Value,
) -> (AgentHandle, RawPeer, Problems) {
    let (agent, mut peer, problems) = start(capabilities);
    initialize(&agent, &mut peer, agent_capabilities).await;
    (agent, peer, problems)
}

/// Runs `call` while the raw agent answers the one request it sends with `result`; returns
/// the call's outcome and the request as sent.
async fn answered<T>(
    peer: &mut RawPeer,
    call: impl std::future::Future<Output = T>,
    result: Value,
) -> (T, Value) {
    let answer = async {
        let request = peer.recv().await;
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
            .await;
        request
    };
    within("the call", futures_lite::future::zip(call, answer)).await
}

async fn open_session(agent: &AgentHandle, peer: &mut RawPeer, id: &str) -> client::Session {
    let (session, _) = answered(peer, agent.new_session("/tmp"), json!({"sessionId": id})).await;
    session.unwrap()
}

/// Sends updates for session `id` as the raw agent.
async fn send_updates(peer: &mut RawPeer, id: &str, updates: &[Value]) {
    for update in updates {
        peer.send(json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": id, "update": update}}))
            .await;
    }
}

/// Takes `n` updates of the session (tracked by the time they are taken).
async fn take(session: &client::Session, n: usize) {
    for _ in 0..n {
        within("an update", session.next_update())
            .await
            .unwrap()
            .unwrap();
    }
}

/// The next request the raw agent sees is `method`: nothing was sent before it.
async fn next_request_is(agent: &AgentHandle, peer: &mut RawPeer, method: &str) {
    let probe = async {
        let _ = agent.list_sessions(ListSessionsRequest::new()).await;
    };
    let check = async {
        let request = peer.recv().await;
        assert_eq!(request["method"], method, "{request}");
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"sessions": []}}))
            .await;
    };
    futures_lite::future::zip(probe, check).await;
}

fn refused(result: acp_runtime::Result<impl std::fmt::Debug>) -> String {
    match result {
        Err(Error::NotAdvertised { capability, .. }) => format!("not advertised: {capability}"),
        Err(Error::Invalid(message)) => format!("invalid: {message}"),
        other => panic!("expected a local refusal, got {other:?}"),
    }
}

#[test]
fn session_options_is_a_typed_call_refused_locally_when_not_advertised() {
    smol::block_on(async {
        let (agent, mut peer, problems) =
            start_initialized(json!({}), json!({"sessionCapabilities": {"list": {}}})).await;
        assert_eq!(
            refused(agent.session_options("/tmp").await),
            "not advertised: sessionCapabilities.options"
        );
        next_request_is(&agent, &mut peer, "session/list").await;

        let (agent, mut peer, _) = start_initialized(
            json!({}),
            json!({"sessionCapabilities": {"options": {}, "list": {}}}),
        )
        .await;
        assert!(refused(agent.session_options("tmp").await).contains("absolute"));
        let stored = SessionOptionsRequest::new("/tmp").with_session_id("old");
        assert!(refused(agent.session_options_with(stored).await).contains("loadSession"));
        next_request_is(&agent, &mut peer, "session/list").await;

        let speed = json!({"id": "speed", "name": "Speed", "category": "speed", "type": "select",
            "currentValue": "normal", "options": [{"value": "normal", "name": "Normal"}]});
        let (options, request) = answered(
            &mut peer,
            agent.session_options("/tmp"),
            json!({"configOptions": [speed]}),
        )
        .await;
        assert_eq!(request["method"], "session/options");
        assert_eq!(request["params"], json!({"cwd": "/tmp"}));
        let options = options.unwrap().config_options.unwrap();
        assert_eq!(
            options[0].category,
            Some(SessionConfigOptionCategory::Speed)
        );
        assert!(problems.lock().unwrap().is_empty(), "{problems:?}");

        // A boolean option for a client that does not take one is returned, and reported.
        let boolean =
            json!({"id": "fast", "name": "Fast", "type": "boolean", "currentValue": true});
        let (options, _) = answered(
            &mut peer,
            agent.session_options("/tmp"),
            json!({"configOptions": [boolean]}),
        )
        .await;
        assert_eq!(options.unwrap().config_options.unwrap().len(), 1);
        let (agent, mut peer, problems) =
            start_initialized(json!({}), json!({"sessionCapabilities": {"options": {}}})).await;
        let _ = answered(
            &mut peer,
            agent.session_options("/tmp"),
            json!({"configOptions": [{"id": "fast", "name": "Fast", "type": "boolean", "currentValue": true}]}),
        )
        .await;
        let reported = problems.lock().unwrap().join("\n");
        assert!(
            reported.contains("session.configOptions.boolean"),
            "{reported}"
        );
    });
}

#[test]
fn initial_config_options_go_only_to_an_agent_that_takes_them() {
    smol::block_on(async {
        let options = |entries: Value| -> Vec<InitialSessionConfigOption> {
            serde_json::from_value(entries).unwrap()
        };
        let request = |entries: Value| {
            NewSessionRequest::new("/tmp", Vec::<McpServer>::new())
                .with_config_options(options(entries))
        };
        let (agent, mut peer, _) =
            start_initialized(json!({}), json!({"sessionCapabilities": {"list": {}}})).await;
        let select = json!([{"configId": "model", "value": "fast"}]);
        assert_eq!(
            refused(agent.new_session_with(request(select.clone())).await),
            "not advertised: sessionCapabilities.options"
        );
        next_request_is(&agent, &mut peer, "session/list").await;

        let (agent, mut peer, _) = start_initialized(
            json!({}),
            json!({"sessionCapabilities": {"options": {}, "list": {}}}),
        )
        .await;
        let boolean = json!([{"configId": "fast", "type": "boolean", "value": true}]);
        assert!(
            refused(agent.new_session_with(request(boolean)).await)
                .contains("session.configOptions.boolean")
        );
        let twice =
            json!([{"configId": "model", "value": "a"}, {"configId": "model", "value": "b"}]);
        assert!(refused(agent.new_session_with(request(twice)).await).contains("twice"));
        next_request_is(&agent, &mut peer, "session/list").await;
        let (session, sent) = answered(
            &mut peer,
            agent.new_session_with(request(select.clone())),
            json!({"sessionId": "s1"}),
        )
        .await;
        session.unwrap();
        assert_eq!(sent["params"]["configOptions"], select);
    });
}

fn anchor(message: &str) -> Value {
    json!({"type": "agent_message", "messageId": message, "position": "after"})
}

#[test]
fn a_session_keeps_its_cursors_with_their_first_anchors_and_forks_at_them() {
    smol::block_on(async {
        let (agent, mut peer, problems) = start_initialized(
            json!({"session": {"cursors": {}}}),
            json!({"sessionCapabilities": {"fork": {}}}),
        )
        .await;
        let session = open_session(&agent, &mut peer, "s1").await;
        let updates = [
            json!({"sessionUpdate": "cursor_update", "cursorId": "c0"}),
            json!({"sessionUpdate": "cursor_update", "cursorId": "c1", "anchor": anchor("m1"), "capabilities": {"fork": {}}}),
            json!({"sessionUpdate": "cursor_update", "cursorId": "c1", "anchor": anchor("m2")}),
            json!({"sessionUpdate": "cursor_update", "cursorId": "c2", "anchor": anchor("m2")}),
            json!({"sessionUpdate": "cursor_update", "cursorId": "c3", "anchor": anchor("m3"), "capabilities": {"fork": {}}}),
            json!({"sessionUpdate": "cursor_update", "cursorId": "c3", "capabilities": null}),
        ];
        send_updates(&mut peer, "s1", &updates).await;
        take(&session, updates.len()).await;

        let cursors = session.cursors();
        let ids: Vec<&str> = cursors.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2", "c3"], "c0 came without an anchor");
        let c1 = session.cursor(&"c1".into()).unwrap();
        assert_eq!(serde_json::to_value(&c1.anchor).unwrap(), anchor("m1"));
        assert!(c1.can_fork());
        assert!(!cursors[1].can_fork() && !cursors[2].can_fork());
        let reported = problems.lock().unwrap().join("\n");
        assert!(
            reported.contains("cursor `c0` must carry its `anchor`"),
            "{reported}"
        );
        assert!(reported.contains("cursor `c1` cannot move"), "{reported}");

        for cursor in ["c2", "c3", "nope"] {
            assert!(refused(session.fork_at(cursor).await).starts_with("invalid"));
        }
        let (fork, request) =
            answered(&mut peer, session.fork_at("c1"), json!({"sessionId": "s2"})).await;
        assert_eq!(fork.unwrap().id().as_str(), "s2");
        assert_eq!(request["method"], "session/fork");
        assert_eq!(request["params"]["cursorId"], "c1");

        // A client that did not ask for cursors still keeps them, and reports the breach.
        let (agent, mut peer, problems) = start_initialized(json!({}), json!({})).await;
        let session = open_session(&agent, &mut peer, "s1").await;
        send_updates(&mut peer, "s1", &updates[1..2]).await;
        take(&session, 1).await;
        assert_eq!(session.cursors().len(), 1);
        let reported = problems.lock().unwrap().join("\n");
        assert!(reported.contains("session.cursors"), "{reported}");
    });
}

#[test]
fn prompt_suggestions_are_replaced_by_each_update() {
    smol::block_on(async {
        let (agent, mut peer, problems) = start_initialized(
            json!({"session": {"promptSuggestions": {}}}),
            json!({"promptCapabilities": {"image": true}}),
        )
        .await;
        let session = open_session(&agent, &mut peer, "s1").await;
        assert!(
            session.prompt_suggestions().is_empty(),
            "a session starts with none"
        );
        let text = |t: &str| json!({"prompt": [{"type": "text", "text": t}]});
        let updates = [
            json!({"sessionUpdate": "prompt_suggestions_update", "suggestions": [text("one"), text("two")]}),
            json!({"sessionUpdate": "prompt_suggestions_update", "suggestions": [text("three")]}),
        ];
        send_updates(&mut peer, "s1", &updates).await;
        take(&session, 2).await;
        let current = session.prompt_suggestions();
        assert_eq!(current.len(), 1);
        assert_eq!(current[0].prompt[0].as_text(), Some("three"));
        assert!(problems.lock().unwrap().is_empty(), "{problems:?}");

        // An image this client did not take is kept, and reported.
        let image = json!({"prompt": [{"type": "image", "mimeType": "image/png", "data": "AA=="}]});
        send_updates(
            &mut peer,
            "s1",
            &[json!({"sessionUpdate": "prompt_suggestions_update", "suggestions": [image]})],
        )
        .await;
        take(&session, 1).await;
        assert!(matches!(
            session.prompt_suggestions()[0].prompt[0],
            ContentBlock::Image(_)
        ));
        let reported = problems.lock().unwrap().join("\n");
        assert!(
            reported.contains("session.promptSuggestions.image"),
            "{reported}"
        );
    });
}

#[test]
fn the_turn_end_carries_token_usage() {
    smol::block_on(async {
        let (agent, mut peer, _) = start_initialized(json!({}), json!({})).await;
        let session = open_session(&agent, &mut peer, "s1").await;
        let turn = async { session.prompt(vec!["hi".into()]).await?.end().await };
        let usage = json!({"totalTokens": 30, "inputTokens": 20, "outputTokens": 10, "cachedReadTokens": 5});
        let (end, _) = answered(
            &mut peer,
            turn,
            json!({"stopReason": "end_turn", "usage": usage}),
        )
        .await;
        let usage = end.unwrap().usage.unwrap();
        assert_eq!(
            (usage.total_tokens, usage.cached_read_tokens),
            (30, Some(5))
        );
    });
}

#[test]
fn a_speed_option_and_account_descriptions_pass_untouched() {
    smol::block_on(async {
        let (agent, mut peer, problems) =
            start_initialized(json!({}), json!({"auth": {"status": {}}})).await;
        let speed = json!({"id": "speed", "name": "Speed", "category": "speed", "type": "select",
            "currentValue": "fast", "options": [{"value": "fast", "name": "Fast"}]});
        let (session, _) = answered(
            &mut peer,
            agent.new_session("/tmp"),
            json!({"sessionId": "s1", "configOptions": [speed]}),
        )
        .await;
        let session = session.unwrap();
        let options = session.config_options().unwrap();
        assert_eq!(
            options[0].category,
            Some(SessionConfigOptionCategory::Speed)
        );
        let (status, _) = answered(
            &mut peer,
            agent.auth_status(),
            json!({"state": "authenticated", "accounts": [{"label": "work", "description": "Team plan"}]}),
        )
        .await;
        let accounts = status.unwrap().accounts.unwrap();
        assert_eq!(accounts[0].description.as_deref(), Some("Team plan"));
        assert!(problems.lock().unwrap().is_empty(), "{problems:?}");
    });
}

/// End to end, a runtime agent and a runtime client: the pickers before a session, the chosen
/// value on `session/new`, then cursors and suggestions from a turn, and a fork at a cursor.
#[test]
fn options_cursors_and_suggestions_end_to_end() {
    use acp_runtime::agent::{self, Agent, ClientHandle, SessionClient, Turn};

    #[derive(Clone, Default)]
    struct Picker(Arc<Mutex<Vec<String>>>);

    fn model_option(current: &str) -> SessionConfigOption {
        serde_json::from_value(json!({"id": "model", "name": "Model", "type": "select",
            "currentValue": current,
            "options": [{"value": "fast", "name": "Fast"}, {"value": "smart", "name": "Smart"}]}))
        .unwrap()
    }

    impl Agent for Picker {
        async fn initialize(
            &self,
            _: InitializeRequest,
            _: &ClientHandle,
        ) -> acp_runtime::Result<InitializeResponse> {
            let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
            response.agent_capabilities =
                serde_json::from_value(json!({"sessionCapabilities": {"options": {}, "fork": {}}}))
                    .unwrap();
            Ok(response)
        }
        async fn session_options(
            &self,
            _: SessionOptionsRequest,
            client: &ClientHandle,
        ) -> acp_runtime::Result<SessionOptionsResponse> {
            let open = client.sessions().len();
            self.0.lock().unwrap().push(format!("options, {open} open"));
            Ok(SessionOptionsResponse::new().with_config_options(vec![model_option("fast")]))
        }
        async fn new_session(
            &self,
            request: NewSessionRequest,
            _: &ClientHandle,
        ) -> acp_runtime::Result<NewSessionResponse> {
            // Applies the values it knows, ignores the rest.
            let mut options = vec![model_option("fast")];
            for initial in request.config_options.unwrap_or_default() {
                let InitialSessionConfigOptionKind::ValueId(value) = initial.kind else {
                    continue;
                };
                let set = SetSessionConfigOptionRequest::new("-", initial.config_id, value.value);
                options = acp_runtime::agent::apply_config_value(options, &set);
            }
            Ok(NewSessionResponse::new(agent::new_session_id()).with_config_options(options))
        }
        async fn prompt(
            &self,
            _: PromptRequest,
            turn: Turn,
        ) -> acp_runtime::Result<PromptResponse> {
            let mut cursor = CursorUpdate::new("c1");
            cursor.anchor = Some(CursorAnchor::AgentMessage(CursorMessageAnchor::new(
                "m1",
                CursorAnchorPosition::After,
            )));
            cursor.capabilities =
                Patch::Set(CursorCapabilities::new().with_fork(CursorForkCapabilities::new()));
            turn.cursor_update(cursor).await?;
            turn.prompt_suggestions(vec![PromptSuggestion::new(vec!["Go on".into()])])
                .await?;
            Ok(StopReason::EndTurn.into())
        }
        async fn fork_session(
            &self,
            request: ForkSessionRequest,
            _: SessionClient,
        ) -> acp_runtime::Result<ForkSessionResponse> {
            let at = request.cursor_id.map(|c| c.to_string()).unwrap_or_default();
            self.0.lock().unwrap().push(format!("fork at {at}"));
            Ok(ForkSessionResponse::new(agent::new_session_id()))
        }
    }

    smol::block_on(within("end to end", async {
        let picker = Picker::default();
        let log = picker.0.clone();
        let (client_end, agent_end) =
            acp_jsonrpc::memory::pair(acp_jsonrpc::memory::DEFAULT_PIPE_CAPACITY);
        let (_client, agent_driver) = agent::serve(
            picker,
            agent_end.reader,
            agent_end.writer,
            agent::AgentOptions::default(),
        );
        smol::spawn(agent_driver).detach();
        let capabilities = json!({"session": {"cursors": {}, "promptSuggestions": {}}});
        let options = ClientOptions::default()
            .with_capabilities(serde_json::from_value(capabilities).unwrap());
        let (agent, driver) =
            client::connect(AutoAllow, client_end.reader, client_end.writer, options);
        smol::spawn(driver).detach();
        agent.initialize().await.unwrap();
        let dir = std::env::temp_dir();

        let pickers = agent.session_options(&dir).await.unwrap();
        assert_eq!(pickers.config_options.unwrap()[0].id.as_str(), "model");
        let chosen: Vec<InitialSessionConfigOption> = serde_json::from_value(json!([
            {"configId": "model", "value": "smart"},
            {"configId": "unknown", "value": "x"},
        ]))
        .unwrap();
        let request = NewSessionRequest::new(dir.to_string_lossy(), Vec::<McpServer>::new())
            .with_config_options(chosen);
        let session = agent.new_session_with(request).await.unwrap();
        let model = &session.config_options().unwrap()[0];
        assert!(
            matches!(&model.kind, SessionConfigOptionKind::Select(s) if s.current_value.as_str() == "smart"),
            "{model:?}"
        );

        session
            .prompt(vec!["hi".into()])
            .await
            .unwrap()
            .end()
            .await
            .unwrap();
        assert!(session.cursor(&"c1".into()).unwrap().can_fork());
        assert_eq!(
            session.prompt_suggestions()[0].prompt[0].as_text(),
            Some("Go on")
        );
        let fork = session.fork_at("c1").await.unwrap();
        assert_ne!(fork.id(), session.id());
        assert_eq!(*log.lock().unwrap(), ["options, 0 open", "fork at c1"]);
    }));
}
