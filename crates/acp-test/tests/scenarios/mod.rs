//! The scenarios behind `fixtures/transcripts/*.jsonl`: for each, the scripted agent, the
//! scripted client, and the client's side of the conversation (`drive`). Recording one with
//! `Pair` produces its fixture (see `regenerate_fixtures` in `tests/fixtures.rs`); replaying
//! the fixture against the same agent, or the same client and drive, must reproduce it.

// Each test file uses some of the scenarios.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use acp_runtime::client::{AgentHandle, ToolCallState};
use acp_test::{FakeCommand, PermissionAnswer, ScriptedAgent, ScriptedClient, Step};
use acp_types::*;
use serde_json::json;

/// What the client side of a scenario gets.
pub struct Ctx {
    /// The client's handle on the agent.
    pub agent: AgentHandle,
    /// The scripted client serving the agent's calls.
    pub client: ScriptedClient,
    /// The session directory (`<tmp>` in the fixture).
    pub dir: PathBuf,
}

impl Ctx {
    fn path(&self, relative: &str) -> String {
        self.dir.join(relative).to_string_lossy().into_owned()
    }
}

pub type Drive = fn(Ctx) -> Pin<Box<dyn Future<Output = ()>>>;

pub struct Scenario {
    /// The fixture's file name, without `.jsonl`.
    pub name: &'static str,
    pub agent: fn(&Path) -> ScriptedAgent,
    pub client: fn(&Path) -> ScriptedClient,
    pub drive: Drive,
    /// Whether the client may send its messages of one run in another order (a cancel racing
    /// the answer to a pending permission request).
    pub client_order_varies: bool,
}

fn path(dir: &Path, relative: &str) -> String {
    dir.join(relative).to_string_lossy().into_owned()
}

const WAIT: Duration = Duration::from_secs(5);

/// Runs one prompt to its end, taking every update; returns the stop reason.
async fn prompt(session: &acp_runtime::client::Session, text: &str) -> StopReason {
    let mut turn = session.prompt(vec![text.into()]).await.unwrap();
    while turn.next().await.is_some() {}
    turn.end().await.unwrap().stop_reason
}

async fn new_session(ctx: &Ctx) -> acp_runtime::client::Session {
    ctx.agent.new_session(&ctx.dir).await.unwrap()
}

async fn initialize(ctx: &Ctx) -> InitializeResponse {
    ctx.agent.initialize().await.unwrap()
}

/// `initialize`: capabilities and implementation info both ways.
pub fn initialize_scenario() -> Scenario {
    Scenario {
        name: "initialize",
        agent: |_| {
            ScriptedAgent::new().on_initialize(|response| {
                let caps = &mut response.agent_capabilities;
                caps.prompt_capabilities.image = true;
                caps.prompt_capabilities.embedded_context = true;
                caps.mcp_capabilities.http = true;
            })
        },
        client: |_| ScriptedClient::new(),
        drive: |ctx| {
            Box::pin(async move {
                let response = initialize(&ctx).await;
                assert_eq!(response.protocol_version, ProtocolVersion::V1);
                assert!(response.agent_capabilities.prompt_capabilities.image);
            })
        },
        client_order_varies: false,
    }
}

/// A client offering a newer version than the agent speaks: the agent answers its latest (1),
/// which the client speaks, and the connection goes on.
pub fn version_negotiation_scenario() -> Scenario {
    Scenario {
        name: "version_negotiation",
        agent: |_| ScriptedAgent::new(),
        client: |_| ScriptedClient::new(),
        drive: |ctx| {
            Box::pin(async move {
                let mut request = InitializeRequest::new(ProtocolVersion(2));
                request.client_capabilities = ctx.client.options().capabilities().clone();
                request.client_info = Some(Implementation::new("acp-test", "2.0.0"));
                let response = ctx.agent.initialize_with(request).await.unwrap();
                assert_eq!(response.protocol_version, ProtocolVersion::V1);
                new_session(&ctx).await;
            })
        },
        client_order_varies: false,
    }
}

