//! Snapshot tests as a user of the kit writes them: an agent against the scripted client, a
//! client against the scripted agent, in every rendering.

use std::time::Duration;

use acp_runtime::Result;
use acp_runtime::agent::{self, Agent, ClientHandle, Turn};
use acp_runtime::client::{Client, ClientOptions};
use acp_test::{
    AgentEvent, FakeCommand, Normalizer, PermissionAnswer, ScriptedAgent, ScriptedClient, Step,
    TempDir,
};
use acp_types::*;

/// An agent under test: runs the tests in a client terminal, asks before fixing, edits the
/// file through the client.
struct Fixer;

impl Agent for Fixer {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let file = request.prompt[0].as_text().unwrap_or_default().to_owned();
        let terminal = turn.create_terminal("cargo", ["test"]).await?;
        turn.tool_call(
            ToolCall::new("tests", "cargo test")
                .with_kind(ToolKind::Execute)
                .add_content(terminal.tool_call_content()),
        )
        .await?;
        let result = terminal.run_with_timeout(Duration::from_secs(5)).await?;
        terminal.release().await?;
        if result.exit_status.and_then(|s| s.exit_code) == Some(0) {
            turn.message("The tests pass.").await?;
            return Ok(StopReason::EndTurn.into());
        }
        turn.tool_call(ToolCall::new("fix", format!("Fix {file}")).with_kind(ToolKind::Edit))
            .await?;
        let options = vec![PermissionOption::new(
            "yes",
            "Fix it",
            PermissionOptionKind::AllowOnce,
        )];
        let outcome = turn
            .request_permission(ToolCallUpdate::new("fix"), options)
            .await?;
        if matches!(outcome, RequestPermissionOutcome::Selected(_)) {
            let old = turn.read_text_file(&file).await?;
            turn.write_text_file(&file, old.replace("- 1", "+ 1"))
                .await?;
            turn.tool_call_update(
                ToolCallUpdate::new("fix").with_status(ToolCallStatus::Completed),
            )
            .await?;
        }
        Ok(StopReason::EndTurn.into())
    }
}

#[test]
fn an_agent_against_the_scripted_client() {
    smol::block_on(async {
        let dir = TempDir::new();
        let lib = dir.join("src/lib.rs");
        let client = ScriptedClient::new()
            .file(&lib, "fn next(n: u32) -> u32 { n - 1 }\n")
            .command(
                "cargo test",
                FakeCommand::new("test next ... FAILED\n").exit_code(101),
            );
        let pair = acp_test::connect_scripted(Fixer, &client).with_temp_dir(&dir);
        pair.agent().initialize().await.unwrap();
        let session = pair.agent().new_session(dir.path()).await.unwrap();
        let turn = session.prompt(vec![lib.clone().into()]).await.unwrap();
        turn.end().await.unwrap();
        let transcript = pair.finish().await;

        assert_eq!(client.files()[&lib], "fn next(n: u32) -> u32 { n + 1 }\n");
        acp_test::assert_transcript!(transcript);
        acp_test::insta::assert_snapshot!("fixer_outline", transcript.outline());
    });
}

/// A client under test: counts the updates it sees and rejects edits.
#[derive(Default)]
struct Cautious {
    seen: std::sync::Mutex<Vec<String>>,
}

impl Client for Cautious {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        let reject = request
            .options
            .iter()
            .find(|o| o.kind == PermissionOptionKind::RejectOnce);
        Ok(RequestPermissionResponse::new(
            reject.map_or(RequestPermissionOutcome::Cancelled, |o| {
                RequestPermissionOutcome::selected(o.option_id.clone())
            }),
        ))
    }

    async fn session_update(&self, notification: &SessionNotification) {
        let tag = serde_json::to_value(&notification.update).unwrap()["sessionUpdate"].clone();
        self.seen.lock().unwrap().push(tag.to_string());
    }
}

