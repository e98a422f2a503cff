//! Streamable HTTP over HTTP/2 (the `http2` feature): h2c with prior knowledge in the clear,
//! `h2` by ALPN under TLS. One TCP connection carries everything a client does: its POSTs and
//! its long-lived SSE GETs at once, with the same status codes as over HTTP/1.1.
#![cfg(all(unix, feature = "http2"))]

mod common;

use acp_remote::ServerOptions;
use common::h2_client::H2;
use common::wire::{INITIALIZE, WaitSession, Wire::Http2, full_turn_by_hand, initialize};
use common::*;
use serde_json::json;

/// The RFD's message flow on one HTTP/2 connection: `initialize`, both SSE streams open while
/// the POSTs go (session/new, a prompt whose turn streams updates and asks for a file read, a
/// permission and a file write, answered by POSTs on the same connection), a cancelled turn,
/// DELETE. A counting proxy in front of the server says it took one TCP connection.
#[test]
fn a_full_turn_over_h2c_on_one_tcp_connection() {
    smol::block_on(async {
        let (addr, shutdown, server) = serve(ServerOptions::default());
        let project = Project::new("h2-turn");
        let (proxy, accepted) = proxy::counting_proxy(addr).await;
        let h2 = H2::connect(proxy).await;
        full_turn_by_hand(Http2(&h2), &project, WaitSession::HeaderToo).await;
        shutdown.shutdown();
        within("the server", server).await;
        assert_eq!(accepted.get(), 1);
    });
}

/// Many Streamable HTTP connections on one TCP connection, each with its SSE stream open
/// while POSTs come and go: every answer reaches its own stream.
#[test]
fn streams_of_many_connections_share_one_tcp_connection() {
    smol::block_on(async {
        let (addr, shutdown, server) = serve(ServerOptions::default());
        let h2 = H2::connect(addr).await;
        let mut clients = Vec::new();
        for _ in 0..8 {
            let conn = initialize(Http2(&h2), &[]).await;
            let stream = h2.sse(&[("Acp-Connection-Id", conn.as_str())]).await;
            assert_eq!(stream.status, 200);
            clients.push((conn, stream));
        }
        let posts = clients.iter().enumerate().map(|(i, (conn, _))| {
            let h2 = h2.clone();
            let conn = conn.clone();
            smol::spawn(async move {
                let unknown = json!({"jsonrpc": "2.0", "id": 100 + i, "method": "unknown/x"});
                let c = [("Acp-Connection-Id", conn.as_str())];
                h2.post(&c, &unknown.to_string()).await.status
            })
        });
        for post in posts.collect::<Vec<_>>() {
            assert_eq!(post.await, 202);
        }
        for (i, (_, stream)) in clients.iter_mut().enumerate() {
            let answer = within("an answer", stream.next()).await.unwrap();
            assert_eq!(answer["id"], 100 + i, "{answer}");
            assert_eq!(answer["error"]["code"], -32601);
        }
        shutdown.shutdown();
        // Shutdown ends the SSE streams on HTTP/2 too.
        for (_, stream) in &mut clients {
            assert!(within("the stream's end", stream.next()).await.is_none());
        }
        within("the server", server).await;
    });
}

#[test]
fn status_codes_over_h2_are_those_of_http1() {
    smol::block_on(async {
        let options = ServerOptions::default().with_max_message_size(1024);
        let (addr, shutdown, server) = serve(options);
        let h2 = H2::connect(addr).await;
        let conn = initialize(Http2(&h2), &[]).await;
        let c = [("Acp-Connection-Id", conn.as_str())];
        let ping = r#"{"jsonrpc":"2.0","method":"$/ping"}"#;

        let text = h2
            .send("POST", &[("Content-Type", "text/plain")], ping)
            .await;
        assert_eq!(text.status, 415);
        assert_eq!(h2.post(&c, "{not json").await.status, 400);
        assert_eq!(h2.post(&[], ping).await.status, 400, "no connection id");
        let unknown = [("Acp-Connection-Id", "nope")];
        assert_eq!(h2.post(&unknown, ping).await.status, 404);
        assert_eq!(h2.post(&c, &format!("[{ping}]")).await.status, 501);
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"$/ping","params":"{}"}}"#,
            "x".repeat(2000)
        );
        assert_eq!(h2.post(&c, &big).await.status, 413);
        assert_eq!(
            h2.post(&c, ping).await.status,
            202,
            "the connection goes on"
        );

        assert_eq!(h2.send("GET", &c, "").await.status, 406);
        assert_eq!(h2.sse(&[]).await.status, 400);
        assert_eq!(h2.sse(&unknown).await.status, 404);
        let first = h2.sse(&c).await;
        assert_eq!(first.status, 200);
        assert_eq!(h2.sse(&c).await.status, 409);
        drop(first);
        assert_eq!(h2.send("PUT", &c, "").await.status, 405);
        assert_eq!(h2.send("DELETE", &c, "").await.status, 202);
        assert_eq!(h2.send("DELETE", &c, "").await.status, 404);
        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// Authentication, Origin and the path are checked on every HTTP/2 stream as on HTTP/1.1, and
