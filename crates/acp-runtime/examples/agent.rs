//! The demo agent, served on stdin/stdout: run it from any ACP client, e.g.
//! `cargo run -p acp-runtime --example client -- target/debug/examples/agent`.

#[path = "shared/demo_agent.rs"]
mod demo_agent;

fn main() -> std::io::Result<()> {
    acp_runtime::agent::serve_stdio(demo_agent::DemoAgent)
}
