//! Streamable HTTP, on the wire: a full prompt turn (file read, permission, file write,
//! streamed text) and a cancelled one, driven by hand with POSTs and SSE GETs as the RFD's
//! message flow shows them; every status code of its routing section; isolation between
//! clients.
#![cfg(unix)]

mod common;

use acp_remote::{Connector, ServerOptions};
use common::http_client::{Sse, post, send};
use common::wire::{INITIALIZE, WaitSession, Wire::Http1, full_turn_by_hand, initialize};
use common::*;

#[test]
fn a_full_turn_over_streamable_http() {
    smol::block_on(async {
        let (addr, shutdown, server) = serve(ServerOptions::default());
        let project = Project::new("http-turn");
        full_turn_by_hand(Http1(addr), &project, WaitSession::ParamsAlone).await;
        shutdown.shutdown();
        within("the server", server).await;
    });
}

#[test]
fn status_codes_follow_the_rfd() {
    smol::block_on(async {
        let (addr, shutdown, server) = serve(ServerOptions::default());
        let conn = initialize(Http1(addr), &[]).await;
        let c = [("Acp-Connection-Id", conn.as_str())];
        let ping = r#"{"jsonrpc":"2.0","method":"$/ping"}"#;

        let text = send(addr, "POST", &[("Content-Type", "text/plain")], ping).await;
        assert_eq!(text.status, 415);
        assert_eq!(post(addr, &c, "{not json").await.status, 400);
        assert_eq!(post(addr, &c, r#"{"id":1,"method":"x"}"#).await.status, 400);
        assert_eq!(post(addr, &c, &format!("[{ping}]")).await.status, 501);
        assert_eq!(post(addr, &[], ping).await.status, 400, "no connection id");
        let unknown = [("Acp-Connection-Id", "nope")];
        assert_eq!(post(addr, &unknown, ping).await.status, 404);
        assert_eq!(
            post(addr, &c, INITIALIZE).await.status,
            400,
            "initialize again"
        );
        assert_eq!(post(addr, &c, ping).await.status, 202);
        let unknown_method = r#"{"jsonrpc":"2.0","id":9,"method":"unknown/x"}"#;
        assert_eq!(post(addr, &c, unknown_method).await.status, 202);

        // Session-scoped methods name their session, consistently.
        let prompt = r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"prompt":[]}}"#;
        assert_eq!(post(addr, &c, prompt).await.status, 400);
        let named = r#"{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"a","prompt":[]}}"#;
        let other = [
            ("Acp-Connection-Id", conn.as_str()),
            ("Acp-Session-Id", "b"),
        ];
        assert_eq!(post(addr, &other, named).await.status, 400);

        // GET streams: SSE only, known connections only, one reader each.
        let plain = send(addr, "GET", &c, "").await;
        assert_eq!(plain.status, 406);
        assert_eq!(Sse::open(addr, &[]).await.status, 400);
        assert_eq!(Sse::open(addr, &unknown).await.status, 404);
        let mut first = Sse::open(addr, &c).await;
        assert_eq!(first.status, 200);
        assert_eq!(Sse::open(addr, &c).await.status, 409);
        // The answer queued for the connection's stream before it opened arrives now.
        let answer = within("an answer", first.next()).await.unwrap();
        assert_eq!(answer["id"], 9, "{answer}");
        assert_eq!(answer["error"]["code"], -32601, "{answer}");

        assert_eq!(send(addr, "DELETE", &[], "").await.status, 400);
        assert_eq!(send(addr, "DELETE", &c, "").await.status, 202);
        assert!(within("the end", first.next()).await.is_none());
        assert_eq!(send(addr, "PUT", &c, "").await.status, 405);

        // Bodies: a length or chunks (RFC 9112, 7.1), bounded by the message limit.
        let unframed = raw_http(
            addr,
            "POST /acp HTTP/1.1\r\nContent-Type: application/json\r\n\r\n",
        )
        .await;
        assert!(unframed.starts_with("HTTP/1.1 411"), "{unframed}");
        let (a, b) = INITIALIZE.split_at(20);
        let chunked = raw_http(
            addr,
            &format!(
                "POST /acp HTTP/1.1\r\nContent-Type: application/json\r\n\
                 Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
                 {:x};ext=1\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\nTrailer: x\r\n\r\n",
                a.len(),
                b.len()
            ),
        )
        .await;
        assert!(chunked.starts_with("HTTP/1.1 200"), "{chunked}");
        let huge = raw_http(
            addr,
            "POST /acp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n",
        )
        .await;
        assert!(huge.starts_with("HTTP/1.1 413"), "{huge}");

        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// Two clients with their own credentials: the one cannot use the other's connection, even
/// knowing its id (404, as for an id that does not exist).
#[test]
fn a_connection_id_is_useless_to_another_client() {
    smol::block_on(async {
        let options = ServerOptions::default()
            .with_authenticator(|head| matches!(head.bearer_token(), Some("alice" | "bob")));
        let (addr, shutdown, server) = serve(options);
        let alice = [("Authorization", "Bearer alice")];
        assert_eq!(post(addr, &[], INITIALIZE).await.status, 401);
        let conn = initialize(Http1(addr), &alice).await;

        let as_bob = [
            ("Authorization", "Bearer bob"),
            ("Acp-Connection-Id", conn.as_str()),
        ];
        let ping = r#"{"jsonrpc":"2.0","method":"$/ping"}"#;
        assert_eq!(post(addr, &as_bob, ping).await.status, 404);
        assert_eq!(Sse::open(addr, &as_bob).await.status, 404);
        assert_eq!(send(addr, "DELETE", &as_bob, "").await.status, 404);

        let as_alice = [
            ("Authorization", "Bearer alice"),
            ("Acp-Connection-Id", conn.as_str()),
        ];
        assert_eq!(post(addr, &as_alice, ping).await.status, 202);
        assert_eq!(send(addr, "DELETE", &as_alice, "").await.status, 202);

        // Browsers from other origins are refused on every method.
        let evil = [
            ("Origin", "https://evil.example"),
            ("Authorization", "Bearer alice"),
        ];
        assert_eq!(post(addr, &evil, INITIALIZE).await.status, 403);

        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// Shutdown ends the streams of Streamable HTTP connections too, and `serve` returns.
#[test]
fn shutdown_ends_http_connections() {
    smol::block_on(async {
        let (addr, shutdown, server) = serve(ServerOptions::default());
        let conn = initialize(Http1(addr), &[]).await;
        let mut stream = Sse::open(addr, &[("Acp-Connection-Id", conn.as_str())]).await;
        shutdown.shutdown();
        assert!(within("the stream's end", stream.next()).await.is_none());
        within("the server", server).await;
    });
}

/// The runtime's client over Streamable HTTP (`Connector` with an `http://` URL): the same
/// full turn and cancelled turn as over WebSocket.
#[test]
fn the_runtime_client_over_streamable_http() {
    smol::block_on(async {
        let (addr, shutdown, server) = serve(ServerOptions::default());
        let project = Project::new("http-client-turn");
        let (agent, driver) = connect_client(Connector::new(format!("http://{addr}/acp"))).await;
        full_turn(&agent, &project).await;
        cancelled_turn(&agent, &project).await;
        // A second session on the same connection gets its own stream.
        full_turn_again(&agent, &project).await;
        agent.close();
        within("the client driver", driver).await.unwrap();
        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// Another session and turn on a connection already initialized.
async fn full_turn_again(agent: &acp_runtime::client::AgentHandle, project: &Project) {
    let session = within("session/new", agent.new_session(&project.0))
        .await
        .unwrap();
    let mut turn = within("prompt", session.prompt(vec!["again".into()]))
        .await
        .unwrap();
    while let Some(update) = within("an update", turn.next()).await {
        update.unwrap();
    }
    let end = within("the end", turn.end()).await.unwrap();
    assert_eq!(end.stop_reason, acp_types::StopReason::EndTurn);
}

/// The POSTs of a connection share one kept-alive TCP connection: counted by a proxy in front
/// of the server, a full turn (initialize, session/new, the prompt, and the client's answers to
/// a file read, a permission request and a file write: six POSTs) takes three sockets: the
/// POSTs', and the connection's and the session's SSE streams.
#[test]
fn posts_share_one_kept_alive_socket() {
    smol::block_on(async {
        let (addr, shutdown, server) = serve(ServerOptions::default());
        let (proxy, accepted) = proxy::counting_proxy(addr).await;
        let project = Project::new("http-keep-alive");
        let (agent, driver) = connect_client(Connector::new(format!("http://{proxy}/acp"))).await;
        full_turn(&agent, &project).await;
        assert_eq!(accepted.get(), 3);
        agent.close();
        within("the client driver", driver).await.unwrap();
        shutdown.shutdown();
        within("the server", server).await;
    });
}
