//! The client side keeps the protocol's rules, checked against a raw agent on the wire.

mod common;

use acp_runtime::Error;
use acp_runtime::client::{self, AgentHandle, AutoAllow, ClientOptions, DropReason};
use acp_runtime::fs::FsHost;
use acp_runtime::terminal::TerminalHost;
use acp_types::*;
use common::{RawPeer, assert_error_mentions, within};
use serde_json::json;
use std::sync::{Arc, Mutex};

fn start(options: ClientOptions) -> (AgentHandle, RawPeer) {
    let (peer, endpoint) = RawPeer::new();
    let (agent, driver) = client::connect(AutoAllow, endpoint.reader, endpoint.writer, options);
    smol::spawn(driver).detach();
    (agent, peer)
}

/// Answers `initialize` with these agent capabilities.
async fn initialize(agent: &AgentHandle, peer: &mut RawPeer, capabilities: serde_json::Value) {
    let init = agent.initialize();
    let answer = async {
        let request = peer.recv().await;
        assert_eq!(request["method"], "initialize");
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1, "agentCapabilities": capabilities}}))
            .await;
    };
    let (result, ()) = futures_lite::future::zip(init, answer).await;
    result.unwrap();
}

async fn open_session(agent: &AgentHandle, peer: &mut RawPeer, id: &str) -> client::Session {
    let create = agent.new_session("/tmp");
    let answer = async {
        let request = peer.recv().await;
        assert_eq!(request["method"], "session/new");
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": id}}))
            .await;
    };
    futures_lite::future::zip(create, answer).await.0.unwrap()
}

/// A client with default options, initialized, and its session `s1` open.
async fn start_with_session() -> (AgentHandle, RawPeer, client::Session) {
    let (agent, mut peer) = start(ClientOptions::default());
    initialize(&agent, &mut peer, json!({})).await;
    let session = open_session(&agent, &mut peer, "s1").await;
    (agent, peer, session)
}

/// The `session/update` notification of an agent message chunk of `text` to `session_id`.
fn text_chunk(session_id: impl serde::Serialize, text: impl serde::Serialize) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id,
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})
}

#[test]
fn an_unsupported_protocol_version_is_a_typed_error_and_closes() {
    smol::block_on(async {
        let (agent, mut peer) = start(ClientOptions::default());
        let init = agent.initialize();
        let answer = async {
            let request = peer.recv().await;
            assert_eq!(request["params"]["protocolVersion"], 1);
            peer.send(
                json!({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 7}}),
            )
            .await;
        };
        let (result, ()) = futures_lite::future::zip(init, answer).await;
        assert!(
            matches!(
                result,
                Err(Error::UnsupportedProtocolVersion { offered: 7, .. })
            ),
            "{result:?}"
        );
        assert!(agent.connection().is_closed());
    });
}

#[test]
fn calls_before_initialize_or_outside_capabilities_are_refused_locally() {
    smol::block_on(async {
        let (agent, mut peer) = start(ClientOptions::default());
        let early = agent.new_session("/tmp").await;
        assert!(matches!(early, Err(Error::NotInitialized(_))), "{early:?}");
        initialize(&agent, &mut peer, json!({})).await;

        let relative = agent.new_session("relative/dir").await;
        assert!(matches!(relative, Err(Error::Invalid(_))), "{relative:?}");
        let load = agent
            .load_session(LoadSessionRequest::new(
                Vec::<McpServer>::new(),
                "/tmp",
                "s1",
            ))
            .await;
        assert!(
            matches!(
                load,
                Err(Error::NotAdvertised {
                    capability: "loadSession",
                    ..
                })
            ),
            "{:?}",
            load.err()
        );
        let list = agent.list_sessions(ListSessionsRequest::new()).await;
        assert!(matches!(
            list,
            Err(Error::NotAdvertised {
                capability: "sessionCapabilities.list",
                ..
            })
        ));
        let http = McpServer::Http(McpServerHttp::new(
            "web",
            "https://x",
            Vec::<HttpHeader>::new(),
        ));
        let with_http = agent
            .new_session_with(NewSessionRequest::new("/tmp", vec![http]))
            .await;
        assert!(matches!(
            with_http,
            Err(Error::NotAdvertised {
                capability: "mcpCapabilities.http",
                ..
            })
        ));

        let session = open_session(&agent, &mut peer, "s1").await;
        let image = ContentBlock::Image(ImageContent::new("aGk=", "image/png"));
        let refused = session.prompt(vec![image]).await;
        assert!(matches!(
            refused,
            Err(Error::NotAdvertised {
                capability: "promptCapabilities.image",
                ..
            })
        ));

        // None of the refused calls reached the wire: the next message is this one.
        let cancel = session.cancel();
        let (sent, seen) = futures_lite::future::zip(cancel, peer.recv()).await;
        sent.unwrap();
        assert_eq!(seen["method"], "session/cancel");
    });
}

