//! `acp-bridge` as a user runs it: a stdio client reaching a remote agent through
//! `acp-bridge connect`, a stdio agent served by `acp-bridge serve`, and both chained.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use acp_remote::{Server, ServerOptions};
use acp_runtime::agent::AgentOptions;
use acp_runtime::client::{self, AutoAllow, ClientOptions};
use acp_runtime::fs::FsHost;
use acp_runtime::process::AgentCommand;
use async_tungstenite::tungstenite::Message;
use common::*;
use futures_lite::StreamExt;

const BRIDGE: &str = env!("CARGO_BIN_EXE_acp-bridge");

/// `acp-bridge serve` on a port of the system's choosing; returns the process and its URL.
fn bridge_serve(agent: &[&str]) -> (KillOnDrop, String) {
    bridge_serve_with(&[], agent)
}

/// `acp-bridge serve FLAGS -- AGENT` on a port of the system's choosing.
fn bridge_serve_with(flags: &[&str], agent: &[&str]) -> (KillOnDrop, String) {
    let mut child = Command::new(BRIDGE)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(flags)
        .arg("--")
        .args(agent)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("ws://"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_owned();
    // Keep draining what the bridge logs, so that it never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    (KillOnDrop(child), url)
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The runtime's client spawns `acp-bridge connect URL2` as its agent; URL2 is `acp-bridge
/// serve -- acp-bridge connect URL1`; URL1 is the test agent in this process. Every hop keeps
/// the framing: a full turn (file read, permission, file write, streamed text) and a
/// cancelled turn go through (over WebSocket here).
#[test]
fn a_full_turn_through_both_directions_of_the_bridge() {
    chain(|url| url.to_owned(), &[]);
}

/// The same chain with every hop over Streamable HTTP.
#[test]
fn a_full_turn_through_the_bridge_over_streamable_http() {
    chain(|url| url.replacen("ws://", "http://", 1), &[]);
}

/// The same chain with every hop over Streamable HTTP on HTTP/2 (h2c, the bridges built with
/// `http2`, serving and connecting).
#[cfg(feature = "http2")]
#[test]
fn a_full_turn_through_the_bridge_over_h2c() {
    let outer_connections = chain(
        |url| url.replacen("ws://", "http://", 1),
        &["--http2-prior-knowledge"],
    );
    assert_eq!(outer_connections, 1);
}

/// `connect_flags` go to both `acp-bridge connect`s. Returns how many TCP connections the
/// outer `acp-bridge connect` opened (through a counting proxy).
fn chain(scheme: fn(&str) -> String, connect_flags: &[&str]) -> usize {
    smol::block_on(async {
        let server =
            Server::bind("127.0.0.1:0".parse().unwrap(), ServerOptions::default()).unwrap();
        let inner_url = scheme(&server.url());
        let shutdown = server.shutdown_handle();
        let task = smol::spawn(server.serve_agent(
            |_| agent::TestAgent::default(),
            AgentOptions::default().with_info(agent::NAME, "0.0.0"),
        ));
        let mut inner = vec![BRIDGE, "connect", &inner_url];
        inner.extend_from_slice(connect_flags);
        let (_serve, outer_url) = bridge_serve(&inner);
        let outer_url = scheme(&outer_url);
        let outer_addr = outer_url.split('/').nth(2).unwrap().parse().unwrap();
        let (proxy, accepted) = proxy::counting_proxy(outer_addr).await;
        let outer_url = outer_url.replacen(&outer_addr.to_string(), &proxy.to_string(), 1);

        let project = Project::new(&format!(
            "bridge-chain-{}-{}",
            &outer_url[..2],
            connect_flags.len()
        ));
        let command = AgentCommand::new(BRIDGE)
            .args(["connect", outer_url.as_str()])
            .args(connect_flags.iter().copied());
        let options = ClientOptions::default().with_file_system(FsHost::new());
        let (agent, driver, process) = client::spawn(AutoAllow, command, options).unwrap();
        let driver = smol::spawn(driver);
        full_turn(&agent, &project).await;
        cancelled_turn(&agent, &project).await;
        agent.close();
        let _ = within("the client driver", driver).await;
        within("the bridge's exit", process.shutdown()).await;

        shutdown.shutdown();
        within("the server", task).await.unwrap();
        accepted.get()
    })
}

/// `acp-bridge serve -- cat`: every frame comes back as one frame, in order, however the
/// process pipe coalesces or splits them; a raw newline inside a frame does not split it.
#[test]
fn frames_survive_a_process_pipe_one_to_one() {
    smol::block_on(async {
        let (_serve, url) = bridge_serve(&["cat"]);
        let (ws, response) = websocket(&url).await;
        assert!(response.headers().contains_key("acp-connection-id"));
        let mut sent: Vec<String> = (0..300usize)
            // Sizes from a few bytes to ~200 KiB: larger than a pipe's buffer.
            .map(|i| {
                format!(
                    "{{\"n\":{i},\"pad\":\"{}\"}}",
                    "x".repeat((i * 677) % 200_000)
                )
            })
            .collect();
        sent.push("{\"a\":\n1}".into());
        let (mut sender, mut receiver) = ws.split();
        // Sending and receiving at once: cat stops reading when nobody reads what it wrote.
        let send_all = async {
            for text in &sent {
                sender.send(Message::text(text.clone())).await.unwrap();
            }
        };
        let receive_all = async {
            let mut received = Vec::new();
            while received.len() < sent.len() {
                match within("an echo", receiver.next()).await {
                    Some(Ok(Message::Text(text))) => received.push(text.to_string()),
                    Some(Ok(_)) => {}
                    other => panic!("the connection ended early: {other:?}"),
                }
            }
            received
        };
        let ((), received) = futures_lite::future::zip(send_all, receive_all).await;
        // The raw newline came back as a tab: one frame, one line, same meaning.
        sent.last_mut().unwrap().replace_range(.., "{\"a\":\t1}");
        assert_eq!(received.len(), sent.len());
        for (i, (got, want)) in received.iter().zip(&sent).enumerate() {
            assert!(
                got == want,
                "frame {i} differs ({} vs {} bytes)",
                got.len(),
                want.len()
            );
        }
        sender.close(None).await.unwrap();
    });
}

/// `--sse-keep-alive` and `--replay-bytes` reach the server: an idle SSE stream gets
/// `: keepalive` comments every 50 ms (the default is 15 s), and with a replay window of 0
/// bytes a resumption that missed an event is answered 410 (docs/remote.md).
#[test]
fn the_stream_flags_of_serve_take_effect() {
    smol::block_on(async {
        let (addr, _, _task) = serve(ServerOptions::default());
        let inner_url = format!("ws://{addr}/acp");
        let (_serve, url) = bridge_serve_with(
            &["--sse-keep-alive", "0.05", "--replay-bytes", "0"],
            &[BRIDGE, "connect", &inner_url],
        );
        let outer: std::net::SocketAddr = url.split('/').nth(2).unwrap().parse().unwrap();
        let init = http_client::post(outer, &[], wire::INITIALIZE).await;
        assert_eq!(init.status, 200, "{init:?}");
        let conn = init.header("acp-connection-id").unwrap().to_owned();
        let c = [("Acp-Connection-Id", conn.as_str())];
        let mut stream = http_client::Sse::open(outer, &c).await;
        assert_eq!(stream.status, 200);
        let started = std::time::Instant::now();
        let mut text = String::new();
        for _ in 0..3 {
            text += &within("a keep-alive", stream.text_until(": keepalive\n\n"))
                .await
                .unwrap();
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{text}"
        );
        assert_eq!(
            text,
            "id: 0\n\n: keepalive\n\n: keepalive\n\n: keepalive\n\n"
        );
        // An answer on the stream (event 1), then a resumption after event 0: nothing is kept.
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"unknown/x"}"#;
        assert_eq!(http_client::post(outer, &c, body).await.status, 202);
        within("the answer", stream.text_until("\"id\":7"))
            .await
            .unwrap();
        let mut h = c.to_vec();
        h.extend([("Last-Event-ID", "0"), ("Accept", "text/event-stream")]);
        let gone = http_client::send(outer, "GET", &h, "").await;
        assert_eq!(gone.status, 410, "{gone:?}");
        let error = gone.json();
        assert_eq!(error["error"]["data"]["reason"], "replay_window_passed");
        assert_eq!(error["error"]["data"]["windowBytes"], 0);
    });
}

/// `--instance` and `--durable-transport` reach the server: connection ids start with the
/// instance's name, and a client that asks for the durable transport is told the retention.
#[test]
fn the_instance_and_durable_flags_of_serve_take_effect() {
    smol::block_on(async {
        let (addr, _, _task) = serve(ServerOptions::default());
        let inner_url = format!("ws://{addr}/acp");
        let (_serve, url) = bridge_serve_with(
            &["--instance", "eu-1", "--durable-transport"],
            &[BRIDGE, "connect", &inner_url],
        );
        let outer: std::net::SocketAddr = url.split('/').nth(2).unwrap().parse().unwrap();
        let asks = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"transport":{"resumable":{}}}}}"#;
        let init = http_client::post(outer, &[], asks).await;
        assert_eq!(init.status, 200, "{init:?}");
        let conn = init.header("acp-connection-id").unwrap();
        assert!(conn.starts_with("eu-1."), "{conn}");
        let resumable = &init.json()["result"]["agentCapabilities"]["transport"]["resumable"];
        assert_eq!(resumable["retentionSeconds"], 300, "{resumable}");
    });
}

