//! A proxy on the official SDK's `Proxy.v1()`: prepends `[sdk-proxy]` to the first text block
//! of every prompt (so a run shows it was in the chain) and forwards everything else.

use agent_client_protocol::v1::schema::{ContentBlock, PromptRequest};
use agent_client_protocol::{Agent, Client, Proxy, Stdio};

#[tokio::main]
async fn main() -> agent_client_protocol::Result<()> {
    Proxy
        .v1()
        .name("sdk-proxy")
        .on_receive_request_from(
            Client,
            async |mut prompt: PromptRequest, responder, cx| {
                if let Some(ContentBlock::Text(text)) = prompt.prompt.first_mut() {
                    text.text = format!("[sdk-proxy] {}", text.text);
                }
                cx.send_request_to(Agent, prompt)
                    .forward_response_to(responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await
}