/// `session/new`, then `session/load` of a stored session: the agent replays its history as
/// updates before answering, and the conversation goes on in the loaded session.
pub fn session_new_and_load_scenario() -> Scenario {
    Scenario {
        name: "session_new_and_load",
        agent: |dir| {
            ScriptedAgent::new()
                .load_session([
                    SessionUpdate::user_message_chunk("Rename notes.txt to todo.txt"),
                    SessionUpdate::ToolCall(
                        ToolCall::new("call_1", "Rename notes.txt")
                            .with_kind(ToolKind::Move)
                            .with_status(ToolCallStatus::Completed)
                            .add_location(path(dir, "todo.txt")),
                    ),
                    SessionUpdate::agent_message_chunk("Done: notes.txt is now todo.txt."),
                ])
                .turn([Step::message("We renamed notes.txt to todo.txt.")])
        },
        client: |_| ScriptedClient::new(),
        drive: |ctx| {
            Box::pin(async move {
                let info = initialize(&ctx).await;
                assert!(info.agent_capabilities.load_session);
                new_session(&ctx).await;
                let request = LoadSessionRequest::new(
                    Vec::<McpServer>::new(),
                    ctx.dir.to_string_lossy(),
                    "stored-session-7",
                );
                let (session, _) = ctx.agent.load_session(request).await.unwrap();
                let mut replayed = Vec::new();
                while let Some(update) = session.try_next_update() {
                    replayed.push(update.unwrap());
                }
                assert_eq!(replayed.len(), 3, "the history arrives before the answer");
                let stop = prompt(&session, "What did we do?").await;
                assert_eq!(stop, StopReason::EndTurn);
            })
        },
        client_order_varies: false,
    }
}

/// A prompt answered by a thought and a message streamed in chunks.
pub fn prompt_chunks_scenario() -> Scenario {
    Scenario {
        name: "prompt_chunks",
        agent: |_| {
            ScriptedAgent::new().turn([
                Step::thought("The user greets me; a short answer will do."),
                Step::message("Hello"),
                Step::message("! How can"),
                Step::message(" I help?"),
            ])
        },
        client: |_| ScriptedClient::new(),
        drive: |ctx| {
            Box::pin(async move {
                initialize(&ctx).await;
                let session = new_session(&ctx).await;
                let mut turn = session.prompt(vec!["Hello".into()]).await.unwrap();
                let mut text = String::new();
                while let Some(update) = turn.next().await {
                    if let SessionUpdate::AgentMessageChunk(chunk) = update.unwrap() {
                        text.push_str(chunk.content.as_text().unwrap_or_default());
                    }
                }
                assert_eq!(text, "Hello! How can I help?");
                assert_eq!(turn.end().await.unwrap().stop_reason, StopReason::EndTurn);
            })
        },
        client_order_varies: false,
    }
}

fn plan(statuses: [PlanEntryStatus; 3]) -> Step {
    let steps = [
        ("Find the failing test", PlanEntryPriority::High),
        ("Fix the off-by-one error", PlanEntryPriority::High),
        ("Run the whole suite", PlanEntryPriority::Medium),
    ];
    Step::plan(
        steps
            .into_iter()
            .zip(statuses)
            .map(|((content, priority), status)| PlanEntry::new(content, priority, status))
            .collect(),
    )
}

/// A plan sent whole each time, its entries moving from pending to completed.
pub fn plan_scenario() -> Scenario {
    use PlanEntryStatus::{Completed, InProgress, Pending};
    Scenario {
        name: "plan",
        agent: |_| {
            ScriptedAgent::new().turn([
                plan([Pending, Pending, Pending]),
                plan([InProgress, Pending, Pending]),
                plan([Completed, InProgress, Pending]),
                plan([Completed, Completed, InProgress]),
                plan([Completed, Completed, Completed]),
                Step::message("The three steps are done."),
            ])
        },
        client: |_| ScriptedClient::new(),
        drive: |ctx| {
            Box::pin(async move {
                initialize(&ctx).await;
                let session = new_session(&ctx).await;
                let stop = prompt(&session, "Fix the failing test").await;
                assert_eq!(stop, StopReason::EndTurn);
            })
        },
        client_order_varies: false,
    }
}