#[test]
fn updates_before_the_session_exists_are_kept() {
    smol::block_on(async {
        let (agent, mut peer) = start(ClientOptions::default());
        initialize(&agent, &mut peer, json!({})).await;
        let create = agent.new_session("/tmp");
        let answer = async {
            let request = peer.recv().await;
            // Real agents announce commands before answering session/new.
            peer.send(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "early",
                "update": {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "web", "description": "Search"}]}}}))
                .await;
            peer.send(
                json!({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "early"}}),
            )
            .await;
        };
        let session = futures_lite::future::zip(create, answer).await.0.unwrap();
        let update = within("the early update", session.next_update())
            .await
            .unwrap()
            .unwrap();
        assert!(
            matches!(update, SessionUpdate::AvailableCommandsUpdate(_)),
            "{update:?}"
        );
    });
}

/// An agent may use a session as soon as it has answered `session/new`, before this client's
/// application has even seen the answer: a request right behind the answer, in the same read,
/// waits for the session instead of being refused as unknown.
#[test]
fn a_request_right_behind_the_session_new_answer_is_served() {
    smol::block_on(async {
        let dir = std::env::temp_dir().join(format!("acp-client-early-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "hello\n").unwrap();
        let options = ClientOptions::default().with_file_system(FsHost::new());
        let (agent, mut peer) = start(options);
        initialize(&agent, &mut peer, json!({})).await;
        let path = dir.join("a.txt").display().to_string();
        for round in 0..20 {
            let create = agent.new_session(&dir);
            let id = format!("s{round}");
            let answer = async {
                let request = peer.recv().await;
                let answer =
                    json!({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": id}});
                let read = json!({"jsonrpc": "2.0", "id": round, "method": "fs/read_text_file",
                    "params": {"sessionId": id, "path": path}});
                peer.send_text(&format!("{answer}\n{read}\n")).await;
                peer.recv_until_response(round).await.pop().unwrap()
            };
            let (session, read) = futures_lite::future::zip(create, answer).await;
            session.unwrap();
            assert_eq!(
                read["result"]["content"], "hello\n",
                "round {round}: {read}"
            );
        }
        // Without a session being opened, an unknown session is still refused at once.
        let read = peer
            .request(
                99,
                "fs/read_text_file",
                json!({"sessionId": "nope", "path": path}),
            )
            .await;
        assert_eq!(read["error"]["code"], -32002, "{read}");
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Updates for made-up session ids are kept for a few ids only: memory stays bounded, the
/// rest is reported (to the observer and to the application), and a session opened later still gets what was kept for it.
#[test]
fn updates_for_unknown_sessions_are_kept_for_a_bounded_number_of_ids() {
    smol::block_on(async {
        let problems = Arc::new(Mutex::new(Vec::new()));
        let observer = ProblemLog(problems.clone());
        let options = ClientOptions::default().with_connection_options(
            acp_jsonrpc::ConnectionOptions::default().with_observer(observer),
        );
        let (agent, mut peer) = start(options);
        initialize(&agent, &mut peer, json!({})).await;
        for n in 0..20 {
            peer.send(text_chunk(format!("made-up-{n}"), format!("{n}")))
                .await;
        }
        let session = open_session(&agent, &mut peer, "made-up-3").await;
        let update = within("the kept update", session.next_update())
            .await
            .unwrap()
            .unwrap();
        assert!(
            matches!(&update, SessionUpdate::AgentMessageChunk(chunk) if chunk.content.as_text() == Some("3")),
            "{update:?}"
        );
        let dropped: Vec<String> = problems
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.contains("was dropped"))
            .cloned()
            .collect();
        assert_eq!(dropped.len(), 4, "{dropped:?}");
        assert!(dropped[0].contains("made-up-16"), "{dropped:?}");
        // The application is told too, one report per id.
        let reports = agent.take_dropped_updates();
        let ids: Vec<_> = reports
            .iter()
            .map(|r| r.session_id.clone().unwrap())
            .collect();
        assert_eq!(
            ids,
            ["made-up-16", "made-up-17", "made-up-18", "made-up-19"]
        );
        assert!(
            reports
                .iter()
                .all(|r| r.updates == 1 && r.reason == DropReason::UnopenedIds { limit: 16 })
        );
        assert!(agent.take_dropped_updates().is_empty());
        // The updates kept for the other 15 ids can be taken, in the order they came.
        let unopened: Vec<String> = agent
            .take_unopened_updates()
            .into_iter()
            .map(|u| format!("{}: {:?}", u.session_id, u.update.map(|_| ())))
            .collect();
        let expected: Vec<String> = (0..16)
            .filter(|n| *n != 3)
            .map(|n| format!("made-up-{n}: Ok(())"))
            .collect();
        assert_eq!(unopened, expected);
        assert_eq!(agent.buffered_update_bytes(), 0);
    });
}

/// Keeps the text of every problem the connection reports.
struct ProblemLog(Arc<Mutex<Vec<String>>>);

impl acp_jsonrpc::Observer for ProblemLog {
    fn problem(&self, problem: &acp_jsonrpc::Problem) {
        self.0.lock().unwrap().push(problem.to_string());
    }
}

#[test]
fn a_turn_yields_its_updates_then_its_stop_reason() {
    smol::block_on(async {
        let (_agent, mut peer, session) = start_with_session().await;
        let mut turn = session.prompt(vec!["hi".into()]).await.unwrap();
        let agent_side = async {
            let request = peer.recv().await;
            assert_eq!(request["method"], "session/prompt");
            for i in 0..50 {
                peer.send(text_chunk("s1", i.to_string())).await;
            }
            peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": "end_turn"}})).await;
        };
        let reading = async {
            let mut texts = Vec::new();
            while let Some(update) = turn.next().await {
                let update = update.unwrap();
                let SessionUpdate::AgentMessageChunk(chunk) = update else {
                    panic!("{update:?}")
                };
                texts.push(chunk.content.as_text().unwrap().to_owned());
            }
            (texts, turn.end().await.unwrap())
        };
        let ((), (texts, end)) = futures_lite::future::zip(agent_side, reading).await;
        assert_eq!(texts, (0..50).map(|i| i.to_string()).collect::<Vec<_>>());
        assert_eq!(end.stop_reason, StopReason::EndTurn);
        // A second turn may start now.
        assert!(session.prompt(vec!["again".into()]).await.is_ok());
    });
}

/// A client whose permission prompt never answers (a user who walked away).
struct NeverAnswers;

impl client::Client for NeverAnswers {
    async fn request_permission(
        &self,
        _: RequestPermissionRequest,
    ) -> acp_runtime::Result<RequestPermissionResponse> {
        futures_lite::future::pending().await
    }
}

#[test]
fn cancel_answers_pending_permission_requests_cancelled() {
    smol::block_on(async {
        let (mut peer, endpoint) = RawPeer::new();
        let (agent, driver) = client::connect(
            NeverAnswers,
            endpoint.reader,
            endpoint.writer,
            ClientOptions::default(),
        );
        smol::spawn(driver).detach();
        initialize(&agent, &mut peer, json!({})).await;
        let session = open_session(&agent, &mut peer, "s1").await;
        let turn = session.prompt(vec!["go".into()]).await.unwrap();
        let ended = smol::spawn(turn.end());
        let prompt = peer.recv().await;
        peer.send(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
            "update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "rm -rf", "status": "pending"}}}))
            .await;
        peer.send(json!({"jsonrpc": "2.0", "id": 900, "method": "session/request_permission", "params": {"sessionId": "s1",
            "toolCall": {"toolCallId": "t1"}, "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]}}))
            .await;
        // Let the permission request reach the client before cancelling.
        smol::Timer::after(std::time::Duration::from_millis(50)).await;
        let cancel = session.cancel();
        let collect = async {
            let mut seen = vec![peer.recv().await, peer.recv().await];
            seen.sort_by_key(|m| m.get("method").is_none());
            seen
        };
        let (sent, seen) = futures_lite::future::zip(cancel, collect).await;
        sent.unwrap();
        assert_eq!(seen[0]["method"], "session/cancel");
        assert_eq!(seen[1]["id"], 900);
        assert_eq!(seen[1]["result"]["outcome"]["outcome"], "cancelled");
        assert_eq!(
            session.tool_call(&ToolCallId::new("t1")),
            Some(client::ToolCallState::Cancelled)
        );
        peer.send(
            json!({"jsonrpc": "2.0", "id": prompt["id"], "result": {"stopReason": "cancelled"}}),
        )
        .await;
        assert_eq!(
            within("turn end", ended).await.unwrap().stop_reason,
            StopReason::Cancelled
        );
    });
}

#[test]
fn auth_required_is_recognisable() {
    smol::block_on(async {
        let (agent, mut peer) = start(ClientOptions::default());
        initialize(&agent, &mut peer, json!({})).await;
        let create = agent.new_session("/tmp");
        let answer = async {
            let request = peer.recv().await;
            peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": "Authentication required"}}))
                .await;
        };
        let result = futures_lite::future::zip(create, answer).await.0;
        let error = result.err().unwrap();
        assert!(error.is_auth_required(), "{error:?}");
        let unknown_method = agent.authenticate("nope").await;
        assert!(matches!(unknown_method, Err(Error::Invalid(_))));
    });
}

#[test]
fn fs_and_terminal_calls_are_served_by_the_hosts() {
    smol::block_on(async {
        let dir = std::env::temp_dir().join(format!("acp-client-rules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(dir.join("big.txt"), "x".repeat(100)).unwrap();
        let options = ClientOptions::default()
            .with_file_system(FsHost::new().with_max_read_bytes(64))
            .with_terminals(TerminalHost::new());
        let (agent, mut peer) = start(options);
        let init = agent.initialize();
        let request = async {
            let request = peer.recv().await;
            assert_eq!(
                request["params"]["clientCapabilities"]["fs"]["readTextFile"],
                true
            );
            assert_eq!(request["params"]["clientCapabilities"]["terminal"], true);
            peer.send(
                json!({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1}}),
            )
            .await;
        };
        futures_lite::future::zip(init, request).await.0.unwrap();
        let create = agent.new_session(&dir);
        let answer = async {
            let request = peer.recv().await;
            peer.send(
                json!({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}}),
            )
            .await;
        };
        let _session = futures_lite::future::zip(create, answer).await.0.unwrap();

        let path = dir.join("a.txt").display().to_string();
        let read = peer
            .request(
                1,
                "fs/read_text_file",
                json!({"sessionId": "s1", "path": path, "line": 2, "limit": 1}),
            )
            .await;
        assert_eq!(read["result"]["content"], "two\n");
        let big = dir.join("big.txt").display().to_string();
        let too_large = peer
            .request(
                2,
                "fs/read_text_file",
                json!({"sessionId": "s1", "path": big}),
            )
            .await;
        assert_error_mentions(&too_large, -32602, "too large");
        let missing = dir.join("missing.txt").display().to_string();
        // Outside the session's directory, missing, and asked for another session.
        for (id, session, path, code) in [
            (2, "s1", "/etc/passwd", -32602),
            (3, "s1", missing.as_str(), -32002),
            (4, "s2", path.as_str(), -32002),
        ] {
            let refused = peer
                .request(
                    id,
                    "fs/read_text_file",
                    json!({"sessionId": session, "path": path}),
                )
                .await;
            assert_eq!(refused["error"]["code"], code, "{path}: {refused}");
        }

        let created = peer
            .request(
                5,
                "terminal/create",
                json!({"sessionId": "s1", "command": "sh", "args": ["-c", "echo hi; exit 3"]}),
            )
            .await;
        let terminal = created["result"]["terminalId"].clone();
        let exit = peer
            .request(
                6,
                "terminal/wait_for_exit",
                json!({"sessionId": "s1", "terminalId": terminal}),
            )
            .await;
        assert_eq!(exit["result"]["exitCode"], 3);
        let output = peer
            .request(
                7,
                "terminal/output",
                json!({"sessionId": "s1", "terminalId": terminal}),
            )
            .await;
        assert_eq!(output["result"]["output"], "hi\n");
        assert_eq!(output["result"]["exitStatus"]["exitCode"], 3);
        peer.request(
            8,
            "terminal/release",
            json!({"sessionId": "s1", "terminalId": terminal}),
        )
        .await;
        let released = peer
            .request(
                9,
                "terminal/output",
                json!({"sessionId": "s1", "terminalId": terminal}),
            )
            .await;
        assert_eq!(released["error"]["code"], -32002);
        std::fs::remove_dir_all(&dir).unwrap();
    });
}

#[test]
fn a_crashed_agent_fails_calls_with_its_status_and_stderr() {
    smol::block_on(async {
        let command = acp_runtime::process::AgentCommand::new("sh")
            .args(["-c", "echo 'fatal: no API key' >&2; exit 3"]);
        let (agent, driver, _process) =
            client::spawn(AutoAllow, command, ClientOptions::default()).unwrap();
        smol::spawn(driver).detach();
        let error = within("the crash", agent.initialize()).await.unwrap_err();
        let Error::AgentExited {
            status,
            stderr_tail,
        } = &error
        else {
            panic!("{error:?}")
        };
        assert_eq!(status.code, Some(3), "{status}");
        assert!(stderr_tail.contains("fatal: no API key"), "{stderr_tail}");
    });
}

#[test]
fn no_terminal_process_outlives_the_connection() {
    smol::block_on(async {
        let (mut peer, endpoint) = RawPeer::new();
        let options = ClientOptions::default().with_terminals(TerminalHost::new());
        let (agent, driver) = client::connect(AutoAllow, endpoint.reader, endpoint.writer, options);
        let driver = smol::spawn(driver);
        initialize(&agent, &mut peer, json!({})).await;
        let _session = open_session(&agent, &mut peer, "s1").await;
        let marker = format!("acp-test-{}-{}", std::process::id(), line!());
        let created = peer
            .request(1, "terminal/create", json!({"sessionId": "s1", "command": "sh", "args": ["-c", format!("sleep 1000; : {marker}")]}))
            .await;
        assert!(created["result"]["terminalId"].is_string(), "{created}");
        let running = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(Result::ok)
                .any(|entry| {
                    std::fs::read(entry.path().join("cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
                })
        };
        for _ in 0..100 {
            if running() {
                break;
            }
            smol::Timer::after(std::time::Duration::from_millis(10)).await;
        }
        assert!(running(), "the terminal command should run");
        // The agent goes away: its end of the connection closes.
        drop(peer);
        within("the driver to end", driver).await.unwrap();
        for _ in 0..100 {
            if !running() {
                break;
            }
            smol::Timer::after(std::time::Duration::from_millis(10)).await;
        }
        assert!(!running(), "the terminal process outlived the connection");
    });
}

/// The terminal caps reach the agent as a precise `-32602` naming the limit and its scope;
/// releasing a terminal frees the slot.
#[test]
fn too_many_terminals_is_a_precise_error_on_the_wire() {
    smol::block_on(async {
        let options = ClientOptions::default()
            .with_terminals(TerminalHost::new().with_max_terminals_per_session(1));
        let (agent, mut peer) = start(options);
        initialize(&agent, &mut peer, json!({})).await;
        let _session = open_session(&agent, &mut peer, "s1").await;
        let create = json!({"sessionId": "s1", "command": "sleep", "args": ["1000"]});
        let first = peer.request(1, "terminal/create", create.clone()).await;
        let terminal = first["result"]["terminalId"].clone();
        let refused = peer.request(2, "terminal/create", create.clone()).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(
            refused["error"]["data"],
            json!({"limit": 1, "scope": "session"})
        );
        peer.request(
            3,
            "terminal/release",
            json!({"sessionId": "s1", "terminalId": terminal}),
        )
        .await;
        let again = peer.request(4, "terminal/create", create).await;
        assert!(again["result"]["terminalId"].is_string(), "{again}");
    });
}

/// An update of a known kind with a bad field (claude-agent-acp sends `"used": null` when its
/// provider omits a count) reaches the application raw, with its decode error, in order.
#[test]
fn an_update_that_does_not_decode_reaches_the_application_raw() {
    smol::block_on(async {
        let (_agent, mut peer, session) = start_with_session().await;
        peer.send(
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
            "update": {"sessionUpdate": "usage_update", "used": null, "size": 200000}}}),
        )
        .await;
        peer.send(text_chunk("s1", "after")).await;
        let first = within("the raw update", session.next_update())
            .await
            .unwrap();
        let Err(acp_runtime::Error::InvalidUpdate {
            session_id,
            update,
            error,
        }) = first
        else {
            panic!("{first:?}")
        };
        assert_eq!(session_id, "s1");
        let update: serde_json::Value = serde_json::from_str(update.get()).unwrap();
        assert_eq!(update["sessionUpdate"], "usage_update");
        assert!(!error.is_empty());
        let second = within("the next update", session.next_update())
            .await
            .unwrap()
            .unwrap();
        assert!(
            matches!(&second, SessionUpdate::AgentMessageChunk(chunk) if chunk.content.as_text() == Some("after")),
            "{second:?}"
        );
    });
}

/// codex-acp advertises `{"id":"openai-api-key","type":"env_var",…}`, a type the stable
/// schema does not know: `authenticate` accepts it by its id. A `terminal` method is run as a
/// command, never passed to `authenticate`: refused locally, nothing sent.
#[test]
fn authenticate_accepts_unknown_method_types_and_refuses_terminal_methods() {
    smol::block_on(async {
        let (agent, mut peer) = start(ClientOptions::default());
        let init = agent.initialize();
        let answer = async {
            let request = peer.recv().await;
            peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1, "authMethods": [
                {"id": "openai-api-key", "name": "OpenAI API key", "type": "env_var", "varName": "OPENAI_API_KEY"},
                {"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]}
            ]}}))
            .await;
        };
        futures_lite::future::zip(init, answer).await.0.unwrap();
        let refused = agent.authenticate("login").await;
        assert!(
            matches!(&refused, Err(Error::Invalid(message)) if message.contains("terminal")),
            "{refused:?}"
        );
        let authenticate = agent.authenticate("openai-api-key");
        let answer = async {
            let request = peer.recv().await;
            assert_eq!(request["method"], "authenticate");
            assert_eq!(request["params"]["methodId"], "openai-api-key");
            peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
                .await;
        };
        futures_lite::future::zip(authenticate, answer)
            .await
            .0
            .unwrap();
    });
}

/// The automatic policies grant or refuse with the least lasting effect, whatever order the
/// agent lists its options in (gemini-cli lists `proceed_always` first and then refuses it in
/// an untrusted folder).
#[test]
fn automatic_policies_prefer_once_over_always() {
    use acp_runtime::client::{AutoReject, Client};
    let request: acp_types::RequestPermissionRequest = serde_json::from_value(json!({
        "sessionId": "s1",
        "toolCall": {"toolCallId": "t1", "title": "edit"},
        "options": [
            {"optionId": "proceed_always", "name": "Always", "kind": "allow_always"},
            {"optionId": "reject_always", "name": "Never", "kind": "reject_always"},
            {"optionId": "proceed_once", "name": "Once", "kind": "allow_once"},
            {"optionId": "cancel", "name": "No", "kind": "reject_once"}
        ]
    }))
    .unwrap();
    smol::block_on(async {
        let allowed = AutoAllow.request_permission(request.clone()).await.unwrap();
        assert_eq!(
            serde_json::to_value(&allowed.outcome).unwrap(),
            json!({"outcome": "selected", "optionId": "proceed_once"})
        );
        let rejected = AutoReject.request_permission(request).await.unwrap();
        assert_eq!(
            serde_json::to_value(&rejected.outcome).unwrap(),
            json!({"outcome": "selected", "optionId": "cancel"})
        );
    });
}

/// The agent goes away in the middle of a turn: `end` gives the connection's end as an
/// error (it must not wait, nor mistake the closed update stream for the turn's end).
#[test]
fn a_turn_cut_short_by_the_connection_ends_with_an_error() {
    smol::block_on(async {
        let (_agent, mut peer, session) = start_with_session().await;
        let mut turn = session.prompt(vec!["hi".into()]).await.unwrap();
        let respond = async {
            let prompt = peer.recv().await;
            assert_eq!(prompt["method"], "session/prompt");
            peer.send(text_chunk("s1", "bye")).await;
            drop(peer);
        };
        let (first, ()) = futures_lite::future::zip(turn.next(), respond).await;
        assert!(matches!(first, Some(Ok(_))), "{first:?}");
        let end = within("the end of the turn", turn.end()).await;
        assert!(end.is_err(), "{end:?}");
    });
}
