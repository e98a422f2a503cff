//! A hostile client against our agent, over real pipes: this binary serves a minimal agent
//! (`hostile serve-agent`) and the case writes raw lines to it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, MAX_PATH_BYTES, Turn};
use acp_types::{NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, StopReason};
use serde_json::{Value, json};

use super::check;

/// The most sessions the served agent keeps.
const MAX_SESSIONS: usize = 8;

struct Minimal;

impl Agent for Minimal {
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
}

pub fn serve_agent() {
    let options = AgentOptions::default().with_max_sessions(MAX_SESSIONS);
    agent::serve_stdio_with(Minimal, options).expect("serve");
}

/// 20 `session/new` with an absolute `cwd` of 10 MiB, then 10 with a short one: the long ones
/// are refused (`-32602`) with a message that quotes only an excerpt of the path, and the
/// short ones open sessions up to the limit, the rest refused with a message that says so.
pub fn session_flood() -> Result<()> {
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .arg("serve-agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the agent");
    let input = std::io::BufWriter::new(child.stdin.take().unwrap());
    let output = BufReader::new(child.stdout.take().unwrap());
    let result = flood(input, output);
    // End of input ended the agent, unless a check failed first.
    if result.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().expect("the agent's exit");
    result?;
    check(status.success(), || format!("the agent: {status}"))
}

fn send(input: &mut impl Write, id: usize, method: &str, params: Value) {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    serde_json::to_writer(&mut *input, &line).unwrap();
    input.write_all(b"\n").unwrap();
}

fn recv(output: &mut impl BufRead) -> (usize, Value) {
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    (line.len(), serde_json::from_str::<Value>(&line).unwrap())
}

fn flood(mut input: impl Write, mut output: impl BufRead) -> Result<()> {
    send(&mut input, 0, "initialize", json!({"protocolVersion": 1}));
    let long = format!("/{}", "d".repeat(10 << 20));
    for id in 1..=20 {
        send(
            &mut input,
            id,
            "session/new",
            json!({"cwd": long, "mcpServers": []}),
        );
    }
    for id in 21..=30 {
        send(
            &mut input,
            id,
            "session/new",
            json!({"cwd": "/tmp", "mcpServers": []}),
        );
    }
    input.flush().unwrap();
    let (_, init) = recv(&mut output);
    check(init["result"]["protocolVersion"] == 1, || init.to_string())?;
    let mut opened = 0;
    let mut full = 0;
    for _ in 1..=30 {
        let (length, answer) = recv(&mut output);
        let id = answer["id"].as_u64().unwrap_or_default() as usize;
        if id <= 20 {
            check(answer["error"]["code"] == -32602, || {
                format!("{id}: {answer:.200}")
            })?;
            let message = answer["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            check(
                message.contains(&format!("limit of {MAX_PATH_BYTES}")),
                || message.clone(),
            )?;
            check(length < 1024, || format!("an answer of {length} bytes"))?;
        } else if answer.get("result").is_some() {
            opened += 1;
        } else {
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            check(
                answer["error"]["code"] == -32602 && message.contains("the most it keeps"),
                || answer.to_string(),
            )?;
            full += 1;
        }
    }
    check(opened == MAX_SESSIONS && full == 10 - MAX_SESSIONS, || {
        format!("{opened} opened, {full} refused")
    })?;
    // End of input ends the agent.
    drop(input);
    let mut rest = String::new();
    check(output.read_line(&mut rest).unwrap_or(0) == 0, || {
        rest.clone()
    })
}
