//! A proxy on the official SDK's `Proxy.protocol_router()` (5.2.0, `unstable_protocol_v2`): a
//! `Proxy.v1()` and a `Proxy.v2()`, each prepending `[sdk-proxy vN]` to the first text block of
//! every prompt (so a run shows which one was in the chain), everything else forwarded.

use agent_client_protocol::{Agent, Client, ConnectTo, Proxy, Stdio};

#[tokio::main]
async fn main() -> agent_client_protocol::Result<()> {
    let v1 = Proxy.v1().name("sdk-proxy-v1").on_receive_request_from(
        Client,
        async |mut prompt: agent_client_protocol::v1::schema::PromptRequest, responder, cx| {
            use agent_client_protocol::v1::schema::ContentBlock;
            if let Some(ContentBlock::Text(text)) = prompt.prompt.first_mut() {
                text.text = format!("[sdk-proxy v1] {}", text.text);
            }
            cx.send_request_to(Agent, prompt)
                .forward_response_to(responder)
        },
        agent_client_protocol::on_receive_request!(),
    );
    let v2 = Proxy.v2().name("sdk-proxy-v2").on_receive_request_from(
        Client,
        async |mut prompt: agent_client_protocol::v2::schema::PromptRequest, responder, cx| {
            use agent_client_protocol::v2::schema::ContentBlock;
            if let Some(ContentBlock::Text(text)) = prompt.prompt.first_mut() {
                text.text = format!("[sdk-proxy v2] {}", text.text);
            }
            cx.send_request_to(Agent, prompt)
                .forward_response_to(responder)
        },
        agent_client_protocol::on_receive_request!(),
    );
    Proxy
        .protocol_router()
        .with_v1(v1)
        .with_v2(v2)
        .connect_to(Stdio::new())
        .await
}
