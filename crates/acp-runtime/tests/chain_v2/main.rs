//! Protocol v2 through the conductor, over real pipes: our v2 client in front of a conductor
//! running 0, 1 or 3 pass-through proxies (subprocesses served by the proxy router) in front
//! of our agent (a subprocess served by the agent router, v1 and v2 sides). The traffic the
//! client and the agent saw is pinned (insta), and is the same whatever the number of
//! proxies. Then: v1 through the same chain unchanged, a v1-only proxy in a v2 chain (the
//! chain is answered as v1, as upstream's `Proxy.v1()` answers), a v2-only proxy in a v1
//! chain (`-32022`), and `null` request ids on a v2 chain.
//!
//! The test binary is every component too (a role in [`ROLE`]), so it has its own `main`.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

#[path = "../common/mod.rs"]
mod common;

use acp_runtime::Result;
use acp_runtime::acp_jsonrpc::transcript::{Direction, LineMessage, write_line};
use acp_runtime::acp_jsonrpc::{ConnectionOptions, Observer};
use acp_runtime::acp_types::v2::*;
use acp_runtime::client::v2;
use acp_runtime::conductor::{Component, Conductor};
use acp_runtime::prelude::AgentOptions;
use acp_runtime::process::AgentCommand;
use acp_runtime::proxy::Proxy;
use acp_runtime::router::{proxy_router, router};
use common::versions::V2Asking;
use serde_json::Value;
use smol::Unblock;

/// What this process is: unset for the tests, else a component of their chains.
const ROLE: &str = "ACP_CHAIN_V2_ROLE";
/// Where the agent writes the traffic it saw, as transcript lines.
const AGENT_TRACE: &str = "ACP_CHAIN_V2_AGENT_TRACE";

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("agent") => return serve_agent(),
        Ok("proxy") => return serve_proxy(true, true),
        Ok("v1-proxy") => return serve_proxy(true, false),
        Ok("v2-proxy") => return serve_proxy(false, true),
        Ok(other) => panic!("unknown role {other}"),
        Err(_) => {}
    }
    let tests: [(&str, fn()); 5] = [
        (
            "a v2 client through 0, 1 and 3 pass-through proxies to a v2 agent",
            a_v2_client_through_pass_through_proxies,
        ),
        ("v1 through the same chain, unchanged", v1_through_the_chain),
        (
            "a v1-only proxy answers a v2 chain as v1",
            a_v1_only_proxy_answers_a_v2_chain_as_v1,
        ),
        (
            "a v2-only proxy refuses a v1 chain with -32022",
            a_v2_only_proxy_refuses_a_v1_chain,
        ),
        (
            "a v2 chain refuses null request ids",
            a_v2_chain_refuses_null_request_ids,
        ),
    ];
    for (name, test) in tests {
        test();
        println!("test {name} ... ok");
    }
}

// ----- the components ------------------------------------------------------------------------

/// The v1 side: one message, then the end of the turn.
struct V1Agent;

impl acp_runtime::agent::Agent for V1Agent {
    async fn new_session(
        &self,
        _: acp_runtime::prelude::NewSessionRequest,
        _: &acp_runtime::prelude::ClientHandle,
    ) -> Result<acp_runtime::prelude::NewSessionResponse> {
        Ok(acp_runtime::prelude::NewSessionResponse::new("s1"))
    }

    async fn prompt(
        &self,
        _: acp_runtime::prelude::PromptRequest,
        turn: acp_runtime::agent::Turn,
    ) -> Result<acp_runtime::prelude::PromptResponse> {
        turn.message("v1 here").await?;
        Ok(acp_runtime::prelude::StopReason::EndTurn.into())
    }
}

/// Writes every line of a connection as a transcript line (`client->agent` for what came
/// in), to a file or to memory.
struct Recorder<W> {
    out: Mutex<W>,
    incoming: Direction,
}

impl<W: Write + Send + 'static> Observer for Recorder<W> {
    fn incoming(&self, line: &[u8]) {
        self.write(self.incoming, line);
    }

    fn outgoing(&self, line: &[u8]) {
        self.write(self.incoming.reverse(), line);
    }
}

