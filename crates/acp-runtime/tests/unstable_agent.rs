//! Schema 1.20's unstable items on the agent's side, checked on the wire with a raw client:
//! `session/options` (and initial config options), session cursors, prompt suggestions and the
//! turn's token usage. The client's side is in `unstable_client.rs`.
#![cfg(feature = "unstable")]

mod common;

use std::sync::{Arc, Mutex};

use acp_runtime::agent::{self, Agent, ClientHandle, SessionClient, Turn};
use acp_runtime::{Error, Result};
use acp_types::*;
use common::{RawPeer, serve_agent};
use serde_json::{Value, json};

/// An agent that offers every schema 1.20 item; `image` says whether it takes images in
/// prompts (and so in suggestions). It logs what reached its hooks.
#[derive(Clone, Default)]
struct Agent120 {
    image: bool,
    log: Arc<Mutex<Vec<String>>>,
}

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("valid")
}

/// What a send came to: `ok`, `not advertised: <capability>` or `invalid`.
fn outcome(result: Result<()>) -> String {
    match result {
        Ok(()) => "ok".to_owned(),
        Err(Error::NotAdvertised { capability, .. }) => format!("not advertised: {capability}"),
        Err(Error::Invalid(_)) => "invalid".to_owned(),
        Err(other) => format!("{other}"),
    }
}

fn anchor(message: &str) -> Value {
    json!({"type": "agent_message", "messageId": message, "position": "after"})
}

fn cursor(id: &str, anchor: Option<Value>, fork: Option<bool>) -> CursorUpdate {
    let mut update = json!({"cursorId": id});
    if let Some(anchor) = anchor {
        update["anchor"] = anchor;
    }
    match fork {
        Some(true) => update["capabilities"] = json!({"fork": {}}),
        Some(false) => update["capabilities"] = json!(null),
        None => {}
    }
    from_json(update)
}

fn suggestion(prompt: Value) -> PromptSuggestion {
    from_json(json!({ "prompt": prompt }))
}