/// Two tool calls that ask permission: the first allowed (the agent writes the file), the
/// second rejected (the tool call fails, nothing is deleted).
pub fn tool_call_permission_scenario() -> Scenario {
    Scenario {
        name: "tool_call_permission",
        agent: |dir| {
            ScriptedAgent::new()
                .turn([
                    Step::tool_call(
                        ToolCall::new("call_1", "Write summary.txt")
                            .with_kind(ToolKind::Edit)
                            .with_status(ToolCallStatus::Pending)
                            .add_location(path(dir, "summary.txt")),
                    ),
                    Step::permission("call_1")
                        .on_allow([
                            Step::tool_call_update(
                                ToolCallUpdate::new("call_1")
                                    .with_status(ToolCallStatus::InProgress),
                            ),
                            Step::write_file("summary.txt", "Two notes.\n"),
                            Step::tool_call_update(
                                ToolCallUpdate::new("call_1")
                                    .with_status(ToolCallStatus::Completed),
                            ),
                            Step::message("I wrote summary.txt."),
                        ])
                        .on_reject([Step::tool_call_update(
                            ToolCallUpdate::new("call_1").with_status(ToolCallStatus::Failed),
                        )])
                        .into(),
                ])
                .turn([
                    Step::tool_call(
                        ToolCall::new("call_2", "Delete notes.txt")
                            .with_kind(ToolKind::Delete)
                            .with_status(ToolCallStatus::Pending)
                            .add_location(path(dir, "notes.txt")),
                    ),
                    Step::permission("call_2")
                        .options(vec![
                            PermissionOption::new(
                                "allow-once",
                                "Allow once",
                                PermissionOptionKind::AllowOnce,
                            ),
                            PermissionOption::new(
                                "allow-always",
                                "Always allow deleting",
                                PermissionOptionKind::AllowAlways,
                            ),
                            PermissionOption::new(
                                "reject-once",
                                "Reject",
                                PermissionOptionKind::RejectOnce,
                            ),
                        ])
                        .on_allow([Step::tool_call_update(
                            ToolCallUpdate::new("call_2").with_status(ToolCallStatus::Completed),
                        )])
                        .on_reject([
                            Step::tool_call_update(
                                ToolCallUpdate::new("call_2").with_status(ToolCallStatus::Failed),
                            ),
                            Step::message("Understood, notes.txt stays."),
                        ])
                        .into(),
                ])
        },
        client: |_| {
            ScriptedClient::new()
                .permission(PermissionAnswer::Allow)
                .permission(PermissionAnswer::Reject)
        },
        drive: |ctx| {
            Box::pin(async move {
                initialize(&ctx).await;
                let session = new_session(&ctx).await;
                prompt(&session, "Summarize my notes into summary.txt").await;
                prompt(&session, "Now delete notes.txt").await;
                let files = ctx.client.files();
                assert_eq!(files[&ctx.path("summary.txt")], "Two notes.\n");
                assert_eq!(
                    session.tool_call(&"call_2".into()),
                    Some(ToolCallState::Reported(Some(ToolCallStatus::Failed)))
                );
            })
        },
        client_order_varies: false,
    }
}

const OLD_MAIN: &str = "fn main() {\n    println!(\"Hello, world!\");\n}\n";
const NEW_MAIN: &str = "fn main() {\n    println!(\"Hello, ACP!\");\n}\n";

