//! The durable-transport proposal's wire on Streamable HTTP (upstream PR #2208, opt-in with
//! `ServerOptions::with_durable_transport`): the retention advertised at `initialize`, the
//! cursor of every event in both its SSE `id:` and `_meta["acp/cursor"]`, a resumption that
//! replays the very bytes, then the turn state; and a client that does not ask gets today's
//! wire.
#![cfg(unix)]

mod common;

use acp_remote::ServerOptions;
use common::http_client::{Sse, post};
use common::wire::INITIALIZE;
use common::{serve, within};

/// An `initialize` that asks for the durable transport.
const DURABLE_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"transport":{"resumable":{}}}}}"#;

async fn text_until(stream: &mut Sse, needle: &str) -> String {
    within(needle, stream.text_until(needle)).await.unwrap()
}

#[test]
fn cursors_and_retention_on_the_wire() {
    smol::block_on(async {
        let options = ServerOptions::default()
            .with_durable_transport(true)
            .with_replay_events(100);
        let (addr, _shutdown, _task) = serve(options);
        let init = post(addr, &[], DURABLE_INITIALIZE).await;
        assert_eq!(init.status, 200);
        let resumable = &init.json()["result"]["agentCapabilities"]["transport"]["resumable"];
        insta::assert_snapshot!(resumable.to_string(), @r#"{"retentionMessages":100,"retentionSeconds":300}"#);
        let conn = init.header("acp-connection-id").unwrap().to_owned();
        let c = [("Acp-Connection-Id", conn.as_str())];
        let mut first = Sse::open(addr, &c).await;
        for id in 7..9 {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"unknown/x"}}"#);
            assert_eq!(post(addr, &c, &body).await.status, 202);
        }
        let text = text_until(&mut first, "\"id\":8").await + &text_until(&mut first, "\n\n").await;
        insta::assert_snapshot!(text, @r#"
        id: 0

        id: 1
        data: {"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found","data":{"_meta":{"acp/cursor":"1"},"method":"unknown/x"}}}

        id: 2
        data: {"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found","data":{"_meta":{"acp/cursor":"2"},"method":"unknown/x"}}}
        "#);
        let mut h = c.to_vec();
        h.push(("Last-Event-ID", "1"));
        let mut resumed = Sse::open(addr, &h).await;
        assert_eq!(resumed.status, 200);
        let replayed =
            text_until(&mut resumed, "\"id\":8").await + &text_until(&mut resumed, "\n\n").await;
        assert!(
            text.ends_with(replayed.trim_start_matches("id: 1\n\n")),
            "{replayed}"
        );
        // After the replay, before anything live: the turn state, in an event without an id
        // (the stream's cursors are not moved by it).
        let state = text_until(&mut resumed, "\n\n").await;
        insta::assert_snapshot!(state, @r#"data: {"jsonrpc":"2.0","method":"stream/resumed","params":{"_meta":{"acp/turnState":{"turns":[]}},"cursor":"2"}}"#);
    });
}

#[test]
fn a_client_that_does_not_ask_gets_todays_wire() {
    smol::block_on(async {
        let (addr, _shutdown, _task) = serve(ServerOptions::default().with_durable_transport(true));
        let init = post(addr, &[], INITIALIZE).await;
        assert!(
            init.json()["result"]["agentCapabilities"]
                .get("transport")
                .is_none()
        );
        let conn = init.header("acp-connection-id").unwrap().to_owned();
        let c = [("Acp-Connection-Id", conn.as_str())];
        let mut stream = Sse::open(addr, &c).await;
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"unknown/x"}"#;
        assert_eq!(post(addr, &c, body).await.status, 202);
        let text = text_until(&mut stream, "\"id\":7").await;
        assert!(!text.contains("acp/cursor"), "{text}");
    });
}

/// Events no longer kept: a durable-transport client is refused with the proposal's `409`
/// (and the same JSON-RPC error as the `410` others get), never a stream with a gap.
#[test]
fn a_passed_window_is_a_409_for_a_durable_client() {
    smol::block_on(async {
        let options = ServerOptions::default()
            .with_durable_transport(true)
            .with_replay_events(0);
        let (addr, _shutdown, _task) = serve(options);
        let init = post(addr, &[], DURABLE_INITIALIZE).await;
        let conn = init.header("acp-connection-id").unwrap().to_owned();
        let c = [("Acp-Connection-Id", conn.as_str())];
        let mut first = Sse::open(addr, &c).await;
        for id in 7..9 {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"unknown/x"}}"#);
            assert_eq!(post(addr, &c, &body).await.status, 202);
        }
        // The reader trims the window after sending (to no events at all).
        text_until(&mut first, "\"id\":8").await;
        let mut h = c.to_vec();
        h.push(("Last-Event-ID", "0"));
        let refused = Sse::open(addr, &h).await;
        assert_eq!(refused.status, 409);
    });
}
