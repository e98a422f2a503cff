//! The durable transport over WebSocket, over real sockets: WebSockets cut at random points
//! (the agent's messages cut off, the client's prompt swallowed or delivered just before the
//! cut, resumptions cut too) and resumed with `stream/resume`: every update once, in order,
//! no prompt run twice, no turn cancelled by a drop; the first message's gap; refusals
//! (`stream/resume_failed`), the turn state and the resumption's wire pinned; the fallback to
//! `session/resume` on both transports; a client that does not ask keeps today's WebSocket.
#![cfg(unix)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use acp_remote::async_tungstenite::tungstenite::Message;
use acp_remote::{Connector, Server, ServerOptions};
use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, Turn};
use acp_types::*;
use common::streamer::{CHUNKS, Rng, Streamer, numbered_turn, serve_streamer};
use common::{Project, connect_client, websocket, within};
use futures_lite::{AsyncReadExt, AsyncWriteExt, StreamExt};
use serde_json::{Value, json};
use smol::net::{TcpListener, TcpStream};

/// What the cutting proxy is asked to do.
#[derive(Default)]
struct Cutter {
    /// Bytes from the server still let through before the socket is cut (negative: none).
    down_budget: AtomicI64,
    /// The budget armed after a cut (negative: none), to cut the resumption too.
    then: AtomicI64,
    /// The server's reads (any socket) still passed on before one is swallowed and its socket
    /// cut (negative: none).
    reads_before_cut: AtomicI64,
    /// The client's next bytes are swallowed and the socket cut (they never arrive).
    swallow_up: AtomicUsize,
    /// The client's next bytes are passed on, then the socket is cut (they arrive, but the
    /// client cannot know).
    cut_after_up: AtomicUsize,
    cuts: AtomicUsize,
}

fn take_one(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

/// Closes both sockets of one proxied connection.
fn cut(down: &TcpStream, up: &TcpStream, cutter: &Cutter) {
    cutter.cuts.fetch_add(1, Ordering::SeqCst);
    let _ = down.shutdown(std::net::Shutdown::Both);
    let _ = up.shutdown(std::net::Shutdown::Both);
}

/// A TCP proxy to `upstream` that cuts WebSockets as `Cutter` says.
async fn cutting_proxy(upstream: SocketAddr) -> (SocketAddr, Arc<Cutter>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cutter = Arc::new(Cutter::default());
    cutter.down_budget.store(-1, Ordering::SeqCst);
    cutter.then.store(-1, Ordering::SeqCst);
    cutter.reads_before_cut.store(-1, Ordering::SeqCst);
    let control = cutter.clone();
    smol::spawn(async move {
        while let Ok((down, _)) = listener.accept().await {
            let Ok(up) = TcpStream::connect(upstream).await else {
                continue;
            };
            // The client's bytes.
            let (mut d, mut u, c) = (down.clone(), up.clone(), control.clone());
            smol::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match d.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if take_one(&c.swallow_up) {
                        return cut(&d, &u, &c);
                    }
                    if u.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    if take_one(&c.cut_after_up) {
                        // The bytes are on their way; a moment for the server to read them.
                        smol::Timer::after(Duration::from_millis(5)).await;
                        return cut(&d, &u, &c);
                    }
                }
                let _ = u.shutdown(std::net::Shutdown::Write);
            })
            .detach();
            // The server's bytes.
            let (mut d, mut u, c) = (down, up, control.clone());
            smol::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match u.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let budget = c.down_budget.load(Ordering::SeqCst);
                    let mut pass = n;
                    let mut cutting = c.reads_before_cut.fetch_update(
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                        |left| (left >= 0).then_some(left - 1),
                    ) == Ok(0);
                    if cutting {
                        pass = 0;
                    }
                    if budget >= 0 && !cutting {
                        if n as i64 > budget {
                            pass = budget as usize;
                            cutting = true;
                            let then = c.then.swap(-1, Ordering::SeqCst);
                            c.down_budget.store(then, Ordering::SeqCst);
                        } else {
                            c.down_budget.fetch_sub(n as i64, Ordering::SeqCst);
                        }
                    }
                    if d.write_all(&buf[..pass]).await.is_err() {
                        break;
                    }
                    if cutting {
                        return cut(&d, &u, &c);
                    }
                }
                let _ = d.shutdown(std::net::Shutdown::Write);
            })
            .detach();
        }
    })
    .detach();
    (addr, cutter)
}

