//! What a proxy's hooks call: its successor and its predecessor, typed or raw.

use std::sync::{Arc, Mutex};

use acp_jsonrpc::ConnectionHandle;
use acp_types::ProtocolVersion;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::proxy::envelope::{INITIALIZE, PROXY_SUCCESSOR, wrap};

/// A proxy's view of its chain, given to every hook: call [`successor`](Self::successor)
/// (towards the agent) and [`predecessor`](Self::predecessor) (towards the client).
///
/// Both go over the one connection to the conductor: a call to the successor is wrapped in
/// `proxy/successor`, a call to the predecessor is sent as it is. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ProxyContext {
    pub(crate) rpc: ConnectionHandle,
    pub(crate) state: Arc<ProxyState>,
}

/// What the proxy learns about its chain while it runs.
#[derive(Debug, Default)]
pub(crate) struct ProxyState {
    /// The `protocolVersion` the successor answered `initialize` with.
    pub(crate) successor_version: Mutex<Option<ProtocolVersion>>,
}

impl ProxyContext {
    /// The next component towards the agent.
    pub fn successor(&self) -> Successor<'_> {
        Successor(self)
    }

    /// The previous component towards the client.
    pub fn predecessor(&self) -> Predecessor<'_> {
        Predecessor(self)
    }

    /// The connection to the conductor, for what the typed calls do not cover.
    pub fn connection(&self) -> &ConnectionHandle {
        &self.rpc
    }
}

/// Calls to the proxy's successor (see [`ProxyContext::successor`]).
#[derive(Clone, Copy, Debug)]
pub struct Successor<'a>(&'a ProxyContext);

/// Calls to the proxy's predecessor (see [`ProxyContext::predecessor`]).
#[derive(Clone, Copy, Debug)]
pub struct Predecessor<'a>(&'a ProxyContext);

fn encode<T: serde::Serialize>(params: &T) -> Result<Box<RawValue>> {
    serde_json::value::to_raw_value(params)
        .map_err(|error| Error::Internal(format!("params do not encode: {error}")))
}

fn decode<T: serde::de::DeserializeOwned>(result: &RawValue) -> Result<T> {
    acp_types::decode_response(result.get()).map_err(Error::Decode)
}

impl Successor<'_> {
    /// Sends request `R` to the successor and decodes its answer. An error the successor
    /// answers with is [`Error::Rpc`], unchanged.
    ///
    /// ```
    /// use acp_runtime::prelude::*;
    /// use acp_runtime::proxy::ProxyContext;
    ///
    /// async fn ask(cx: &ProxyContext, prompt: PromptRequest) -> Result<PromptResponse> {
    ///     cx.successor().request(&prompt).await
    /// }
    /// ```
    pub async fn request<R: acp_types::Request>(&self, params: &R) -> Result<R::Response> {
        let params = encode(params)?;
        decode(&self.request_raw(R::METHOD, Some(&params)).await?)
    }

    /// Sends notification `N` to the successor.
    pub async fn notify<N: acp_types::Notification>(&self, params: &N) -> Result<()> {
        let params = encode(params)?;
        self.notify_raw(N::METHOD, Some(&params)).await
    }

    /// Sends a request with raw params; the result comes back raw.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>> {
        let envelope = wrap(method, params);
        let result = self
            .0
            .rpc
            .request_raw(PROXY_SUCCESSOR, Some(&envelope))
            .await?;
        if method == INITIALIZE {
            self.0
                .state
                .note_successor_initialized(result.get().as_bytes());
        }
        Ok(result)
    }

    /// Sends a notification with raw params.
    pub async fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<()> {
        let envelope = wrap(method, params);
        Ok(self
            .0
            .rpc
            .notify_raw(PROXY_SUCCESSOR, Some(&envelope))
            .await?)
    }
}

impl Predecessor<'_> {
    /// Sends request `R` to the predecessor and decodes its answer.
    ///
    /// ```
    /// use acp_runtime::prelude::*;
    /// use acp_runtime::proxy::ProxyContext;
    ///
    /// async fn ask(
    ///     cx: &ProxyContext,
    ///     request: RequestPermissionRequest,
    /// ) -> Result<RequestPermissionResponse> {
    ///     cx.predecessor().request(&request).await
    /// }
    /// ```
    pub async fn request<R: acp_types::Request>(&self, params: &R) -> Result<R::Response> {
        let params = encode(params)?;
        decode(&self.request_raw(R::METHOD, Some(&params)).await?)
    }

    /// Sends notification `N` to the predecessor.
    pub async fn notify<N: acp_types::Notification>(&self, params: &N) -> Result<()> {
        let params = encode(params)?;
        self.notify_raw(N::METHOD, Some(&params)).await
    }

    /// Sends a request with raw params; the result comes back raw.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>> {
        Ok(self.0.rpc.request_raw(method, params).await?)
    }

    /// Sends a notification with raw params.
    pub async fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<()> {
        Ok(self.0.rpc.notify_raw(method, params).await?)
    }
}

/// The `protocolVersion` member of an `initialize` answer, if it reads as one.
pub(crate) fn answered_version(result: &[u8]) -> Option<ProtocolVersion> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer {
        protocol_version: ProtocolVersion,
    }
    serde_json::from_slice::<Answer>(result)
        .ok()
        .map(|answer| answer.protocol_version)
}

impl ProxyState {
    /// Notes the version the successor answered `initialize` with (`result` as it was
    /// written: forwarded answers are not read before this).
    pub(crate) fn note_successor_initialized(&self, result: &[u8]) {
        let version = answered_version(result);
        *self
            .successor_version
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = version;
    }

    pub(crate) fn successor_version(&self) -> Option<ProtocolVersion> {
        *self
            .successor_version
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
