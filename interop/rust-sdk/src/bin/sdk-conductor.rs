//! The official conductor (`agent-client-protocol-conductor` 5.0.0) as its binary runs it:
//! `sdk-conductor agent PROXY... AGENT`.

use agent_client_protocol_conductor::ConductorArgs;
use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    ConductorArgs::parse().main().await
}