/// The runtime's client over WebSockets that a proxy cuts at a random point of each turn's
/// messages (every eighth round the resumption too, within its first 300 bytes: the upgrade's
/// answer, the replay or the answer to `stream/resume`), every third round swallowing the
/// prompt itself and every third passing it on just before a cut: 200 turns, each of whose
/// updates arrives once and in order, no prompt run twice, none cancelled by a drop.
#[test]
fn cut_websockets_resume_with_every_update_once_in_order() {
    smol::block_on(async {
        let options = ServerOptions::default().with_durable_transport(true);
        let (addr, prompts) = serve_streamer(options);
        let (proxy, cutter) = cutting_proxy(addr).await;
        let project = Project::new("ws-resume-cuts");
        let connector = Connector::new(format!("ws://{proxy}/acp")).with_durable_transport();
        let (agent, driver) = connect_client(connector).await;
        within("initialize", agent.initialize()).await.unwrap();
        let session = within("session/new", agent.new_session(&project.0))
            .await
            .unwrap();
        let mut rng = Rng(0x5eed_cafe_f00d_4321);
        let started = Instant::now();
        const ROUNDS: usize = 200;
        for round in 0..ROUNDS {
            // A turn's messages are some 3 KiB: most rounds are cut somewhere in them.
            cutter
                .down_budget
                .store(rng.below(3500) as i64, Ordering::SeqCst);
            match round % 3 {
                0 => cutter.swallow_up.store(1, Ordering::SeqCst),
                1 => cutter.cut_after_up.store(1, Ordering::SeqCst),
                _ => {}
            }
            if round % 8 == 0 {
                cutter.then.store(rng.below(300) as i64, Ordering::SeqCst);
            }
            numbered_turn(&session, round).await;
            cutter.down_budget.store(-1, Ordering::SeqCst);
            cutter.then.store(-1, Ordering::SeqCst);
            cutter.swallow_up.store(0, Ordering::SeqCst);
            cutter.cut_after_up.store(0, Ordering::SeqCst);
        }
        let elapsed = started.elapsed();
        let cuts = cutter.cuts.load(Ordering::SeqCst);
        eprintln!("{ROUNDS} rounds, {cuts} cuts, {elapsed:?}");
        assert_eq!(prompts.load(Ordering::SeqCst), ROUNDS, "a prompt ran twice");
        assert!(cuts > ROUNDS, "only {cuts} cuts");
        agent.close();
        within("the client driver", driver).await.unwrap();
    });
}

/// Reads text messages until one satisfies `until`; returns them all.
async fn read_until(
    ws: &mut async_tungstenite::WebSocketStream<TcpStream>,
    until: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let message = within("a message", ws.next()).await.unwrap().unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let value: Value = serde_json::from_str(&text).unwrap();
        let done = until(&value);
        seen.push(value);
        if done {
            return seen;
        }
    }
}

async fn send(ws: &mut async_tungstenite::WebSocketStream<TcpStream>, message: Value) {
    ws.send(Message::text(message.to_string())).await.unwrap();
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"transport":{"resumable":{}}}}}"#;

