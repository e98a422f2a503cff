//! The `acp` binary against remote agents: the demo agent served in this process by
//! `acp_remote::Server` on 127.0.0.1, reached over WebSocket and Streamable HTTP URLs.
#![cfg(unix)]

mod common;
#[path = "../src/demo_agent.rs"]
mod demo_agent;
#[cfg(feature = "unstable-protocol-v2")]
#[path = "../src/demo_agent_v2.rs"]
mod demo_agent_v2;

use std::process::{Command, Output, Stdio};

use acp_runtime::agent::{self, Agent, ClientHandle, Turn};
use acp_types::*;
use common::server::{AgentServer, TOKEN};
use common::{ACP, finish, interrupt, run, scratch, start_turn, succeeded, text};

/// The demo agent, served.
fn demo_server() -> AgentServer {
    AgentServer::serving(|| demo_agent::DemoAgent)
}

/// Runs `acp` with `args` and the environment variables `env` (ACP_TOKEN removed unless
/// given), stdin closed; at most 60 s.
fn acp(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(ACP);
    command
        .args(args)
        .env_remove("ACP_TOKEN")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    run(&mut command)
}

/// One turn of the demo agent through `url`: the permission granted by `--yes`, notes.txt
/// read and summary.txt written through acp's file system, the terminal run by acp.
fn full_turn(scheme: &str, token_in_env: bool) {
    let server = demo_server();
    let dir = scratch(scheme);
    let trace = dir.join("trace.jsonl");
    let (cwd, trace_arg, url) = (
        dir.to_str().unwrap().to_owned(),
        trace.to_str().unwrap().to_owned(),
        server.url(scheme),
    );
    let mut args = vec!["--yes", "-p", "Summarize my notes", "--cwd", &cwd];
    args.extend(["--trace", &trace_arg]);
    let env: &[(&str, &str)] = if token_in_env {
        &[("ACP_TOKEN", TOKEN)]
    } else {
        args.extend(["--token", TOKEN]);
        &[]
    };
    args.extend(["--", &url]);
    let out = acp(&args, env);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("connected to acp-demo-agent"), "{stderr}");
    for expected in [
        "tool call write_summary (edit): Write summary.txt",
        "+3 lines of notes; the user asked \"Summarize my notes\"",
        "    | notes.txt",
        "Done. notes.txt has 3 lines, and I wrote summary.txt.",
        "[turn ended: end_turn]",
    ] {
        assert!(stdout.contains(expected), "no `{expected}` in\n{stdout}");
    }
    let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    assert!(summary.contains("3 lines of notes"), "{summary}");
    // The permission request and the file write crossed the network, and --trace saw them.
    let trace = std::fs::read_to_string(&trace).unwrap();
    assert!(trace.contains("session/request_permission"), "{trace}");
    assert!(trace.contains("fs/write_text_file"), "{trace}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_full_turn_over_websocket() {
    full_turn("ws", false);
}

#[test]
fn a_full_turn_over_streamable_http_with_the_token_from_the_environment() {
    full_turn("http", true);
}

#[test]
fn json_output_over_a_url_is_one_json_value_per_line() {
    let server = demo_server();
    let dir = scratch("json");
    let (cwd, url) = (dir.to_str().unwrap().to_owned(), server.url("ws"));
    let out = acp(
        &[
            "--json", "--reject", "-p", "hi", "--cwd", &cwd, "--token", TOKEN, "--", &url,
        ],
        &[],
    );
    let stdout = succeeded(&out);
    for line in stdout.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    assert!(stdout.contains(r#"{"stopReason":"end_turn"}"#), "{stdout}");
    // Rejected: nothing written.
    assert!(!dir.join("summary.txt").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A wrong token: the server's 401, and exit status 5, over both transports.
#[test]
fn a_wrong_token_exits_5_with_the_status() {
    let server = demo_server();
    for scheme in ["ws", "http"] {
        let dir = scratch("wrong-token");
        let (cwd, url) = (dir.to_str().unwrap().to_owned(), server.url(scheme));
        let out = acp(
            &[
                "--yes", "-p", "hi", "--cwd", &cwd, "--token", "wrong", "--", &url,
            ],
            &[],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{scheme}: {stderr}");
        assert!(
            stderr.contains(&format!("cannot reach the agent at {url}")),
            "{stderr}"
        );
        assert!(stderr.contains("refused the connection: 401"), "{stderr}");
        assert!(stderr.contains("ACP_TOKEN"), "{stderr}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Nobody listening: exit status 5, saying so.
#[test]
fn a_refused_tcp_connection_exits_5() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    for scheme in ["ws", "http"] {
        let url = format!("{scheme}://{addr}/acp");
        let out = acp(&["-p", "hi", "--cwd", ".", "--", &url], &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{scheme}: {stderr}");
        assert!(
            stderr.contains(&format!("cannot reach the agent at {url}")),
            "{stderr}"
        );
        assert!(stderr.to_lowercase().contains("refused"), "{stderr}");
    }
}

#[test]
fn token_and_ca_without_a_url_are_usage_errors() {
    for option in ["--token", "--ca"] {
        let out = acp(&[option, "x", "--", "my-agent"], &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("remote agent only"));
    }
}

/// Streams one chunk, then waits for the client's `session/cancel`.
struct SlowAgent;

impl Agent for SlowAgent {
    async fn initialize(
        &self,
        _request: InitializeRequest,
        _client: &ClientHandle,
    ) -> acp_runtime::Result<InitializeResponse> {
        Ok(InitializeResponse::new(ProtocolVersion::LATEST))
    }

    async fn new_session(
        &self,
        _request: NewSessionRequest,
        _client: &ClientHandle,
    ) -> acp_runtime::Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(
        &self,
        _request: PromptRequest,
        turn: Turn,
    ) -> acp_runtime::Result<PromptResponse> {
        turn.message("working").await?;
        turn.cancelled().await;
        Ok(PromptResponse::new(StopReason::Cancelled))
    }
}

/// Ctrl-C over a URL: `session/cancel` crosses the network, the turn ends `cancelled`, 130.
#[test]
fn ctrl_c_cancels_a_remote_turn_and_exits_130() {
    let server = AgentServer::serving(|| SlowAgent);
    for scheme in ["ws", "http"] {
        let url = server.url(scheme);
        let (child, stdout) = start_turn(
            Command::new(ACP)
                .args([
                    "--yes",
                    "--json",
                    "-p",
                    "hi",
                    "-p",
                    "never sent",
                    "--cwd",
                    ".",
                ])
                .args(["--token", TOKEN, "--", &url]),
        );
        interrupt(&child);
        let (code, rest, stderr) = finish(child, stdout);
        assert_eq!(code, Some(130), "{scheme}: {rest}\n{stderr}");
        assert!(rest.contains(r#"{"stopReason":"cancelled"}"#), "{rest}");
        assert!(stderr.contains("cancelling the turn"), "{stderr}");
    }
}