impl Agent for Agent120 {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
        response.agent_capabilities = from_json(json!({
            "loadSession": true,
            "promptCapabilities": {"image": self.image},
            "sessionCapabilities": {"options": {}, "fork": {}, "list": {}},
        }));
        Ok(response)
    }

    async fn new_session(
        &self,
        request: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        let options = serde_json::to_string(&request.config_options).unwrap();
        self.log.lock().unwrap().push(format!("new {options}"));
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn session_options(
        &self,
        request: SessionOptionsRequest,
        client: &ClientHandle,
    ) -> Result<SessionOptionsResponse> {
        let sessions = client.sessions().len();
        self.log
            .lock()
            .unwrap()
            .push(format!("options {} ({sessions} sessions)", request.cwd));
        let option = if request.cwd.ends_with("boolean") {
            json!({"id": "fast", "name": "Fast", "type": "boolean", "currentValue": false})
        } else {
            json!({"id": "speed", "name": "Speed", "category": "speed", "type": "select",
                "currentValue": "normal", "options": [{"value": "normal", "name": "Normal"}, {"value": "fast", "name": "Fast"}]})
        };
        Ok(from_json(json!({
            "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}]},
            "configOptions": [option],
        })))
    }

    async fn load_session(
        &self,
        _: LoadSessionRequest,
        session: SessionClient,
    ) -> Result<LoadSessionResponse> {
        session
            .replay([
                SessionUpdate::user_message_chunk("before"),
                SessionUpdate::PromptSuggestionsUpdate(PromptSuggestionsUpdate::new(vec![
                    suggestion(json!([{"type": "text", "text": "not history"}])),
                ])),
                SessionUpdate::agent_message_chunk("after"),
            ])
            .await?;
        Ok(LoadSessionResponse::new())
    }

    async fn fork_session(
        &self,
        request: ForkSessionRequest,
        _: SessionClient,
    ) -> Result<ForkSessionResponse> {
        let at = request.cursor_id.map(|c| c.to_string());
        self.log.lock().unwrap().push(format!("fork at {at:?}"));
        Ok(ForkSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let asked = request.prompt[0].as_text().unwrap_or_default().to_owned();
        let outcomes = match asked.as_str() {
            "cursors" => vec![
                outcome(turn.cursor_update(cursor("c0", None, Some(true))).await),
                outcome(
                    turn.cursor_update(cursor("c1", Some(anchor("m1")), Some(true)))
                        .await,
                ),
                outcome(
                    turn.cursor_update(cursor("c1", Some(anchor("m2")), None))
                        .await,
                ),
                outcome(
                    turn.cursor_update(cursor("c1", Some(anchor("m1")), None))
                        .await,
                ),
                outcome(turn.cursor_update(cursor("c2", Some(anchor("m1")), None)).await),
                outcome(turn.cursor_update(cursor("c3", Some(anchor("m1")), Some(true))).await),
                outcome(turn.cursor_update(cursor("c3", None, Some(false))).await),
            ],
            "suggest" => vec![
                outcome(
                    turn.prompt_suggestions(vec![suggestion(
                        json!([{"type": "text", "text": "Run the tests"}, {"type": "resource_link", "uri": "file:///a", "name": "a"}]),
                    )])
                    .await,
                ),
                outcome(
                    turn.prompt_suggestions(vec![suggestion(json!([{"type": "text", "text": " \n"}]))])
                        .await,
                ),
                outcome(turn.prompt_suggestions(vec![suggestion(json!([]))]).await),
                outcome(
                    turn.prompt_suggestions(vec![suggestion(
                        json!([{"type": "text", "text": "Look"}, {"type": "image", "mimeType": "image/png", "data": "AA=="}]),
                    )])
                    .await,
                ),
                outcome(
                    turn.prompt_suggestions(vec![suggestion(
                        json!([{"type": "audio", "mimeType": "audio/wav", "data": "AA=="}]),
                    )])
                    .await,
                ),
                outcome(turn.prompt_suggestions(Vec::new()).await),
            ],
            "usage" => {
                let usage: Usage = from_json(
                    json!({"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}),
                );
                return Ok(PromptResponse::new(StopReason::EndTurn).with_usage(usage));
            }
            "wait" => {
                turn.message("waiting").await?;
                turn.cancelled().await;
                let usage: Usage =
                    from_json(json!({"totalTokens": 3, "inputTokens": 2, "outputTokens": 1}));
                return Ok(PromptResponse::new(StopReason::EndTurn).with_usage(usage));
            }
            _ => vec![],
        };
        turn.message(outcomes.join("; ")).await?;
        Ok(StopReason::EndTurn.into())
    }
}

fn start(agent_impl: Agent120) -> RawPeer {
    serve_agent(agent_impl, agent::AgentOptions::default())
}

/// Sends a prompt; returns the updates seen before its answer, and the answer.
async fn prompt(peer: &mut RawPeer, id: i64, session: &str, text: &str) -> (Vec<Value>, Value) {
    peer.send_prompt(id, session, text).await;
    let mut seen = peer.recv_until_response(id).await;
    let answer = seen.pop().unwrap();
    let updates = seen
        .into_iter()
        .map(|m| m["params"]["update"].clone())
        .collect();
    (updates, answer)
}

fn said(updates: &[Value]) -> &str {
    updates
        .iter()
        .rev()
        .find(|u| u["sessionUpdate"] == "agent_message_chunk")
        .and_then(|u| u["content"]["text"].as_str())
        .unwrap_or_default()
}

#[test]
fn session_options_answers_the_pickers_and_opens_no_session() {
    smol::block_on(async {
        let agent_impl = Agent120::default();
        let log = agent_impl.log.clone();
        let mut peer = start(agent_impl);
        peer.initialize(json!({})).await;
        peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/options", "params": {"cwd": "/tmp"}}))
            .await;
        // Nothing but the answer comes: no update, no session.
        let seen = peer.recv_until_response(1).await;
        assert_eq!(seen.len(), 1, "{seen:?}");
        let answer = &seen[0]["result"];
        assert_eq!(answer["modes"]["currentModeId"], "ask", "{answer}");
        // The `speed` category passes as it is.
        assert_eq!(answer["configOptions"][0]["category"], "speed", "{answer}");
        let listed = peer.request(2, "session/list", json!({})).await;
        assert_eq!(listed["result"]["sessions"], json!([]), "{listed}");
        assert_eq!(*log.lock().unwrap(), ["options /tmp (0 sessions)"]);

        // Checked before the hook: absolute directories, a boolean option only for a client
        // that takes one (the agent's bug, answered as an internal error).
        let relative = peer
            .request(3, "session/options", json!({"cwd": "tmp"}))
            .await;
        assert_eq!(relative["error"]["code"], -32602, "{relative}");
        let boolean = peer
            .request(4, "session/options", json!({"cwd": "/tmp/boolean"}))
            .await;
        assert_eq!(boolean["error"]["code"], -32603, "{boolean}");
        assert!(
            boolean["error"]["message"]
                .as_str()
                .unwrap()
                .contains("session.configOptions.boolean"),
            "{boolean}"
        );
    });
}

#[test]
fn session_options_needs_its_capability_and_a_stored_session_needs_load_or_resume() {
    /// Advertises nothing, not even `loadSession`.
    struct Plain;
    impl Agent for Plain {
        async fn new_session(
            &self,
            _: NewSessionRequest,
            _: &ClientHandle,
        ) -> Result<NewSessionResponse> {
            Ok(NewSessionResponse::new(agent::new_session_id()))
        }
        async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
            Ok(StopReason::EndTurn.into())
        }
        async fn session_options(
            &self,
            _: SessionOptionsRequest,
            _: &ClientHandle,
        ) -> Result<SessionOptionsResponse> {
            panic!("not advertised: never called")
        }
    }
    smol::block_on(async {
        let mut peer = serve_agent(Plain, agent::AgentOptions::default());
        peer.initialize(json!({})).await;
        let answer = peer
            .request(1, "session/options", json!({"cwd": "/tmp"}))
            .await;
        assert_eq!(answer["error"]["code"], -32601, "{answer}");

        // An agent with `options` but neither `loadSession` nor `resume`.
        struct OptionsOnly;
        impl Agent for OptionsOnly {
            async fn initialize(
                &self,
                _: InitializeRequest,
                _: &ClientHandle,
            ) -> Result<InitializeResponse> {
                let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
                response.agent_capabilities.session_capabilities.options =
                    Some(SessionOptionsCapabilities::new());
                Ok(response)
            }
            async fn new_session(
                &self,
                _: NewSessionRequest,
                _: &ClientHandle,
            ) -> Result<NewSessionResponse> {
                Ok(NewSessionResponse::new(agent::new_session_id()))
            }
            async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
                Ok(StopReason::EndTurn.into())
            }
            async fn session_options(
                &self,
                _: SessionOptionsRequest,
                _: &ClientHandle,
            ) -> Result<SessionOptionsResponse> {
                Ok(SessionOptionsResponse::new())
            }
        }
        let mut peer = serve_agent(OptionsOnly, agent::AgentOptions::default());
        peer.initialize(json!({})).await;
        let fresh = peer
            .request(1, "session/options", json!({"cwd": "/tmp"}))
            .await;
        assert_eq!(fresh["result"], json!({}), "{fresh}");
        let stored = peer
            .request(
                2,
                "session/options",
                json!({"cwd": "/tmp", "sessionId": "old"}),
            )
            .await;
        assert_eq!(stored["error"]["code"], -32602, "{stored}");
    });
}

#[test]
fn initial_config_options_reach_the_agent_unless_an_id_is_named_twice() {
    smol::block_on(async {
        let agent_impl = Agent120::default();
        let log = agent_impl.log.clone();
        let mut peer = start(agent_impl);
        peer.initialize(json!({})).await;
        // Unknown ids, values and types are the agent's to ignore: nothing refuses them.
        let options = json!([
            {"configId": "model", "value": "no-such-model"},
            {"configId": "unknown", "type": "boolean", "value": true},
            {"configId": "future", "type": "range", "value": 3},
        ]);
        let answer = peer
            .request(
                1,
                "session/new",
                json!({"cwd": "/tmp", "mcpServers": [], "configOptions": options}),
            )
            .await;
        assert!(answer["result"]["sessionId"].is_string(), "{answer}");
        let logged = log.lock().unwrap()[0].clone();
        let received: Value = serde_json::from_str(logged.strip_prefix("new ").unwrap()).unwrap();
        assert_eq!(received, options);

        let twice =
            json!([{"configId": "model", "value": "a"}, {"configId": "model", "value": "b"}]);
        let answer = peer
            .request(
                2,
                "session/new",
                json!({"cwd": "/tmp", "mcpServers": [], "configOptions": twice}),
            )
            .await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert_eq!(log.lock().unwrap().len(), 1, "the hook did not run");
    });
}

#[test]
fn cursor_updates_need_the_capability_and_keep_their_first_anchor() {
    smol::block_on(async {
        let mut peer = start(Agent120::default());
        peer.initialize(json!({})).await;
        let session = peer.new_session(1).await;
        let (updates, _) = prompt(&mut peer, 2, &session, "cursors").await;
        assert_eq!(updates.len(), 1, "nothing but the outcome: {updates:?}");
        assert!(
            said(&updates).starts_with("not advertised: session.cursors;"),
            "{updates:?}"
        );

        let mut peer = start(Agent120::default());
        peer.initialize(json!({"session": {"cursors": {}}})).await;
        let session = peer.new_session(1).await;
        let (updates, _) = prompt(&mut peer, 2, &session, "cursors").await;
        assert_eq!(
            said(&updates),
            "invalid; ok; invalid; ok; ok; ok; ok",
            "no anchor first, and a moved anchor, are refused"
        );
        let sent: Vec<&Value> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "cursor_update")
            .collect();
        let ids: Vec<&str> = sent
            .iter()
            .map(|u| u["cursorId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["c1", "c1", "c2", "c3", "c3"], "{sent:?}");
        assert_eq!(sent[0]["anchor"], anchor("m1"));
        assert_eq!(
            sent[4]["capabilities"],
            Value::Null,
            "a clear is sent as null"
        );

        // A fork at a cursor: announced and forkable (c1) goes through; not forkable (c2, or
        // c3 since cleared) or never announced is refused before the agent runs.
        let fork = |id: i64, cursor: &str| {
            json!({"jsonrpc": "2.0", "id": id, "method": "session/fork",
                "params": {"sessionId": session, "cwd": "/tmp", "cursorId": cursor}})
        };
        for (id, cursor, code) in [(3, "c2", -32602), (4, "c3", -32602), (5, "nope", -32602)] {
            peer.send(fork(id, cursor)).await;
            let answer = peer.recv_until_response(id).await.pop().unwrap();
            assert_eq!(answer["error"]["code"], code, "{cursor}: {answer}");
        }
        peer.send(fork(6, "c1")).await;
        let answer = peer.recv_until_response(6).await.pop().unwrap();
        assert!(answer["result"]["sessionId"].is_string(), "{answer}");
    });
}

#[test]
fn cursors_announced_while_loading_are_kept_for_forks() {
    /// Announces a forkable cursor while loading.
    struct Loader;
    impl Agent for Loader {
        async fn initialize(
            &self,
            _: InitializeRequest,
            _: &ClientHandle,
        ) -> Result<InitializeResponse> {
            let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
            response.agent_capabilities = from_json(json!({
                "loadSession": true, "sessionCapabilities": {"fork": {}}}));
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
            _: LoadSessionRequest,
            session: SessionClient,
        ) -> Result<LoadSessionResponse> {
            session
                .cursor_update(cursor("c1", Some(anchor("m1")), Some(true)))
                .await?;
            Ok(LoadSessionResponse::new())
        }
        async fn fork_session(
            &self,
            _: ForkSessionRequest,
            _: SessionClient,
        ) -> Result<ForkSessionResponse> {
            Ok(ForkSessionResponse::new(agent::new_session_id()))
        }
        async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
            Ok(StopReason::EndTurn.into())
        }
    }
    smol::block_on(async {
        let mut peer = serve_agent(Loader, agent::AgentOptions::default());
        peer.initialize(json!({"session": {"cursors": {}}})).await;
        let loaded = peer
            .request(
                1,
                "session/load",
                json!({"sessionId": "old", "cwd": "/tmp", "mcpServers": []}),
            )
            .await;
        assert!(loaded["result"].is_object(), "{loaded}");
        let fork = peer
            .request(
                2,
                "session/fork",
                json!({"sessionId": "old", "cwd": "/tmp", "cursorId": "c1"}),
            )
            .await;
        assert!(fork["result"]["sessionId"].is_string(), "{fork}");
    });
}

#[test]
fn prompt_suggestions_carry_only_content_both_sides_take() {
    smol::block_on(async {
        // Without the client's capability, nothing is sent.
        let mut peer = start(Agent120::default());
        peer.initialize(json!({})).await;
        let session = peer.new_session(1).await;
        let (updates, _) = prompt(&mut peer, 2, &session, "suggest").await;
        assert_eq!(updates.len(), 1, "{updates:?}");
        assert!(
            said(&updates).starts_with("not advertised: session.promptSuggestions;"),
            "{updates:?}"
        );

        // Text and links always; images only when both sides take them; never blank.
        let mut peer = start(Agent120::default());
        peer.initialize(json!({"session": {"promptSuggestions": {"image": {}}}}))
            .await;
        let session = peer.new_session(1).await;
        let (updates, _) = prompt(&mut peer, 2, &session, "suggest").await;
        assert_eq!(
            said(&updates),
            "ok; invalid; invalid; invalid; not advertised: session.promptSuggestions.audio; ok",
            "the agent itself does not take images here"
        );
        let sent: Vec<&Value> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "prompt_suggestions_update")
            .collect();
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(sent[1]["suggestions"], json!([]), "an empty list withdraws");

        let mut peer = start(Agent120 {
            image: true,
            ..Agent120::default()
        });
        peer.initialize(json!({"session": {"promptSuggestions": {"image": {}}}}))
            .await;
        let session = peer.new_session(1).await;
        let (updates, _) = prompt(&mut peer, 2, &session, "suggest").await;
        assert_eq!(
            said(&updates),
            "ok; invalid; invalid; ok; not advertised: session.promptSuggestions.audio; ok"
        );
    });
}

