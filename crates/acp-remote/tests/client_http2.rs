//! Our Streamable HTTP client over HTTP/2 (the `http2` feature) against our own server: h2c
//! with prior knowledge, `h2` chosen by ALPN under TLS, HTTP/1.1 when the server does not
//! offer `h2`, and a refusal. A counting proxy in front of the server says how many TCP
//! connections the client used: one for everything over HTTP/2.
#![cfg(all(unix, feature = "http2"))]

mod common;

use std::net::SocketAddr;

use acp_remote::{Connector, ServerOptions, ShutdownHandle};
use acp_runtime::client::{AutoAllow, ClientOptions};
use common::proxy::{Accepted, counting_proxy};
use common::*;

const TOKEN: &str = "s3cret";

/// Our server (HTTP/2 beside HTTP/1.1) behind a counting proxy.
async fn start(options: ServerOptions) -> (SocketAddr, Accepted, ShutdownHandle, smol::Task<()>) {
    let (upstream, handle, task) = serve(options);
    let (proxy, accepted) = counting_proxy(upstream).await;
    (proxy, accepted, handle, task)
}

/// A full turn (file read, permission, file write, streamed text), a cancelled turn in a
/// second session, and the close, over `connector`.
async fn turns(connector: Connector, project: &Project) {
    let (agent, driver) = connect_client(connector).await;
    full_turn(&agent, project).await;
    cancelled_turn(&agent, project).await;
    agent.close();
    within("the client driver", driver).await.unwrap();
}

/// [`turns`] with the server (`options`) behind a counting proxy, over the connector made for
/// the proxy's address, then the server's shutdown; returns how many TCP connections it took.
async fn turns_through(
    options: ServerOptions,
    project: &str,
    connector: impl FnOnce(SocketAddr) -> Connector,
) -> usize {
    let (proxy, accepted, shutdown, server) = start(options).await;
    let project = Project::new(project);
    turns(connector(proxy), &project).await;
    shutdown.shutdown();
    within("the server", server).await;
    accepted.get()
}

/// h2c with prior knowledge, with a bearer token: every POST (the client's answers to the
/// agent's requests included), the connection's and both sessions' SSE streams, the cancel and
/// the DELETE are streams of one TCP connection.
#[test]
fn a_full_turn_over_h2c_takes_one_tcp_connection() {
    smol::block_on(async {
        let options = ServerOptions::default().with_bearer_token(TOKEN);
        let used = turns_through(options, "h2c-client", |proxy| {
            Connector::new(format!("http://{proxy}/acp"))
                .with_bearer_token(TOKEN)
                .with_http2_prior_knowledge()
        })
        .await;
        assert_eq!(used, 1);
    });
}

/// Connects with `connector` (default client options); the driver runs as a task.
async fn connected(
    connector: Connector,
) -> (
    acp_runtime::client::AgentHandle,
    smol::Task<Result<(), acp_jsonrpc::ConnectionError>>,
) {
    let (agent, driver) = within(
        "connect",
        connector.connect_client(AutoAllow, ClientOptions::default()),
    )
    .await
    .unwrap();
    (agent, smol::spawn(driver))
}

/// Connects with `connector` (default client options) and returns the error `initialize`
/// fails with; `expected` says why it should.
async fn initialize_error(connector: Connector, expected: &str) -> String {
    let (agent, driver) = connected(connector).await;
    let error = within("initialize", agent.initialize())
        .await
        .expect_err(expected);
    let _ = within("the client driver", driver).await;
    error.to_string()
}

/// A refused `initialize` over HTTP/2 fails locally with the status, as over HTTP/1.1.
#[test]
fn a_refused_connection_over_h2c() {
    smol::block_on(async {
        let options = ServerOptions::default().with_bearer_token(TOKEN);
        let (proxy, accepted, shutdown, server) = start(options).await;
        for token in [None, Some("wrong")] {
            let mut connector =
                Connector::new(format!("http://{proxy}/acp")).with_http2_prior_knowledge();
            if let Some(token) = token {
                connector = connector.with_bearer_token(token);
            }
            let text = initialize_error(connector, "initialize without the token").await;
            assert!(text.contains("HTTP 401"), "{text}");
        }
        shutdown.shutdown();
        within("the server", server).await;
        assert_eq!(accepted.get(), 2);
    });
}

/// The client's message size limit holds over HTTP/2: an answer larger than it fails its
/// request locally.
#[test]
fn the_message_size_limit_holds_over_h2c() {
    smol::block_on(async {
        let (proxy, _, shutdown, server) = start(ServerOptions::default()).await;
        let connector = Connector::new(format!("http://{proxy}/acp"))
            .with_http2_prior_knowledge()
            .with_max_message_size(64);
        let text = initialize_error(connector, "an answer beyond the limit").await;
        assert!(text.contains("too large"), "{text}");
        shutdown.shutdown();
        within("the server", server).await;
    });
}

