//! What the resumption tests over HTTP (`resume.rs`) and WebSocket (`ws_resume.rs`) share:
//! an agent that streams numbered chunks and counts the prompts it ran, the turn that checks
//! them arrive once and in order, and a seeded generator for where to cut; and the turn's
//! message texts, which the bridge and silence tests check too.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_remote::{Server, ServerOptions};
use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, AgentOptions, ClientHandle, Turn};
use acp_runtime::client::Session;
use acp_types::*;

use super::within;

/// Updates each turn streams.
pub const CHUNKS: usize = 12;

/// Streams `CHUNKS` numbered chunks for each prompt, and counts the prompts it ran.
pub struct Streamer {
    pub prompts: Arc<AtomicUsize>,
}

impl Agent for Streamer {
    async fn new_session(
        &self,
        _request: NewSessionRequest,
        _client: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        self.prompts.fetch_add(1, Ordering::SeqCst);
        let round: String = request
            .prompt
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        for i in 0..CHUNKS {
            turn.message(format!("{round}:{i}")).await?;
        }
        Ok(StopReason::EndTurn.into())
    }
}

/// The streaming agent served with `options`; its address and prompt counter.
pub fn serve_streamer(options: ServerOptions) -> (SocketAddr, Arc<AtomicUsize>) {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
    let addr = server.local_addr();
    let prompts = Arc::new(AtomicUsize::new(0));
    let counter = prompts.clone();
    smol::spawn(async move {
        let _ = server
            .serve_agent(
                move |_| Streamer {
                    prompts: counter.clone(),
                },
                AgentOptions::default(),
            )
            .await;
    })
    .detach();
    (addr, prompts)
}

/// A small seeded generator (xorshift64*): the same cuts on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// One prompt to the streamer: its `CHUNKS` numbered chunks arrive each once, in order, and
/// the turn ends normally.
pub async fn numbered_turn(session: &Session, round: usize) {
    let texts = message_texts(session, &round.to_string()).await;
    let expected: Vec<String> = (0..CHUNKS).map(|i| format!("{round}:{i}")).collect();
    assert_eq!(texts, expected, "round {round}");
}

/// Prompts `text` and gives back the texts of the agent's message chunks, in order, once the
/// turn ended normally.
pub async fn message_texts(session: &Session, text: &str) -> Vec<String> {
    let mut turn = within("prompt", session.prompt(vec![text.into()]))
        .await
        .unwrap();
    let mut texts = Vec::new();
    while let Some(update) = within("an update", turn.next()).await {
        if let SessionUpdate::AgentMessageChunk(chunk) = update.unwrap() {
            texts.push(chunk.content.as_text().unwrap().to_owned());
        }
    }
    let end = within("the end of the turn", turn.end()).await.unwrap();
    assert_eq!(end.stop_reason, StopReason::EndTurn);
    texts
}
