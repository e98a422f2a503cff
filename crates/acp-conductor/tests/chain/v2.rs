//! acp-conductor with protocol v2 (feature `unstable-protocol-v2`), over real pipes: a v2
//! `initialize` through the built-in proxies, served through the proxy router, to this binary
//! as an agent with a v1 and a v2 side. `pass-through` and `trace-proxy` forward v2 (the agent
//! answers 2, and the trace records the v2 `initialize`); `policy-proxy`, whose policy reads
//! v1's permission requests, is v1-only and answers the v2 chain as v1.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use acp_runtime::acp_types::v2 as wire;
use acp_runtime::agent::v2;
use serde_json::Value;

use super::{MARKER, MODE, TestAgent, marker, pass_through, wait_for_no_survivors};

/// The argument that makes this binary an agent with a v2 side.
pub(crate) const V2_AGENT: &str = "v2";

struct V2Agent;

impl v2::Agent for V2Agent {
    async fn new_session(
        &self,
        _: wire::NewSessionRequest,
        _: &v2::Client,
    ) -> acp_runtime::Result<wire::NewSessionResponse> {
        Ok(wire::NewSessionResponse::new("s1"))
    }

    async fn prompt(
        &self,
        _: wire::PromptRequest,
        _: v2::Turn,
    ) -> acp_runtime::Result<wire::IdleStateUpdateKind> {
        Ok(wire::IdleStateUpdateKind::EndTurn)
    }
}

/// This binary as the chain's agent: the v1 test agent and a v2 one, through the router.
pub(crate) fn serve_v2_agent() {
    acp_runtime::router::router()
        .with_v1(TestAgent)
        .with_v2(V2Agent)
        .serve_stdio()
        .unwrap();
}

const INIT_V2: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ed","version":"1"},"capabilities":{}}}"#;

/// `acp-conductor agent PROXIES... <this binary> v2`, sent a v2 `initialize`: the answer.
fn initialize_through(proxies: &[String], run: &str) -> Value {
    let me = std::env::current_exe().unwrap();
    let mut conductor = Command::new(env!("CARGO_BIN_EXE_acp-conductor"))
        .arg("agent")
        .args(proxies)
        .arg(format!("{} {V2_AGENT}", me.display()))
        .env(MARKER, run)
        .env(MODE, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = conductor.stdin.take().unwrap();
    writeln!(stdin, "{INIT_V2}").unwrap();
    let mut answer = String::new();
    BufReader::new(conductor.stdout.take().unwrap())
        .read_line(&mut answer)
        .unwrap();
    drop(stdin);
    assert!(conductor.wait().unwrap().success());
    serde_json::from_str(&answer).unwrap()
}

pub(crate) fn the_built_in_proxies_forward_v2_or_answer_it_as_v1() {
    let run = marker("v2");
    let bin = env!("CARGO_BIN_EXE_acp-conductor");
    let trace = std::env::temp_dir().join(format!("acp-chain-v2-{}.jsonl", std::process::id()));
    let forwarding = [
        pass_through(),
        format!("{bin} trace-proxy {}", trace.display()),
    ];
    let answer = initialize_through(&forwarding, &run);
    assert_eq!(answer["result"]["protocolVersion"], 2, "{answer}");
    let recorded = std::fs::read_to_string(&trace).unwrap();
    let first: Value = serde_json::from_str(recorded.lines().next().unwrap()).unwrap();
    assert_eq!(first["msg"]["method"], "initialize", "{recorded}");
    assert_eq!(first["msg"]["params"]["protocolVersion"], 2, "{recorded}");
    let _ = std::fs::remove_file(trace);

    let policy = [
        pass_through(),
        format!("{bin} policy-proxy --allow read"),
        pass_through(),
    ];
    let answer = initialize_through(&policy, &run);
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    wait_for_no_survivors(&run);
    println!("ok: v2 through pass-through and trace-proxy, answered as v1 by policy-proxy");
}
