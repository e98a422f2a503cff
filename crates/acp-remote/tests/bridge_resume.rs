//! `acp-bridge connect --durable-transport` as an editor runs it, over a WebSocket that a
//! proxy drops between two turns: the bridge resumes it with `stream/resume`, and the
//! editor's session goes on, its turns whole and each run once.
#![cfg(unix)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_remote::{Server, ServerOptions};
use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, Turn};
use acp_runtime::client::{self, AutoAllow, ClientOptions};
use acp_runtime::process::AgentCommand;
use acp_types::*;
use common::streamer::message_texts;
use common::{Project, within};
use smol::net::{TcpListener, TcpStream};

const BRIDGE: &str = env!("CARGO_BIN_EXE_acp-bridge");

/// Streams three chunks for each prompt, and counts the prompts it ran.
struct Chunks(Arc<AtomicUsize>);

impl Agent for Chunks {
    async fn new_session(
        &self,
        _request: NewSessionRequest,
        _client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let round: String = request
            .prompt
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        for i in 0..3 {
            turn.message(format!("{round}:{i}")).await?;
        }
        Ok(StopReason::EndTurn.into())
    }
}

/// A TCP proxy that can close every socket it carries; how many it accepted.
async fn dropping_proxy(
    upstream: std::net::SocketAddr,
) -> (
    std::net::SocketAddr,
    Arc<std::sync::Mutex<Vec<TcpStream>>>,
    Arc<AtomicUsize>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let live = Arc::new(std::sync::Mutex::new(Vec::new()));
    let accepted = Arc::new(AtomicUsize::new(0));
    let (sockets, count) = (live.clone(), accepted.clone());
    smol::spawn(async move {
        while let Ok((down, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let Ok(up) = TcpStream::connect(upstream).await else {
                continue;
            };
            sockets.lock().unwrap().extend([down.clone(), up.clone()]);
            for (from, to) in [(down.clone(), up.clone()), (up, down)] {
                smol::spawn(async move {
                    let _ = futures_lite::io::copy(from, to.clone()).await;
                    let _ = to.shutdown(std::net::Shutdown::Write);
                })
                .detach();
            }
        }
    })
    .detach();
    (addr, live, accepted)
}

/// One prompt: its three numbered chunks arrive each once, in order.
async fn turn(session: &acp_runtime::client::Session, round: &str) {
    let texts = message_texts(session, round).await;
    let expected: Vec<String> = (0..3).map(|i| format!("{round}:{i}")).collect();
    assert_eq!(texts, expected);
}

#[test]
fn acp_bridge_connect_resumes_a_dropped_websocket() {
    smol::block_on(async {
        let options = ServerOptions::default().with_durable_transport(true);
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let upstream = server.local_addr();
        let prompts = Arc::new(AtomicUsize::new(0));
        let counter = prompts.clone();
        smol::spawn(async move {
            let _ = server
                .serve_agent(move |_| Chunks(counter.clone()), AgentOptions::default())
                .await;
        })
        .detach();
        let (proxy, live, accepted) = dropping_proxy(upstream).await;
        let project = Project::new("bridge-resume");
        let url = format!("ws://{proxy}/acp");
        let command = AgentCommand::new(BRIDGE).args(["connect", &url, "--durable-transport"]);
        let (agent, driver, process) =
            client::spawn(AutoAllow, command, ClientOptions::default()).unwrap();
        let driver = smol::spawn(driver);
        within("initialize", agent.initialize()).await.unwrap();
        let session = within("session/new", agent.new_session(&project.0))
            .await
            .unwrap();
        turn(&session, "a").await;
        for socket in live.lock().unwrap().drain(..) {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
        turn(&session, "b").await;
        assert_eq!(prompts.load(Ordering::SeqCst), 2);
        assert!(accepted.load(Ordering::SeqCst) >= 2, "no new WebSocket");
        agent.close();
        let _ = within("the client driver", driver).await;
        within("the bridge's exit", process.shutdown()).await;
    });
}
