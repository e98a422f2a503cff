//! The demo client: spawns an agent (by default the bundled demo agent), runs one prompt turn
//! in a scratch project directory, and prints the turn as it streams. It serves the agent's
//! file system and terminal calls with the runtime's built-in hosts, and asks on the terminal
//! for permission unless `--yes` is given.
//!
//! ```text
//! cargo run -p acp-rs-runtime --example client                 # demo agent, auto-allow
//! cargo run -p acp-rs-runtime --example client -- --ask        # ask before each tool call
//! cargo run -p acp-rs-runtime --example client -- my-agent --flag   # any agent command
//! ```

#[path = "shared/demo_agent.rs"]
mod demo_agent;

use acp_runtime::client::{self, AutoAllow, ClientOptions, Interactive};
use acp_runtime::fs::FsHost;
use acp_runtime::process::AgentCommand;
use acp_runtime::terminal::TerminalHost;
use acp_types::*;

const SERVE_DEMO_AGENT: &str = "--serve-demo-agent";

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(SERVE_DEMO_AGENT) {
        // The client re-runs its own binary as the agent, so that one command runs both.
        std::process::exit(demo_agent::serve_stdio());
    }
    let ask = args.first().map(String::as_str) == Some("--ask");
    if ask {
        args.remove(0);
    }
    let command = match args.split_first() {
        Some((program, rest)) => AgentCommand::new(program).args(rest),
        None => AgentCommand::new(std::env::current_exe().expect("own path")).arg(SERVE_DEMO_AGENT),
    };
    let result = smol::block_on(async {
        if ask {
            run(Interactive, command).await
        } else {
            run(AutoAllow, command).await
        }
    });
    if let Err(error) = result {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

async fn run<C: client::Client>(permissions: C, command: AgentCommand) -> acp_runtime::Result<()> {
    let project = std::env::temp_dir().join(format!("acp-demo-{}", std::process::id()));
    std::fs::create_dir_all(&project).map_err(|e| acp_runtime::Error::Internal(e.to_string()))?;
    std::fs::write(
        project.join("notes.txt"),
        "buy milk\nship the release\ncall Ada\n",
    )
    .map_err(|e| acp_runtime::Error::Internal(e.to_string()))?;

    let options = ClientOptions::default()
        .with_info("acp-demo-client", env!("CARGO_PKG_VERSION"))
        .with_file_system(FsHost::new())
        .with_terminals(TerminalHost::new());
    let (agent, driver, process) = client::spawn(permissions, command, options)?;
    let driver = smol::spawn(driver);

    let init = agent.initialize().await?;
    let name = init
        .agent_info
        .as_ref()
        .map_or("agent", |i| i.name.as_str());
    println!("connected to {name} (protocol {})", init.protocol_version);

    let session = agent.new_session(&project).await?;
    println!("session {} in {}", session.id(), project.display());

    let prompt = "Summarize my notes";
    println!("\n> {prompt}\n");
    let mut turn = session.prompt(vec![prompt.into()]).await?;
    let mut updates = 0;
    while let Some(update) = turn.next().await {
        match update {
            Ok(update) => {
                updates += 1;
                print_update(&update);
            }
            // Some updates are missing here (we read more slowly than the agent sent, or an
            // update did not decode): say so and go on, as docs/limits.md tells clients to;
            // the turn is not over.
            Err(
                error @ (acp_runtime::Error::UpdatesDropped { .. }
                | acp_runtime::Error::InvalidUpdate { .. }),
            ) => eprintln!("\n[{error}]"),
            Err(other) => return Err(other),
        }
    }
    let response = turn.end().await?;
    println!("\n[turn ended: {}]", response.stop_reason);
    println!("[updates received: {updates}]");

    if let Ok(summary) = std::fs::read_to_string(project.join("summary.txt")) {
        println!("summary.txt: {}", summary.trim_end());
    }
    agent.close();
    // Writing what is still queued gets a grace period: an agent that stopped reading its
    // stdin must not keep this client from exiting. Dropping the driver then closes the
    // agent's stdin, and the staged shutdown follows.
    let grace = async {
        smol::Timer::after(acp_runtime::process::DEFAULT_SHUTDOWN_GRACE).await;
        Ok(())
    };
    let _ = futures_lite::future::or(driver, grace).await;
    let exit = process.shutdown().await;
    println!("agent exited: {exit}");
    let _ = std::fs::remove_dir_all(&project);
    Ok(())
}

fn print_update(update: &SessionUpdate) {
    match update {
        SessionUpdate::AgentMessageChunk(chunk) => {
            if let Some(text) = chunk.content.as_text() {
                print!("{text}");
            }
        }
        SessionUpdate::AgentThoughtChunk(chunk) => {
            println!("(thinking) {}", chunk.content.as_text().unwrap_or("…"));
        }
        SessionUpdate::Plan(plan) => {
            let steps: Vec<String> = plan
                .entries
                .iter()
                .map(|e| {
                    format!(
                        "[{}] {}",
                        if e.status == PlanEntryStatus::Completed {
                            "x"
                        } else {
                            " "
                        },
                        e.content
                    )
                })
                .collect();
            println!("plan: {}", steps.join("  "));
        }
        SessionUpdate::ToolCall(call) => {
            let kind = call
                .kind
                .as_ref()
                .map_or("tool".to_owned(), ToString::to_string);
            println!("tool call {} ({kind}): {}", call.tool_call_id, call.title);
        }
        SessionUpdate::ToolCallUpdate(update) => {
            if let Some(status) = &update.status {
                println!("  {} -> {status}", update.tool_call_id);
            }
        }
        other => println!(
            "update: {}",
            serde_json::to_string(other).unwrap_or_default()
        ),
    }
}
