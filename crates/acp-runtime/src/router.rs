//! The agent-side protocol router (feature `unstable-protocol-v2`): one endpoint serving ACP v1
//! and v2, picking the version per connection from the first `initialize`.
//!
//! ```no_run
//! use acp_runtime::prelude::*;
//! use acp_runtime::agent::v2;
//! use acp_runtime::prelude::v2 as wire;
//!
//! struct MyAgent;
//! impl Agent for MyAgent {
//!     async fn new_session(&self, _: NewSessionRequest, _: &ClientHandle) -> Result<NewSessionResponse> {
//!         Ok(NewSessionResponse::new(acp_runtime::agent::new_session_id()))
//!     }
//!     async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
//!         Ok(PromptResponse::new(StopReason::EndTurn))
//!     }
//! }
//!
//! struct MyV2;
//! impl v2::Agent for MyV2 {
//!     async fn new_session(&self, _: wire::NewSessionRequest, _: &v2::Client) -> Result<wire::NewSessionResponse> {
//!         Ok(wire::NewSessionResponse::new("s1"))
//!     }
//!     async fn prompt(&self, _: wire::PromptRequest, _: v2::Turn) -> Result<wire::IdleStateUpdateKind> {
//!         Ok(wire::IdleStateUpdateKind::EndTurn)
//!     }
//! }
//!
//! # async fn run(reader: impl futures_lite::AsyncBufRead + Unpin + Send + 'static,
//! #              writer: impl futures_lite::AsyncWrite + Unpin + Send + 'static) {
//! let served = acp_runtime::router::router().with_v1(MyAgent).with_v2(MyV2);
//! served.serve(reader, writer).await.unwrap();
//! # }
//! ```
//!
//! The rules, in order (see [`Router::serve`]):
//!
//! - lines are read until an `initialize` request; notifications and responses before it are
//!   ignored; a malformed line gets the answer a connection gives it (`-32700`/`-32600` with id
//!   `null`), another request `-32600` with its id, an `initialize` whose `protocolVersion` is
//!   not a version number `-32602`, and a version no configured side serves `-32022` with data
//!   `{requested, supported}`; in each case the connection stays open for the next line;
//! - `protocolVersion` 2 or more goes to the v2 side when there is one (a higher request is
//!   rewritten to 2, the highest this runtime speaks); everything else goes to the v1 side,
//!   unchanged, except that a v2 request taken by v1 (a downgrade) has its params normalized to
//!   v1's shape (`info` → `clientInfo`, `capabilities` → `clientCapabilities`, version 1);
//! - the chosen side gets the connection whole, starting with that `initialize` (acp-jsonrpc's
//!   [`Handoff`]): every later message, a repeated `initialize` included, is the chosen side's,
//!   never routed again. A connection of a v2 side refuses `null` request ids (`-32600`).
//!
//! The v1 side is served exactly as [`agent::serve`] serves it; the
//! router's cost is reading the first line before handing it over (docs/performance-v2.md).

mod downgrade;
mod first_frame;
#[cfg(feature = "unstable-proxy-chains")]
mod proxy;

use acp_jsonrpc::{ConnectionError, Handoff};
use futures_lite::{AsyncBufRead, AsyncWrite};

use crate::agent::{self, Agent, AgentOptions};
use crate::rules::ServedVersion as Side;
use first_frame::{INITIALIZE, Sides, first_initialize};

#[cfg(feature = "unstable-proxy-chains")]
pub use proxy::{ProxyRouter, proxy_router};

/// A router with no side yet; add them with [`Router::with_v1`] and [`Router::with_v2`].
pub fn router() -> Router<Absent, Absent> {
    Router {
        v1: Absent,
        v2: Absent,
        v1_options: AgentOptions::default(),
        v2_options: AgentOptions::default(),
    }
}

/// Serves each connection with the side its `initialize` asks for: `V1` is an [`Agent`] (or
/// [`Absent`]), `V2` a [`v2::Agent`](agent::v2::Agent) (or [`Absent`]). See the [module docs](self).
#[derive(Debug)]
pub struct Router<V1, V2> {
    v1: V1,
    v2: V2,
    v1_options: AgentOptions,
    v2_options: AgentOptions,
}

/// A side the router does not have.
#[derive(Clone, Copy, Debug, Default)]
pub struct Absent;

