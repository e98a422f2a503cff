//! The client side of the durable transport over WebSocket (see `src/server/exchange/ws_durable.rs` for the
//! server's): the runtime reads and writes queues, and a driver task carries them over one
//! WebSocket after another. It asks for the transport in the `initialize` it sends, follows
//! the cursor of each message it receives, and keeps what it sent until the server says it
//! received it. When the WebSocket drops (an error, the end of the socket without a close
//! frame, or the keep-alive: nothing heard for five intervals), it opens a new one whose
//! first message is `stream/resume` with the connection's id and the last cursor; the server
//! sends what the client missed, then its answer (how many of the client's messages it had,
//! and the turn state), and the client sends again what came after those. A refusal
//! (`stream/resume_failed`) ends the connection with the server's reason.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use async_tungstenite::WebSocketStream;
use futures_lite::{AsyncWriteExt, future};
use serde_json::{Value, json};

use crate::client::pipe::{Pipe, PipeReader, PipeWriter};
use crate::client::streamable::wire::{Reconnect, Retry};
use crate::lines::{read_message, to_line};
use crate::proto::ws::keepalive::KeepAliveConfig;
use crate::proto::ws::socket::WsStream;
use crate::proto::ws::{Shared as WsShared, WsReader, WsWriter, split_with};
use crate::queue::Failure;

/// The id of our `stream/resume` requests (a string no runtime request id looks like).
const RESUME_ID: &str = "acp-remote/stream-resume";

/// Most messages kept until the server confirms it received them; beyond, the oldest is
/// given up (a resumption that needs it fails).
const LOG_MESSAGES: usize = 4096;
/// Most bytes so kept (the newest message is kept whatever its size).
const LOG_BYTES: usize = 16 << 20;

/// Opens another WebSocket to the connection's URL.
pub(crate) type Reopen = Arc<
    dyn Fn() -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<WebSocketStream<WsStream>, String>> + Send>,
        > + Send
        + Sync,
>;

/// One WebSocket's halves.
type Socket = (WsReader<WsStream>, WsWriter<WsStream>);

/// The keep-alive of a durable connection: a ping after `interval` of quiet, and the
/// WebSocket taken for dropped when nothing was heard for five intervals (the proposal's
/// rule), after which it is resumed.
fn keepalive(config: Option<KeepAliveConfig>) -> Option<KeepAliveConfig> {
    config.map(|c| KeepAliveConfig {
        interval: c.interval,
        timeout: c.interval.saturating_mul(4),
    })
}

/// Starts the driver of a durable connection on its first WebSocket.
pub(crate) fn open(
    connector: Reopen,
    ws: WebSocketStream<WsStream>,
    connection_id: Option<String>,
    keepalive_config: Option<KeepAliveConfig>,
    reconnect: Reconnect,
    max_message_size: usize,
) -> (PipeReader, PipeWriter) {
    let pipe = Pipe::new(max_message_size);
    let keepalive_config = keepalive(keepalive_config);
    let socket = halves(ws, keepalive_config);
    let driver = Driver {
        pipe: pipe.clone(),
        connector,
        connection_id,
        keepalive: keepalive_config,
        reconnect,
    };
    smol::spawn(async move { driver.run(socket).await }).detach();
    pipe.ends()
}

fn halves(ws: WebSocketStream<WsStream>, keepalive: Option<KeepAliveConfig>) -> Socket {
    let (reader, writer) = split_with(Arc::new(WsShared::new(ws)), None, None, None);
    (reader.with_keepalive(keepalive), writer)
}

/// What the client sent and the server has not confirmed yet.
#[derive(Debug, Default)]
struct Sent {
    /// Messages by number (from 1, in the order sent), oldest first.
    log: VecDeque<(u64, Vec<u8>)>,
    bytes: usize,
    /// The number of the last message taken from the runtime.
    last: u64,
    /// The `initialize` went out asking for the durable transport.
    asked: bool,
}

impl Sent {
    fn push(&mut self, message: Vec<u8>) -> &[u8] {
        self.last += 1;
        self.bytes += message.len();
        self.log.push_back((self.last, message));
        while self.log.len() > 1 && (self.log.len() > LOG_MESSAGES || self.bytes > LOG_BYTES) {
            if let Some((_, old)) = self.log.pop_front() {
                self.bytes -= old.len();
            }
        }
        &self.log.back().expect("just pushed").1
    }

