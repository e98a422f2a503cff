//! The agent side keeps the protocol's rules, checked on the wire with a raw client.

mod common;

use acp_runtime::agent::{self, Agent, ClientHandle, Turn};
use acp_runtime::{Error, Result};
use acp_types::*;
use common::{RawPeer, assert_error_mentions, serve_agent};
use serde_json::json;

/// An agent with modes, config options and a prompt that streams, waits for cancellation when
/// asked to, and fails when asked to.
struct TestAgent;

impl Agent for TestAgent {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
        response.agent_capabilities.session_capabilities.close =
            Some(SessionCloseCapabilities::new());
        Ok(response)
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        let mut response = NewSessionResponse::new(agent::new_session_id());
        response.modes = Some(SessionModeState::new(
            "ask",
            vec![
                SessionMode::new("ask", "Ask"),
                SessionMode::new("code", "Code"),
            ],
        ));
        response.config_options = Some(vec![SessionConfigOption::new(
            "model",
            "Model",
            SessionConfigSelect::new(
                "fast",
                vec![
                    SessionConfigSelectOption::new("fast", "Fast"),
                    SessionConfigSelectOption::new("smart", "Smart"),
                ],
            ),
        )]);
        Ok(response)
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let text = request
            .prompt
            .first()
            .and_then(ContentBlock::as_text)
            .unwrap_or_default()
            .to_owned();
        match text.as_str() {
            "stream" => {
                for i in 0..100 {
                    turn.message(format!("{i} ")).await?;
                }
                Ok(StopReason::EndTurn.into())
            }
            "wait-for-cancel" => {
                turn.message("waiting").await?;
                turn.cancelled().await;
                // What an aborted model call looks like: an error, which must not reach the client.
                Err(Error::internal("model request aborted"))
            }
            "read-file" => {
                let result = turn.read_text_file("/etc/hostname").await;
                match result {
                    Err(Error::NotAdvertised { capability, .. }) => {
                        turn.message(format!("refused locally: {capability}"))
                            .await?;
                        Ok(StopReason::EndTurn.into())
                    }
                    other => panic!("expected a local refusal, got {other:?}"),
                }
            }
            _ => Ok(StopReason::EndTurn.into()),
        }
    }
}

fn start() -> RawPeer {
    serve_agent(TestAgent, agent::AgentOptions::default())
}

/// A started agent, initialized with `client_capabilities`, and a session opened on it.
async fn start_with_session(client_capabilities: serde_json::Value) -> (RawPeer, String) {
    let mut peer = start();
    peer.initialize(client_capabilities).await;
    let session = peer.new_session(1).await;
    (peer, session)
}

