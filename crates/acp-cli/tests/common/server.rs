//! An agent served in the test process by `acp_remote::Server` on 127.0.0.1, for `acp` to
//! reach by URL: the demo agent, or any [`Agent`] a test builds (acp-test's scripted agent).

use std::net::SocketAddr;
use std::process::{Command, Output, Stdio};

use acp_remote::{Server, ServerOptions, ShutdownHandle};
use acp_runtime::agent::{Agent, AgentOptions};

/// Runs `acp -p go` (plus `extra`) in a scratch project against `agent`, served over
/// WebSocket, and returns how it ended.
pub fn acp_against<A: Agent + Clone + Send + Sync + 'static>(agent: A, extra: &[&str]) -> Output {
    let server = AgentServer::serving(move || agent.clone());
    let dir = super::scratch("served");
    let (cwd, url) = (dir.to_str().unwrap().to_owned(), server.url("ws"));
    let mut args = vec!["--yes", "-p", "go", "--cwd", &cwd, "--token", TOKEN];
    args.extend_from_slice(extra);
    args.extend(["--", &url]);
    let out = super::run(Command::new(super::ACP).args(&args).stdin(Stdio::null()));
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// The bearer token every [`AgentServer`] requires.
pub const TOKEN: &str = "s3cret-for-tests";

/// An agent served on a port of its own, requiring [`TOKEN`]; shut down when dropped.
pub struct AgentServer {
    addr: SocketAddr,
    shutdown: ShutdownHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AgentServer {
    /// Serves a new agent from `factory` to each connection.
    pub fn serving<A: Agent>(factory: impl Fn() -> A + Send + Sync + 'static) -> Self {
        let options = ServerOptions::default().with_bearer_token(TOKEN);
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let addr = server.local_addr();
        let shutdown = server.shutdown_handle();
        let thread = std::thread::spawn(move || {
            smol::block_on(server.serve_agent(move |_| factory(), AgentOptions::default()))
                .unwrap();
        });
        AgentServer {
            addr,
            shutdown,
            thread: Some(thread),
        }
    }

    /// The agent's URL with this scheme (`ws` or `http`).
    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}/acp", self.addr)
    }
}

impl Drop for AgentServer {
    fn drop(&mut self) {
        self.shutdown.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
