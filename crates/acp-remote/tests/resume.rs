//! Resumable Streamable HTTP over real sockets: SSE streams cut at random points and resumed
//! with `Last-Event-ID` (every update once, in order), POSTs whose answer was lost sent again
//! and run once, the replay window's end answered with its documented error, keep-alive
//! comments on an idle stream; the new wire pieces pinned.
#![cfg(unix)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use acp_remote::{Connector, ServerOptions};
use common::http_client::{Sse, post};
use common::streamer::{CHUNKS, Rng, numbered_turn, serve_streamer};
use common::wire::INITIALIZE;
use common::{Project, connect_client, within};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};

/// What the cutting proxy is asked to do.
#[derive(Default)]
struct Cutter {
    /// Bytes of SSE answers still let through before the socket carrying them is closed
    /// (negative: no cut armed).
    sse_budget: AtomicI64,
    /// The budget armed after a cut of an SSE socket (negative: none), to cut its resumption.
    then: AtomicI64,
    /// POST answers to swallow, closing their socket instead (the request got through).
    lost_answers: AtomicUsize,
    cuts: AtomicUsize,
}

/// A TCP proxy to `upstream` that closes sockets as `Cutter` says: a GET's socket after a
/// number of bytes of its answer, a POST's socket instead of its answer.
async fn cutting_proxy(upstream: SocketAddr) -> (SocketAddr, Arc<Cutter>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cutter = Arc::new(Cutter::default());
    cutter.sse_budget.store(-1, Ordering::SeqCst);
    cutter.then.store(-1, Ordering::SeqCst);
    let control = cutter.clone();
    smol::spawn(async move {
        while let Ok((mut down, _)) = listener.accept().await {
            let Ok(mut up) = TcpStream::connect(upstream).await else {
                continue;
            };
            let control = control.clone();
            smol::spawn(async move {
                let mut first = vec![0u8; 4096];
                let Ok(n) = down.read(&mut first).await else {
                    return;
                };
                // An HTTP/2 connection (its preface) carries the streams: cut like a GET's.
                let get = first[..n].starts_with(b"GET") || first[..n].starts_with(b"PRI");
                if up.write_all(&first[..n]).await.is_err() {
                    return;
                }
                let (down2, up2) = (down.clone(), up.clone());
                smol::spawn(async move {
                    let _ = futures_lite::io::copy(down2, up2.clone()).await;
                    let _ = up2.shutdown(std::net::Shutdown::Write);
                })
                .detach();
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match up.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let mut pass = n;
                    let mut cut = false;
                    if get {
                        let budget = control.sse_budget.load(Ordering::SeqCst);
                        if budget >= 0 {
                            if (n as i64) > budget {
                                pass = budget as usize;
                                cut = true;
                                let then = control.then.swap(-1, Ordering::SeqCst);
                                control.sse_budget.store(then, Ordering::SeqCst);
                            } else {
                                control.sse_budget.fetch_sub(n as i64, Ordering::SeqCst);
                            }
                        }
                    } else if control
                        .lost_answers
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        pass = 0;
                        cut = true;
                    }
                    if down.write_all(&buf[..pass]).await.is_err() {
                        break;
                    }
                    if cut {
                        control.cuts.fetch_add(1, Ordering::SeqCst);
                        let _ = down.shutdown(std::net::Shutdown::Both);
                        let _ = up.shutdown(std::net::Shutdown::Both);
                        return;
                    }
                }
                let _ = down.shutdown(std::net::Shutdown::Write);
            })
            .detach();
        }
    })
    .detach();
    (addr, cutter)
}

/// The runtime's client over a proxy that cuts the SSE stream of each turn at a random point
/// (every eighth round its resumption too, within its first 300 bytes: the answer's head,
/// the priming id or the replayed events; and every third round it swallows a POST's
/// answer): 200 turns, each of whose updates arrives once and in order, and no prompt runs
/// twice.
#[test]
fn cut_streams_resume_with_every_update_once_in_order() {
    cut_streams_resume(false);
}

/// The same with the durable-transport proposal on both sides: every message carries its
/// cursor in `_meta` too, and the client reads them all as before.
#[test]
fn cut_streams_resume_the_same_on_the_durable_transport() {
    cut_streams_resume(true);
}

