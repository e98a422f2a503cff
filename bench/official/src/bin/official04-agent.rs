//! Bench agent on the official `agent-client-protocol` 0.4.5 SDK.
//!
//! Follows the crate's own `examples/agent.rs`: a `current_thread` Tokio
//! runtime with a `LocalSet`, an `acp::Agent` implementation, and
//! `AgentSideConnection` over Tokio stdio. The SDK runs every incoming request
//! in its own spawned task, so the prompt turn does not block the reader. The
//! agent talks back to the client (`session/update`, `fs/read_text_file`)
//! through the connection handle, which it receives once the connection has
//! been created.

use std::cell::OnceCell;
use std::rc::Rc;
use std::time::Instant;

use acp::Client as _;
use acp_bench::rusage::{self, Role};
use acp_bench::{FS_PATH, SESSION_ID, Scenario};
use acp04 as acp;
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tokio_util::compat::{TokioAsyncReadCompatExt as _, TokioAsyncWriteCompatExt as _};

const IMPL: &str = "official04";

struct BenchAgent {
    conn: Rc<OnceCell<acp::AgentSideConnection>>,
}

impl BenchAgent {
    fn conn(&self) -> Result<&acp::AgentSideConnection, acp::Error> {
        self.conn.get().ok_or_else(acp::Error::internal_error)
    }

    async fn turn(
        &self,
        session_id: &acp::SessionId,
        scenario: Scenario,
    ) -> Result<(), acp::Error> {
        let conn = self.conn()?;
        match scenario {
            Scenario::Hello => {}
            Scenario::Stream { count, .. } => {
                let text = scenario.chunk_text();
                for _ in 0..count {
                    conn.session_notification(acp::SessionNotification {
                        session_id: session_id.clone(),
                        update: acp::SessionUpdate::AgentMessageChunk {
                            content: acp::ContentBlock::Text(acp::TextContent {
                                annotations: None,
                                text: text.clone(),
                                meta: None,
                            }),
                        },
                        meta: None,
                    })
                    .await?;
                }
            }
            Scenario::Rpc { count } => {
                for _ in 0..count {
                    conn.read_text_file(read_request(session_id)).await?;
                }
            }
            Scenario::RpcPar { count, in_flight } => {
                let mut pending = FuturesUnordered::new();
                let mut sent = 0;
                while sent < count.min(in_flight) {
                    pending.push(conn.read_text_file(read_request(session_id)));
                    sent += 1;
                }
                while let Some(response) = pending.next().await {
                    response?;
                    if sent < count {
                        pending.push(conn.read_text_file(read_request(session_id)));
                        sent += 1;
                    }
                }
            }
        }
        Ok(())
    }
}

fn read_request(session_id: &acp::SessionId) -> acp::ReadTextFileRequest {
    acp::ReadTextFileRequest {
        session_id: session_id.clone(),
        path: FS_PATH.into(),
        line: None,
        limit: None,
        meta: None,
    }
}

#[async_trait::async_trait(?Send)]
impl acp::Agent for BenchAgent {
    async fn initialize(
        &self,
        _args: acp::InitializeRequest,
    ) -> Result<acp::InitializeResponse, acp::Error> {
        Ok(acp::InitializeResponse {
            protocol_version: acp::V1,
            agent_capabilities: acp::AgentCapabilities::default(),
            auth_methods: Vec::new(),
            meta: None,
        })
    }

    async fn authenticate(
        &self,
        _args: acp::AuthenticateRequest,
    ) -> Result<acp::AuthenticateResponse, acp::Error> {
        Ok(acp::AuthenticateResponse::default())
    }

    async fn new_session(
        &self,
        _args: acp::NewSessionRequest,
    ) -> Result<acp::NewSessionResponse, acp::Error> {
        Ok(acp::NewSessionResponse {
            session_id: acp::SessionId(SESSION_ID.into()),
            modes: None,
            meta: None,
        })
    }

    async fn prompt(&self, args: acp::PromptRequest) -> Result<acp::PromptResponse, acp::Error> {
        let text = match args.prompt.first() {
            Some(acp::ContentBlock::Text(t)) => t.text.as_str(),
            _ => "",
        };
        self.turn(&args.session_id, Scenario::parse(text)).await?;
        Ok(acp::PromptResponse {
            stop_reason: acp::StopReason::EndTurn,
            meta: None,
        })
    }

    async fn cancel(&self, _args: acp::CancelNotification) -> Result<(), acp::Error> {
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let started = Instant::now();
    let outgoing = tokio::io::stdout().compat_write();
    let incoming = tokio::io::stdin().compat();
    let local_set = tokio::task::LocalSet::new();
    let result = local_set
        .run_until(async move {
            let cell = Rc::new(OnceCell::new());
            let agent = BenchAgent { conn: cell.clone() };
            let (conn, handle_io) =
                acp::AgentSideConnection::new(agent, outgoing, incoming, |fut| {
                    tokio::task::spawn_local(fut);
                });
            let _ = cell.set(conn);
            // Runs until stdin is closed.
            handle_io.await
        })
        .await;
    if let Err(e) = result {
        eprintln!("official04-agent: {e}");
        std::process::exit(1);
    }
    rusage::report_or_warn(Role::Agent, IMPL, started);
}