    /// The server has the first `received` messages: they are forgotten. `false` when a
    /// message after them was given up already.
    fn confirmed(&mut self, received: u64) -> bool {
        while self.log.front().is_some_and(|(n, _)| *n <= received) {
            if let Some((_, old)) = self.log.pop_front() {
                self.bytes -= old.len();
            }
        }
        self.log
            .front()
            .map_or(received >= self.last, |(n, _)| *n == received + 1)
    }
}

/// Where the client is in the server's stream.
#[derive(Debug, Default)]
struct Received {
    /// The cursor of the last message received.
    cursor: u64,
    /// The server stamps cursors: it serves the durable transport, and a drop is resumed.
    durable: bool,
    /// Messages received.
    messages: u64,
}

impl Received {
    /// Follows the cursor of `message`. The server's cursors are its stream's event ids,
    /// consecutive: a message with nowhere to carry one (a `null` result) is the next.
    fn follow(&mut self, message: &[u8]) {
        self.messages += 1;
        match crate::proto::cursor::read_cursor(message) {
            Some(cursor) => {
                self.cursor = cursor;
                self.durable = true;
            }
            None if self.durable => self.cursor += 1,
            None => {}
        }
    }
}

/// How one WebSocket's run ended.
enum End {
    /// The runtime closed its writer (or stopped reading): the connection ends.
    Runtime,
    /// The server closed the WebSocket: the connection is over.
    Server,
    /// The WebSocket dropped.
    Dropped(String),
}

struct Driver {
    pipe: Arc<Pipe>,
    connector: Reopen,
    connection_id: Option<String>,
    keepalive: Option<KeepAliveConfig>,
    reconnect: Reconnect,
}

impl Driver {
    async fn run(self, first: Socket) {
        let mut socket = first;
        let mut sent = Sent::default();
        let mut received = Received::default();
        loop {
            let (reader, writer) = &mut socket;
            let end = future::or(
                self.send(writer, &mut sent),
                self.receive(reader, &mut received),
            )
            .await;
            match end {
                End::Runtime => {
                    let _ = socket.1.close().await;
                    self.pipe.end();
                    return;
                }
                End::Server => {
                    self.pipe.end();
                    return;
                }
                End::Dropped(reason) => {
                    // Resumable once the server stamped a cursor, or before anything came (the
                    // first message's gap: a server that does not know `stream/resume`
                    // refuses it as an unknown method).
                    let resumable = received.durable || received.messages == 0;
                    let Some(id) = self.connection_id.as_deref().filter(|_| resumable) else {
                        return self.pipe.fail(Failure::Other(reason));
                    };
                    match self.resume(id, &mut sent, &mut received, reason).await {
                        Ok(next) => socket = next,
                        Err(failure) => return self.pipe.fail(failure),
                    }
                }
            }
        }
    }

    /// The runtime's messages to the server, each kept until confirmed.
    async fn send(&self, writer: &mut WsWriter<WsStream>, sent: &mut Sent) -> End {
        loop {
            let Some(mut message) = self.pipe.outbound().pop().await else {
                return End::Runtime;
            };
            if !sent.asked {
                sent.asked = true;
                message = crate::proto::cursor::ask_for_resumable(&message);
            }
            let line = to_line(sent.push(message));
            if let Err(error) = write_line(writer, &line).await {
                return End::Dropped(error.to_string());
            }
        }
    }

    /// The server's messages to the runtime, their cursors followed.
    async fn receive(&self, reader: &mut WsReader<WsStream>, received: &mut Received) -> End {
        loop {
            match read_message(reader).await {
                Ok(Some(message)) => {
                    received.follow(&message);
                    if self.pipe.inbound().push(to_line(&message)).await.is_err() {
                        return End::Runtime;
                    }
                }
                Ok(None) if reader.closed_by_peer() => return End::Server,
                Ok(None) => return End::Dropped("the WebSocket ended without a close".into()),
                Err(error) => return End::Dropped(error.to_string()),
            }
        }
    }

