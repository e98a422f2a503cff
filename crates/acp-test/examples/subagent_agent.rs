//! An agent that starts nested subagents the way claude-agent-acp 0.101 does, on stdin and
//! stdout: to watch a client follow them without a language model.
//!
//! ```text
//! cargo build -p acp-rs-test --example subagent_agent
//! acp -p "go" -- target/debug/examples/subagent_agent
//! ```
//!
//! Its one turn: a message, a researcher subagent (a reply, a tool call, and a searcher
//! subagent of its own), a reviewer subagent, then a closing message. Each child is announced
//! `running` with its title on its parent, sends its updates under its own session id, and is
//! reported `idle` at its end.

use acp_test::{ChildStep, ScriptedAgent, Step, SubagentStep};
use acp_types::*;

fn main() -> std::io::Result<()> {
    let searcher = SubagentStep::claude_like("search-1", "Search the web", "Two hits.");
    let researcher = SubagentStep::new("research-1")
        .title("Research the limits")
        .then([
            ChildStep::FromParent("Find the client's bounds.".into()),
            ChildStep::message("Reading docs/limits.md.\nIt has a table."),
            ChildStep::Update(SessionUpdate::ToolCall(
                ToolCall::new("read-1", "Read docs/limits.md")
                    .with_kind(ToolKind::Read)
                    .with_status(ToolCallStatus::Completed),
            )),
            searcher.into(),
            ChildStep::message("Done reading."),
        ]);
    let reviewer = SubagentStep::claude_like("review-1", "Review the diff", "Looks fine.");
    let agent = ScriptedAgent::new()
        .on_initialize(|init| {
            init.agent_info = Some(Implementation::new("subagent-agent", "0.1.0"));
        })
        .turn([
            Step::message("I will ask two subagents."),
            researcher.into(),
            reviewer.into(),
            Step::message("Both are done."),
        ]);
    acp_runtime::agent::serve_stdio(agent)
}