#[test]
fn a_client_against_the_scripted_agent() {
    smol::block_on(async {
        let agent = ScriptedAgent::new()
            .turn([
                Step::plan(vec![PlanEntry::new(
                    "Edit the file",
                    PlanEntryPriority::High,
                    PlanEntryStatus::InProgress,
                )]),
                Step::tool_call(ToolCall::new("edit", "Edit a.txt").with_kind(ToolKind::Edit)),
                Step::permission("edit")
                    .on_allow([Step::write_file("a.txt", "edited")])
                    .on_reject([Step::message("Not editing.")])
                    .into(),
            ])
            .turn([Step::message("Waiting..."), Step::wait_for_cancel()]);
        let dir = TempDir::new();
        let pair = acp_test::connect(agent.clone(), Cautious::default(), ClientOptions::default())
            .with_temp_dir(&dir);
        pair.agent().initialize().await.unwrap();
        let session = pair.agent().new_session(dir.path()).await.unwrap();
        let mut turn = session.prompt(vec!["Edit a.txt".into()]).await.unwrap();
        // Take every update: those left over would come first from the next turn's `next`.
        while turn.next().await.is_some() {}
        assert_eq!(turn.end().await.unwrap().stop_reason, StopReason::EndTurn);

        let mut turn = session.prompt(vec!["Go on".into()]).await.unwrap();
        assert!(turn.next().await.is_some(), "the message comes first");
        session.cancel().await.unwrap();
        assert_eq!(turn.end().await.unwrap().stop_reason, StopReason::Cancelled);

        let events = agent.events();
        assert!(events.iter().any(|e| matches!(
            e,
            AgentEvent::Permission { outcome: Ok(RequestPermissionOutcome::Selected(s)), .. }
                if s.option_id == "reject"
        )));
        assert!(matches!(events.last(), Some(AgentEvent::Cancelled(_))));
        acp_test::assert_transcript!("cautious_client", pair.finish().await);
    });
}

#[test]
fn pretty_rendering_and_redaction() {
    smol::block_on(async {
        let agent = ScriptedAgent::new()
            .on_initialize(|response| {
                response.agent_info = Some(Implementation::new("my-agent", "9.9.9"));
            })
            .turn([Step::update(SessionUpdate::UsageUpdate(UsageUpdate::new(
                4321u64, 200000u64,
            )))]);
        let client = ScriptedClient::new();
        let dir = TempDir::new();
        let normalizer = Normalizer::new()
            .temp_dir(&dir)
            .redact(|message| {
                if let Some(update) = message.pointer_mut("/params/update")
                    && update["sessionUpdate"] == "usage_update"
                {
                    update["used"] = "<used>".into();
                }
            })
            .redact_field("clientCapabilities", "<redacted>");
        let pair = acp_test::connect_scripted(agent, &client).with_normalizer(normalizer);
        pair.agent().initialize().await.unwrap();
        let session = pair.agent().new_session(dir.path()).await.unwrap();
        session
            .prompt(vec!["How much context is left?".into()])
            .await
            .unwrap()
            .end()
            .await
            .unwrap();
        let transcript = pair.finish().await;
        let updates = transcript.filter(|e| e.method() == Some("session/update"));
        acp_test::insta::assert_snapshot!(updates.render_pretty());
        acp_test::insta::assert_snapshot!(transcript.render());
    });
}

