//! A client whose answer to a request of the agent is refused, over real sockets: the agent's
//! request fails with the reason, the turn ends, nothing waits for ever (issue 24: the Python
//! SDK's answers were refused and the agent's request hung). Each way a POST can be refused
//! once the body has started: too large by its `Content-Length` (413 from the head), too
//! large as its chunks arrive (413), not JSON (415), invalid JSON (400); over HTTP/1.1, and
//! over HTTP/2 (h2c) with the `http2` feature. And an answer whose `id` comes after a
//! `result` larger than 64 KiB (once beyond what was looked at), too large either way.

mod common;

use std::net::SocketAddr;

use acp_remote::ServerOptions;
use common::wire::Wire;
use common::{Project, serve, within};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use serde_json::{Value, json};

/// The message limit of these servers: an answer with 20 KiB of content is over it.
const LIMIT: usize = 16 * 1024;

/// How the client's answer to `fs/read_text_file` is sent (and refused).
#[derive(Debug, Clone, Copy)]
enum Refused {
    LengthTooLarge,
    ChunksTooLarge,
    NotJson,
    InvalidJson,
    /// `LengthTooLarge` with the id after a 100 KiB result.
    LengthTooLargeIdLast,
    /// `ChunksTooLarge` with the id after a 100 KiB result.
    ChunksTooLargeIdLast,
}

impl Refused {
    /// The answer's body: the id first (as serde_json orders the members), or last.
    fn body(self, id: &Value) -> String {
        match self {
            Refused::LengthTooLargeIdLast | Refused::ChunksTooLargeIdLast => format!(
                r#"{{"jsonrpc":"2.0","result":{{"content":"{}"}},"id":{id}}}"#,
                "x".repeat(100 * 1024)
            ),
            _ => json!({"jsonrpc": "2.0", "id": id,
                "result": {"content": "x".repeat(20 * 1024)}})
            .to_string(),
        }
    }
}

#[test]
fn a_refused_answer_fails_the_agents_request() {
    smol::block_on(async {
        for way in [
            Refused::LengthTooLarge,
            Refused::ChunksTooLarge,
            Refused::NotJson,
            Refused::InvalidJson,
            Refused::LengthTooLargeIdLast,
            Refused::ChunksTooLargeIdLast,
        ] {
            let (addr, _handle, _task) =
                serve(ServerOptions::default().with_max_message_size(LIMIT));
            check(Wire::Http1(addr), addr, way).await;
        }
    });
}

/// The same over one HTTP/2 connection (chunks are HTTP/1.1's).
#[cfg(feature = "http2")]
#[test]
fn a_refused_answer_fails_the_agents_request_over_h2c() {
    smol::block_on(async {
        for way in [
            Refused::LengthTooLarge,
            Refused::NotJson,
            Refused::InvalidJson,
            Refused::LengthTooLargeIdLast,
        ] {
            let (addr, _handle, _task) =
                serve(ServerOptions::default().with_max_message_size(LIMIT));
            let h2 = common::h2_client::H2::connect(addr).await;
            check(Wire::Http2(&h2), addr, way).await;
        }
    });
}

async fn check(wire: Wire<'_>, addr: SocketAddr, way: Refused) {
    let project = Project::new(&format!("refused-{way:?}"));
    let (status, ended) = refused_turn(wire, addr, &project, way).await;
    let (want, reason) = match way {
        Refused::LengthTooLarge
        | Refused::ChunksTooLarge
        | Refused::LengthTooLargeIdLast
        | Refused::ChunksTooLargeIdLast => (413, "message larger than the server accepts"),
        Refused::NotJson => (415, "Content-Type must be application/json"),
        Refused::InvalidJson => (400, "invalid JSON"),
    };
    assert_eq!(status, want, "{way:?}");
    // The turn ends with the reason (the agent's file read failed with it and the test agent
    // passes it on), not a hang.
    let message = format!("the client's answer was refused: {reason}");
    assert_eq!(
        ended,
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": message}}),
        "{way:?}"
    );
}

/// A prompt turn whose file read is answered `way`: the status of that POST, and the prompt's
/// answer.
async fn refused_turn(
    wire: Wire<'_>,
    addr: SocketAddr,
    project: &Project,
    way: Refused,
) -> (u16, Value) {
    let conn = common::wire::initialize(wire, &[]).await;
    let c = [("Acp-Connection-Id", conn.as_str())];
    let mut connection_stream = wire.sse(&c).await;
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": project.0, "mcpServers": []}});
    assert_eq!(wire.post(&c, &new.to_string()).await.status, 202);
    let answer = within("session/new", connection_stream.next())
        .await
        .unwrap();
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let cs = [
        ("Acp-Connection-Id", conn.as_str()),
        ("Acp-Session-Id", session.as_str()),
    ];
    let mut stream = wire.sse(&cs).await;
    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "x"}]}});
    assert_eq!(wire.post(&cs, &prompt.to_string()).await.status, 202);
    let mut status = None;
    loop {
        let event = within("an event", stream.next()).await.unwrap();
        match event["method"].as_str() {
            Some("session/update") => {}
            Some("fs/read_text_file") => {
                let body = way.body(&event["id"]);
                status = Some(send_refused(wire, addr, &conn, &body, way).await);
            }
            Some(other) => panic!("unexpected request {other}: {event}"),
            None => return (status.expect("the file read was asked"), event),
        }
    }
}

/// POSTs `body` (an answer) so that the server refuses it `way`; returns the status.
async fn send_refused(
    wire: Wire<'_>,
    addr: SocketAddr,
    conn: &str,
    body: &str,
    way: Refused,
) -> u16 {
    let c = [("Acp-Connection-Id", conn)];
    match way {
        Refused::LengthTooLarge | Refused::LengthTooLargeIdLast => wire.post(&c, body).await.status,
        Refused::NotJson => {
            let headers = [("Content-Type", "text/plain"), c[0]];
            wire.send("POST", &headers, body).await.status
        }
        Refused::InvalidJson => {
            // Cut inside its result: small enough, but not JSON.
            let cut = &body[..100];
            wire.post(&c, cut).await.status
        }
        Refused::ChunksTooLarge | Refused::ChunksTooLargeIdLast => {
            let mut stream = smol::net::TcpStream::connect(addr).await.unwrap();
            let mut request = format!(
                "POST /acp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                 Acp-Connection-Id: {conn}\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            .into_bytes();
            for chunk in body.as_bytes().chunks(4096) {
                request.extend(format!("{:x}\r\n", chunk.len()).bytes());
                request.extend_from_slice(chunk);
                request.extend(b"\r\n");
            }
            request.extend(b"0\r\n\r\n");
            // The server may close before taking it all: the answer is what counts.
            let _ = stream.write_all(&request).await;
            let mut answer = Vec::new();
            let _ = within("the answer", stream.read_to_end(&mut answer)).await;
            let text = String::from_utf8_lossy(&answer);
            text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
        }
    }
}
