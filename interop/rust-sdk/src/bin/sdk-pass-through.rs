//! A proxy on the official SDK's `Proxy.v1()` that intercepts nothing: everything takes the
//! SDK's default forwarding. The official counterpart of `acp-conductor pass-through`, for
//! `cargo xtask bench --chain` (docs/performance.md).

use agent_client_protocol::{Proxy, Stdio};

#[tokio::main]
async fn main() -> agent_client_protocol::Result<()> {
    Proxy
        .v1()
        .name("sdk-pass-through")
        .connect_to(Stdio::new())
        .await
}
