//! `Proxy` and its builder: the typed hooks a proxy author registers, by method and side.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::proxy::context::ProxyContext;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

pub(crate) type RequestHook = Arc<
    dyn Fn(ProxyContext, Option<Box<RawValue>>) -> BoxFuture<Result<Box<RawValue>>> + Send + Sync,
>;
pub(crate) type NotificationHook =
    Arc<dyn Fn(ProxyContext, Option<Box<RawValue>>) -> BoxFuture<Result<()>> + Send + Sync>;

/// Where a message came from: which neighbour of the proxy sent it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum From {
    /// The predecessor (the client side): forwarded to the successor by default.
    Client,
    /// The successor (the agent side): forwarded to the predecessor by default.
    Agent,
}

/// A proxy: everything is forwarded both ways, except the methods it has hooks for.
///
/// Build one with [`Proxy::builder`] and serve it with [`serve`](crate::proxy::serve) or
/// [`serve_stdio`](crate::proxy::serve_stdio). A hook gets the decoded params and a
/// [`ProxyContext`] to call the successor and the predecessor; what it returns is the answer
/// (an [`Error::Rpc`] goes back as it is).
///
/// ```
/// use acp_runtime::prelude::*;
/// use acp_runtime::proxy::{Proxy, ProxyContext};
///
/// // Adds a line of context to every prompt, and forwards everything else unchanged.
/// let proxy = Proxy::builder()
///     .on_client_request(|cx: ProxyContext, mut prompt: PromptRequest| async move {
///         prompt.prompt.insert(0, ContentBlock::from("Answer in French."));
///         cx.successor().request(&prompt).await
///     })
///     .build();
/// # let _ = proxy;
/// ```
#[derive(Clone, Default)]
pub struct Proxy {
    pub(crate) requests: HashMap<(From, &'static str), RequestHook>,
    pub(crate) notifications: HashMap<(From, &'static str), NotificationHook>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut hooks: Vec<_> = self
            .requests
            .keys()
            .chain(self.notifications.keys())
            .map(|(from, method)| format!("{method} from {from:?}"))
            .collect();
        hooks.sort();
        f.debug_struct("Proxy").field("hooks", &hooks).finish()
    }
}

/// Builds a [`Proxy`]; see there.
#[derive(Debug, Default)]
pub struct ProxyBuilder {
    proxy: Proxy,
}

impl Proxy {
    /// A builder with no hooks: a pass-through proxy until hooks are added.
    pub fn builder() -> ProxyBuilder {
        ProxyBuilder::default()
    }

    /// A proxy that forwards everything unchanged.
    pub fn pass_through() -> Self {
        Proxy::default()
    }
}

fn decode<T: serde::de::DeserializeOwned>(method: &str, params: Option<&RawValue>) -> Result<T> {
    serde_json::from_str(params.map_or("null", RawValue::get)).map_err(|error| {
        Error::invalid_params(format_args!("invalid params for `{method}`: {error}"))
    })
}

fn request_hook<R, F, Fut>(hook: F) -> RequestHook
where
    R: acp_types::Request + Send + 'static,
    F: Fn(ProxyContext, R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R::Response>> + Send + 'static,
{
    let hook = Arc::new(hook);
    Arc::new(move |cx, params| {
        let hook = hook.clone();
        Box::pin(async move {
            let params: R = decode(R::METHOD, params.as_deref())?;
            let answer = hook(cx, params).await?;
            serde_json::value::to_raw_value(&answer)
                .map_err(|error| Error::Internal(format!("the answer does not encode: {error}")))
        })
    })
}

fn notification_hook<N, F, Fut>(hook: F) -> NotificationHook
where
    N: acp_types::Notification + Send + 'static,
    F: Fn(ProxyContext, N) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let hook = Arc::new(hook);
    Arc::new(move |cx, params| {
        let hook = hook.clone();
        Box::pin(async move {
            let params: N = decode(N::METHOD, params.as_deref())?;
            hook(cx, params).await
        })
    })
}

impl ProxyBuilder {
    /// Intercepts request `R` from the predecessor (the client side), instead of forwarding
    /// it to the successor. `initialize` is hooked as [`acp_types::InitializeRequest`] (the
    /// conductor sends it as `proxy/initialize`); that hook must forward it to the successor
    /// and answer with the successor's `protocolVersion`.
    pub fn on_client_request<R, F, Fut>(mut self, hook: F) -> Self
    where
        R: acp_types::Request + Send + 'static,
        F: Fn(ProxyContext, R) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Response>> + Send + 'static,
    {
        self.proxy
            .requests
            .insert((From::Client, R::METHOD), request_hook(hook));
        self
    }

    /// Intercepts notification `N` from the predecessor, instead of forwarding it. It runs
    /// before the next message from the conductor is read: keep it short, and do not wait
    /// for an answer from inside it (spawn the call instead).
    pub fn on_client_notification<N, F, Fut>(mut self, hook: F) -> Self
    where
        N: acp_types::Notification + Send + 'static,
        F: Fn(ProxyContext, N) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        self.proxy
            .notifications
            .insert((From::Client, N::METHOD), notification_hook(hook));
        self
    }

    /// Intercepts request `R` from the successor (the agent side: `session/request_permission`,
    /// `fs/*`, `mcp/message`...), instead of forwarding it to the predecessor.
    pub fn on_agent_request<R, F, Fut>(mut self, hook: F) -> Self
    where
        R: acp_types::Request + Send + 'static,
        F: Fn(ProxyContext, R) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Response>> + Send + 'static,
    {
        self.proxy
            .requests
            .insert((From::Agent, R::METHOD), request_hook(hook));
        self
    }

    /// Intercepts notification `N` from the successor (`session/update`...), instead of
    /// forwarding it. The same rules as [`on_client_notification`](Self::on_client_notification).
    pub fn on_agent_notification<N, F, Fut>(mut self, hook: F) -> Self
    where
        N: acp_types::Notification + Send + 'static,
        F: Fn(ProxyContext, N) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        self.proxy
            .notifications
            .insert((From::Agent, N::METHOD), notification_hook(hook));
        self
    }

    /// The proxy.
    pub fn build(self) -> Proxy {
        self.proxy
    }
}
