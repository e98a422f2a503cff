//! Extension methods (`_`-prefixed) have a typed path and a raw one, both ways.

mod common;

use std::sync::{Arc, Mutex};

use acp_jsonrpc::memory;
use acp_runtime::agent::{self, Agent, ClientHandle, Turn};
use acp_runtime::client::{self, AutoAllow, ClientOptions};
use acp_runtime::{Error, Result};
use acp_types::*;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A vendor request, typed like the protocol's own.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Ping {
    n: u32,
}
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Pong {
    n: u32,
}
impl Method for Ping {
    const METHOD: &'static str = "_vendor/ping";
}
impl Request for Ping {
    type Response = Pong;
}
impl ClientToAgent for Ping {}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Hint {
    text: String,
}
impl Method for Hint {
    const METHOD: &'static str = "_vendor/hint";
}
impl Notification for Hint {}
impl ClientToAgent for Hint {}

#[derive(Default, Clone)]
struct VendorAgent {
    hints: Arc<Mutex<Vec<String>>>,
}

impl Agent for VendorAgent {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
        Ok(StopReason::EndTurn.into())
    }

    async fn ext_method(&self, call: ExtensionCall, _: &ClientHandle) -> Result<Box<RawValue>> {
        match call.method.as_str() {
            Ping::METHOD => {
                let ping: Ping = call.params().map_err(Error::invalid_params)?;
                Ok(serde_json::value::to_raw_value(&Pong { n: ping.n + 1 }).unwrap())
            }
            other => Err(Error::method_not_found(other)),
        }
    }

    async fn ext_notification(&self, call: ExtensionCall, _: &ClientHandle) {
        if let Ok(hint) = call.params::<Hint>() {
            self.hints.lock().unwrap().push(hint.text);
        }
    }
}

#[test]
fn typed_and_raw_extension_calls() {
    smol::block_on(async {
        let agent_impl = VendorAgent::default();
        let hints = agent_impl.hints.clone();
        let (client_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        let (_client, agent_driver) = agent::serve(
            agent_impl,
            agent_end.reader,
            agent_end.writer,
            agent::AgentOptions::default(),
        );
        smol::spawn(agent_driver).detach();
        let (agent, driver) = client::connect(
            AutoAllow,
            client_end.reader,
            client_end.writer,
            ClientOptions::default(),
        );
        smol::spawn(driver).detach();
        agent.initialize().await.unwrap();

        assert_eq!(
            agent.request(&Ping { n: 41 }).await.unwrap(),
            Pong { n: 42 }
        );
        let raw = RawValue::from_string(r#"{"n":1}"#.to_owned()).unwrap();
        assert_eq!(
            agent.ext_method("_vendor/ping", &raw).await.unwrap().get(),
            r#"{"n":2}"#
        );
        let unknown = agent.ext_method("_vendor/other", &raw).await.unwrap_err();
        assert_eq!(
            unknown.code(),
            Some(acp_jsonrpc::ErrorCode::METHOD_NOT_FOUND)
        );
        assert!(matches!(
            agent.ext_method("vendor/no-underscore", &raw).await,
            Err(Error::Invalid(_))
        ));

        agent
            .notify(&Hint {
                text: "use tabs".into(),
            })
            .await
            .unwrap();
        // A request after the notification: notifications are handled in order before it.
        agent.request(&Ping { n: 0 }).await.unwrap();
        assert_eq!(hints.lock().unwrap().as_slice(), ["use tabs"]);
    });
}