/// An edit shown as a diff: read the file, write it, report the change as diff content.
pub fn diff_scenario() -> Scenario {
    Scenario {
        name: "diff",
        agent: |dir| {
            let file = path(dir, "src/main.rs");
            let mut diff = Diff::new(&file, NEW_MAIN);
            diff.old_text = Some(OLD_MAIN.to_owned());
            ScriptedAgent::new().turn([
                Step::tool_call(
                    ToolCall::new("call_1", "Edit src/main.rs")
                        .with_kind(ToolKind::Edit)
                        .with_status(ToolCallStatus::InProgress)
                        .add_location(&file),
                ),
                Step::read_file("src/main.rs"),
                Step::write_file("src/main.rs", NEW_MAIN),
                Step::tool_call_update(
                    ToolCallUpdate::new("call_1")
                        .with_status(ToolCallStatus::Completed)
                        .add_content(diff),
                ),
                Step::message("The greeting now says hello to ACP."),
            ])
        },
        client: |dir| ScriptedClient::new().file(path(dir, "src/main.rs"), OLD_MAIN),
        drive: |ctx| {
            Box::pin(async move {
                initialize(&ctx).await;
                let session = new_session(&ctx).await;
                prompt(&session, "Greet ACP instead of the world").await;
                assert_eq!(ctx.client.files()[&ctx.path("src/main.rs")], NEW_MAIN);
            })
        },
        client_order_varies: false,
    }
}

/// A command run in a client terminal, embedded in its tool call: create, show, wait for the
/// exit, read the output, release.
pub fn terminal_scenario() -> Scenario {
    Scenario {
        name: "terminal",
        agent: |_| {
            ScriptedAgent::new().turn([
                Step::terminal("cargo", ["test", "--quiet"])
                    .output_byte_limit(65536)
                    .in_tool_call(
                        ToolCall::new("call_1", "Run the tests")
                            .with_kind(ToolKind::Execute)
                            .with_status(ToolCallStatus::InProgress),
                    )
                    .into(),
                Step::tool_call_update(
                    ToolCallUpdate::new("call_1")
                        .with_status(ToolCallStatus::Completed)
                        .with_raw_output(json!({ "exitCode": 0 })),
                ),
                Step::message("All 3 tests pass."),
            ])
        },
        client: |_| {
            ScriptedClient::new().command(
                "cargo test --quiet",
                FakeCommand::new("running 3 tests\n...\ntest result: ok. 3 passed; 0 failed\n"),
            )
        },
        drive: |ctx| {
            Box::pin(async move {
                initialize(&ctx).await;
                let session = new_session(&ctx).await;
                prompt(&session, "Run the tests").await;
                assert_eq!(ctx.client.calls_to("terminal/release").len(), 1);
            })
        },
        client_order_varies: false,
    }
}

/// The user cancels while a permission request is pending: the client sends `session/cancel`
/// and answers the request `cancelled`; the agent ends the turn with `cancelled`.
pub fn cancel_pending_permission_scenario() -> Scenario {
    Scenario {
        name: "cancel_pending_permission",
        agent: |dir| {
            ScriptedAgent::new().turn([
                Step::tool_call(
                    ToolCall::new("call_1", "Delete the build directory")
                        .with_kind(ToolKind::Delete)
                        .with_status(ToolCallStatus::Pending)
                        .add_location(path(dir, "build")),
                ),
                Step::permission("call_1")
                    .on_allow([Step::tool_call_update(
                        ToolCallUpdate::new("call_1").with_status(ToolCallStatus::Completed),
                    )])
                    .into(),
            ])
        },
        client: |_| ScriptedClient::new().permission(PermissionAnswer::Pending),
        drive: |ctx| {
            Box::pin(async move {
                initialize(&ctx).await;
                let session = new_session(&ctx).await;
                let mut turn = session.prompt(vec!["Clean up".into()]).await.unwrap();
                // The prompt goes out when the turn is first polled: take the tool call.
                let first = turn.next().await;
                assert!(matches!(first, Some(Ok(SessionUpdate::ToolCall(_)))));
                ctx.client
                    .wait_for_calls("session/request_permission", 1, WAIT)
                    .await;
                session.cancel().await.unwrap();
                assert_eq!(turn.end().await.unwrap().stop_reason, StopReason::Cancelled);
                assert_eq!(
                    session.tool_call(&"call_1".into()),
                    Some(ToolCallState::Cancelled)
                );
            })
        },
        client_order_varies: true,
    }
}

