//! Bench client on the official `agent-client-protocol` 0.4.5 SDK.
//!
//! Follows the crate's own `examples/client.rs`: a `current_thread` Tokio
//! runtime with a `LocalSet`, an `acp::Client` implementation, the agent
//! spawned with `tokio::process`, and `ClientSideConnection` over its pipes.
//! The SDK runs each notification handler in its own task, so the prompt
//! response may arrive before every update has been counted; the client
//! waits for both.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use acp::Agent as _;
use acp_bench::rusage::{self, Role};
use acp_bench::{ClientArgs, FS_CONTENT, SESSION_CWD, SHUTDOWN_GRACE, ms_since, result_line};
use acp04 as acp;
use tokio::sync::Notify;
use tokio_util::compat::{TokioAsyncReadCompatExt as _, TokioAsyncWriteCompatExt as _};

const IMPL: &str = "official04";

#[derive(Default)]
struct Counts {
    updates: Cell<u64>,
    rpcs: Cell<u64>,
    changed: Notify,
}

struct BenchClient {
    counts: Rc<Counts>,
}

#[async_trait::async_trait(?Send)]
impl acp::Client for BenchClient {
    async fn request_permission(
        &self,
        _args: acp::RequestPermissionRequest,
    ) -> Result<acp::RequestPermissionResponse, acp::Error> {
        Err(acp::Error::method_not_found())
    }

    async fn read_text_file(
        &self,
        _args: acp::ReadTextFileRequest,
    ) -> Result<acp::ReadTextFileResponse, acp::Error> {
        self.counts.rpcs.set(self.counts.rpcs.get() + 1);
        Ok(acp::ReadTextFileResponse {
            content: FS_CONTENT.to_owned(),
            meta: None,
        })
    }

    async fn session_notification(&self, args: acp::SessionNotification) -> Result<(), acp::Error> {
        if let acp::SessionUpdate::AgentMessageChunk { .. } = args.update {
            self.counts.updates.set(self.counts.updates.get() + 1);
            self.counts.changed.notify_one();
        }
        Ok(())
    }

    async fn ext_method(&self, _args: acp::ExtRequest) -> Result<acp::ExtResponse, acp::Error> {
        Err(acp::Error::method_not_found())
    }

    async fn ext_notification(&self, _args: acp::ExtNotification) -> Result<(), acp::Error> {
        Ok(())
    }
}

type BoxError = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let started = Instant::now();
    let args = ClientArgs::from_env();
    let local_set = tokio::task::LocalSet::new();
    match local_set.run_until(run(&args, started)).await {
        Ok((line, agent_ok)) => {
            println!("{line}");
            rusage::report_or_warn(Role::Client, IMPL, started);
            if !agent_ok {
                eprintln!("official04-client: agent exited unsuccessfully");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("official04-client: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: &ClientArgs, started: Instant) -> Result<(String, bool), BoxError> {
    let scenario = args.scenario();
    let mut child = tokio::process::Command::new(&args.agent_program)
        .args(&args.agent_args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let outgoing = child.stdin.take().ok_or("no stdin")?.compat_write();
    let incoming = child.stdout.take().ok_or("no stdout")?.compat();

    let counts = Rc::new(Counts::default());
    let client = BenchClient {
        counts: counts.clone(),
    };
    let (conn, handle_io) = acp::ClientSideConnection::new(client, outgoing, incoming, |fut| {
        tokio::task::spawn_local(fut);
    });
    let io_task = tokio::task::spawn_local(handle_io);

    conn.initialize(acp::InitializeRequest {
        protocol_version: acp::V1,
        client_capabilities: acp::ClientCapabilities {
            fs: acp::FileSystemCapability {
                read_text_file: true,
                write_text_file: false,
                meta: None,
            },
            terminal: false,
            meta: None,
        },
        meta: None,
    })
    .await?;
    let session = conn
        .new_session(acp::NewSessionRequest {
            mcp_servers: Vec::new(),
            cwd: SESSION_CWD.into(),
            meta: None,
        })
        .await?;

    let tp = Instant::now();
    let response = conn
        .prompt(acp::PromptRequest {
            session_id: session.session_id,
            prompt: vec![args.prompt.clone().into()],
            meta: None,
        })
        .await?;
    if response.stop_reason != acp::StopReason::EndTurn {
        return Err(format!("stop reason {:?}", response.stop_reason).into());
    }
    while counts.updates.get() < scenario.expected_updates() {
        counts.changed.notified().await;
    }
    let prompt_ms = ms_since(tp);
    let total_ms = ms_since(started);

    // The I/O task owns the agent's stdin: ending it closes the pipe.
    io_task.abort();
    let _ = io_task.await;
    drop(conn);
    let status = match tokio::time::timeout(SHUTDOWN_GRACE, child.wait()).await {
        Ok(status) => status?,
        Err(_) => {
            child.kill().await?;
            child.wait().await?
        }
    };
    let line = result_line(
        IMPL,
        &args.prompt,
        counts.updates.get(),
        counts.rpcs.get(),
        prompt_ms,
        total_ms,
    );
    Ok((line, status.success()))
}
