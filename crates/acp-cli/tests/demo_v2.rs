//! The demo agent's v2 side (feature `unstable-protocol-v2`), driven by our v2 client over
//! real pipes through the version router, as `acp --serve-demo-agent` serves it: the thought,
//! the plan, the agent-side file read, the permission asked before the display terminal, the
//! terminal's output, and the reply.
#![cfg(feature = "unstable-protocol-v2")]

#[path = "../src/demo_agent.rs"]
mod demo_agent;
#[path = "../src/demo_agent_v2.rs"]
mod demo_agent_v2;

use std::sync::{Arc, Mutex};

use acp_runtime::acp_types::v2::*;
use acp_runtime::client::v2::{self, Author, Conversation};
use futures_lite::future;
use smol::Unblock;

#[derive(Clone, Default)]
struct Allows {
    chat: Arc<Mutex<Conversation>>,
}

impl v2::Client for Allows {
    async fn request_permission(
        &self,
        _: RequestPermissionRequest,
    ) -> acp_runtime::Result<RequestPermissionResponse> {
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new("allow")),
        ))
    }

    async fn session_update(&self, update: UpdateSessionNotification) {
        self.chat.lock().unwrap().apply(&update.update);
    }
}

#[test]
fn a_v2_client_gets_the_demo_turn_through_the_router() {
    let dir = std::env::temp_dir().join(format!("acp-demo-v2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let (agent_in, to_agent) = std::io::pipe().unwrap();
    let (from_agent, agent_out) = std::io::pipe().unwrap();
    let served = std::thread::spawn(move || {
        let router = acp_runtime::router::router()
            .with_v1(demo_agent::DemoAgent)
            .with_v2(demo_agent_v2::DemoAgentV2::default());
        let reader = futures_lite::io::BufReader::new(Unblock::new(agent_in));
        future::block_on(router.serve(reader, Unblock::new(agent_out))).unwrap();
    });
    let allows = Allows::default();
    let (agent, driver) = v2::connect(
        allows.clone(),
        futures_lite::io::BufReader::new(Unblock::new(from_agent)),
        Unblock::new(to_agent),
        Default::default(),
    );
    smol::spawn(driver).detach();
    let stop = smol::block_on(async {
        let init = agent
            .initialize(InitializeRequest::new(
                ProtocolVersion::V2,
                Implementation::new("t", "1"),
            ))
            .await
            .unwrap();
        assert_eq!(init.info.name, "acp-demo-agent");
        let session = agent
            .new_session(NewSessionRequest::new(dir.display().to_string()))
            .await
            .unwrap();
        let turn = agent
            .prompt(PromptRequest::new(
                session.session_id,
                vec![ContentBlock::from("Check")],
            ))
            .await
            .unwrap();
        turn.finished().await.unwrap()
    });
    assert_eq!(stop, IdleStateUpdateKind::EndTurn);
    let chat = allows.chat.lock().unwrap();
    let said: Vec<(Author, String)> = chat
        .messages()
        .iter()
        .map(|m| {
            let text = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            (m.author, text)
        })
        .collect();
    assert_eq!(said[0], (Author::User, "Check".to_owned()));
    assert_eq!(
        said[2].1,
        "Done. notes.txt has 3 lines, and the directory has 1 entries."
    );
    let statuses: Vec<_> = chat.tool_calls().iter().map(|c| c.status.clone()).collect();
    assert_eq!(
        statuses,
        [
            Some(ToolCallStatus::Completed),
            Some(ToolCallStatus::Completed)
        ]
    );
    let terminal = &chat.terminals()[0];
    assert_eq!(terminal.text(), "notes.txt\n");
    assert_eq!(terminal.command.as_deref(), Some("ls -1"));
    assert!(
        matches!(&chat.plans()[0].1, PlanUpdateContent::Items(items) if items.entries.iter().all(|e| e.status == PlanEntryStatus::Completed))
    );
    drop(chat);
    agent.close();
    served.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