fn modes() -> SessionModeState {
    let mode = |id: &str, name: &str, description: &str| {
        let mut mode = SessionMode::new(id, name);
        mode.description = Some(description.to_owned());
        mode
    };
    SessionModeState::new(
        "ask",
        vec![
            mode("ask", "Ask", "Request permission before making any changes"),
            mode(
                "architect",
                "Architect",
                "Design and plan without implementing",
            ),
            mode(
                "code",
                "Code",
                "Write and modify code with full tool access",
            ),
        ],
    )
}

/// Modes: the session advertises them, the client switches to `architect`, and the agent
/// leaves plan mode itself through a permission-gated tool call (`current_mode_update`).
pub fn session_modes_scenario() -> Scenario {
    Scenario {
        name: "session_modes",
        agent: |_| {
            ScriptedAgent::new().modes(modes()).turn([
                Step::message("Plan: extract the parser, then test it."),
                Step::tool_call(
                    ToolCall::new("call_1", "Ready for Code mode")
                        .with_kind(ToolKind::SwitchMode)
                        .with_status(ToolCallStatus::Pending),
                ),
                Step::permission("call_1")
                    .on_allow([
                        Step::update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                            "code",
                        ))),
                        Step::tool_call_update(
                            ToolCallUpdate::new("call_1").with_status(ToolCallStatus::Completed),
                        ),
                    ])
                    .into(),
            ])
        },
        client: |_| ScriptedClient::new(),
        drive: |ctx| {
            Box::pin(async move {
                initialize(&ctx).await;
                let session = new_session(&ctx).await;
                assert_eq!(session.modes().unwrap().current_mode_id.as_str(), "ask");
                session.set_mode("architect").await.unwrap();
                prompt(&session, "Plan the refactor").await;
                assert_eq!(session.modes().unwrap().current_mode_id.as_str(), "code");
            })
        },
        client_order_varies: false,
    }
}

fn config_options(mode: &str, model: &str) -> Vec<SessionConfigOption> {
    let value = |value: &str, name: &str, description: &str| {
        let mut option = SessionConfigSelectOption::new(value, name);
        option.description = Some(description.to_owned());
        option
    };
    let mut mode_option = SessionConfigOption::new(
        "mode",
        "Session Mode",
        SessionConfigSelect::new(
            mode,
            vec![
                value("ask", "Ask", "Request permission before making any changes"),
                value(
                    "code",
                    "Code",
                    "Write and modify code with full tool access",
                ),
            ],
        ),
    );
    mode_option.category = Some(SessionConfigOptionCategory::Mode);
    let mut model_option = SessionConfigOption::new(
        "model",
        "Model",
        SessionConfigSelect::new(
            model,
            vec![
                value("model-1", "Model 1", "The fastest model"),
                value("model-2", "Model 2", "The most powerful model"),
            ],
        ),
    );
    model_option.category = Some(SessionConfigOptionCategory::Model);
    vec![mode_option, model_option]
}

/// Config options: advertised by `session/new`, set by the client (the answer is the whole
/// state), changed by the agent (`config_option_update`, the whole state again).
pub fn config_options_scenario() -> Scenario {
    Scenario {
        name: "config_options",
        agent: |_| {
            ScriptedAgent::new()
                .config_options(config_options("ask", "model-1"))
                .turn([
                    Step::update(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
                        config_options("code", "model-2"),
                    ))),
                    Step::message("Switched to Code mode to make the change."),
                ])
        },
        client: |_| ScriptedClient::new(),
        drive: |ctx| {
            Box::pin(async move {
                initialize(&ctx).await;
                let session = new_session(&ctx).await;
                let state = session.set_config_option("model", "model-2").await.unwrap();
                assert_eq!(state, config_options("ask", "model-2"));
                prompt(&session, "Make the change").await;
                assert_eq!(
                    session.config_options().unwrap(),
                    config_options("code", "model-2")
                );
            })
        },
        client_order_varies: false,
    }
}