    /// Opens WebSockets until one resumes the connection (within the reconnect bounds):
    /// `Ok` with it, once the missed messages were handed on and ours sent again; `Err` with
    /// the reason the connection ends.
    async fn resume(
        &self,
        id: &str,
        sent: &mut Sent,
        received: &mut Received,
        mut reason: String,
    ) -> Result<Socket, Failure> {
        let mut retry = Retry::new(self.reconnect);
        loop {
            if !retry.wait().await {
                return Err(Failure::Other(format!(
                    "the WebSocket dropped and could not resume: {reason}"
                )));
            }
            let ws = match (self.connector)().await {
                Ok(ws) => ws,
                Err(error) => {
                    reason = error;
                    continue;
                }
            };
            let (mut reader, mut writer) = halves(ws, self.keepalive);
            let request = json!({
                "jsonrpc": "2.0",
                "id": RESUME_ID,
                "method": "stream/resume",
                "params": {"connectionId": id, "cursor": received.cursor.to_string()},
            });
            if let Err(error) =
                write_line(&mut writer, &to_line(request.to_string().as_bytes())).await
            {
                reason = error.to_string();
                continue;
            }
            match self.replay(&mut reader, received).await {
                Ok(Ok(confirmed)) => {
                    if !sent.confirmed(confirmed) {
                        return Err(Failure::Refused(format!(
                            "the WebSocket resumed, but messages sent before the server's \
                             {confirmed}th were given up here (more than {LOG_MESSAGES} \
                             messages or {LOG_BYTES} bytes unconfirmed)"
                        )));
                    }
                    let mut resent = Ok(());
                    for (_, message) in &sent.log {
                        resent = write_line(&mut writer, &to_line(message)).await;
                        if resent.is_err() {
                            break;
                        }
                    }
                    match resent {
                        Ok(()) => return Ok((reader, writer)),
                        Err(error) => {
                            reason = error.to_string();
                            continue;
                        }
                    }
                }
                Ok(Err(refusal)) => return Err(Failure::Refused(refusal)),
                Err(error) => reason = error,
            }
        }
    }

    /// Reads a resumed WebSocket up to the answer to `stream/resume`: the replayed messages
    /// go to the runtime. `Ok(Ok(n))`: resumed, the server had `n` of our messages;
    /// `Ok(Err(reason))`: refused; `Err`: the WebSocket dropped again.
    async fn replay(
        &self,
        reader: &mut WsReader<WsStream>,
        received: &mut Received,
    ) -> Result<Result<u64, String>, String> {
        loop {
            let message = match read_message(reader).await {
                Ok(Some(message)) => message,
                Ok(None) => return Err("the resumed WebSocket ended".into()),
                Err(error) => return Err(error.to_string()),
            };
            let value: Value = serde_json::from_slice(&message).unwrap_or_default();
            if value.get("method").and_then(Value::as_str) == Some("stream/resume_failed") {
                // The error answer follows, with the same reason.
                continue;
            }
            if value.get("method").is_none() && value.get("id") == Some(&json!(RESUME_ID)) {
                if let Some(error) = value.get("error") {
                    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
                    // Another instance than the connection's: a balancer's mistake, tried
                    // again (the server's `other_instance`).
                    if error.pointer("/data/reason").and_then(Value::as_str)
                        == Some("other_instance")
                    {
                        return Err(message.to_owned());
                    }
                    return Ok(Err(format!(
                        "the server refused to resume the WebSocket (stream/resume_failed): \
                         {message}"
                    )));
                }
                let confirmed = value
                    .pointer("/result/received")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                return Ok(Ok(confirmed));
            }
            received.follow(&message);
            if self.pipe.inbound().push(to_line(&message)).await.is_err() {
                return Ok(Err("the connection has ended".into()));
            }
        }
    }
}

/// Writes one line (a message and its newline) and flushes it.
async fn write_line(writer: &mut WsWriter<WsStream>, line: &[u8]) -> io::Result<()> {
    writer.write_all(line).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sent_messages_are_kept_until_confirmed_and_bounded() {
        let mut sent = Sent::default();
        for i in 0..5u8 {
            sent.push(vec![i]);
        }
        assert!(sent.confirmed(3));
        assert_eq!(sent.log.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [4, 5]);
        assert!(sent.confirmed(5));
        assert!(sent.log.is_empty());
        for _ in 0..LOG_MESSAGES + 2 {
            sent.push(vec![0]);
        }
        assert_eq!(sent.log.len(), LOG_MESSAGES);
        // The server had only the first of these: the next two were given up.
        assert!(!sent.confirmed(6));
    }

    #[test]
    fn cursors_are_followed_and_a_message_without_one_is_the_next() {
        let mut received = Received::default();
        received.follow(br#"{"id":1,"result":null}"#);
        assert_eq!((received.cursor, received.durable), (0, false));
        received.follow(br#"{"id":1,"result":{"_meta":{"acp/cursor":"4"}}}"#);
        received.follow(br#"{"id":2,"result":null}"#);
        assert_eq!((received.cursor, received.durable), (5, true));
    }
}