/// a connection id is bound to the credentials that opened it.
#[test]
fn the_policy_holds_on_every_stream() {
    smol::block_on(async {
        let options = ServerOptions::default().with_authenticator(|head| {
            // `:authority` is presented as `Host`, as on HTTP/1.1.
            head.header("host") == Some("localhost")
                && matches!(head.bearer_token(), Some("alice" | "bob"))
        });
        let (addr, shutdown, server) = serve(options);
        let h2 = H2::connect(addr).await;
        let answer = h2.post(&[], INITIALIZE).await;
        assert_eq!(answer.status, 401);
        assert_eq!(answer.header("www-authenticate"), Some("Bearer"));
        let alice = [("Authorization", "Bearer alice")];
        let conn = initialize(Http2(&h2), &alice).await;
        let as_bob = [
            ("Authorization", "Bearer bob"),
            ("Acp-Connection-Id", conn.as_str()),
        ];
        assert_eq!(h2.sse(&as_bob).await.status, 404);
        let evil = [
            ("Origin", "https://evil.example"),
            ("Authorization", "Bearer alice"),
        ];
        assert_eq!(h2.post(&evil, INITIALIZE).await.status, 403);
        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// A connection without streams is closed after the handshake timeout, as an HTTP/1.1 socket
/// between requests; one with an open SSE stream is not.
#[test]
fn unused_connections_are_closed() {
    smol::block_on(async {
        let options =
            ServerOptions::default().with_handshake_timeout(std::time::Duration::from_millis(300));
        let (addr, shutdown, server) = serve(options);
        let busy = H2::connect(addr).await;
        let conn = initialize(Http2(&busy), &[]).await;
        let stream = busy.sse(&[("Acp-Connection-Id", conn.as_str())]).await;
        assert_eq!(stream.status, 200);
        let unused = H2::connect(addr).await;
        assert_eq!(unused.send("DELETE", &[], "").await.status, 400);
        smol::Timer::after(std::time::Duration::from_millis(900)).await;
        assert!(within("the close", unused.is_closed()).await);
        assert!(!busy.is_closed().await);
        drop(stream);
        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// Under TLS, a client that offers `h2` by ALPN gets HTTP/2 (one that offers nothing, as our
/// `Connector`, gets HTTP/1.1: tests/tls.rs).
#[cfg(feature = "tls")]
#[test]
fn h2_over_tls_by_alpn() {
    use std::sync::Arc;

    use acp_remote::TlsServerConfig;
    use futures_rustls::TlsConnector;
    use futures_rustls::rustls::{self, ClientConfig, RootCertStore};
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, ServerName};

    let file = |name: &str| format!("{}/tests/tls/{name}", env!("CARGO_MANIFEST_DIR"));
    smol::block_on(async {
        let tls = TlsServerConfig::from_pem_files(file("server.pem"), file("server.key")).unwrap();
        let (addr, shutdown, server) = serve(ServerOptions::default().with_tls(tls));

        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(file("ca.pem")).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let tcp = smol::net::TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let stream = TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .unwrap();
        assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));

        let h2 = H2::over(stream).await;
        let conn = initialize(Http2(&h2), &[]).await;
        let c = [("Acp-Connection-Id", conn.as_str())];
        let mut stream = h2.sse(&c).await;
        assert_eq!(stream.status, 200);
        let unknown = r#"{"jsonrpc":"2.0","id":7,"method":"unknown/x"}"#;
        assert_eq!(h2.post(&c, unknown).await.status, 202);
        let answer = within("an answer", stream.next()).await.unwrap();
        assert_eq!(answer["id"], 7, "{answer}");
        assert_eq!(h2.send("DELETE", &c, "").await.status, 202);
        shutdown.shutdown();
        within("the server", server).await;
    });
}
