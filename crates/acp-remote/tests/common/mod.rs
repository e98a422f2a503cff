//! What the tests share: the test agent's server, the demo agent's full turn, scratch
//! projects, a watchdog, and raw HTTP for the refusals.
#![allow(dead_code)]

pub mod agent;
pub mod h2_client;
pub mod http_client;
pub mod proxy;
pub mod raw_ws;
pub mod streamer;
pub mod wire;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use acp_remote::{Connector, Server, ServerOptions, ShutdownHandle};
use acp_runtime::agent::AgentOptions;
use acp_runtime::client::{AgentHandle, AutoAllow, ClientOptions};
use acp_runtime::fs::FsHost;
use acp_types::*;
use futures_lite::{AsyncReadExt, AsyncWriteExt};

/// Fails the test instead of hanging it (generous: the machine may be busy).
pub async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    futures_lite::future::or(future, async {
        smol::Timer::after(Duration::from_secs(30)).await;
        panic!("timed out: {what}")
    })
    .await
}

/// The test agent served with `options` on a loopback port: its address, the server's
/// shutdown handle, and the serving task (it ends when `serve_agent` returns).
pub fn serve(options: ServerOptions) -> (SocketAddr, ShutdownHandle, smol::Task<()>) {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
    let addr = server.local_addr();
    let (handle, task) = serve_bound(server);
    (addr, handle, task)
}

/// The test agent served on `server`: its shutdown handle and the serving task.
pub fn serve_bound(server: Server) -> (ShutdownHandle, smol::Task<()>) {
    let handle = server.shutdown_handle();
    let task = smol::spawn(async move {
        server
            .serve_agent(
                |_| agent::TestAgent::default(),
                AgentOptions::default().with_info(agent::NAME, "0.0.0"),
            )
            .await
            .unwrap();
    });
    (handle, task)
}

/// The runtime's client with a file system (permissions allowed), connected by `connector`,
/// and the task of its driver.
pub async fn connect_client(
    connector: Connector,
) -> (
    AgentHandle,
    smol::Task<Result<(), acp_jsonrpc::ConnectionError>>,
) {
    let options = ClientOptions::default().with_file_system(FsHost::new());
    let (agent, driver) = within("connect", connector.connect_client(AutoAllow, options))
        .await
        .unwrap();
    (agent, smol::spawn(driver))
}

/// A scratch project with `notes.txt`, removed on drop.
pub struct Project(pub PathBuf);

impl Project {
    pub fn new(name: &str) -> Project {
        let dir = std::env::temp_dir()
            .canonicalize()
            .unwrap()
            .join(format!("acp-remote-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("notes.txt"),
            "buy milk\nship the release\ncall Ada\n",
        )
        .unwrap();
        Project(dir)
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One prompt turn of the test agent: a thought, a file read and a permission request
/// answered by the client, a file write through the client, streamed text. Returns the session
/// id.
pub async fn full_turn(agent: &AgentHandle, project: &Project) -> SessionId {
    let init = within("initialize", agent.initialize()).await.unwrap();
    assert_eq!(init.agent_info.unwrap().name, self::agent::NAME);
    let session = within("session/new", agent.new_session(&project.0))
        .await
        .unwrap();
    let mut turn = within(
        "session/prompt",
        session.prompt(vec!["Summarize my notes".into()]),
    )
    .await
    .unwrap();
    let mut updates = Vec::new();
    while let Some(update) = within("an update", turn.next()).await {
        updates.push(update.unwrap());
    }
    let response = within("the end of the turn", turn.end()).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(
        updates
            .iter()
            .any(|u| matches!(u, SessionUpdate::AgentThoughtChunk(_))),
        "no thought in {updates:?}"
    );
    let text: String = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => chunk.content.as_text(),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Done: 3 lines.");
    let summary = std::fs::read_to_string(project.0.join("summary.txt")).unwrap();
    assert_eq!(summary, "3 lines of notes\n");
    session.id().clone()
}

/// A turn that waits for its cancellation: cancelled from the client, it ends `cancelled`.
pub async fn cancelled_turn(agent: &AgentHandle, project: &Project) {
    let session = within("session/new", agent.new_session(&project.0))
        .await
        .unwrap();
    let mut turn = within("session/prompt", session.prompt(vec!["wait".into()]))
        .await
        .unwrap();
    // The first chunk says the agent is waiting: the turn is running.
    let first = within("the first update", turn.next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(first, SessionUpdate::AgentMessageChunk(_)),
        "{first:?}"
    );
    within("session/cancel", session.cancel()).await.unwrap();
    let response = within("the end of the turn", turn.end()).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
}

/// Sends `request` (a raw HTTP head) to `addr` and returns the whole answer as text.
pub async fn raw_http(addr: std::net::SocketAddr, request: &str) -> String {
    let mut stream = smol::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // Until the server closes, or the end of a 101's head (it stays open).
    loop {
        let n = within("an answer", stream.read(&mut buf))
            .await
            .unwrap_or(0);
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        if answer.starts_with(b"HTTP/1.1 101") && answer.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// An upgrade request head for `path` with extra header lines.
pub fn upgrade_request(path: &str, extra: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{extra}\r\n"
    )
}

/// A WebSocket client (async-tungstenite) on `url` (`ws://HOST:PORT/acp`), for tests that
/// send and read whole messages without the runtime's client; returns the upgrade's response
/// with it.
pub async fn websocket(
    url: &str,
) -> (
    async_tungstenite::WebSocketStream<smol::net::TcpStream>,
    async_tungstenite::tungstenite::handshake::client::Response,
) {
    let addr = url.trim_start_matches("ws://").trim_end_matches("/acp");
    let stream = smol::net::TcpStream::connect(addr).await.unwrap();
    async_tungstenite::client_async(url, stream).await.unwrap()
}

/// The process's resident memory, in bytes, once the allocator has given back what is free
/// (glibc keeps freed memory in its arenas; trimming shows what is still in use).
pub fn resident() -> usize {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator; it takes no pointer.
    unsafe {
        libc::malloc_trim(0);
    }
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    pages * 4096
}