#[test]
fn requests_before_initialize_are_refused() {
    smol::block_on(async {
        let mut peer = start();
        let response = peer
            .request(1, "session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await;
        assert_error_mentions(&response, -32600, "initialize");
        // And the connection still works.
        assert_eq!(
            peer.initialize(json!({})).await["result"]["protocolVersion"],
            1
        );
    });
}

#[test]
fn requests_pipelined_after_initialize_wait_for_it() {
    smol::block_on(async {
        let mut peer = start();
        // Both in one write: the runtime must not race `session/new` against `initialize`.
        peer.send_text(concat!(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#,
            "\n"
        ))
        .await;
        let first = peer.recv().await;
        let second = peer.recv().await;
        assert_eq!(first["id"], 0);
        assert!(first["result"].is_object(), "{first}");
        assert_eq!(second["id"], 1);
        assert!(second["result"]["sessionId"].is_string(), "{second}");
    });
}

#[test]
fn version_negotiation_answers_the_requested_or_the_latest() {
    smol::block_on(async {
        for (requested, expected) in [(1, 1), (2, 1), (99, 1), (0, 1)] {
            let mut peer = start();
            let response = peer
                .request(
                    0,
                    "initialize",
                    json!({"protocolVersion": requested, "clientCapabilities": {}}),
                )
                .await;
            assert_eq!(
                response["result"]["protocolVersion"], expected,
                "requested {requested}"
            );
        }
    });
}

#[test]
fn initialize_twice_is_refused() {
    smol::block_on(async {
        let mut peer = start();
        peer.initialize(json!({})).await;
        let again = peer.initialize(json!({})).await;
        assert_eq!(again["error"]["code"], -32600);
    });
}

#[test]
fn session_setup_rules() {
    smol::block_on(async {
        let mut peer = start();
        peer.initialize(json!({})).await;
        let relative = peer
            .request(
                1,
                "session/new",
                json!({"cwd": "project", "mcpServers": []}),
            )
            .await;
        assert_error_mentions(&relative, -32602, "absolute");

        let http = json!({"type": "http", "name": "web", "url": "https://x", "headers": []});
        let refused = peer
            .request(
                2,
                "session/new",
                json!({"cwd": "/tmp", "mcpServers": [http]}),
            )
            .await;
        assert_error_mentions(&refused, -32602, "mcpCapabilities.http");

        let a = peer.new_session(3).await;
        let b = peer.new_session(4).await;
        assert_ne!(a, b, "session ids are unique");

        let unknown = peer.prompt(5, "nope", "hi").await;
        assert_eq!(unknown["error"]["code"], -32002);
        assert_eq!(unknown["error"]["data"]["sessionId"], "nope");

        let load = peer
            .request(
                6,
                "session/load",
                json!({"sessionId": a, "cwd": "/tmp", "mcpServers": []}),
            )
            .await;
        assert_eq!(
            load["error"]["code"], -32601,
            "loadSession is not advertised: {load}"
        );
    });
}

#[test]
fn updates_are_written_before_the_prompt_response() {
    smol::block_on(async {
        let (mut peer, session) = start_with_session(json!({})).await;
        peer.send_prompt(2, &session, "stream").await;
        let seen = peer.recv_until_response(2).await;
        assert_eq!(seen.len(), 101);
        for (i, update) in seen[..100].iter().enumerate() {
            assert_eq!(
                update["params"]["update"]["content"]["text"],
                format!("{i} ")
            );
        }
        assert_eq!(seen[100]["result"]["stopReason"], "end_turn");
    });
}

#[test]
fn cancel_answers_cancelled_even_when_the_handler_errors() {
    smol::block_on(async {
        let (mut peer, session) = start_with_session(json!({})).await;
        peer.send_prompt(2, &session, "wait-for-cancel").await;
        let first = peer.recv().await;
        assert_eq!(first["method"], "session/update");

        // A second prompt while one runs is refused.
        let second = peer.prompt(3, &session, "x").await;
        assert_eq!(second["error"]["code"], -32600, "{second}");

        peer.send(
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
        )
        .await;
        let response = peer.recv_until_response(2).await.pop().unwrap();
        assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
        assert!(response.get("error").is_none());

        // The session takes prompts again.
        let again = peer.prompt(4, &session, "x").await;
        assert_eq!(again["result"]["stopReason"], "end_turn");
    });
}

#[test]
fn modes_and_config_options_are_checked_against_the_session() {
    smol::block_on(async {
        let (mut peer, session) = start_with_session(json!({})).await;
        let bad_mode = peer
            .request(
                2,
                "session/set_mode",
                json!({"sessionId": session, "modeId": "yolo"}),
            )
            .await;
        assert_error_mentions(&bad_mode, -32602, "yolo");
        let good_mode = peer
            .request(
                3,
                "session/set_mode",
                json!({"sessionId": session, "modeId": "code"}),
            )
            .await;
        assert!(good_mode["result"].is_object(), "{good_mode}");

        let bad_value = peer
            .request(
                4,
                "session/set_config_option",
                json!({"sessionId": session, "configId": "model", "value": "huge"}),
            )
            .await;
        assert_eq!(bad_value["error"]["code"], -32602);
        let bad_id = peer
            .request(
                5,
                "session/set_config_option",
                json!({"sessionId": session, "configId": "color", "value": "red"}),
            )
            .await;
        assert_eq!(bad_id["error"]["code"], -32602);
        let good = peer
            .request(
                6,
                "session/set_config_option",
                json!({"sessionId": session, "configId": "model", "value": "smart"}),
            )
            .await;
        assert_eq!(
            good["result"]["configOptions"][0]["currentValue"], "smart",
            "{good}"
        );
    });
}

#[test]
fn prompt_content_outside_prompt_capabilities_is_refused() {
    smol::block_on(async {
        let (mut peer, session) = start_with_session(json!({})).await;
        let image = json!({"type": "image", "data": "aGk=", "mimeType": "image/png"});
        let response = peer
            .request(
                2,
                "session/prompt",
                json!({"sessionId": session, "prompt": [image]}),
            )
            .await;
        assert_error_mentions(&response, -32602, "promptCapabilities.image");
    });
}

#[test]
fn calls_the_client_did_not_advertise_fail_locally() {
    smol::block_on(async {
        let (mut peer, session) = start_with_session(json!({"fs": {"readTextFile": false}})).await;
        peer.send_prompt(2, &session, "read-file").await;
        let seen = peer.recv_until_response(2).await;
        // No fs/read_text_file went out: only the update and the response.
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(
            seen[0]["params"]["update"]["content"]["text"],
            "refused locally: fs.readTextFile"
        );
    });
}

#[test]
fn closing_a_session_forgets_it() {
    smol::block_on(async {
        let (mut peer, session) = start_with_session(json!({})).await;
        let closed = peer
            .request(2, "session/close", json!({"sessionId": session}))
            .await;
        assert!(closed["result"].is_object(), "{closed}");
        let after = peer.prompt(3, &session, "x").await;
        assert_eq!(after["error"]["code"], -32002);
        let list = peer.request(4, "session/list", json!({})).await;
        assert_eq!(list["error"]["code"], -32601, "list is not advertised");
    });
}

#[test]
fn malformed_params_and_unknown_methods_get_precise_errors() {
    smol::block_on(async {
        let mut peer = start();
        peer.initialize(json!({})).await;
        let bad = peer.request(1, "session/new", json!({"cwd": 5})).await;
        assert_eq!(bad["error"]["code"], -32602);
        let unknown = peer.request(2, "session/teleport", json!({})).await;
        assert_eq!(unknown["error"]["code"], -32601);
        let ext = peer.request(3, "_vendor/thing", json!({})).await;
        assert_eq!(ext["error"]["code"], -32601);
        // Unknown notifications are never answered: the next message is the next response.
        peer.send(json!({"jsonrpc": "2.0", "method": "_vendor/notice", "params": {}}))
            .await;
        peer.send(json!({"jsonrpc": "2.0", "method": "session/teleport", "params": {}}))
            .await;
        let next = peer.request(4, "session/teleport", json!({})).await;
        assert_eq!(next["id"], 4);
        assert_eq!(next["error"]["code"], -32601);
    });
}

#[test]
fn a_prompt_cancelled_by_cancel_request_frees_the_session() {
    smol::block_on(async {
        let (mut peer, session) = start_with_session(json!({})).await;
        peer.send_prompt(2, &session, "wait-for-cancel").await;
        assert_eq!(peer.recv().await["method"], "session/update");
        peer.send(
            json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}}),
        )
        .await;
        let response = peer.recv_until_response(2).await.pop().unwrap();
        assert_eq!(response["error"]["code"], -32800, "{response}");
        let again = peer.prompt(3, &session, "x").await;
        assert_eq!(again["result"]["stopReason"], "end_turn", "{again}");
    });
}