impl<W: Write> Recorder<W> {
    fn write(&self, dir: Direction, line: &[u8]) {
        let mut out = self.out.lock().unwrap();
        let _ = out.write_all(write_line(dir, LineMessage::of_wire(line), None).as_bytes());
        let _ = out.flush();
    }
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn serve_agent() {
    let path = std::env::var(AGENT_TRACE).expect("the agent's trace file");
    let file = std::fs::File::create(path).unwrap();
    let recorder = Arc::new(Recorder {
        out: Mutex::new(file),
        incoming: Direction::ClientToAgent,
    });
    router()
        .with_v1(V1Agent)
        .with_v1_options(AgentOptions::default().with_shared_observer(recorder.clone()))
        .with_v2(V2Asking)
        .with_v2_options(AgentOptions::default().with_shared_observer(recorder))
        .serve_stdio()
        .unwrap();
}

fn serve_proxy(v1: bool, v2: bool) {
    let mut served = proxy_router();
    if v1 {
        served = served.with_v1(Proxy::pass_through());
    }
    if v2 {
        served = served.with_v2(Proxy::pass_through());
    }
    served.serve_stdio().unwrap();
}

// ----- the chain -------------------------------------------------------------------------------

fn component(role: &str, extra: Option<(&str, &str)>) -> Component {
    let me = std::env::current_exe().unwrap();
    let mut command = AgentCommand::new(me).env(ROLE, role);
    if let Some((name, value)) = extra {
        command = command.env(name, value);
    }
    Component::command(role, command)
}

/// A conductor serving `proxies` (roles) and the agent, in a thread: its end, and the
/// client's ends of its pipes.
struct Chain {
    served: JoinHandle<()>,
    trace: std::path::PathBuf,
}

fn chain(name: &str, proxies: &[&str]) -> (Chain, std::io::PipeReader, std::io::PipeWriter) {
    let trace = std::env::temp_dir().join(format!("acp-chain-v2-{}-{name}", std::process::id()));
    let mut components: Vec<Component> = proxies.iter().map(|role| component(role, None)).collect();
    components.push(component(
        "agent",
        Some((AGENT_TRACE, trace.to_str().unwrap())),
    ));
    let (conductor_in, writer) = std::io::pipe().unwrap();
    let (reader, conductor_out) = std::io::pipe().unwrap();
    let served = std::thread::spawn(move || {
        let conductor = Conductor::new(components).run(
            futures_lite::io::BufReader::new(Unblock::new(conductor_in)),
            Unblock::new(conductor_out),
        );
        smol::block_on(conductor).unwrap();
    });
    (Chain { served, trace }, reader, writer)
}

impl Chain {
    /// Waits for the chain to end (the client closed its side first), and gives the agent's
    /// trace.
    fn agent_trace(self) -> String {
        self.served.join().unwrap();
        let trace = std::fs::read_to_string(&self.trace).unwrap_or_default();
        let _ = std::fs::remove_file(&self.trace);
        trace
    }
}

// ----- transcripts ----------------------------------------------------------------------------

/// A transcript in a stable form: for each direction, its requests and notifications in their
/// order, then its responses in theirs (where a response falls among the other messages, and
/// how the two directions interleave, depend on timing: forwarding keeps each kind's order),
/// without `jsonrpc`, and the message ids the agent makes named `msg-1`, `msg-2`... in order
/// of first appearance.
fn stable(transcript: &str) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut out = String::new();
    for dir in ["client->agent", "agent->client"] {
        for responses in [false, true] {
            let kind = if responses {
                "responses"
            } else {
                "requests and notifications"
            };
            out.push_str(&format!("# {dir}: {kind}\n"));
            for line in transcript.lines() {
                let mut entry: Value = serde_json::from_str(line).unwrap();
                if entry["dir"] != dir {
                    continue;
                }
                let msg = entry.get_mut("msg").unwrap();
                if msg.get("method").is_none() != responses {
                    continue;
                }
                msg.as_object_mut().unwrap().remove("jsonrpc");
                rename_message_ids(msg, &mut names);
                out.push_str(&msg.to_string());
                out.push('\n');
            }
        }
    }
    out
}

