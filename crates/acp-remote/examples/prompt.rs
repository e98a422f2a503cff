//! One prompt turn against a remote agent:
//! `cargo run -p acp-rs-remote --example prompt -- ws://127.0.0.1:8765/acp [--token T] [TEXT]`
//! (or an `http://` URL, for Streamable HTTP).
//!
//! Permissions are granted, the agent's file reads and writes are served beneath the current
//! directory, and its reply is printed as it streams in.

use acp_remote::Connector;
use acp_runtime::client::{AutoAllow, ClientOptions};
use acp_runtime::fs::FsHost;
use acp_types::SessionUpdate;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: prompt URL [--token T] [TEXT]")?;
    let mut connector = Connector::new(url);
    let mut text = String::from("Hello from acp-remote");
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--token" => connector = connector.with_bearer_token(args.next().ok_or("--token T")?),
            _ => text = arg,
        }
    }
    smol::block_on(async {
        let options = ClientOptions::default().with_file_system(FsHost::new());
        let (agent, driver) = connector.connect_client(AutoAllow, options).await?;
        let driver = smol::spawn(driver);
        let info = agent.initialize().await?;
        eprintln!("[connected to {:?}]", info.agent_info.map(|i| i.name));
        let session = agent.new_session(std::env::current_dir()?).await?;
        let mut turn = session.prompt(vec![text.into()]).await?;
        while let Some(update) = turn.next().await {
            match update {
                Ok(SessionUpdate::AgentMessageChunk(chunk)) => {
                    print!("{}", chunk.content.as_text().unwrap_or("[non-text]"));
                }
                Ok(other) => eprintln!("[{}]", update_kind(&other)),
                Err(error) => eprintln!("[error] {error}"),
            }
        }
        println!("\n[{:?}]", turn.end().await?.stop_reason);
        agent.close();
        let _ = driver.await;
        Ok(())
    })
}

fn update_kind(update: &SessionUpdate) -> String {
    serde_json::to_value(update)
        .ok()
        .and_then(|v| v["sessionUpdate"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "update".into())
}
