//! The runtime on tokio: the demo agent and a client, each connection driver a tokio task,
//! talking over `tokio::io::duplex` adapted with `tokio_util::compat`. One full prompt turn:
//! thought, plan, a file read and a file write served by the client's `FsHost`, a command run
//! in the client's `TerminalHost`, a permission request, streamed text, `end_turn`.
//!
//! What still uses smol underneath, and works here because it needs no smol executor on the
//! calling thread: the terminal host's output collector (`smol::spawn`, on smol's global
//! executor, which starts its own thread), `Terminal::run_with_timeout`'s timer and the
//! watchdog below (async-io timers, driven by async-io's own thread), and the file-system host
//! (`smol::unblock`, a blocking thread pool).
#![cfg(unix)]

#[path = "../examples/shared/demo_agent.rs"]
mod demo_agent;

use std::path::PathBuf;
use std::time::Duration;

use acp_runtime::agent;
use acp_runtime::client::{self, AutoAllow, ClientOptions, ToolCallState};
use acp_runtime::fs::FsHost;
use acp_runtime::terminal::TerminalHost;
use acp_types::*;
use futures_lite::io::BufReader;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// Fails the test instead of hanging it.
async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    futures_lite::future::or(future, async {
        smol::Timer::after(Duration::from_secs(20)).await;
        panic!("timed out: {what}")
    })
    .await
}

/// A scratch project with `notes.txt`, removed on drop.
struct Project(PathBuf);

impl Project {
    fn new(name: &str) -> Project {
        let dir = std::env::temp_dir()
            .canonicalize()
            .unwrap()
            .join(format!("acp-tokio-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("notes.txt"),
            "buy milk\nship the release\ncall Ada\n",
        )
        .unwrap();
        Project(dir)
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn full_turn(project: &Project) {
    let (client_io, agent_io) = tokio::io::duplex(64 * 1024);

    // The agent: tokio I/O halves, adapted to the futures-io traits the runtime takes.
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (_client, agent_driver) = agent::serve(
        demo_agent::DemoAgent,
        BufReader::new(agent_read.compat()),
        agent_write.compat_write(),
        agent::AgentOptions::default(),
    );
    let agent_task = tokio::spawn(agent_driver);

    // The client, with the runtime's file-system and terminal hosts.
    let (client_read, client_write) = tokio::io::split(client_io);
    let options = ClientOptions::default()
        .with_file_system(FsHost::new())
        .with_terminals(TerminalHost::new());
    let (agent, client_driver) = client::connect(
        AutoAllow,
        BufReader::new(client_read.compat()),
        client_write.compat_write(),
        options,
    );
    let client_task = tokio::spawn(client_driver);

    let init = within("initialize", agent.initialize()).await.unwrap();
    assert_eq!(init.agent_info.unwrap().name, "acp-demo-agent");
    let session = within("session/new", agent.new_session(&project.0))
        .await
        .unwrap();

    let mut turn = session
        .prompt(vec!["Summarize my notes".into()])
        .await
        .unwrap();
    let mut updates = Vec::new();
    while let Some(update) = within("an update", turn.next()).await {
        updates.push(update.unwrap());
    }
    let response = within("the end of the turn", turn.end()).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);

    let thought = updates
        .iter()
        .any(|u| matches!(u, SessionUpdate::AgentThoughtChunk(_)));
    assert!(thought, "no thought in {updates:?}");
    let plans = updates
        .iter()
        .filter(|u| matches!(u, SessionUpdate::Plan(_)))
        .count();
    assert_eq!(plans, 4, "the plan is sent at each of its 4 stages");
    for call in ["read_notes", "list_dir", "write_summary"] {
        assert_eq!(
            session.tool_call(&ToolCallId::new(call)),
            Some(ToolCallState::Reported(Some(ToolCallStatus::Completed))),
            "tool call {call}"
        );
    }
    let text: String = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => chunk.content.as_text(),
            _ => None,
        })
        .collect();
    assert_eq!(
        text,
        "Done. notes.txt has 3 lines, and I wrote summary.txt."
    );
    let summary = std::fs::read_to_string(project.0.join("summary.txt")).unwrap();
    assert_eq!(
        summary,
        "3 lines of notes; the user asked \"Summarize my notes\"\n"
    );

    // Closing the client ends both drivers cleanly.
    agent.close();
    within("the client driver", client_task)
        .await
        .unwrap()
        .unwrap();
    within("the agent driver", agent_task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn full_turn_on_current_thread_runtime() {
    full_turn(&Project::new("current-thread")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_turn_on_multi_thread_runtime() {
    full_turn(&Project::new("multi-thread")).await;
}