fn commands() -> Vec<AvailableCommand> {
    let with_hint = |name: &str, description: &str, hint: &str| {
        let mut command = AvailableCommand::new(name, description);
        command.input = Some(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(hint),
        ));
        command
    };
    vec![
        with_hint(
            "web",
            "Search the web for information",
            "query to search for",
        ),
        AvailableCommand::new("test", "Run tests for the current project"),
        with_hint(
            "plan",
            "Create a detailed implementation plan",
            "description of what to plan",
        ),
    ]
}

/// Slash commands: advertised with `available_commands_update`, then run as a prompt whose
/// text starts with the command.
pub fn slash_commands_scenario() -> Scenario {
    Scenario {
        name: "slash_commands",
        agent: |_| {
            ScriptedAgent::new()
                .turn([
                    Step::update(SessionUpdate::AvailableCommandsUpdate(
                        AvailableCommandsUpdate::new(commands()),
                    )),
                    Step::message("Hi! Try /web, /test or /plan."),
                ])
                .turn([
                    Step::tool_call(
                        ToolCall::new("call_1", "Searching the web")
                            .with_kind(ToolKind::Fetch)
                            .with_status(ToolCallStatus::Completed),
                    ),
                    Step::message("The Agent Client Protocol connects editors and agents."),
                ])
        },
        client: |_| ScriptedClient::new(),
        drive: |ctx| {
            Box::pin(async move {
                initialize(&ctx).await;
                let session = new_session(&ctx).await;
                let mut turn = session.prompt(vec!["Hi".into()]).await.unwrap();
                let mut advertised = Vec::new();
                while let Some(update) = turn.next().await {
                    if let SessionUpdate::AvailableCommandsUpdate(update) = update.unwrap() {
                        advertised = update.available_commands;
                    }
                }
                turn.end().await.unwrap();
                assert_eq!(advertised.len(), 3);
                prompt(&session, "/web agent client protocol").await;
            })
        },
        client_order_varies: false,
    }
}

async fn raw_request(agent: &AgentHandle, method: &str, params: serde_json::Value) {
    let params = serde_json::value::to_raw_value(&params).unwrap();
    let answer = agent.connection().request_raw(method, Some(&params)).await;
    assert!(answer.is_err(), "`{method}` should fail: {answer:?}");
}

/// Errors: a request before `initialize` (-32600), an unknown method (-32601), invalid params
/// (-32602), a method the agent did not advertise (-32601 with data), an unknown session
/// (-32002), a file the client does not have (-32002, answered by the client), and a prompt
/// turn that fails (-32603).
pub fn errors_scenario() -> Scenario {
    Scenario {
        name: "errors",
        agent: |_| {
            ScriptedAgent::new().turn([
                Step::read_file("missing.txt"),
                Step::fail(-32603, "Internal error: the model provider is unavailable"),
            ])
        },
        client: |_| ScriptedClient::new(),
        drive: |ctx| {
            Box::pin(async move {
                let cwd = ctx.dir.to_string_lossy().into_owned();
                raw_request(
                    &ctx.agent,
                    "session/new",
                    json!({ "cwd": cwd, "mcpServers": [] }),
                )
                .await;
                initialize(&ctx).await;
                raw_request(&ctx.agent, "session/frobnicate", json!({})).await;
                raw_request(
                    &ctx.agent,
                    "session/new",
                    json!({ "cwd": "relative/dir", "mcpServers": [] }),
                )
                .await;
                raw_request(
                    &ctx.agent,
                    "session/load",
                    json!({ "sessionId": "stored-session-7", "cwd": cwd, "mcpServers": [] }),
                )
                .await;
                raw_request(
                    &ctx.agent,
                    "session/prompt",
                    json!({ "sessionId": "unknown-session", "prompt": [{"type": "text", "text": "Hi"}] }),
                )
                .await;
                let session = new_session(&ctx).await;
                let error = session
                    .prompt(vec!["Read missing.txt".into()])
                    .await
                    .unwrap()
                    .end()
                    .await
                    .unwrap_err();
                assert_eq!(error.code(), Some(acp_jsonrpc::ErrorCode(-32603)));
            })
        },
        client_order_varies: false,
    }
}
