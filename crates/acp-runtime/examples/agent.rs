//! The demo agent, served on stdin/stdout: run it from any ACP client, e.g.
//! `cargo run -p acp-rs-runtime --example client -- target/debug/examples/agent`.

#[path = "shared/demo_agent.rs"]
mod demo_agent;

fn main() {
    std::process::exit(demo_agent::serve_stdio());
}
