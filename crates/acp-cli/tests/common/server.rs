//! An agent served in the test process by `acp_remote::Server` on 127.0.0.1, for `acp` to
//! reach by URL: the demo agent, or any [`Agent`] a test builds (acp-test's scripted agent).

use std::net::SocketAddr;

use acp_remote::{Server, ServerOptions, ShutdownHandle};
use acp_runtime::agent::{Agent, AgentOptions};

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
