//! The demo agent's v2 side (feature `unstable-protocol-v2`), driven by our v2 client over
//! real pipes through the version router, as `acp --serve-demo-agent` serves it: the thought,
//! the plan, the agent-side file read, the permission asked before the display terminal, the
//! terminal's output, and the reply.
#![cfg(feature = "unstable-protocol-v2")]

#[path = "../src/demo_agent.rs"]
mod demo_agent;
#[path = "../src/demo_agent_v2.rs"]
mod demo_agent_v2;

use std::sync::{Arc, Mutex};

use acp_runtime::acp_types::v2::*;
use acp_runtime::client::v2::{self, Author, Conversation};
use futures_lite::future;
use smol::Unblock;

#[derive(Clone, Default)]
struct Allows {
    chat: Arc<Mutex<Conversation>>,
}

impl v2::Client for Allows {
    async fn request_permission(
        &self,
        _: RequestPermissionRequest,
    ) -> acp_runtime::Result<RequestPermissionResponse> {
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new("allow")),
        ))
    }

    async fn session_update(&self, update: UpdateSessionNotification) {
        self.chat.lock().unwrap().apply(&update.update);
    }
}

#[test]
fn a_v2_client_gets_the_demo_turn_through_the_router() {
    let dir = std::env::temp_dir().join(format!("acp-demo-v2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let (agent_in, to_agent) = std::io::pipe().unwrap();
    let (from_agent, agent_out) = std::io::pipe().unwrap();
    let served = std::thread::spawn(move || {
        let router = acp_runtime::router::router()
            .with_v1(demo_agent::DemoAgent)
            .with_v2(demo_agent_v2::DemoAgentV2::default());
        let reader = futures_lite::io::BufReader::new(Unblock::new(agent_in));
        future::block_on(router.serve(reader, Unblock::new(agent_out))).unwrap();
    });
    let allows = Allows::default();
    let (agent, driver) = v2::connect(
        allows.clone(),
        futures_lite::io::BufReader::new(Unblock::new(from_agent)),
        Unblock::new(to_agent),
        Default::default(),
    );
    smol::spawn(driver).detach();
    let stop = smol::block_on(async {
        let init = agent
            .initialize(InitializeRequest::new(
                ProtocolVersion::V2,
                Implementation::new("t", "1"),
            ))
            .await
            .unwrap();
        assert_eq!(init.info.name, "acp-demo-agent");
        let session = agent
            .new_session(NewSessionRequest::new(dir.display().to_string()))
            .await
            .unwrap();
        let turn = agent
            .prompt(PromptRequest::new(
                session.session_id,
                vec![ContentBlock::from("Check")],
            ))
            .await
            .unwrap();
        turn.finished().await.unwrap()
    });
    assert_eq!(stop, IdleStateUpdateKind::EndTurn);
    let chat = allows.chat.lock().unwrap();
    let said: Vec<(Author, String)> = chat
        .messages()
        .iter()
        .map(|m| {
            let text = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            (m.author, text)
        })
        .collect();
    assert_eq!(said[0], (Author::User, "Check".to_owned()));
    assert_eq!(
        said[2].1,
        "Done. notes.txt has 3 lines, and the directory has 1 entries."
    );
    let statuses: Vec<_> = chat.tool_calls().iter().map(|c| c.status.clone()).collect();
    assert_eq!(
        statuses,
        [
            Some(ToolCallStatus::Completed),
            Some(ToolCallStatus::Completed)
        ]
    );
    let terminal = &chat.terminals()[0];
    assert_eq!(terminal.text(), "notes.txt\n");
    assert_eq!(terminal.command.as_deref(), Some("ls -1"));
    assert!(
        matches!(&chat.plans()[0].1, PlanUpdateContent::Items(items) if items.entries.iter().all(|e| e.status == PlanEntryStatus::Completed))
    );
    drop(chat);
    agent.close();
    served.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

mod common;

use common::sh::{acp, cwd_arg, run_sh_agent};
use common::{scratch, text};

/// The lines of a run without what changes between runs: the scratch directory.
fn steady(output: &str, dir: &std::path::Path) -> String {
    output.replace(&dir.display().to_string(), "[DIR]")
}

#[test]
fn acp_protocol_2_runs_the_demo_turn_over_v2() {
    let dir = scratch("v2");
    let out = acp(&[
        "--protocol",
        "2",
        "--yes",
        "--prompt",
        "Summarize my notes",
        "--cwd",
        &cwd_arg(&dir),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("(protocol 2)"), "{stderr}");
    insta::assert_snapshot!(steady(&stdout, &dir));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn acp_protocol_auto_speaks_v2_to_the_routed_demo_and_json_names_each_update() {
    let dir = scratch("v2json");
    let out = acp(&[
        "--protocol",
        "auto",
        "--json",
        "--reject",
        "--prompt",
        "Summarize my notes",
        "--cwd",
        &cwd_arg(&dir),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for line in stdout.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(
            value.get("update").is_some() || value.get("stopReason").is_some(),
            "{line}"
        );
    }
    // Rejected: the permission asked before the terminal was refused.
    assert!(stdout.contains(r#""status":"failed""#), "{stdout}");
    assert!(
        stdout.ends_with("{\"stopReason\":\"end_turn\"}\n"),
        "{stdout}"
    );
}

#[test]
fn acp_protocol_auto_falls_back_to_1_on_a_v1_agent() {
    let out = run_sh_agent(
        &["--protocol", "auto"],
        r#"*'"method":"session/new"'*) reply '{"sessionId":"s1"}' ;;
    *'"method":"session/prompt"'*) update '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello from v1"}}'; reply '{"stopReason":"end_turn"}' ;;"#,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("(protocol 1)"), "{stderr}");
    assert!(stdout.contains("hello from v1"), "{stdout}");
}

#[test]
fn acp_protocol_2_on_a_v1_agent_exits_5_saying_which_version_it_speaks() {
    let out = run_sh_agent(&["--protocol", "2"], "");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("the agent speaks protocol version 1, this client speaks [2]"),
        "{stderr}"
    );
}

#[test]
fn acp_protocol_2_refuses_options_and_an_unknown_version() {
    // Refused for protocol 2 with the `unstable` feature, and for that feature without it.
    let out = acp(&["--protocol", "2", "--options"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--options "),
        "{}",
        text(&out.stderr)
    );
    let out = acp(&["--protocol", "3"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A v2 agent in `sh` advertising the system prompt (both modes) whose sessions offer a mode,
/// a model and a boolean as config options; the prompt ends its turn at once.
const V2_CONFIGURABLE_AGENT: &str = r#"
options='[{"configId":"mode","name":"Mode","type":"select","category":"mode","currentValue":"ask","options":[{"value":"ask","name":"Ask"},{"value":"code","name":"Code"}]},{"configId":"model","name":"Model","type":"select","category":"model","currentValue":"a","options":[{"value":"a","name":"A"},{"value":"b","name":"B"}]},{"configId":"fast","name":"Fast","type":"boolean","currentValue":false}]'
reply() { printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$1"; }
update() { printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":%s}}\n' "$1"; }
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      reply '{"protocolVersion":2,"info":{"name":"sh-v2","version":"1"},"capabilities":{"session":{"systemPrompt":{"mode":{"override":{}}}}}}' ;;
    *'"method":"session/new"'*) reply '{"sessionId":"s1","configOptions":'"$options"'}' ;;
    *'"method":"session/set_config_option"'*) reply '{"configOptions":'"$options"'}' ;;
    *'"method":"session/prompt"'*)
      reply '{"messageId":"m1"}'
      update '{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}'
      update '{"sessionUpdate":"state_update","state":"idle","stopReason":"max_tokens"}' ;;
  esac
done
"#;

/// What acp sent the agent, in order, read from a `--trace` file.
fn sent(trace: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["dir"] == "client->agent")
        .map(|r| r["msg"].clone())
        .collect()
}

#[test]
fn on_v2_the_system_prompt_goes_with_session_new_and_mode_model_config_are_config_options() {
    let dir = scratch("v2config");
    let trace = dir.join("wire.jsonl");
    let cwd = cwd_arg(&dir);
    let out = acp(&[
        "--protocol",
        "2",
        "--prompt",
        "hi",
        "--cwd",
        &cwd,
        "--system-prompt",
        "Be terse.",
        "--system-prompt-mode",
        "override",
        "--mode",
        "code",
        "--model",
        "b",
        "--config",
        "fast=on",
        "--trace",
        trace.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        V2_CONFIGURABLE_AGENT,
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("config: fast=on"), "{stderr}");
    let sent = sent(&trace);
    let methods: Vec<&str> = sent.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "session/new",
            "session/set_config_option",
            "session/set_config_option",
            "session/set_config_option",
            "session/prompt"
        ]
    );
    assert_eq!(
        sent[1]["params"]["systemPrompt"],
        serde_json::json!({"mode": "override", "content": [{"type": "text", "text": "Be terse."}]})
    );
    let set: Vec<_> = sent[2..5].iter().map(|m| m["params"].clone()).collect();
    assert_eq!(
        set[0],
        serde_json::json!({"sessionId": "s1", "configId": "mode", "type": "id", "value": "code"})
    );
    assert_eq!(
        set[1],
        serde_json::json!({"sessionId": "s1", "configId": "model", "type": "id", "value": "b"})
    );
    assert_eq!(
        set[2],
        serde_json::json!({"sessionId": "s1", "configId": "fast", "type": "boolean", "value": true})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn on_v2_what_the_agent_does_not_offer_is_refused_before_it_is_sent() {
    let run = |extra: &[&str]| {
        let dir = scratch("v2refuse");
        let cwd = cwd_arg(&dir);
        let mut args = vec!["--protocol", "2", "--prompt", "hi", "--cwd", &cwd];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", V2_CONFIGURABLE_AGENT]);
        let out = acp(&args);
        let _ = std::fs::remove_dir_all(&dir);
        (out.status.code(), text(&out.stderr))
    };
    // A boolean option given something else: a usage error.
    let (code, stderr) = run(&["--config", "fast=maybe"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("`maybe` is not a boolean"), "{stderr}");
    // The demo agent takes no system prompt on v2: nothing is sent.
    let out = acp(&["--protocol", "2", "--system-prompt", "x", "--prompt", "hi"]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("the agent does not advertise capabilities.session.systemPrompt"),
        "{stderr}"
    );
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    // Nor config options: no mode selector.
    let out = acp(&["--protocol", "2", "--mode", "code", "--prompt", "hi"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--mode code: the agent advertises no mode selector (a config option of category `mode`)"),
        "{stderr}"
    );
}

/// A v2 agent in `sh` that holds one stored session and replays it on `session/resume`.
const V2_REPLAYING_AGENT: &str = r#"
reply() { printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$1"; }
update() { printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old","update":%s}}\n' "$1"; }
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      reply '{"protocolVersion":2,"info":{"name":"sh-v2","version":"1"},"capabilities":{"session":{"resume":{}}}}' ;;
    *'"method":"session/resume"'*'"replayFrom":{"type":"start"}'*)
      update '{"sessionUpdate":"user_message","messageId":"u1","content":[{"type":"text","text":"earlier question"}]}'
      update '{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"earlier answer"}}'
      update '{"sessionUpdate":"replay_complete"}'
      reply '{}' ;;
    *'"method":"session/resume"'*)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"replayFrom missing"}}\n' "$id" ;;
  esac
done
"#;

#[test]
fn acp_load_on_v2_resumes_replaying_from_the_start() {
    let dir = scratch("v2load");
    let cwd = cwd_arg(&dir);
    let out = acp(&[
        "--protocol",
        "2",
        "--load",
        "old",
        "--cwd",
        &cwd,
        "--",
        "sh",
        "-c",
        V2_REPLAYING_AGENT,
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        stdout,
        "user: earlier question\nearlier answer\n[replay complete]\n"
    );
    assert!(stderr.contains("session old resumed in"), "{stderr}");
}

/// The demo agent's two versions through the router, served by `acp_remote::Server` on
/// 127.0.0.1 (no token); shut down when dropped.
struct RoutedServer {
    addr: std::net::SocketAddr,
    shutdown: acp_remote::ShutdownHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RoutedServer {
    fn start() -> Self {
        let server = acp_remote::Server::bind(
            "127.0.0.1:0".parse().unwrap(),
            acp_remote::ServerOptions::default(),
        )
        .unwrap();
        let addr = server.local_addr();
        let shutdown = server.shutdown_handle();
        let thread = std::thread::spawn(move || {
            smol::block_on(
                server.serve(|connection: acp_remote::IncomingConnection| async move {
                    let router = acp_runtime::router::router()
                        .with_v1(demo_agent::DemoAgent)
                        .with_v2(demo_agent_v2::DemoAgentV2::default());
                    let _ = router.serve(connection.reader, connection.writer).await;
                }),
            )
            .unwrap();
        });
        RoutedServer {
            addr,
            shutdown,
            thread: Some(thread),
        }
    }
}

impl Drop for RoutedServer {
    fn drop(&mut self) {
        self.shutdown.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn acp_protocol_auto_speaks_v2_to_a_routed_agent_over_websocket_and_streamable_http() {
    let server = RoutedServer::start();
    for scheme in ["ws", "http"] {
        let dir = scratch("v2remote");
        let url = format!("{scheme}://{}/acp", server.addr);
        let out = acp(&[
            "--protocol",
            "auto",
            "--yes",
            "--prompt",
            "Summarize my notes",
            "--cwd",
            &cwd_arg(&dir),
            "--",
            &url,
        ]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{scheme}: {stdout}\n{stderr}");
        assert!(stderr.contains("(protocol 2)"), "{scheme}: {stderr}");
        assert!(
            stdout.contains("Done. notes.txt has 3 lines, and the directory has 1 entries."),
            "{scheme}: {stdout}"
        );
        // The same agent, asked for 1: the v1 demo turn.
        let out = acp(&[
            "--protocol",
            "1",
            "--yes",
            "--prompt",
            "Summarize my notes",
            "--cwd",
            &cwd_arg(&dir),
            "--",
            &url,
        ]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{scheme}: {stderr}");
        assert!(stderr.contains("(protocol 1)"), "{scheme}: {stderr}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