fn rename_message_ids(value: &mut Value, names: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            for (key, member) in members.iter_mut() {
                match member {
                    Value::String(id) if key == "messageId" => {
                        let index = match names.iter().position(|name| name == id) {
                            Some(index) => index,
                            None => {
                                names.push(id.clone());
                                names.len() - 1
                            }
                        };
                        *id = format!("msg-{}", index + 1);
                    }
                    _ => rename_message_ids(member, names),
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| rename_message_ids(item, names)),
        _ => {}
    }
}

// ----- the v2 client ---------------------------------------------------------------------------

/// Allows every permission request.
struct Allows;

impl v2::Client for Allows {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        let option = request.options[0].option_id.clone();
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option)),
        ))
    }

    async fn session_update(&self, _: UpdateSessionNotification) {}
}

/// Our v2 client's turn through a chain of `proxies`: initialize, a session, a prompt that
/// asks permission, a prompt cancelled; the client's and the agent's transcripts.
fn v2_session_through(proxies: &[&str]) -> (String, String) {
    let (chain, reader, writer) = chain(&format!("v2-{}", proxies.len()), proxies);
    let client_trace = Shared::default();
    let options = ConnectionOptions::default().with_observer(Recorder {
        out: Mutex::new(client_trace.clone()),
        incoming: Direction::AgentToClient,
    });
    let (agent, driver) = v2::connect(
        Allows,
        futures_lite::io::BufReader::new(Unblock::new(reader)),
        Unblock::new(writer),
        options,
    );
    let driving = std::thread::spawn(move || {
        let _ = smol::block_on(driver);
    });
    smol::block_on(async {
        let init = agent
            .initialize(
                InitializeRequest::new(ProtocolVersion::V2, Implementation::new("ed", "1"))
                    .with_capabilities(ClientCapabilities::new()),
            )
            .await
            .unwrap();
        assert_eq!(init.protocol_version, ProtocolVersion::V2);
        let session = agent
            .new_session(NewSessionRequest::new("/work"))
            .await
            .unwrap()
            .session_id;
        let request = PromptRequest::new(session.clone(), vec![ContentBlock::from("look")])
            .with_idempotency_key(IdempotencyKey::new("k1"));
        let turn = agent.prompt(request).await.unwrap();
        assert_eq!(turn.finished().await.unwrap(), IdleStateUpdateKind::EndTurn);
        let request = PromptRequest::new(session.clone(), vec![ContentBlock::from("wait")])
            .with_idempotency_key(IdempotencyKey::new("k2"));
        let waiting = agent.prompt(request).await.unwrap();
        agent.cancel(&session).await.unwrap();
        assert_eq!(
            waiting.finished().await.unwrap(),
            IdleStateUpdateKind::Cancelled
        );
    });
    // Closing our side ends the conductor's input: the chain goes down.
    agent.close();
    driving.join().unwrap();
    let agent_trace = chain.agent_trace();
    let client = String::from_utf8(client_trace.0.lock().unwrap().clone()).unwrap();
    (stable(&client), stable(&agent_trace))
}

fn a_v2_client_through_pass_through_proxies() {
    let (client, agent) = v2_session_through(&["proxy", "proxy", "proxy"]);
    insta::assert_snapshot!("v2_client_side", client);
    insta::assert_snapshot!("v2_agent_side", agent);
    // The conductor and its proxies are invisible: the same traffic, ids included, at both
    // ends, whatever the number of proxies.
    for proxies in [&[][..], &["proxy"][..]] {
        let (client_n, agent_n) = v2_session_through(proxies);
        assert_eq!(
            client_n,
            client,
            "client side with {} proxies",
            proxies.len()
        );
        assert_eq!(agent_n, agent, "agent side with {} proxies", proxies.len());
    }
}

