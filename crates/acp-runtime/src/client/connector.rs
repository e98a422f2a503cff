//! The client connector (feature `unstable-protocol-v2`): opens a connection in the protocol
//! version asked for, v1, v2, or v2 first with v1 as the fallback, and returns it initialized.
//!
//! The fallback opens a **fresh connection** for v1 rather than sending a second `initialize`
//! on the first. A v1 agent answers a v2 `initialize` with version 1 and from then on holds
//! that connection as initialized, having read a v2 body as a v1 one: the client's
//! capabilities it saw are not the ones a v1 client declares (v2 has no `fs` or `terminal`),
//! and a second `initialize` on the same connection is not one a v1 agent must accept. A
//! fresh connection is what a v1 agent sees from any v1 client. The price is one more start
//! of the agent process (or one more socket) for a v1 agent reached with
//! [`Protocol::Auto`]; [`Protocol::V1`] and [`Protocol::V2`] open one connection.
//!
//! ```no_run
//! use acp_runtime::client::connector::{self, Connected, Protocol};
//! use acp_runtime::client::{AutoAllow, ClientOptions};
//! use acp_runtime::process::AgentCommand;
//!
//! struct Quiet;
//! impl acp_runtime::client::v2::Client for Quiet {}
//!
//! smol::block_on(async {
//!     let command = AgentCommand::new("my-agent");
//!     match connector::spawn(Protocol::Auto, AutoAllow, Quiet, command, ClientOptions::default()).await? {
//!         Connected::V1 { agent, init, driver, .. } => {
//!             smol::spawn(driver).detach();
//!             println!("v1: {:?}", init.agent_info);
//!             let _session = agent.new_session("/work").await?;
//!         }
//!         Connected::V2 { agent, init, driver, .. } => {
//!             smol::spawn(driver).detach();
//!             println!("v2: {:?}", init.info);
//!         }
//!     }
//!     Ok::<_, acp_runtime::Error>(())
//! })
//! .unwrap();
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

use acp_jsonrpc::ConnectionError;
use acp_types::v2::{
    ProtocolVersion, UNSUPPORTED_PROTOCOL_VERSION, UnsupportedProtocolVersionErrorData,
};
use futures_lite::{AsyncBufRead, AsyncWrite};

use super::{AgentHandle, Client, ClientOptions, connect, spawned, v2};
use crate::error::{Error, Result};
use crate::process::{AgentCommand, AgentProcess};

/// Which protocol version the connector speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// v1 only (the default: one connection, what every agent speaks today).
    #[default]
    V1,
    /// v2 only: an agent that answers another version is an error.
    V2,
    /// v2 first; v1 on a fresh connection when the agent answers version 1 or refuses 2 with
    /// `-32022` listing 1 in `supported`.
    Auto,
}

impl FromStr for Protocol {
    type Err = String;

    /// `1`, `2` or `auto`.
    ///
    /// ```
    /// use acp_runtime::client::connector::Protocol;
    /// assert_eq!("auto".parse::<Protocol>(), Ok(Protocol::Auto));
    /// assert!("3".parse::<Protocol>().is_err());
    /// ```
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text {
            "1" => Ok(Protocol::V1),
            "2" => Ok(Protocol::V2),
            "auto" => Ok(Protocol::Auto),
            other => Err(format!("`{other}` is not a protocol: 1, 2 or auto")),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::V1 => "1",
            Protocol::V2 => "2",
            Protocol::Auto => "auto",
        })
    }
}

/// A connection's driver, whichever version it speaks: poll it (on any executor) for anything
/// to happen.
pub type Driver = Pin<Box<dyn Future<Output = std::result::Result<(), ConnectionError>> + Send>>;

/// An initialized connection, in the version the agent agreed to.
pub enum Connected<K> {
    /// The agent speaks v1.
    V1 {
        /// The v1 client's handle.
        agent: AgentHandle,
        /// The `initialize` answer.
        init: Box<acp_types::InitializeResponse>,
        /// The connection's driver.
        driver: Driver,
        /// What `open` returned beside the streams (the agent process, say).
        keep: K,
    },
    /// The agent speaks v2.
    V2 {
        /// The v2 client's handle.
        agent: v2::Agent,
        /// The `initialize` answer.
        init: Box<acp_types::v2::InitializeResponse>,
        /// The connection's driver.
        driver: Driver,
        /// What `open` returned beside the streams.
        keep: K,
    },
}

impl<K> fmt::Debug for Connected<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Connected::V1 { .. } => f.write_str("Connected::V1"),
            Connected::V2 { .. } => f.write_str("Connected::V2"),
        }
    }
}