/// The resumption on the wire, by hand: cursors on every message, a WebSocket dropped in the
/// middle of a turn (which goes on), `stream/resume` from a cursor: the missed messages with
/// their cursors, then the answer with the turn state, then live messages. The connection id,
/// a session id and the cursors of the first WebSocket are replaced by placeholders.
#[test]
fn a_resumption_on_the_wire() {
    smol::block_on(async {
        let options = ServerOptions::default().with_durable_transport(true);
        let (addr, prompts) = serve_streamer(options);
        let url = format!("ws://{addr}/acp");
        let project = Project::new("ws-resume-wire");
        let (mut ws, response) = websocket(&url).await;
        let id = response.headers()["acp-connection-id"]
            .to_str()
            .unwrap()
            .to_owned();
        ws.send(Message::text(INITIALIZE)).await.unwrap();
        let answer = read_until(&mut ws, |m| m["id"] == 0).await.remove(0);
        insta::assert_snapshot!(answer["result"]["agentCapabilities"]["transport"], @r#"{"resumable":{"retentionMessages":4096,"retentionSeconds":300}}"#);
        assert_eq!(answer["result"]["_meta"]["acp/cursor"], "1");
        send(
            &mut ws,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":project.0,"mcpServers":[]}}),
        )
        .await;
        let created = read_until(&mut ws, |m| m["id"] == 1).await.remove(0);
        let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
        send(
            &mut ws,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":session,"prompt":[{"type":"text","text":"r"}]}}),
        )
        .await;
        // Three updates read, then the WebSocket drops (no close frame).
        let first = read_until(&mut ws, |m| {
            m["params"]["update"]["content"]["text"] == "r:2"
        })
        .await;
        let cursors: Vec<&str> = first
            .iter()
            .map(|m| m["params"]["_meta"]["acp/cursor"].as_str().unwrap())
            .collect();
        assert_eq!(cursors, ["3", "4", "5"]);
        drop(ws);
        let (mut again, _) = websocket(&url).await;
        send(
            &mut again,
            json!({"jsonrpc":"2.0","id":"r1","method":"stream/resume","params":{"connectionId":id,"cursor":"4"}}),
        )
        .await;
        let mut resumed = read_until(&mut again, |m| m["id"] == "r1").await;
        if !resumed.iter().any(|m| m["id"] == 2) {
            resumed.extend(read_until(&mut again, |m| m["id"] == 2).await);
        }
        assert_eq!(prompts.load(Ordering::SeqCst), 1);
        let text: Vec<String> = resumed
            .iter()
            .map(|m| {
                m.to_string()
                    .replace(&session, "<session>")
                    .replace(&id, "<connection>")
            })
            .collect();
        // The answer's turn state depends on how far the turn had got: from the cursor on,
        // each message is once, in order; the answer comes between the replay and live ones.
        let answer_at = resumed.iter().position(|m| m["id"] == "r1").unwrap();
        let state = &resumed[answer_at]["result"]["_meta"]["acp/turnState"];
        let running = state["turns"].as_array().unwrap();
        let last_replayed = resumed[answer_at]["result"]["cursor"].as_str().unwrap();
        let chunks: Vec<String> = resumed
            .iter()
            .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
            .map(str::to_owned)
            .collect();
        // Cursor 4 is "r:1": the client claims to have it, and gets from "r:2" on.
        let expected: Vec<String> = (2..CHUNKS).map(|i| format!("r:{i}")).collect();
        assert_eq!(chunks, expected, "{text:#?}");
        let all_cursors: Vec<u64> = resumed
            .iter()
            .filter(|m| m["id"] != "r1")
            .map(|m| {
                let meta = m.get("params").or(m.get("result")).unwrap();
                let cursor = meta["_meta"]["acp/cursor"].as_str();
                cursor.unwrap_or_else(|| panic!("{m}")).parse().unwrap()
            })
            .collect();
        assert_eq!(
            all_cursors,
            (5..5 + all_cursors.len() as u64).collect::<Vec<_>>()
        );
        assert_eq!(resumed[answer_at]["result"]["received"], 3);
        if running.is_empty() {
            // The turn had ended before the resumption: its answer was replayed.
            assert!(
                answer_at == resumed.len() - 1 || resumed[..answer_at].iter().any(|m| m["id"] == 2)
            );
        } else {
            insta::assert_snapshot!(
                text[answer_at].replace(last_replayed, "<cursor>"),
                @r#"{"id":"r1","jsonrpc":"2.0","result":{"_meta":{"acp/cursor":"<cursor>","acp/turnState":{"turns":[{"requestId":2,"sessionId":"<session>","state":"running"}]}},"cursor":"<cursor>","received":3}}"#
            );
        }
    });
}

/// A resumption the server cannot serve exactly is refused: `stream/resume_failed`, then the
/// error answer, then a close; an unknown connection the same, and another instance's
/// connection with a reason of its own.
#[test]
fn refused_resumptions_on_the_wire() {
    smol::block_on(async {
        let options = ServerOptions::default()
            .with_durable_transport(true)
            .with_replay_events(2)
            .with_instance(acp_remote::InstanceName::new("a").unwrap());
        let (addr, _) = serve_streamer(options);
        let url = format!("ws://{addr}/acp");
        let project = Project::new("ws-resume-refused");
        let (mut ws, response) = websocket(&url).await;
        let id = response.headers()["acp-connection-id"]
            .to_str()
            .unwrap()
            .to_owned();
        ws.send(Message::text(INITIALIZE)).await.unwrap();
        read_until(&mut ws, |m| m["id"] == 0).await;
        for n in 1..4 {
            send(
                &mut ws,
                json!({"jsonrpc":"2.0","id":n,"method":"session/new","params":{"cwd":project.0,"mcpServers":[]}}),
            )
            .await;
            read_until(&mut ws, |m| m["id"] == n).await;
        }
        drop(ws);
        let refused = |cursor: &str, connection: &str| {
            let (url, connection, cursor) = (url.clone(), connection.to_owned(), cursor.to_owned());
            async move {
                let (mut ws, _) = websocket(&url).await;
                send(
                    &mut ws,
                    json!({"jsonrpc":"2.0","id":7,"method":"stream/resume","params":{"connectionId":connection,"cursor":cursor}}),
                )
                .await;
                let mut seen = read_until(&mut ws, |m| m["id"] == 7).await;
                let closed = within("the close", ws.next()).await;
                assert!(
                    matches!(closed, Some(Ok(Message::Close(_))) | None),
                    "{closed:?}"
                );
                seen.iter_mut().for_each(|m| {
                    *m = serde_json::from_str(&m.to_string().replace(&connection, "<connection>"))
                        .unwrap()
                });
                serde_json::to_string_pretty(&seen).unwrap()
            }
        };
        insta::assert_snapshot!(refused("1", &id).await);
        insta::assert_snapshot!(refused("9", &id).await);
        insta::assert_snapshot!(refused("1", "a.no-such-connection").await);
        // Another instance's connection: a balancer's mistake, which the client tries again.
        let other = refused("1", "b.elsewhere").await;
        assert!(other.contains(r#""reason": "other_instance""#), "{other}");
    });
}

/// A durable server serves a WebSocket whose client does not ask as before: no cursors, and
/// its first message is handed to the agent as it came.
#[test]
fn a_client_that_does_not_ask_gets_todays_websocket() {
    smol::block_on(async {
        let options = ServerOptions::default().with_durable_transport(true);
        let (addr, _) = serve_streamer(options);
        let (mut ws, _) = websocket(&format!("ws://{addr}/acp")).await;
        ws.send(Message::text(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
        ))
        .await
        .unwrap();
        let answer = read_until(&mut ws, |m| m["id"] == 0).await.remove(0);
        assert!(answer["result"].get("_meta").is_none(), "{answer}");
        assert!(
            answer["result"]["agentCapabilities"]
                .get("transport")
                .is_none()
        );
    });
}

/// The streamer, which also resumes sessions (`session/resume`), recording which and where.
struct Resumable {
    streamer: Streamer,
    resumed: Arc<std::sync::Mutex<Vec<(String, String)>>>,
}

impl Agent for Resumable {
    async fn initialize(
        &self,
        _request: InitializeRequest,
        _client: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let sessions = SessionCapabilities::new().with_resume(SessionResumeCapabilities::new());
        Ok(InitializeResponse::new(ProtocolVersion::LATEST)
            .with_agent_capabilities(AgentCapabilities::new().with_session_capabilities(sessions)))
    }

    async fn new_session(
        &self,
        request: NewSessionRequest,
        client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        self.streamer.new_session(request, client).await
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        self.streamer.prompt(request, turn).await
    }

    async fn resume_session(
        &self,
        request: ResumeSessionRequest,
        _session: acp_runtime::agent::SessionClient,
    ) -> Result<ResumeSessionResponse> {
        self.resumed
            .lock()
            .unwrap()
            .push((request.session_id.to_string(), request.cwd.clone()));
        Ok(ResumeSessionResponse::new())
    }
}

/// A durable server of [`Resumable`]: its address, prompt counter and resumed sessions.
#[allow(clippy::type_complexity)]
fn serve_resumable() -> (
    SocketAddr,
    Arc<AtomicUsize>,
    Arc<std::sync::Mutex<Vec<(String, String)>>>,
) {
    let options = ServerOptions::default().with_durable_transport(true);
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
    let addr = server.local_addr();
    let prompts = Arc::new(AtomicUsize::new(0));
    let resumed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (counter, record) = (prompts.clone(), resumed.clone());
    smol::spawn(async move {
        let _ = server
            .serve_agent(
                move |_| Resumable {
                    streamer: Streamer {
                        prompts: counter.clone(),
                    },
                    resumed: record.clone(),
                },
                AgentOptions::default(),
            )
            .await;
    })
    .detach();
    (addr, prompts, resumed)
}

/// A TCP proxy whose upstream can be switched; `cut` closes every socket it carries.
struct Switch {
    upstream: std::sync::Mutex<SocketAddr>,
    live: std::sync::Mutex<Vec<(TcpStream, TcpStream)>>,
}

impl Switch {
    fn cut(&self) {
        for (down, up) in self.live.lock().unwrap().drain(..) {
            let _ = down.shutdown(std::net::Shutdown::Both);
            let _ = up.shutdown(std::net::Shutdown::Both);
        }
    }
}

async fn switching_proxy(upstream: SocketAddr) -> (SocketAddr, Arc<Switch>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let switch = Arc::new(Switch {
        upstream: std::sync::Mutex::new(upstream),
        live: std::sync::Mutex::default(),
    });
    let control = switch.clone();
    smol::spawn(async move {
        while let Ok((down, _)) = listener.accept().await {
            let target = *control.upstream.lock().unwrap();
            let Ok(up) = TcpStream::connect(target).await else {
                continue;
            };
            control
                .live
                .lock()
                .unwrap()
                .push((down.clone(), up.clone()));
            let (d, u) = (down.clone(), up.clone());
            smol::spawn(async move {
                let _ = futures_lite::io::copy(d, u.clone()).await;
                let _ = u.shutdown(std::net::Shutdown::Write);
            })
            .detach();
            smol::spawn(async move {
                let _ = futures_lite::io::copy(up, down.clone()).await;
                let _ = down.shutdown(std::net::Shutdown::Write);
            })
            .detach();
        }
    })
    .detach();
    (addr, switch)
}

/// A resumption refused (the balancer sent it to another server, which does not know the
/// connection) is taken up on a new connection there: `initialize` as the first, then
/// `session/resume` for the session, which goes on: its next turn runs on the new server.
fn refused_resumption_falls_back_to_session_resume(scheme: &str) {
    smol::block_on(async {
        let (first, first_prompts, _) = serve_resumable();
        let (second, second_prompts, resumed) = serve_resumable();
        let (proxy, switch) = switching_proxy(first).await;
        let project = Project::new(&format!("ws-resume-fallback-{scheme}"));
        let connector = Connector::new(format!("{scheme}://{proxy}/acp")).with_durable_transport();
        let (agent, driver) = connect_client(connector).await;
        within("initialize", agent.initialize()).await.unwrap();
        let session = within("session/new", agent.new_session(&project.0))
            .await
            .unwrap();
        numbered_turn(&session, 0).await;
        *switch.upstream.lock().unwrap() = second;
        switch.cut();
        within("the session resumed on the second server", async {
            while resumed.lock().unwrap().is_empty() {
                smol::Timer::after(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert_eq!(
            *resumed.lock().unwrap(),
            [(
                session.id().to_string(),
                project.0.to_str().unwrap().to_owned()
            )]
        );
        numbered_turn(&session, 1).await;
        assert_eq!(first_prompts.load(Ordering::SeqCst), 1);
        assert_eq!(second_prompts.load(Ordering::SeqCst), 1);
        agent.close();
        within("the client driver", driver).await.unwrap();
    });
}

#[test]
fn a_refused_websocket_resumption_falls_back_to_session_resume() {
    refused_resumption_falls_back_to_session_resume("ws");
}

#[test]
fn a_refused_http_resumption_falls_back_to_session_resume() {
    refused_resumption_falls_back_to_session_resume("http");
}

/// The first message's gap: the WebSocket dropped after the 101, with the `initialize`
/// answer on its way. The client resumes from cursor 0 (it cannot know yet that the server
/// numbers its messages), gets the answer replayed, and the connection goes on.
#[test]
fn a_websocket_cut_before_its_first_message_resumes() {
    smol::block_on(async {
        let options = ServerOptions::default().with_durable_transport(true);
        let (addr, prompts) = serve_streamer(options);
        let (proxy, cutter) = cutting_proxy(addr).await;
        let project = Project::new("ws-resume-first");
        let connector = Connector::new(format!("ws://{proxy}/acp")).with_durable_transport();
        // The 101 is passed on; the next read, the initialize answer, is the cut.
        cutter.reads_before_cut.store(1, Ordering::SeqCst);
        let (agent, driver) = connect_client(connector).await;
        within("initialize", agent.initialize()).await.unwrap();
        assert_eq!(cutter.cuts.load(Ordering::SeqCst), 1);
        let session = within("session/new", agent.new_session(&project.0))
            .await
            .unwrap();
        numbered_turn(&session, 0).await;
        assert_eq!(prompts.load(Ordering::SeqCst), 1);
        agent.close();
        within("the client driver", driver).await.unwrap();
    });
}

/// Sends one chunk for each prompt, then waits for the test's word before ending the turn.
struct Gated(smol::channel::Receiver<()>);

impl Agent for Gated {
    async fn new_session(
        &self,
        _request: NewSessionRequest,
        _client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, _request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        turn.message("started").await?;
        let _ = self.0.recv().await;
        Ok(StopReason::EndTurn.into())
    }
}

/// The turn state after a resumption, pinned: a turn running while its WebSocket dropped is
/// listed (its session and prompt id) in the answer to `stream/resume`, and its end comes
/// live after it.
#[test]
fn the_turn_state_lists_the_running_turn() {
    smol::block_on(async {
        let (release, gate) = smol::channel::unbounded();
        let options = ServerOptions::default().with_durable_transport(true);
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let url = server.url();
        smol::spawn(async move {
            let _ = server
                .serve_agent(move |_| Gated(gate.clone()), AgentOptions::default())
                .await;
        })
        .detach();
        let project = Project::new("ws-resume-turn-state");
        let (mut ws, response) = websocket(&url).await;
        let id = response.headers()["acp-connection-id"]
            .to_str()
            .unwrap()
            .to_owned();
        ws.send(Message::text(INITIALIZE)).await.unwrap();
        read_until(&mut ws, |m| m["id"] == 0).await;
        send(
            &mut ws,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":project.0,"mcpServers":[]}}),
        )
        .await;
        let created = read_until(&mut ws, |m| m["id"] == 1).await.remove(0);
        let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
        send(
            &mut ws,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":session,"prompt":[{"type":"text","text":"go"}]}}),
        )
        .await;
        read_until(&mut ws, |m| {
            m["params"]["update"]["content"]["text"] == "started"
        })
        .await;
        drop(ws);
        let (mut again, _) = websocket(&url).await;
        send(
            &mut again,
            json!({"jsonrpc":"2.0","id":"r1","method":"stream/resume","params":{"connectionId":id,"cursor":"2"}}),
        )
        .await;
        let resumed = read_until(&mut again, |m| m["id"] == "r1").await;
        let text: Vec<String> = resumed
            .iter()
            .map(|m| m.to_string().replace(&session, "<session>"))
            .collect();
        insta::assert_snapshot!(text.join("\n"), @r#"
        {"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"acp/cursor":"3"},"sessionId":"<session>","update":{"content":{"text":"started","type":"text"},"sessionUpdate":"agent_message_chunk"}}}
        {"id":"r1","jsonrpc":"2.0","result":{"_meta":{"acp/cursor":"3","acp/turnState":{"turns":[{"requestId":2,"sessionId":"<session>","state":"running"}]}},"cursor":"3","received":3}}
        "#);
        release.send(()).await.unwrap();
        let end = read_until(&mut again, |m| m["id"] == 2).await.remove(0);
        assert_eq!(end["result"]["stopReason"], "end_turn");
        assert_eq!(end["result"]["_meta"]["acp/cursor"], "4");
    });
}