/// A server's cookies come back over HTTP/2 too, on the SSE GET and on later POSTs: a small
/// h2c server of the test's own sets one with the `initialize` answer and records what
/// follows.
#[test]
fn cookies_come_back_over_h2c() {
    use std::convert::Infallible;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};

    use common::h2_client::{Io, Spawn};
    use hyper::body::{Bytes, Frame, Incoming};

    /// A whole answer, or an SSE stream that stays open without a word.
    enum Answer {
        Full(Option<Bytes>),
        Open,
    }

    impl hyper::body::Body for Answer {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            match self.get_mut() {
                Answer::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
                Answer::Open => Poll::Pending,
            }
        }
    }

    smol::block_on(async {
        let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Each request's method and `Cookie` header.
        type Seen = Vec<(String, Option<String>)>;
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let record = seen.clone();
        smol::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let cookie = request
                    .headers()
                    .get("cookie")
                    .map(|c| c.to_str().unwrap().to_owned());
                record
                    .lock()
                    .unwrap()
                    .push((request.method().to_string(), cookie.clone()));
                async move {
                    let answer = hyper::Response::builder();
                    Ok::<_, Infallible>(match (request.method().as_str(), cookie) {
                        ("POST", None) => {
                            let body = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#;
                            answer
                                .header("acp-connection-id", "c1")
                                .header("set-cookie", "route=a1; Path=/; HttpOnly")
                                .header("content-type", "application/json")
                                .body(Answer::Full(Some(Bytes::from(body))))
                                .unwrap()
                        }
                        ("GET", _) => answer
                            .header("content-type", "text/event-stream")
                            .body(Answer::Open)
                            .unwrap(),
                        _ => answer.status(202).body(Answer::Full(None)).unwrap(),
                    })
                }
            });
            let _ = hyper::server::conn::http2::Builder::new(Spawn)
                .serve_connection(Io(tcp), service)
                .await;
        })
        .detach();

        let connector = Connector::new(format!("http://{addr}/acp")).with_http2_prior_knowledge();
        let (agent, driver) = connected(connector).await;
        within("initialize", agent.initialize()).await.unwrap();
        // Answered 202 and never on a stream: only its POST matters here.
        let new_session = smol::spawn(async move {
            let _ = agent.new_session("/").await;
        });
        within("the GET and the second POST", async {
            while seen.lock().unwrap().len() < 3 {
                smol::Timer::after(std::time::Duration::from_millis(10)).await;
            }
        })
        .await;
        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        let cookie = Some("route=a1".to_owned());
        assert_eq!(
            seen,
            [
                ("GET".to_owned(), cookie.clone()),
                ("POST".to_owned(), None),
                ("POST".to_owned(), cookie),
            ]
        );
        drop(new_session);
        drop(driver);
    });
}

#[cfg(feature = "tls")]
mod tls {
    use std::sync::Arc;

    use acp_remote::{TlsClientConfig, TlsServerConfig};
    use futures_rustls::rustls;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};

    use super::*;

    fn file(name: &str) -> String {
        format!("{}/tests/tls/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// An `https://` connector to `proxy` that trusts the tests' CA.
    fn https(proxy: SocketAddr) -> Connector {
        let trust = TlsClientConfig::with_root_pem_file(file("ca.pem")).unwrap();
        Connector::new(format!("https://{proxy}/acp")).with_tls(trust)
    }

    /// `https://`: ALPN offers `h2`, our server (built with `http2`) picks it, and one TCP
    /// connection carries everything.
    #[test]
    fn h2_by_alpn_over_tls_takes_one_tcp_connection() {
        smol::block_on(async {
            let tls =
                TlsServerConfig::from_pem_files(file("server.pem"), file("server.key")).unwrap();
            let options = ServerOptions::default().with_tls(tls);
            let used = turns_through(options, "h2-alpn-client", https).await;
            assert_eq!(used, 1);
        });
    }

    /// A server whose TLS configuration offers no ALPN protocol: the client speaks HTTP/1.1,
    /// keeping the socket of its first handshake for the POSTs; the connection's stream and
    /// each session's have one more each.
    #[test]
    fn http1_over_tls_when_the_server_offers_no_h2() {
        smol::block_on(async {
            let certs = CertificateDer::pem_file_iter(file("server.pem"))
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_file(file("server.key")).unwrap();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .unwrap();
            assert!(config.alpn_protocols.is_empty());
            let tls = TlsServerConfig::from_rustls(Arc::new(config));
            let options = ServerOptions::default().with_tls(tls);
            let used = turns_through(options, "h1-fallback-client", https).await;
            // The POSTs', the connection's stream, two sessions' streams; the POSTs' socket
            // may be replaced once if it sat idle (it is reused within 2 s of an answer).
            assert!((4..=5).contains(&used), "{used} TCP connections");
        });
    }
}
