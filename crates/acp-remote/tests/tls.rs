//! TLS (the `tls` feature): a server with a certificate from a test authority, reached over
//! `wss://` and `https://` by clients that trust that authority, and refused by clients that
//! trust only the Mozilla roots. `tests/tls/` holds the authority's certificate and the
//! server's (for `localhost` and `127.0.0.1`, valid until 2125).
#![cfg(all(unix, feature = "tls"))]

mod common;

use acp_remote::{
    ConnectError, Connector, Server, ServerOptions, TlsClientConfig, TlsServerConfig,
};
use acp_runtime::agent::AgentOptions;
use acp_runtime::client::{AutoAllow, ClientOptions};
use acp_runtime::fs::FsHost;
use common::*;

fn file(name: &str) -> String {
    format!("{}/tests/tls/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn full_turns_over_wss_and_https() {
    smol::block_on(async {
        let tls = TlsServerConfig::from_pem_files(file("server.pem"), file("server.key")).unwrap();
        let options = ServerOptions::default().with_tls(tls);
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let (wss, https) = (server.url(), server.http_url());
        assert!(wss.starts_with("wss://") && https.starts_with("https://"));
        let shutdown = server.shutdown_handle();
        let task = smol::spawn(server.serve_agent(
            |_| agent::TestAgent::default(),
            AgentOptions::default().with_info(agent::NAME, "0.0.0"),
        ));
        let trust = TlsClientConfig::with_root_pem_file(file("ca.pem")).unwrap();
        for url in [&wss, &https] {
            let project = Project::new(&format!("tls-{}", &url[..3]));
            let connector = Connector::new(url).with_tls(trust.clone());
            let options = ClientOptions::default().with_file_system(FsHost::new());
            let (agent, driver) = within("connect", connector.connect_client(AutoAllow, options))
                .await
                .unwrap();
            let driver = smol::spawn(driver);
            full_turn(&agent, &project).await;
            agent.close();
            let _ = within("the client driver", driver).await;
        }
        // The test authority is not among the Mozilla roots: the handshake fails.
        match Connector::new(&wss).connect().await {
            Err(ConnectError::Io(_)) => {}
            other => panic!("expected a TLS failure, got {other:?}"),
        }
        // Nor does the server speak in the clear.
        let plain = wss.replacen("wss://", "ws://", 1);
        assert!(Connector::new(plain).connect().await.is_err());
        shutdown.shutdown();
        within("the server", task).await.unwrap();
    });
}

/// `acp-bridge serve --tls-cert --tls-key -- cat`, reached with `acp-bridge connect --ca`:
/// a line goes through both bridges and comes back.
#[test]
fn the_bridge_serves_and_connects_over_tls() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    const BRIDGE: &str = env!("CARGO_BIN_EXE_acp-bridge");
    let mut serve = Command::new(BRIDGE)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args([
            "--tls-cert",
            &file("server.pem"),
            "--tls-key",
            &file("server.key"),
        ])
        .args(["--", "cat"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = BufReader::new(serve.stderr.take().unwrap());
    let mut first = String::new();
    log.read_line(&mut first).unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("wss://"))
        .unwrap_or_else(|| panic!("no wss:// URL in {first:?}"))
        .to_owned();
    std::thread::spawn(move || for _ in log.lines() {});
    let mut connect = Command::new(BRIDGE)
        .args(["connect", &url, "--ca", &file("ca.pem")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = connect.stdin.take().unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"echo"}}"#).unwrap();
    stdin.flush().unwrap();
    // Read on a thread of its own, so that a broken bridge fails the test instead of hanging.
    let stdout = connect.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut echoed = String::new();
        let _ = BufReader::new(stdout).read_line(&mut echoed);
        let _ = sender.send(echoed);
    });
    let echoed = receiver.recv_timeout(std::time::Duration::from_secs(30));
    if echoed.is_err() {
        let _ = connect.kill();
        let _ = serve.kill();
    }
    assert_eq!(
        echoed.unwrap(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"echo\"}\n"
    );
    drop(stdin);
    let status = connect.wait().unwrap();
    assert!(status.success(), "{status}");
    let _ = serve.kill();
    let _ = serve.wait();
}