/// `connect --durable-transport` asks the server for the proposal in the `initialize` it
/// passes on: the server's answer (passed back) advertises the retention.
#[test]
fn connect_asks_for_the_durable_transport() {
    smol::block_on(async {
        let (addr, _, _task) = serve(ServerOptions::default().with_durable_transport(true));
        let inner_url = format!("http://{addr}/acp");
        let (_serve, url) =
            bridge_serve_with(&[], &[BRIDGE, "connect", &inner_url, "--durable-transport"]);
        let outer: std::net::SocketAddr = url.split('/').nth(2).unwrap().parse().unwrap();
        let init = http_client::post(outer, &[], wire::INITIALIZE).await;
        assert_eq!(init.status, 200, "{init:?}");
        let resumable = &init.json()["result"]["agentCapabilities"]["transport"]["resumable"];
        assert_eq!(resumable["retentionMessages"], 4096, "{init:?}");
    });
}

/// `--head-timeout`: a head left unfinished is cut after 0.3 s, not the default 5 s.
#[test]
fn the_head_timeout_flag_takes_effect() {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    smol::block_on(async {
        let (_serve, url) = bridge_serve_with(&["--head-timeout", "0.3"], &["cat"]);
        let addr = url.trim_start_matches("ws://").trim_end_matches("/acp");
        let mut stream = smol::net::TcpStream::connect(addr).await.unwrap();
        let started = std::time::Instant::now();
        stream
            .write_all(b"POST /acp HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let mut rest = Vec::new();
        let _ = within("the cut", stream.read_to_end(&mut rest)).await;
        let elapsed = started.elapsed();
        assert!(elapsed < std::time::Duration::from_secs(3), "{elapsed:?}");
    });
}

#[test]
fn usage_errors_exit_2() {
    for flags in [
        &["serve", "--sse-keep-alive", "-1", "--", "cat"][..],
        &["serve", "--replay-age", "soon", "--", "cat"],
        &["serve", "--instance", "a.b", "--", "cat"],
        &[
            "connect",
            "http://127.0.0.1:1/acp",
            "--reconnect-within",
            "x",
        ],
    ] {
        let out = Command::new(BRIDGE).args(flags).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
    }
    let out = Command::new(BRIDGE).arg("serve").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(BRIDGE)
        .args(["serve", "--listen", "0.0.0.0:0", "--", "cat"])
        .env_remove("ACP_BRIDGE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a public bind without a token is refused"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("without authentication"));
}

/// `acp-bridge serve` drained by SIGTERM: a new prompt on an open connection is refused with
/// `DRAINING_CODE` although the agent process knows nothing of the drain (it answers the
/// renamed request, and the bridge's server replaces that answer), while a running turn
/// finishes.
#[test]
fn a_draining_bridge_refuses_new_prompts_whatever_its_agent() {
    smol::block_on(async {
        let server =
            Server::bind("127.0.0.1:0".parse().unwrap(), ServerOptions::default()).unwrap();
        let inner_url = server.url();
        let _task = smol::spawn(server.serve_agent(
            |_| agent::TestAgent::default(),
            AgentOptions::default().with_info(agent::NAME, "0.0.0"),
        ));
        let (serve, outer_url) = bridge_serve(&[BRIDGE, "connect", &inner_url]);
        let project = Project::new("bridge-drain");

        let (running, _d1) = connect_client(acp_remote::Connector::new(&outer_url)).await;
        within("initialize", running.initialize()).await.unwrap();
        let waiting = within("session/new", running.new_session(&project.0))
            .await
            .unwrap();
        let mut turn = within("session/prompt", waiting.prompt(vec!["wait".into()]))
            .await
            .unwrap();
        within("the first update", turn.next())
            .await
            .unwrap()
            .unwrap();
        let (idle, _d2) = connect_client(acp_remote::Connector::new(&outer_url)).await;
        within("initialize", idle.initialize()).await.unwrap();
        let session = within("session/new", idle.new_session(&project.0))
            .await
            .unwrap();

        // SAFETY: kill(2) on the bridge this test started.
        unsafe { libc::kill(serve.0.id() as i32, libc::SIGTERM) };
        let health = outer_url.replacen("ws://", "", 1).replacen("/acp", "", 1);
        let addr = health.parse().unwrap();
        within("draining", async {
            while !raw_http(addr, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .await
                .starts_with("HTTP/1.1 503")
            {
                smol::Timer::after(std::time::Duration::from_millis(10)).await;
            }
        })
        .await;

        let refused = within("the refused prompt", async {
            match session.prompt(vec!["Summarize my notes".into()]).await {
                Err(error) => error,
                Ok(turn) => turn.end().await.unwrap_err(),
            }
        })
        .await;
        assert_eq!(
            refused.code().map(|c| c.0),
            Some(acp_remote::DRAINING_CODE),
            "{refused:?}"
        );

        within("session/cancel", waiting.cancel()).await.unwrap();
        let response = within("the end of the turn", turn.end()).await.unwrap();
        assert_eq!(response.stop_reason, acp_types::StopReason::Cancelled);
    });
}

/// A client that goes away mid-turn, with a close frame or by dropping its TCP connection:
/// before the agent's input ends, the bridge sends it `session/cancel` for each session whose
/// prompt was not answered, and for no other (the agent here is `sh -c 'cat > FILE'`, which
/// answers nothing, so both prompts' sessions are cancelled; an answered turn is the unit
/// tests' case).
#[test]
fn a_client_gone_mid_turn_has_its_turns_cancelled_before_the_agent_input_ends() {
    for close_frame in [false, true] {
        let dir = std::env::temp_dir().join(format!(
            "acp-bridge-cancel-{}-{close_frame}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("stdin.jsonl");
        let script = format!("cat > '{}'", log.display());
        let (_serve, url) = bridge_serve(&["sh", "-c", &script]);
        smol::block_on(async {
            let (mut ws, _) = websocket(&url).await;
            for (id, session) in [("1", "s-1"), ("\"two\"", "s-2"), ("3", "s-1")] {
                let prompt = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"hi"}}]}}}}"#
                );
                ws.send(Message::text(prompt)).await.unwrap();
            }
            if close_frame {
                ws.close(None).await.unwrap();
            } else {
                drop(ws);
            }
        });
        let lines = smol::block_on(within("the agent's input to end with the cancels", async {
            loop {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                if text.matches("session/cancel").count() == 2 {
                    return text;
                }
                smol::Timer::after(std::time::Duration::from_millis(20)).await;
            }
        }));
        let lines: Vec<&str> = lines.lines().collect();
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert_eq!(
            &lines[3..],
            [
                r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}"#,
                r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-2"}}"#,
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
