//! Test peers: a raw wire peer that writes and reads JSON lines, and small agents; a peer
//! over real pipes (`pipes`) and agents of both protocol versions (`versions`).
#![allow(dead_code)]

pub mod pipes;
#[cfg(feature = "unstable-protocol-v2")]
pub mod versions;

use std::time::Duration;

use acp_jsonrpc::memory;
use acp_runtime::agent::{self, Agent, AgentOptions};
use futures_lite::{AsyncBufReadExt, AsyncWriteExt};
use serde_json::Value;

/// Fails the test instead of hanging it.
pub async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    futures_lite::future::or(future, async {
        smol::Timer::after(Duration::from_secs(10)).await;
        panic!("timed out: {what}")
    })
    .await
}

/// Serves `agent` with `options` on a spawned driver and returns the raw peer that speaks to it.
pub fn serve_agent<A: Agent>(agent: A, options: AgentOptions) -> RawPeer {
    let (peer, endpoint) = RawPeer::new();
    let (_client, driver) = agent::serve(agent, endpoint.reader, endpoint.writer, options);
    smol::spawn(driver).detach();
    peer
}

/// The other end of a connection, speaking raw JSON lines.
pub struct RawPeer {
    reader: futures_lite::io::BufReader<memory::PipeReader>,
    writer: memory::PipeWriter,
}

impl RawPeer {
    /// A raw peer and the endpoint for the implementation under test.
    pub fn new() -> (RawPeer, memory::Endpoint) {
        let (ours, theirs) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        (
            RawPeer {
                reader: futures_lite::io::BufReader::new(ours.reader),
                writer: ours.writer,
            },
            theirs,
        )
    }

    pub async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.writer.write_all(&line).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    pub async fn send_text(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    pub async fn recv(&mut self) -> Value {
        let mut line = String::new();
        let n = within("a message from the peer", self.reader.read_line(&mut line))
            .await
            .unwrap();
        assert!(n > 0, "the peer closed the connection");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
    }

    /// Receives one line as it is, without its `\n`.
    pub async fn recv_line(&mut self) -> String {
        let mut line = String::new();
        let n = within("a line from the peer", self.reader.read_line(&mut line))
            .await
            .unwrap();
        assert!(n > 0, "the peer closed the connection");
        line.pop();
        line
    }

    /// Receives until the response to `id`, returning everything seen, in order.
    pub async fn recv_until_response(&mut self, id: i64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.recv().await;
            let done =
                message.get("id") == Some(&Value::from(id)) && message.get("method").is_none();
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await;
        self.recv_until_response(id).await.pop().unwrap()
    }

    pub async fn initialize(&mut self, client_capabilities: Value) -> Value {
        self.request(
            0,
            "initialize",
            serde_json::json!({"protocolVersion": 1, "clientCapabilities": client_capabilities}),
        )
        .await
    }

    /// Opens a session in `/tmp` with no MCP servers and returns its id.
    pub async fn new_session(&mut self, id: i64) -> String {
        let response = self
            .request(
                id,
                "session/new",
                serde_json::json!({"cwd": "/tmp", "mcpServers": []}),
            )
            .await;
        response["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("a session id: {response}"))
            .to_owned()
    }

    /// Sends a `session/prompt` of one text block without waiting for its response.
    pub async fn send_prompt<S>(&mut self, id: i64, session: &S, text: &str)
    where
        S: serde::Serialize + ?Sized,
    {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}),
        )
        .await;
    }

    /// Prompts with one text block and returns the response (updates before it are skipped).
    pub async fn prompt<S>(&mut self, id: i64, session: &S, text: &str) -> Value
    where
        S: serde::Serialize + ?Sized,
    {
        self.send_prompt(id, session, text).await;
        self.recv_until_response(id).await.pop().unwrap()
    }
}

/// Asserts that `response` is an error with `code` whose message contains `needle`.
pub fn assert_error_mentions(response: &Value, code: i64, needle: &str) {
    assert_eq!(response["error"]["code"], code, "{response}");
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{needle:?} not in {response}");
}
