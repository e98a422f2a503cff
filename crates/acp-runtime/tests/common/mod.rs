//! Test peers: a raw wire peer that writes and reads JSON lines, and small agents; a peer
//! over real pipes (`pipes`) and agents of both protocol versions (`versions`).
#![allow(dead_code)]

pub mod pipes;
#[cfg(feature = "unstable-protocol-v2")]
pub mod versions;

use std::time::Duration;

use acp_jsonrpc::memory;
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
}