fn cut_streams_resume(durable: bool) {
    smol::block_on(async {
        let options = ServerOptions::default().with_durable_transport(durable);
        let (addr, prompts) = serve_streamer(options);
        let (proxy, cutter) = cutting_proxy(addr).await;
        let project = Project::new("resume-cuts");
        let mut connector = Connector::new(format!("http://{proxy}/acp"));
        if durable {
            connector = connector.with_durable_transport();
        }
        let (agent, driver) = connect_client(connector).await;
        within("initialize", agent.initialize()).await.unwrap();
        let session = within("session/new", agent.new_session(&project.0))
            .await
            .unwrap();
        let mut rng = Rng(0x5eed_cafe_f00d_1234);
        let started = Instant::now();
        const ROUNDS: usize = 200;
        for round in 0..ROUNDS {
            // A turn's stream is some 2.5 KiB: most rounds are cut somewhere in it.
            cutter
                .sse_budget
                .store(rng.below(3000) as i64, Ordering::SeqCst);
            if round % 3 == 0 {
                cutter.lost_answers.store(1, Ordering::SeqCst);
            }
            if round % 8 == 0 {
                cutter.then.store(rng.below(300) as i64, Ordering::SeqCst);
            }
            numbered_turn(&session, round).await;
            cutter.sse_budget.store(-1, Ordering::SeqCst);
            cutter.then.store(-1, Ordering::SeqCst);
            cutter.lost_answers.store(0, Ordering::SeqCst);
        }
        let elapsed = started.elapsed();
        let cuts = cutter.cuts.load(Ordering::SeqCst);
        eprintln!("{ROUNDS} rounds, {cuts} cuts, {elapsed:?}");
        assert_eq!(prompts.load(Ordering::SeqCst), ROUNDS, "a prompt ran twice");
        assert!(cuts > ROUNDS / 2, "only {cuts} cuts");
        agent.close();
        within("the client driver", driver).await.unwrap();
    });
}

/// A POST sent twice with the same request id (a retry after its answer was lost) is taken
/// once: the second gets the same 202, the agent runs one turn, the stream carries one answer.
#[test]
fn a_retried_post_runs_once() {
    smol::block_on(async {
        let (addr, prompts) = serve_streamer(ServerOptions::default());
        let init = post(addr, &[], INITIALIZE).await;
        let conn = init.header("acp-connection-id").unwrap().to_owned();
        let c = [("Acp-Connection-Id", conn.as_str())];
        let mut stream = Sse::open(addr, &c).await;
        let new = r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#;
        assert_eq!(post(addr, &c, new).await.status, 202);
        assert_eq!(post(addr, &c, new).await.status, 202, "the retry");
        let answer = within("session/new", stream.next()).await.unwrap();
        let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
        let cs = [
            ("Acp-Connection-Id", conn.as_str()),
            ("Acp-Session-Id", session.as_str()),
        ];
        let mut session_stream = Sse::open(addr, &cs).await;
        let prompt = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"x"}}]}}}}"#
        );
        assert_eq!(post(addr, &cs, &prompt).await.status, 202);
        assert_eq!(post(addr, &cs, &prompt).await.status, 202, "the retry");
        let mut answers = 0;
        let mut chunks = 0;
        while answers == 0 {
            let event = within("the turn", session_stream.next()).await.unwrap();
            if event["id"] == 2 {
                answers += 1;
            } else {
                chunks += 1;
            }
        }
        assert_eq!(chunks, CHUNKS);
        // A third copy, after the turn: still the same request, not run again.
        assert_eq!(post(addr, &cs, &prompt).await.status, 202);
        let ping = r#"{"jsonrpc":"2.0","id":3,"method":"unknown/x"}"#;
        assert_eq!(post(addr, &c, ping).await.status, 202);
        // The connection stream answers the ping; had the session/new retry run, a second
        // answer to id 1 would have come first.
        let next = within("the ping's answer", stream.next()).await.unwrap();
        assert_eq!(next["id"], 3, "{next}");
        assert_eq!(prompts.load(Ordering::SeqCst), 1);
        drop(session_stream);
    });
}

/// Reads a GET's raw stream text until `needle`.
async fn text_until(stream: &mut Sse, needle: &str) -> String {
    within(needle, stream.text_until(needle)).await.unwrap()
}

