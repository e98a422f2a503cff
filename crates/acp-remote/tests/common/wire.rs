//! Streamable HTTP driven by hand, with the same requests over HTTP/1.1 (one TCP connection a
//! request, tests/streamable.rs) or over one HTTP/2 connection (tests/http2.rs): `initialize`,
//! and the RFD's message flow of a full turn and a cancelled one.

use std::net::SocketAddr;

use serde_json::{Value, json};

use super::h2_client::{self, H2};
use super::http_client::{self, Response};
use super::{Project, agent, within};

pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}}"#;

/// How requests are sent and SSE streams opened.
#[derive(Clone, Copy)]
pub enum Wire<'a> {
    /// HTTP/1.1, a TCP connection for each request and each stream.
    Http1(SocketAddr),
    /// Streams of one HTTP/2 connection.
    Http2(&'a H2),
}

impl Wire<'_> {
    /// Sends one request and reads the whole answer.
    pub async fn send(self, method: &str, headers: &[(&str, &str)], body: &str) -> Response {
        match self {
            Wire::Http1(addr) => http_client::send(addr, method, headers, body).await,
            Wire::Http2(h2) => h2.send(method, headers, body).await.into(),
        }
    }

    /// POSTs a JSON body.
    pub async fn post(self, headers: &[(&str, &str)], body: &str) -> Response {
        match self {
            Wire::Http1(addr) => http_client::post(addr, headers, body).await,
            Wire::Http2(h2) => h2.post(headers, body).await.into(),
        }
    }

    /// GETs an SSE stream; its `status` says whether it opened (200).
    pub async fn sse(self, headers: &[(&str, &str)]) -> Sse {
        match self {
            Wire::Http1(addr) => Sse::Http1(http_client::Sse::open(addr, headers).await),
            Wire::Http2(h2) => Sse::Http2(h2.sse(headers).await),
        }
    }
}

impl From<h2_client::Response> for Response {
    fn from(answer: h2_client::Response) -> Response {
        let headers = answer
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect();
        Response {
            status: answer.status,
            headers,
            body: answer.body,
        }
    }
}

/// An open SSE stream of either wire.
pub enum Sse {
    Http1(http_client::Sse),
    Http2(h2_client::Sse),
}

impl Sse {
    pub fn status(&self) -> u16 {
        match self {
            Sse::Http1(sse) => sse.status,
            Sse::Http2(sse) => sse.status,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        match self {
            Sse::Http1(sse) => sse
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str()),
            Sse::Http2(sse) => sse.headers.get(name).and_then(|v| v.to_str().ok()),
        }
    }

    /// The next event's JSON; `None` when the stream ends.
    pub async fn next(&mut self) -> Option<Value> {
        match self {
            Sse::Http1(sse) => sse.next().await,
            Sse::Http2(sse) => sse.next().await,
        }
    }
}

/// POSTs `initialize`; returns the connection id.
pub async fn initialize(wire: Wire<'_>, auth: &[(&str, &str)]) -> String {
    let answer = wire.post(auth, INITIALIZE).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json()["id"], 0);
    assert_eq!(answer.json()["result"]["agentInfo"]["name"], agent::NAME);
    answer.header("acp-connection-id").unwrap().to_owned()
}

/// How the prompt of the cancelled turn names its session.
#[derive(Clone, Copy)]
pub enum WaitSession {
    /// In `params.sessionId` alone (the SDKs disagree on whether the header is required; both
    /// are accepted).
    ParamsAlone,
    /// In the `Acp-Session-Id` header too.
    HeaderToo,
}