/// Sessions of connections that share a session budget (a server's memory ceiling): what
/// one keeps, the other cannot take; a closed session, and a connection that ended, give
/// theirs back.
#[test]
fn a_shared_session_budget_bounds_connections_together() {
    smol::block_on(async {
        let shared = acp_jsonrpc::ByteBudget::new(4096);
        let start_sharing = || {
            let options = agent::AgentOptions::default().with_shared_session_budget(shared.clone());
            serve_agent(TestAgent, options)
        };
        let mut first = start_sharing();
        first.initialize(json!({})).await;
        // A session with no servers costs 512 bytes and its cwd's 4 and `[]`'s 2: 7 fit.
        let mut sessions = Vec::new();
        for id in 1..=7 {
            sessions.push(first.new_session(id).await);
        }
        let empty = json!({"cwd": "/tmp", "mcpServers": []});
        let refused = first.request(8, "session/new", empty.clone()).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let mut second = start_sharing();
        second.initialize(json!({})).await;
        let refused = second.request(1, "session/new", empty.clone()).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let closed = first
            .request(9, "session/close", json!({"sessionId": sessions[0]}))
            .await;
        assert!(closed["result"].is_object(), "{closed}");
        second.new_session(2).await;
        assert_eq!(shared.used(), 7 * 518);
        drop(first);
        for _ in 0..200 {
            if shared.used() == 518 {
                break;
            }
            smol::Timer::after(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(
            shared.used(),
            518,
            "the ended connection's sessions are given back"
        );
    });
}