/// Opens a connection with `open` (an async closure, called a second time when
/// [`Protocol::Auto`] falls back to v1; a remote transport's connect, say) and initializes it in `protocol`: `v1` answers the agent's requests on a v1 connection,
/// `v2` on a v2 one. The v2 `initialize` carries `options`' client info; its capabilities are
/// v2's defaults (v2 has no `fs` or `terminal` methods).
///
/// An agent that answers neither version is [`Error::UnsupportedProtocolVersion`]; a failure
/// of the v2 probe other than "I speak v1" is returned as it is, without a fallback.
pub async fn connect_with_protocol<C1, C2, R, W, K, Opening>(
    protocol: Protocol,
    v1: C1,
    v2: C2,
    mut open: impl FnMut() -> Opening,
    options: ClientOptions,
) -> Result<Connected<K>>
where
    C1: Client,
    C2: v2::Client,
    Opening: Future<Output = Result<(R, W, K)>>,
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    K: Send + 'static,
{
    if protocol != Protocol::V1 {
        let (reader, writer, keep) = open().await?;
        let (agent, driver) = v2::connect(v2, reader, writer, options.connection.clone());
        let mut driver: Driver = Box::pin(driver);
        match while_driving(&mut driver, agent.initialize(v2_initialize(&options))).await {
            Ok(init) => {
                return Ok(Connected::V2 {
                    agent,
                    init: Box::new(init),
                    driver,
                    keep,
                });
            }
            Err(error) if protocol == Protocol::Auto && agent_speaks_v1(&error) => {
                agent.close();
                // The probe's connection finishes closing before the fresh one opens: the
                // agent (a process, say) sees its input end first.
                let _ = driver.await;
                drop(keep);
            }
            Err(error) => return Err(error),
        }
    }
    let (reader, writer, keep) = open().await?;
    let (agent, driver) = connect(v1, reader, writer, options);
    let mut driver: Driver = Box::pin(driver);
    let init = while_driving(&mut driver, agent.initialize()).await?;
    Ok(Connected::V1 {
        agent,
        init: Box::new(init),
        driver,
        keep,
    })
}

/// Starts `command` (twice when [`Protocol::Auto`] meets a v1 agent: the probe's process is
/// shut down first) and connects to it with [`connect_with_protocol`]. On v1 an agent that
/// exits fails the pending calls with [`Error::AgentExited`], as with [`super::spawn`].
pub async fn spawn<C1: Client, C2: v2::Client>(
    protocol: Protocol,
    v1: C1,
    v2: C2,
    command: AgentCommand,
    options: ClientOptions,
) -> Result<Connected<AgentProcess>> {
    let open = || {
        let started = command
            .spawn()
            .map_err(|e| Error::Internal(e.to_string()))
            .and_then(|mut process| {
                let (reader, writer) = process
                    .take_stdio()
                    .ok_or_else(|| Error::Internal("the agent's stdio was already taken".into()))?;
                Ok((reader, writer, process))
            });
        std::future::ready(started)
    };
    let connected = connect_with_protocol(protocol, v1, v2, open, options).await?;
    if let Connected::V1 { agent, keep, .. } = &connected {
        spawned::watch_exit(agent, keep);
    }
    Ok(connected)
}

/// The v2 `initialize` request a client with `options` sends.
fn v2_initialize(options: &ClientOptions) -> acp_types::v2::InitializeRequest {
    let info = match &options.info {
        Some(info) => {
            let v2_info = acp_types::v2::Implementation::new(&info.name, &info.version);
            match &info.title {
                Some(title) => v2_info.with_title(title),
                None => v2_info,
            }
        }
        None => acp_types::v2::Implementation::new("acp-runtime", env!("CARGO_PKG_VERSION")),
    };
    acp_types::v2::InitializeRequest::new(ProtocolVersion::V2, info)
}

/// Whether a failed v2 `initialize` says the agent speaks v1: it answered version 1, or
/// refused with `-32022` listing 1 in `supported`.
fn agent_speaks_v1(error: &Error) -> bool {
    match error {
        Error::UnsupportedProtocolVersion { offered, .. } => *offered == 1,
        Error::Rpc(e) if e.code.0 == UNSUPPORTED_PROTOCOL_VERSION => {
            let data = e
                .data
                .as_ref()
                .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok());
            UnsupportedProtocolVersionErrorData::from_error_data(data.as_ref())
                .is_some_and(|data| data.supported.contains(&ProtocolVersion::V1))
        }
        _ => false,
    }
}

/// Runs `work` while polling the connection's driver, which must run for an answer to come;
/// the driver ending first is the connection closing.
async fn while_driving<T>(driver: &mut Driver, work: impl Future<Output = Result<T>>) -> Result<T> {
    futures_lite::future::or(work, async {
        match driver.as_mut().await {
            Ok(()) => Err(Error::ConnectionClosed),
            Err(error) => Err(error.into()),
        }
    })
    .await
}