/// The wire of a resumed stream: the priming `id:`, events with ids, a resumption that takes
/// the stream over from its old reader (broken off, not ended) and sends exactly the events
/// after `Last-Event-ID`; ids that are not the stream's are refused.
#[test]
fn a_resumed_stream_on_the_wire() {
    smol::block_on(async {
        let (addr, _) = serve_streamer(ServerOptions::default());
        let init = post(addr, &[], INITIALIZE).await;
        let conn = init.header("acp-connection-id").unwrap().to_owned();
        let c = [("Acp-Connection-Id", conn.as_str())];
        let mut first = Sse::open(addr, &c).await;
        for id in 7..10 {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"unknown/x"}}"#);
            assert_eq!(post(addr, &c, &body).await.status, 202);
        }
        let text = text_until(&mut first, "\"id\":9").await + &text_until(&mut first, "\n\n").await;
        insta::assert_snapshot!(text, @r#"
        id: 0

        id: 1
        data: {"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found","data":{"method":"unknown/x"}}}

        id: 2
        data: {"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found","data":{"method":"unknown/x"}}}

        id: 3
        data: {"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found","data":{"method":"unknown/x"}}}
        "#);
        // Without Last-Event-ID a second reader is refused, as before.
        assert_eq!(Sse::open(addr, &c).await.status, 409);
        let with = |id: &'static str| {
            let mut h = c.to_vec();
            h.push(("Last-Event-ID", id));
            h
        };
        assert_eq!(Sse::open(addr, &with("4")).await.status, 400, "ahead");
        assert_eq!(Sse::open(addr, &with("x1")).await.status, 400);
        assert_eq!(Sse::open(addr, &with("-1")).await.status, 400);
        let mut resumed = Sse::open(addr, &with("1")).await;
        assert_eq!(resumed.status, 200);
        let text =
            text_until(&mut resumed, "\"id\":9").await + &text_until(&mut resumed, "\n\n").await;
        insta::assert_snapshot!(text, @r#"
        id: 1

        id: 2
        data: {"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found","data":{"method":"unknown/x"}}}

        id: 3
        data: {"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found","data":{"method":"unknown/x"}}}
        "#);
        // The old reader was taken over: its stream is broken off, not ended.
        assert!(!within("the old reader's end", first.ends_cleanly()).await);
        // New events go on from the resumed reader, numbered on.
        let body = r#"{"jsonrpc":"2.0","id":10,"method":"unknown/x"}"#;
        assert_eq!(post(addr, &c, body).await.status, 202);
        let text = text_until(&mut resumed, "\n\n").await;
        assert!(
            text.starts_with("id: 4\ndata: {\"jsonrpc\":\"2.0\",\"id\":10,"),
            "{text}"
        );
    });
}