/// The RFD's message flow by hand: `initialize`, both SSE streams open while the POSTs go
/// (session/new, a prompt whose turn streams updates and asks for a file read, a permission
/// and a file write, each answered by a POST), a cancelled turn, DELETE.
pub async fn full_turn_by_hand(wire: Wire<'_>, project: &Project, wait: WaitSession) {
    let conn = initialize(wire, &[]).await;
    let c = [("Acp-Connection-Id", conn.as_str())];
    let mut connection_stream = wire.sse(&c).await;
    assert_eq!(connection_stream.status(), 200);
    assert_eq!(
        connection_stream.header("content-type"),
        Some("text/event-stream")
    );

    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": project.0, "mcpServers": []}});
    assert_eq!(wire.post(&c, &new.to_string()).await.status, 202);
    let answer = within("session/new", connection_stream.next())
        .await
        .unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();

    let cs = [
        ("Acp-Connection-Id", conn.as_str()),
        ("Acp-Session-Id", session.as_str()),
    ];
    let mut session_stream = wire.sse(&cs).await;
    assert_eq!(session_stream.status(), 200);
    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "Summarize my notes"}]}});
    assert_eq!(wire.post(&cs, &prompt.to_string()).await.status, 202);

    let mut text = String::new();
    let mut asked = Vec::new();
    let response = loop {
        let event = within("an event", session_stream.next()).await.unwrap();
        let answer = |result: Value| {
            json!({"jsonrpc": "2.0", "id": event["id"], "result": result}).to_string()
        };
        match event["method"].as_str() {
            Some("session/update") => {
                let update = &event["params"]["update"];
                if update["sessionUpdate"] == "agent_message_chunk" {
                    text.push_str(update["content"]["text"].as_str().unwrap());
                }
            }
            Some(method @ "fs/read_text_file") => {
                asked.push(method.to_owned());
                let path = event["params"]["path"].as_str().unwrap();
                let content = std::fs::read_to_string(path).unwrap();
                let reply = answer(json!({"content": content}));
                assert_eq!(wire.post(&cs, &reply).await.status, 202);
            }
            Some(method @ "session/request_permission") => {
                asked.push(method.to_owned());
                let outcome = json!({"outcome": {"outcome": "selected", "optionId": "allow"}});
                // Without `Acp-Session-Id`, as the Python SDK's client answers: the id names
                // the request, and is enough.
                assert_eq!(wire.post(&c, &answer(outcome)).await.status, 202);
            }
            Some(method @ "fs/write_text_file") => {
                asked.push(method.to_owned());
                let params = &event["params"];
                std::fs::write(
                    params["path"].as_str().unwrap(),
                    params["content"].as_str().unwrap(),
                )
                .unwrap();
                assert_eq!(wire.post(&cs, &answer(json!({}))).await.status, 202);
            }
            Some(other) => panic!("unexpected request {other}: {event}"),
            None => break event,
        }
    };
    assert_eq!(response["id"], 2, "{response}");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(text, "Done: 3 lines.");
    assert_eq!(
        asked,
        [
            "fs/read_text_file",
            "session/request_permission",
            "fs/write_text_file"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(project.0.join("summary.txt")).unwrap(),
        "3 lines of notes\n"
    );

    // A cancelled turn.
    let wait_headers: &[(&str, &str)] = match wait {
        WaitSession::ParamsAlone => &c,
        WaitSession::HeaderToo => &cs,
    };
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}});
    assert_eq!(
        wire.post(wait_headers, &prompt.to_string()).await.status,
        202
    );
    let first = within("waiting", session_stream.next()).await.unwrap();
    assert_eq!(first["method"], "session/update", "{first}");
    let cancel =
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}});
    assert_eq!(wire.post(&cs, &cancel.to_string()).await.status, 202);
    let end = within("the cancelled turn", session_stream.next())
        .await
        .unwrap();
    assert_eq!(end["id"], 3, "{end}");
    assert_eq!(end["result"]["stopReason"], "cancelled");

    // DELETE ends the connection: its streams end, its id is gone.
    assert_eq!(wire.send("DELETE", &c, "").await.status, 202);
    for stream in [&mut connection_stream, &mut session_stream] {
        assert!(within("the stream's end", stream.next()).await.is_none());
    }
    assert_eq!(wire.post(&cs, &cancel.to_string()).await.status, 404);
    assert_eq!(wire.send("DELETE", &c, "").await.status, 404);
}
