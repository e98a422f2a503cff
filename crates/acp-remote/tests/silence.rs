//! The durable transport's dead-stream rule over real sockets: a client that hears nothing
//! for five keep-alive intervals (a proxy that silently stopped passing the server's bytes
//! on, the socket still open) takes its WebSocket or SSE stream for dropped and resumes it,
//! and the turn arrives whole, run once.
#![cfg(unix)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use acp_remote::{Connector, Server, ServerOptions};
use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, Turn};
use acp_types::*;
use common::streamer::message_texts;
use common::{Project, connect_client, within};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};

/// Streams three chunks for each prompt, and counts the prompts it ran.
struct Chunks(Arc<AtomicUsize>);

impl Agent for Chunks {
    async fn new_session(
        &self,
        _request: NewSessionRequest,
        _client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, _request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        self.0.fetch_add(1, Ordering::SeqCst);
        for i in 0..3 {
            turn.message(format!("chunk {i}")).await?;
        }
        Ok(StopReason::EndTurn.into())
    }
}

/// A proxy whose sockets opened before `stall` was set stop passing the server's bytes on,
/// and stay open; how many it accepted.
async fn stalling_proxy(upstream: SocketAddr) -> (SocketAddr, Arc<AtomicBool>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stall = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicUsize::new(0));
    let (control, count) = (stall.clone(), accepted.clone());
    smol::spawn(async move {
        while let Ok((mut down, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let Ok(mut up) = TcpStream::connect(upstream).await else {
                continue;
            };
            let stalled_before = control.load(Ordering::SeqCst);
            let control = control.clone();
            smol::spawn(async move {
                let mut first = vec![0u8; 4096];
                let Ok(n) = down.read(&mut first).await else {
                    return;
                };
                if up.write_all(&first[..n]).await.is_err() {
                    return;
                }
                let (d, u) = (down.clone(), up.clone());
                smol::spawn(async move {
                    let _ = futures_lite::io::copy(d, u).await;
                })
                .detach();
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match up.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    // Over HTTP/1.1 a kept-alive socket may carry a GET after POSTs: every socket
                    // opened before the stall goes silent, whatever it carries.
                    if !stalled_before && control.load(Ordering::SeqCst) {
                        // Silently gone: nothing more is passed on, nothing is closed.
                        return std::future::pending().await;
                    }
                    if down.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                let _ = down.shutdown(std::net::Shutdown::Write);
            })
            .detach();
        }
    })
    .detach();
    (addr, stall, accepted)
}

fn a_silent_stream_is_resumed(scheme: &str) {
    smol::block_on(async {
        let options = ServerOptions::default()
            .with_durable_transport(true)
            .with_sse_keep_alive(Duration::from_millis(50));
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let addr = server.local_addr();
        let prompts = Arc::new(AtomicUsize::new(0));
        let counter = prompts.clone();
        smol::spawn(async move {
            let _ = server
                .serve_agent(move |_| Chunks(counter.clone()), AgentOptions::default())
                .await;
        })
        .detach();
        let (proxy, stall, accepted) = stalling_proxy(addr).await;
        let project = Project::new(&format!("silence-{scheme}"));
        let interval = Duration::from_millis(100);
        let connector = Connector::new(format!("{scheme}://{proxy}/acp"))
            .with_durable_transport()
            .with_websocket_keepalive(Some((interval, interval)));
        let (agent, driver) = connect_client(connector).await;
        within("initialize", agent.initialize()).await.unwrap();
        let session = within("session/new", agent.new_session(&project.0))
            .await
            .unwrap();
        // The session's SSE stream opens once its id is known: let it open before the stall.
        smol::Timer::after(Duration::from_millis(200)).await;
        let before = accepted.load(Ordering::SeqCst);
        stall.store(true, Ordering::SeqCst);
        let texts = message_texts(&session, "go").await;
        assert_eq!(texts, ["chunk 0", "chunk 1", "chunk 2"]);
        assert_eq!(prompts.load(Ordering::SeqCst), 1);
        assert!(
            accepted.load(Ordering::SeqCst) > before,
            "the silent stream was not replaced"
        );
        agent.close();
        within("the client driver", driver).await.unwrap();
    });
}

#[test]
fn a_silent_websocket_is_resumed_after_five_keepalive_intervals() {
    a_silent_stream_is_resumed("ws");
}

#[test]
fn a_silent_sse_stream_is_resumed_after_five_keepalive_intervals() {
    a_silent_stream_is_resumed("http");
}