/// Events no longer kept: a resumption that needs them is answered 410 with a JSON-RPC error
/// (bytes: a window of 0 keeps nothing; time: a window of 50 ms), never a stream with a gap;
/// one that missed nothing still resumes.
#[test]
fn a_passed_window_is_a_410() {
    smol::block_on(async {
        for (bytes, age) in [
            (0, Duration::from_secs(300)),
            (1 << 20, Duration::from_millis(50)),
        ] {
            let options = ServerOptions::default().with_replay_window(bytes, age);
            let (addr, _) = serve_streamer(options);
            let init = post(addr, &[], INITIALIZE).await;
            let conn = init.header("acp-connection-id").unwrap().to_owned();
            let c = [("Acp-Connection-Id", conn.as_str())];
            let mut stream = Sse::open(addr, &c).await;
            let body = r#"{"jsonrpc":"2.0","id":7,"method":"unknown/x"}"#;
            assert_eq!(post(addr, &c, body).await.status, 202);
            text_until(&mut stream, "\"id\":7").await;
            smol::Timer::after(Duration::from_millis(100)).await;
            let mut h = c.to_vec();
            h.push(("Last-Event-ID", "0"));
            let gone = common::http_client::send(
                addr,
                "GET",
                &[&h[..], &[("Accept", "text/event-stream")]].concat(),
                "",
            )
            .await;
            assert_eq!(gone.status, 410);
            assert_eq!(gone.header("content-type"), Some("application/json"));
            let mut error = gone.json();
            assert_eq!(error["error"]["data"]["windowBytes"], bytes);
            error["error"]["data"]["windowBytes"] = "<bytes>".into();
            error["error"]["data"]["windowSeconds"] = "<seconds>".into();
            // The same error for both bounds.
            insta::allow_duplicates! { insta::assert_json_snapshot!(error, @r#"
            {
              "error": {
                "code": -32010,
                "data": {
                  "firstKept": "2",
                  "lastEventId": "0",
                  "reason": "replay_window_passed",
                  "windowBytes": "<bytes>",
                  "windowSeconds": "<seconds>"
                },
                "message": "the events after Last-Event-ID 0 are no longer kept (the oldest kept is 2); the stream cannot resume without a gap"
              },
              "id": null,
              "jsonrpc": "2.0"
            }
            "#) };
            // Nothing missed: the resumption is served (and takes the stream over).
            h.pop();
            h.push(("Last-Event-ID", "1"));
            assert_eq!(Sse::open(addr, &h).await.status, 200);
        }
    });
}

/// An idle stream gets `: keepalive` comments at the configured interval.
#[test]
fn keep_alive_comments_on_an_idle_stream() {
    smol::block_on(async {
        let options = ServerOptions::default().with_sse_keep_alive(Duration::from_millis(30));
        let (addr, _) = serve_streamer(options);
        let init = post(addr, &[], INITIALIZE).await;
        let conn = init.header("acp-connection-id").unwrap().to_owned();
        let mut stream = Sse::open(addr, &[("Acp-Connection-Id", conn.as_str())]).await;
        let started = Instant::now();
        let mut text = String::new();
        for _ in 0..3 {
            text += &text_until(&mut stream, ": keepalive\n\n").await;
        }
        assert!(started.elapsed() >= Duration::from_millis(60));
        insta::assert_snapshot!(text, @r"
        id: 0

        : keepalive

        : keepalive

        : keepalive
        ");
    });
}

/// A resumption the server can no longer serve ends our client's connection with the server's
/// reason (a window of 0 keeps nothing: a stream cut inside an event cannot resume).
#[test]
fn a_passed_window_ends_the_client_connection_with_the_reason() {
    passed_window_ends_the_connection(false);
}

/// The same on the durable transport, whose refusal is `409`.
#[test]
fn a_refused_durable_resumption_ends_the_client_connection_with_the_reason() {
    passed_window_ends_the_connection(true);
}

fn passed_window_ends_the_connection(durable: bool) {
    smol::block_on(async {
        let options = ServerOptions::default()
            .with_replay_window(0, Duration::from_secs(300))
            .with_durable_transport(durable);
        let (addr, _) = serve_streamer(options);
        let (proxy, cutter) = cutting_proxy(addr).await;
        let project = Project::new("resume-gone");
        let mut connector = Connector::new(format!("http://{proxy}/acp"));
        if durable {
            connector = connector.with_durable_transport();
        }
        let (agent, driver) = connect_client(connector).await;
        within("initialize", agent.initialize()).await.unwrap();
        let session = within("session/new", agent.new_session(&project.0))
            .await
            .unwrap();
        // A turn without cuts: the session's stream is open and quiet.
        let mut turn = within("prompt", session.prompt(vec!["x".into()]))
            .await
            .unwrap();
        while let Some(update) = within("an update", turn.next()).await {
            update.unwrap();
        }
        within("the end", turn.end()).await.unwrap();
        // Inside the next turn's first event.
        cutter.sse_budget.store(40, Ordering::SeqCst);
        let outcome = async {
            let mut turn = session.prompt(vec!["x".into()]).await?;
            while let Some(update) = turn.next().await {
                update?;
            }
            turn.end().await.map(drop)
        };
        let error = within("the turn's failure", outcome).await.unwrap_err();
        let ended = within("the client driver", driver).await.unwrap_err();
        let text = format!("{error} / {ended}");
        let status = if durable { 409 } else { 410 };
        let expected = format!("could not resume (HTTP {status})");
        assert!(text.contains(&expected), "{text}");
        assert_eq!(cutter.cuts.load(Ordering::SeqCst), 1);
    });
}

/// Over HTTP/2 (h2c) one TCP connection carries every stream and POST: cut at a random point
/// in each of 50 turns, it is replaced by a new connection, on which the streams resume and
/// the POSTs are sent again; every update arrives once, in order, and no prompt runs twice.
#[cfg(feature = "http2")]
#[test]
fn a_cut_http2_connection_is_replaced_and_its_streams_resume() {
    smol::block_on(async {
        let (addr, prompts) = serve_streamer(ServerOptions::default());
        let (proxy, cutter) = cutting_proxy(addr).await;
        let project = Project::new("resume-h2");
        let connector = Connector::new(format!("http://{proxy}/acp")).with_http2_prior_knowledge();
        let (agent, driver) = connect_client(connector).await;
        within("initialize", agent.initialize()).await.unwrap();
        let session = within("session/new", agent.new_session(&project.0))
            .await
            .unwrap();
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        const ROUNDS: usize = 50;
        for round in 0..ROUNDS {
            cutter
                .sse_budget
                .store(rng.below(3000) as i64, Ordering::SeqCst);
            numbered_turn(&session, round).await;
            cutter.sse_budget.store(-1, Ordering::SeqCst);
        }
        let cuts = cutter.cuts.load(Ordering::SeqCst);
        eprintln!("{ROUNDS} HTTP/2 rounds, {cuts} cuts");
        assert_eq!(prompts.load(Ordering::SeqCst), ROUNDS, "a prompt ran twice");
        assert!(cuts > ROUNDS / 2, "only {cuts} cuts");
        agent.close();
        within("the client driver", driver).await.unwrap();
    });
}