// ----- raw lines -------------------------------------------------------------------------------

/// A client that writes lines and reads the answers one by one.
struct RawClient {
    chain: Chain,
    lines: std::io::BufReader<std::io::PipeReader>,
    writer: std::io::PipeWriter,
}

impl RawClient {
    fn new(name: &str, proxies: &[&str]) -> Self {
        let (chain, reader, writer) = chain(name, proxies);
        RawClient {
            chain,
            lines: std::io::BufReader::new(reader),
            writer,
        }
    }

    /// Sends `line`, then reads `answers` lines; gives them, without `jsonrpc`.
    fn send(&mut self, line: &str, answers: usize) -> Vec<String> {
        writeln!(self.writer, "{line}").unwrap();
        (0..answers).map(|_| self.read()).collect()
    }

    fn read(&mut self) -> String {
        let mut line = String::new();
        self.lines.read_line(&mut line).unwrap();
        let mut msg: Value = serde_json::from_str(&line).unwrap();
        msg.as_object_mut().unwrap().remove("jsonrpc");
        msg.to_string()
    }

    /// Closes the client's side; the agent's trace once the chain is down.
    fn close(self) -> String {
        drop(self.writer);
        drop(self.lines);
        self.chain.agent_trace()
    }
}

const INIT_V1: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"ed","version":"1"}}}"#;
const INIT_V2: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ed","version":"1"},"capabilities":{"auth":{"terminal":{}}}}}"#;

fn v1_through_the_chain() {
    let mut client = RawClient::new("v1", &["proxy", "proxy"]);
    let mut seen = client.send(INIT_V1, 1);
    seen.extend(client.send(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}"#,
        1,
    ));
    seen.extend(client.send(
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#,
        2,
    ));
    let agent = client.close();
    insta::assert_snapshot!("v1_client_side", seen.join("\n"));
    insta::assert_snapshot!("v1_agent_side", stable(&agent));
}

fn a_v1_only_proxy_answers_a_v2_chain_as_v1() {
    let mut client = RawClient::new("v1-only", &["proxy", "v1-proxy", "proxy"]);
    let seen = client.send(INIT_V2, 1);
    let agent = client.close();
    insta::assert_snapshot!("v1_only_proxy_client_side", seen.join("\n"));
    insta::assert_snapshot!("v1_only_proxy_agent_side", stable(&agent));
}

fn a_v2_only_proxy_refuses_a_v1_chain() {
    let mut client = RawClient::new("v2-only", &["v2-proxy"]);
    let mut seen = client.send(INIT_V1, 1);
    // The chain started with the first `initialize`; the proxy's connection stays open and the
    // next one is routed again.
    seen.extend(client.send(INIT_V2, 1));
    let agent = client.close();
    insta::assert_snapshot!("v2_only_proxy_client_side", seen.join("\n"));
    insta::assert_snapshot!("v2_only_proxy_agent_side", stable(&agent));
}

fn a_v2_chain_refuses_null_request_ids() {
    let mut client = RawClient::new("null-ids", &["proxy"]);
    let null_init = INIT_V2.replace(r#""id":0"#, r#""id":null"#);
    let mut seen = client.send(&null_init, 1);
    seen.extend(client.send(INIT_V2, 1));
    seen.extend(client.send(
        r#"{"jsonrpc":"2.0","id":null,"method":"session/new","params":{"cwd":"/work"}}"#,
        1,
    ));
    seen.extend(client.send(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work"}}"#,
        1,
    ));
    // A repeated `initialize` for v1 is refused (by the agent) and changes nothing.
    seen.extend(client.send(&INIT_V1.replace(r#""id":0"#, r#""id":2"#), 1));
    seen.extend(client.send(
        r#"{"jsonrpc":"2.0","id":null,"method":"session/new","params":{"cwd":"/work"}}"#,
        1,
    ));
    let _ = client.close();
    insta::assert_snapshot!("v2_null_ids_client_side", seen.join("\n"));
}
