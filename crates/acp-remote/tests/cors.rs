//! CORS for browser clients of Streamable HTTP: a preflight from an allowed Origin is answered
//! 204 with what the endpoint accepts, without the token a browser never sends on it; real
//! answers to that Origin let the page read them and their `Acp-*` headers; any other Origin
//! stays refused (403), preflight included. The same over HTTP/2.
#![cfg(unix)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use acp_remote::{ServerOptions, ShutdownHandle};
use common::http_client::{post, send};
use common::*;

const IDE: &str = "https://ide.example.com";

fn start() -> (SocketAddr, ShutdownHandle, smol::Task<()>) {
    start_with(ServerOptions::default())
}

fn start_with(options: ServerOptions) -> (SocketAddr, ShutdownHandle, smol::Task<()>) {
    serve(options.with_bearer_token("s3cret").with_allowed_origin(IDE))
}

const INITIALIZE: &str =
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;

const PREFLIGHT: [(&str, &str); 3] = [
    ("Origin", IDE),
    ("Access-Control-Request-Method", "POST"),
    (
        "Access-Control-Request-Headers",
        "authorization, content-type, acp-connection-id",
    ),
];

#[test]
fn preflights_and_answers_for_allowed_origins_over_http1() {
    smol::block_on(async {
        let (addr, shutdown, server) = start();

        let preflight = send(addr, "OPTIONS", &PREFLIGHT, "").await;
        assert_eq!(preflight.status, 204, "{preflight:?}");
        assert_eq!(preflight.header("access-control-allow-origin"), Some(IDE));
        assert_eq!(
            preflight.header("access-control-allow-methods"),
            Some("GET, POST, DELETE")
        );
        let allowed = preflight.header("access-control-allow-headers").unwrap();
        for name in [
            "Content-Type",
            "Authorization",
            "Accept",
            "Acp-Connection-Id",
            "Acp-Session-Id",
            "Last-Event-ID",
        ] {
            assert!(allowed.contains(name), "{name} not in {allowed}");
        }
        assert!(preflight.header("access-control-max-age").is_some());
        assert_eq!(preflight.header("vary"), Some("Origin"));
        assert_eq!(
            preflight.header("content-length"),
            None,
            "a 204 has no length"
        );

        // Any other Origin: 403, and nothing that would let a page read it.
        let mut evil = PREFLIGHT;
        evil[0].1 = "https://evil.example";
        let refused = send(addr, "OPTIONS", &evil, "").await;
        assert_eq!(refused.status, 403);
        assert_eq!(refused.header("access-control-allow-origin"), None);

        // The real requests still need the token; their answers carry the CORS headers, so
        // that the page can read a 401 as well as an answer and its connection id.
        let origin = [("Origin", IDE)];
        let unauthenticated = post(addr, &origin, INITIALIZE).await;
        assert_eq!(unauthenticated.status, 401);
        assert_eq!(
            unauthenticated.header("access-control-allow-origin"),
            Some(IDE)
        );
        let with_token = [("Origin", IDE), ("Authorization", "Bearer s3cret")];
        let answer = post(addr, &with_token, INITIALIZE).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.header("access-control-allow-origin"), Some(IDE));
        assert_eq!(answer.header("vary"), Some("Origin"));
        assert_eq!(
            answer.header("access-control-expose-headers"),
            Some("Acp-Connection-Id, Acp-Session-Id")
        );
        assert!(answer.header("acp-connection-id").is_some());

        // Without an Origin (editors, command-line clients) nothing changes.
        let plain = post(addr, &[("Authorization", "Bearer s3cret")], INITIALIZE).await;
        assert_eq!(plain.status, 200);
        assert_eq!(plain.header("access-control-allow-origin"), None);

        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// A preflight leaves its HTTP/1.1 socket open for the request it announces; a refused GET
/// (a WebSocket upgrade from another Origin) closes it at once, long before the head
/// timeout.
#[test]
fn preflights_keep_the_socket_and_refused_gets_close_it() {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    smol::block_on(async {
        let options = ServerOptions::default()
            .with_handshake_timeout(Duration::from_secs(120))
            .with_head_timeout(Duration::from_secs(120));
        let (addr, shutdown, server) = start_with(options);
        let mut tcp = smol::net::TcpStream::connect(addr).await.unwrap();
        let preflight = format!(
            "OPTIONS /acp HTTP/1.1\r\nHost: x\r\nOrigin: {IDE}\r\n\
             Access-Control-Request-Method: POST\r\n\r\n"
        );
        tcp.write_all(preflight.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = within("the preflight's answer", tcp.read(&mut buf))
                .await
                .unwrap();
            assert!(n > 0, "closed after the preflight");
            answer.extend_from_slice(&buf[..n]);
        }
        assert!(
            answer.starts_with(b"HTTP/1.1 204"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
        let post = format!(
            "POST /acp HTTP/1.1\r\nHost: x\r\nOrigin: {IDE}\r\nAuthorization: Bearer s3cret\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{INITIALIZE}",
            INITIALIZE.len()
        );
        tcp.write_all(post.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        within("the POST's answer", tcp.read_to_end(&mut answer))
            .await
            .unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&answer)
        );

        let refused = raw_http(
            addr,
            &upgrade_request("/acp", "Origin: https://evil.example\r\n"),
        )
        .await;
        assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");

        shutdown.shutdown();
        within("the server", server).await;
    });
}

#[cfg(feature = "http2")]
#[test]
fn preflights_and_answers_for_allowed_origins_over_http2() {
    use common::h2_client::H2;
    smol::block_on(async {
        let (addr, shutdown, server) = start();
        let h2 = H2::connect(addr).await;

        let preflight = h2.send("OPTIONS", &PREFLIGHT, "").await;
        assert_eq!(preflight.status, 204, "{preflight:?}");
        assert_eq!(preflight.header("access-control-allow-origin"), Some(IDE));
        assert_eq!(
            preflight.header("access-control-allow-methods"),
            Some("GET, POST, DELETE")
        );
        assert_eq!(preflight.header("vary"), Some("Origin"));
        let mut evil = PREFLIGHT;
        evil[0].1 = "https://evil.example";
        assert_eq!(h2.send("OPTIONS", &evil, "").await.status, 403);

        let with_token = [("Origin", IDE), ("Authorization", "Bearer s3cret")];
        let answer = h2.post(&with_token, INITIALIZE).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.header("access-control-allow-origin"), Some(IDE));
        assert_eq!(
            answer.header("access-control-expose-headers"),
            Some("Acp-Connection-Id, Acp-Session-Id")
        );
        let conn = answer.header("acp-connection-id").unwrap().to_owned();
        let stream = h2
            .sse(&[
                ("Origin", IDE),
                ("Authorization", "Bearer s3cret"),
                ("Acp-Connection-Id", conn.as_str()),
            ])
            .await;
        assert_eq!(stream.status, 200);
        assert_eq!(stream.headers["access-control-allow-origin"], IDE);
        assert_eq!(stream.headers["vary"], "Origin");
        drop(stream);

        shutdown.shutdown();
        within("the server", server).await;
    });
}