#[test]
fn permission_answers_in_order_then_the_default() {
    smol::block_on(async {
        let turn = |id: &str| {
            [Step::permission(id.to_owned())
                .options(vec![
                    PermissionOption::new("always", "Always", PermissionOptionKind::AllowAlways),
                    PermissionOption::new("once", "Once", PermissionOptionKind::AllowOnce),
                    PermissionOption::new("no", "No", PermissionOptionKind::RejectAlways),
                ])
                .into()]
        };
        let agent = ScriptedAgent::new()
            .turn(turn("a"))
            .turn(turn("b"))
            .turn(turn("c"))
            .turn(turn("d"))
            .turn(turn("e"));
        let client = ScriptedClient::new()
            .permission(PermissionAnswer::Kind(PermissionOptionKind::AllowAlways))
            .permission(PermissionAnswer::Reject)
            .permission(PermissionAnswer::Option("once".into()))
            .permission(PermissionAnswer::with(|request| {
                RequestPermissionOutcome::selected(request.options[2].option_id.clone())
            }))
            .default_permission(PermissionAnswer::Cancelled);
        let pair = acp_test::connect_scripted(agent.clone(), &client);
        pair.agent().initialize().await.unwrap();
        let session = pair.agent().new_session("/").await.unwrap();
        for _ in 0..5 {
            session
                .prompt(vec!["go".into()])
                .await
                .unwrap()
                .end()
                .await
                .unwrap();
        }
        pair.finish().await;
        let chosen: Vec<String> = agent
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::Permission { outcome, .. } => Some(match outcome.unwrap() {
                    RequestPermissionOutcome::Selected(s) => s.option_id.to_string(),
                    other => format!("{other:?}"),
                }),
                _ => None,
            })
            .collect();
        assert_eq!(chosen, ["always", "no", "once", "no", "Cancelled"]);
        assert_eq!(client.calls_to("session/request_permission").len(), 5);
    });
}

#[test]
fn fake_terminals_honour_limits_kill_and_release() {
    smol::block_on(async {
        let agent = ScriptedAgent::new().turn([
            Step::terminal("yes", Vec::<String>::new())
                .output_byte_limit(4)
                .into(),
            Step::terminal("missing-tool", ["--flag"]).into(),
        ]);
        let client = ScriptedClient::new().command("yes", FakeCommand::new("y\ny\ny\n"));
        let pair = acp_test::connect_scripted(agent.clone(), &client);
        pair.agent().initialize().await.unwrap();
        let session = pair.agent().new_session("/").await.unwrap();
        session
            .prompt(vec!["go".into()])
            .await
            .unwrap()
            .end()
            .await
            .unwrap();
        pair.finish().await;
        let outputs: Vec<(String, Option<u32>, bool)> = agent
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::Terminal { result, .. } => {
                    let output = result.unwrap();
                    Some((
                        output.output,
                        output.exit_status.and_then(|s| s.exit_code),
                        output.truncated,
                    ))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            outputs,
            [
                ("y\ny\n".to_owned(), Some(0), true),
                (
                    "missing-tool: command not found\n".to_owned(),
                    Some(127),
                    false
                ),
            ]
        );
    });
}

/// A hanging command ends only when killed; `run_with_timeout` does that.
#[test]
fn a_hanging_fake_command_is_killed() {
    struct Runner;
    impl Agent for Runner {
        async fn new_session(
            &self,
            _: NewSessionRequest,
            _: &ClientHandle,
        ) -> Result<NewSessionResponse> {
            Ok(NewSessionResponse::new("s"))
        }
        async fn prompt(&self, _: PromptRequest, turn: Turn) -> Result<PromptResponse> {
            let terminal = turn.create_terminal("serve", Vec::<String>::new()).await?;
            let result = terminal.run_with_timeout(Duration::from_millis(50)).await?;
            assert!(result.timed_out);
            let signal = result.exit_status.and_then(|s| s.signal);
            turn.message(signal.unwrap_or_default()).await?;
            terminal.release().await?;
            Ok(StopReason::EndTurn.into())
        }
    }
    smol::block_on(async {
        let client = ScriptedClient::new().command("serve", FakeCommand::hanging("listening\n"));
        let pair = acp_test::connect_scripted(Runner, &client);
        pair.agent().initialize().await.unwrap();
        let session = pair.agent().new_session("/").await.unwrap();
        let mut turn = session.prompt(vec!["go".into()]).await.unwrap();
        let Some(Ok(SessionUpdate::AgentMessageChunk(chunk))) = turn.next().await else {
            panic!("a message");
        };
        assert_eq!(chunk.content.as_text(), Some("SIGKILL"));
        turn.end().await.unwrap();
        let transcript = pair.finish().await;
        let methods: Vec<&str> = transcript.iter().filter_map(|e| e.method()).collect();
        assert!(methods.contains(&"terminal/kill"), "{methods:?}");
    });
}