impl<V1, V2> Router<V1, V2> {
    /// Serves version 1 (and every request below 2, and above 2 when there is no v2 side) with
    /// `agent`, as [`agent::serve`] does.
    pub fn with_v1<A: Agent>(self, agent: A) -> Router<A, V2> {
        Router {
            v1: agent,
            v2: self.v2,
            v1_options: self.v1_options,
            v2_options: self.v2_options,
        }
    }

    /// Serves version 2 with `agent`, as [`agent::v2::serve`] does (on a connection that
    /// refuses `null` request ids).
    pub fn with_v2<A: agent::v2::Agent>(self, agent: A) -> Router<V1, A> {
        Router {
            v1: self.v1,
            v2: agent,
            v1_options: self.v1_options,
            v2_options: self.v2_options,
        }
    }

    /// The options of the v1 side's connections.
    pub fn with_v1_options(mut self, options: AgentOptions) -> Self {
        self.v1_options = options;
        self
    }

    /// The options of the v2 side's connections (`null` request ids are refused whatever they
    /// say).
    pub fn with_v2_options(mut self, options: AgentOptions) -> Self {
        self.v2_options = options;
        self
    }
}

impl<V1: ServesVersion<1>, V2: ServesVersion<2>> Router<V1, V2> {
    /// Serves one connection: reads until `initialize`, answers what comes before it, and hands
    /// the connection to the chosen side, whose driver it then is. Resolves when the
    /// connection is over (the peer closed it, before or after the hand-over), or with the
    /// error that ended it.
    pub async fn serve<R, W>(self, reader: R, mut writer: W) -> Result<(), ConnectionError>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let max_line_length = self.v1_options.connection().max_line_length();
        let sides = Sides {
            v1: V1::PRESENT,
            v2: V2::PRESENT,
        };
        let Some((side, reader)) =
            first_initialize(reader, &mut writer, INITIALIZE, sides, max_line_length).await?
        else {
            return Ok(());
        };
        match side {
            Side::V1 => self.v1.serve(reader, writer, self.v1_options).await,
            Side::V2 => self.v2.serve(reader, writer, self.v2_options).await,
        }
    }
}

impl<V1: ServesVersion<1>, V2: ServesVersion<2>> Router<V1, V2> {
    /// Serves one connection on this process's stdin and stdout, as
    /// [`agent::serve_stdio`] does for a v1 agent (the same I/O
    /// path, so that the two cost the same but for the router), until the client closes stdin.
    pub fn serve_stdio(self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some((pipes, reader, writer)) = crate::stdio::pipes()? {
            return crate::stdio::run_on_pipes(&pipes, self.serve(reader, writer));
        }
        let (reader, writer) = crate::stdio::stdio()?;
        crate::stdio::ended(smol::block_on(self.serve(reader, writer)))
    }
}

/// What can serve protocol version `VERSION` in a [`Router`]: an [`Agent`] serves 1, a
/// [`v2::Agent`](agent::v2::Agent) serves 2, and [`Absent`] stands for a version not served.
pub trait ServesVersion<const VERSION: u16>: Send + 'static {
    /// Whether the version is served.
    #[doc(hidden)]
    const PRESENT: bool;
    /// Serves the handed-over connection.
    #[doc(hidden)]
    fn serve<R, W>(
        self,
        reader: Handoff<R>,
        writer: W,
        options: AgentOptions,
    ) -> impl Future<Output = Result<(), ConnectionError>> + Send
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static;
}

impl<A: Agent> ServesVersion<1> for A {
    const PRESENT: bool = true;
    fn serve<R, W>(
        self,
        reader: Handoff<R>,
        writer: W,
        options: AgentOptions,
    ) -> impl Future<Output = Result<(), ConnectionError>> + Send
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (_client, driver) = agent::serve(self, reader, writer, options);
        driver
    }
}

impl<A: agent::v2::Agent> ServesVersion<2> for A {
    const PRESENT: bool = true;
    fn serve<R, W>(
        self,
        reader: Handoff<R>,
        writer: W,
        options: AgentOptions,
    ) -> impl Future<Output = Result<(), ConnectionError>> + Send
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (_client, driver) = agent::v2::serve(self, reader, writer, options);
        driver
    }
}

impl<const VERSION: u16> ServesVersion<VERSION> for Absent {
    const PRESENT: bool = false;
    async fn serve<R, W>(self, _: Handoff<R>, _: W, _: AgentOptions) -> Result<(), ConnectionError>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        // Never chosen: `rules::select` picks only a present side.
        Ok(())
    }
}