#[test]
fn replay_skips_prompt_suggestions() {
    smol::block_on(async {
        let mut peer = start(Agent120::default());
        peer.initialize(json!({"session": {"promptSuggestions": {}}}))
            .await;
        peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/load",
            "params": {"sessionId": "old", "cwd": "/tmp", "mcpServers": []}}))
            .await;
        let seen = peer.recv_until_response(1).await;
        let kinds: Vec<&str> = seen[..seen.len() - 1]
            .iter()
            .map(|m| m["params"]["update"]["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["user_message_chunk", "agent_message_chunk"]);
    });
}

#[test]
fn the_turn_answers_its_token_usage_also_when_cancelled() {
    smol::block_on(async {
        let mut peer = start(Agent120::default());
        peer.initialize(json!({})).await;
        let session = peer.new_session(1).await;
        let (_, answer) = prompt(&mut peer, 2, &session, "usage").await;
        assert_eq!(
            answer["result"],
            json!({"stopReason": "end_turn", "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}})
        );
        peer.send_prompt(3, &session, "wait").await;
        let waiting = peer.recv().await;
        assert_eq!(waiting["params"]["update"]["content"]["text"], "waiting");
        peer.send(
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
        )
        .await;
        let answer = peer.recv_until_response(3).await.pop().unwrap();
        assert_eq!(
            answer["result"],
            json!({"stopReason": "cancelled", "usage": {"totalTokens": 3, "inputTokens": 2, "outputTokens": 1}})
        );
    });
}
