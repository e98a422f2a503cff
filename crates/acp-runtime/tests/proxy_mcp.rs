//! MCP over ACP through a proxy chain: a proxy offers an MCP server `{type: "acp", name,
//! serverId}` in `session/new` and serves it; the agent calls it with `mcp/message` requests
//! through the conductor (wrapped in `proxy/successor` on the hops after the proxy), and the
//! proxy's server notifies the agent with `mcp/message` notifications the other way. An
//! `mcp/message` for a server the proxy does not serve goes on to the client.
#![cfg(all(feature = "unstable-proxy-chains", feature = "unstable-mcp-over-acp"))]

mod common;

use std::sync::{Arc, Mutex};

use acp_jsonrpc::{ConnectionOptions, memory};
use acp_runtime::conductor::{Component, Conductor};
use acp_runtime::prelude::*;
use acp_runtime::proxy::{self, Proxy, ProxyContext};
use common::within;
use serde_json::json;

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("valid")
}

const SERVER_ID: &str = "notes-1";

/// The test MCP server, as a proxy: it adds itself to every `session/new`, tells the agent
/// its tool list changed once the session exists, and answers `tools/call` of its `echo`
/// tool. Every other `mcp/message` is forwarded to the client.
fn mcp_server_proxy() -> Proxy {
    Proxy::builder()
        .on_client_request(
            |cx: ProxyContext, mut request: NewSessionRequest| async move {
                request.mcp_servers.push(McpServer::Acp(from_json(
                    json!({"name": "notes", "serverId": SERVER_ID}),
                )));
                let response = cx.successor().request(&request).await?;
                let changed: MessageMcpNotification = from_json(json!({
                    "serverId": SERVER_ID,
                    "requestId": "n1",
                    "method": "notifications/tools/list_changed",
                }));
                cx.successor().notify(&changed).await?;
                Ok(response)
            },
        )
        .on_agent_request(|cx: ProxyContext, request: MessageMcpRequest| async move {
            if request.server_id.as_str() != SERVER_ID {
                return cx.predecessor().request(&request).await;
            }
            let params = serde_json::to_value(&request.params).unwrap_or_default();
            match (request.method.as_str(), &params["name"]) {
                ("tools/call", name) if name == "echo" => {
                    let text = params["arguments"]["text"].as_str().unwrap_or_default();
                    Ok(MessageMcpResponseResult::new(json!({
                        "content": [{"type": "text", "text": format!("echo: {text}")}],
                    }))
                    .into())
                }
                (method, _) => Ok(from_json(json!({
                    "error": {"code": -32601, "message": format!("no {method} here")},
                }))),
            }
        })
        .build()
}

/// Calls every ACP-transport MCP server of its session with the prompt's text, and one
/// server nobody serves; says what came back. Records the MCP notifications it gets.
#[derive(Clone, Default)]
struct McpUser {
    notified: Arc<Mutex<Vec<String>>>,
}

impl Agent for McpUser {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let mut response = InitializeResponse::new(ProtocolVersion::LATEST);
        response.agent_capabilities = from_json(json!({"mcpCapabilities": {"acp": true}}));
        Ok(response)
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let text = request.prompt[0].as_text().unwrap_or_default().to_owned();
        let session = turn.snapshot().expect("a known session");
        let mut servers: Vec<String> = session
            .mcp_servers()
            .iter()
            .filter_map(|server| match server {
                McpServer::Acp(acp) => Some(acp.server_id.to_string()),
                _ => None,
            })
            .collect();
        servers.push("nobody".to_owned());
        for (n, server) in servers.iter().enumerate() {
            let call: MessageMcpRequest = from_json(json!({
                "serverId": server,
                "requestId": format!("r{n}"),
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": text}},
            }));
            let said = match turn.request(&call).await {
                Ok(MessageMcpResponse::Result(result)) => result.result["content"][0]["text"]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned(),
                Ok(other) => format!("{other:?}"),
                Err(Error::Rpc(error)) => format!("{server}: error {}", error.code),
                Err(error) => format!("{server}: {error}"),
            };
            turn.message(ContentBlock::from(said)).await?;
        }
        Ok(StopReason::EndTurn.into())
    }

    async fn mcp_notification(&self, notification: MessageMcpNotification, _: &ClientHandle) {
        self.notified.lock().unwrap().push(format!(
            "{} {}",
            notification.server_id, notification.method
        ));
    }
}

fn proxy_component(name: &str, proxy: Proxy) -> Component {
    let (conductor_end, proxy_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (_cx, driver) = proxy::serve(
        proxy,
        proxy_end.reader,
        proxy_end.writer,
        ConnectionOptions::default(),
    );
    smol::spawn(driver).detach();
    Component::streams(name, conductor_end.reader, conductor_end.writer)
}

#[test]
fn a_proxy_serves_an_mcp_server_to_the_agent_through_the_chain() {
    smol::block_on(within("mcp over acp through a chain", async {
        let agent_impl = McpUser::default();
        let notified = agent_impl.notified.clone();
        let (conductor_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        let (_client, driver) = agent::serve(
            agent_impl,
            agent_end.reader,
            agent_end.writer,
            AgentOptions::default(),
        );
        smol::spawn(driver).detach();
        // The server sits in the middle: its traffic crosses wrapped hops on both sides.
        let conductor = Conductor::new(vec![
            proxy_component("first", Proxy::pass_through()),
            proxy_component("mcp server", mcp_server_proxy()),
            proxy_component("last", Proxy::pass_through()),
            Component::streams("agent", conductor_end.reader, conductor_end.writer),
        ]);
        let (client_end, conductor_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        smol::spawn(conductor.run(conductor_end.reader, conductor_end.writer)).detach();
        let (agent, driver) = client::connect(
            AutoAllow,
            client_end.reader,
            client_end.writer,
            ClientOptions::default(),
        );
        smol::spawn(driver).detach();

        let init = agent.initialize().await.unwrap();
        assert!(init.agent_capabilities.mcp_capabilities.acp);
        let session = agent.new_session(std::env::temp_dir()).await.unwrap();
        let mut turn = session.prompt(vec!["hello".into()]).await.unwrap();
        let mut said = Vec::new();
        while let Some(update) = turn.next().await {
            if let Ok(SessionUpdate::AgentMessageChunk(chunk)) = update {
                said.push(chunk.content.as_text().unwrap_or_default().to_owned());
            }
        }
        turn.end().await.unwrap();
        // The proxy's server answered; the unknown server's call reached the client, whose
        // `Client::mcp_message` serves no MCP server: its -32601 came back verbatim.
        assert_eq!(said, ["echo: hello", "nobody: error -32601"]);
        assert_eq!(
            *notified.lock().unwrap(),
            [format!("{SERVER_ID} notifications/tools/list_changed")]
        );
    }));
}
