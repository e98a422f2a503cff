//! The conductor of proxy chains (feature `unstable-proxy-chains`): an agent to its client,
//! and the client of every component of its chain, `P0 → … → Pn → agent`.
//!
//! ```text
//! client ⇄ conductor ⇄ P0
//!              ⇅
//!              ⇄ P1 … ⇄ agent
//! ```
//!
//! Proxies never talk to each other: each has one connection, to the conductor, which routes
//! by the rules of the Proxy Chains RFD:
//!
//! | message | from | goes to |
//! |---|---|---|
//! | any (not `proxy/successor`) | the client | P0 (or the agent), same method; `initialize` becomes `proxy/initialize` for a proxy |
//! | `proxy/successor {method, params}` | P_i | P_{i+1} or the agent, unwrapped; `initialize` becomes `proxy/initialize` for a proxy |
//! | any (not `proxy/successor`) | P0 | the client, as it is |
//! | any (not `proxy/successor`) | component k > 0 | P_{k-1}, wrapped in `proxy/successor` |
//! | `proxy/successor` | the client or the agent, or inside another envelope | `-32600` (a notification is dropped and reported) |
//!
//! Every connection has its own ids: a forwarded request gets a new id on the next hop, and
//! its answer (result or error) comes back verbatim under the old one. The envelope's
//! `_meta` stays on its hop. `$/cancel_request` is per hop: it drops the handler that
//! forwarded the request, whose own request to the next hop is then cancelled with that
//! hop's id. Messages are forwarded in the order they arrived on each connection. A
//! notification's params pass unread (only its envelope is read): malformed params are
//! reported by the peer that decodes them, a malformed envelope here (docs/limits.md).
//!
//! The chain starts with the client's first `initialize` (requests before it get `-32600`,
//! notifications are dropped). The conductor selects the version as an agent would (the
//! client's when this runtime speaks it, else the latest) and forwards `initialize`
//! unchanged when it is the client's; every proxy may lower it further, and the answer comes
//! back from the agent through every proxy. With protocol v2 (feature `unstable-protocol-v2`)
//! a request for 2 or more is forwarded at 2, each proxy negotiates its `proxy/initialize` as
//! an agent of its version would (a v1-only proxy answers a v2 chain as v1: see
//! `router::proxy_router`), and once the chain answered version 2 a request with a `null` id
//! on any of its connections is answered `-32600`. A handshake that is not answered within the
//! initialize timeout ([`Conductor::with_initialize_timeout`]) is an error naming the
//! component that holds it up, and brings the chain down as a failed component does.
//!
//! In proxy mode ([`Conductor::proxy`]) the chain is itself a proxy, a component of another
//! conductor: it starts with `proxy/initialize`, every component is a proxy, the client's
//! `proxy/successor` messages (from the conductor's successor) go to the last proxy, wrapped,
//! and the last proxy's `proxy/successor` messages go to the client, still wrapped.
//!
//! A component that exits or closes its output brings the chain down: requests in flight
//! are answered with an error that names the component, with its exit status and the tail
//! of its stderr, and [`Conductor::run`] returns that error. Subprocesses run in process
//! groups registered with the runtime's supervisor (see [`crate::process`]), so none
//! outlives the conductor, even a SIGKILLed one. Nor the client: the end of the client's
//! input ends the chain, even mid-turn (see [`Conductor::run`]).
//!
//! A forwarded message is let go once its copy for the next hop is queued there, so a large
//! message costs the conductor a few times its size, not a copy per hop (docs/limits.md).
//!
//! ```no_run
//! use acp_runtime::conductor::{Component, Conductor};
//! use acp_runtime::process::AgentCommand;
//!
//! // What `acp-conductor agent "trace-proxy" "my-agent --stdio"` does.
//! let conductor = Conductor::new(vec![
//!     Component::command("trace-proxy", AgentCommand::new("trace-proxy")),
//!     Component::command("my-agent", AgentCommand::new("my-agent").arg("--stdio")),
//! ]);
//! conductor.serve_stdio()?;
//! # Ok::<(), acp_runtime::conductor::ChainError>(())
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use acp_jsonrpc::{Connection, ConnectionError, ConnectionOptions};
use futures_lite::{AsyncBufRead, AsyncWrite, FutureExt};

mod chain;
pub mod command_line;
mod drivers;
mod handshake;
mod lifetime;
mod route;

pub use chain::Component;
use chain::{ComponentPipes, Shared};
use drivers::RunDrivers;
use lifetime::WatchedInput;
use route::HopDispatch;

use acp_jsonrpc::Latch;

/// How long requests in flight get to be answered once a component failed, before the
/// conductor closes its client connection: the default of
/// [`Conductor::with_failure_grace`].
pub const FAILURE_GRACE: Duration = Duration::from_millis(500);

/// How long the client's `initialize` waits for the chain's answer before it is answered
/// with an error naming the component that holds it up: the default of
/// [`Conductor::with_initialize_timeout`]. Generous, because the components start with it
/// (a command such as `npx some-agent` may first download the agent).
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a conductor stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChainError {
    /// A component could not start, exited or closed its output; the message names it
    /// (index and name) and gives its exit status and stderr tail when known.
    #[error("{0}")]
    Component(String),
    /// Reading from or writing to the client failed.
    #[error(transparent)]
    Client(#[from] ConnectionError),
    /// Stdin or stdout could not be set up.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A chain of proxies in front of an agent, served to one client. See the
/// [module docs](self).
#[derive(Debug)]
pub struct Conductor {
    components: Vec<Component>,
    options: ConnectionOptions,
    failure_grace: Duration,
    initialize_timeout: Duration,
    proxy_mode: bool,
}

/// Why [`Conductor::run`] stopped serving.
enum Stop {
    /// The client connection ended by itself, with nothing left in flight.
    Served(Result<(), ConnectionError>),
    /// The client's input ended (it is gone) while the chain was still at work.
    ClientGone,
    /// A component failed.
    Failed,
}

impl Conductor {
    /// A conductor for `components`: proxies first, the agent last.
    pub fn new(components: Vec<Component>) -> Self {
        Conductor {
            components,
            options: ConnectionOptions::default(),
            failure_grace: FAILURE_GRACE,
            initialize_timeout: INITIALIZE_TIMEOUT,
            proxy_mode: false,
        }
    }

    /// A conductor that is itself a proxy (what `acp-conductor proxy` runs): every component
    /// is a proxy, initialized with `proxy/initialize`, and the last one's successor is the
    /// conductor's own, reached through the client connection, which is therefore a
    /// conductor's: the chain starts with its `proxy/initialize` (a plain `initialize` gets
    /// `-32600`), its `proxy/successor` messages (from the successor) go to the last proxy,
    /// and the last proxy's `proxy/successor` messages go to it, still wrapped.
    ///
    /// ```no_run
    /// use acp_runtime::conductor::{Component, Conductor};
    /// use acp_runtime::process::AgentCommand;
    ///
    /// // What `acp-conductor proxy "trace-proxy" "policy-proxy"` does.
    /// Conductor::proxy(vec![
    ///     Component::command("trace-proxy", AgentCommand::new("trace-proxy")),
    ///     Component::command("policy-proxy", AgentCommand::new("policy-proxy")),
    /// ])
    /// .serve_stdio()?;
    /// # Ok::<(), acp_runtime::conductor::ChainError>(())
    /// ```
    pub fn proxy(components: Vec<Component>) -> Self {
        Conductor {
            proxy_mode: true,
            ..Conductor::new(components)
        }
    }

    /// How long, once a component failed, requests in flight get to be answered with the
    /// failure before the conductor closes its client connection (and as long again for
    /// those answers to be written); [`FAILURE_GRACE`] (500 ms) by default. Zero closes at
    /// once: the failure is then only in [`Conductor::run`]'s error.
    ///
    /// ```
    /// use std::time::Duration;
    /// use acp_runtime::conductor::{Component, Conductor};
    /// use acp_runtime::process::AgentCommand;
    ///
    /// let conductor = Conductor::new(vec![Component::command("agent", AgentCommand::new("my-agent"))])
    ///     .with_failure_grace(Duration::from_secs(2));
    /// # drop(conductor);
    /// ```
    pub fn with_failure_grace(mut self, grace: Duration) -> Self {
        self.failure_grace = grace;
        self
    }

    /// How long the client's `initialize` (`proxy/initialize` in proxy mode) waits for the
    /// chain's answer; [`INITIALIZE_TIMEOUT`] (60 s) by default. Past it, the client is
    /// answered `-32603` with a message naming the component that holds the handshake up
    /// (a proxy that neither answered nor passed on its `proxy/initialize`, or the agent),
    /// and the chain goes down as for a failed component.
    ///
    /// ```
    /// use std::time::Duration;
    /// use acp_runtime::conductor::{Component, Conductor};
    /// use acp_runtime::process::AgentCommand;
    ///
    /// let conductor = Conductor::new(vec![Component::command("agent", AgentCommand::new("my-agent"))])
    ///     .with_initialize_timeout(Duration::from_secs(10));
    /// # drop(conductor);
    /// ```
    pub fn with_initialize_timeout(mut self, timeout: Duration) -> Self {
        self.initialize_timeout = timeout;
        self
    }

    /// The options of every connection (to the client and to each component): limits and
    /// observer (docs/limits.md).
    pub fn with_connection_options(mut self, options: ConnectionOptions) -> Self {
        self.options = options;
        self
    }

    /// Serves the client on `reader` and `writer` until its input ends (then the chain is
    /// shut down, `Ok`) or a component fails ([`ChainError::Component`]).
    ///
    /// The end of the client's input means the client is gone, even mid-turn: what runs is
    /// cancelled (each request the conductor forwarded is cancelled on its next hop with
    /// `$/cancel_request`, down the chain), the cancellations and what is queued for the
    /// client get the failure grace, then every component's stdin is closed and each is ended as
    /// [`AgentProcess::shutdown`](crate::process::AgentProcess::shutdown) does (its
    /// command's `shutdown_grace`, 2 s by default, to exit by itself, then SIGTERM, then
    /// SIGKILL), all at once.
    pub fn run<R, W>(
        self,
        reader: R,
        writer: W,
    ) -> impl Future<Output = Result<(), ChainError>> + Send + use<R, W>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.run_with(reader, writer, ComponentPipes::default())
    }

    /// [`run`](Self::run), the components' pipes waited on as `component_pipes` says.
    fn run_with<R, W>(
        self,
        reader: R,
        writer: W,
        component_pipes: ComponentPipes,
    ) -> impl Future<Output = Result<(), ChainError>> + Send + use<R, W>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared::new(
            self.components,
            self.options.clone(),
            self.proxy_mode,
            self.initialize_timeout,
            component_pipes,
        ));
        let input_ended = Latch::new();
        let (client, driver) = Connection::new(
            WatchedInput::new(reader, input_ended.clone()),
            writer,
            HopDispatch::client(shared.clone()),
            self.options,
        );
        let _ = shared.client.set(client.clone());
        let executor = shared.executor.clone();
        let grace = self.failure_grace;
        async move {
            let mut driver = std::pin::pin!(driver);
            // The components' drivers, polled beside whatever runs, in every phase, and the
            // executor's runner among them: polled when a task of its own was woken, not on
            // every wake-up of the chain.
            shared.drivers.add(Box::pin(async move {
                executor.run(std::future::pending::<()>()).await;
            }));
            let mut drivers = shared.drivers.run();
            let stop = beside(
                &mut drivers,
                async { Stop::Served((&mut driver).await) }
                    .or(async {
                        shared.failed().await;
                        Stop::Failed
                    })
                    .or(async {
                        input_ended.wait().await;
                        Stop::ClientGone
                    }),
            )
            .await;
            let result = match stop {
                Stop::Served(served) => served.map_err(ChainError::from),
                Stop::ClientGone => {
                    // Closing the client's connection drops every handler, and with it the
                    // request each one forwarded: the next hop gets `$/cancel_request`, and
                    // so on down the chain. The cancellations get the grace to reach the
                    // agent before the components' stdin closes, and what is queued for the
                    // client (gone) as long to be written.
                    client.close();
                    let cancelled = at_most(grace, shared.nothing_forwarded());
                    let flushed = at_most(grace, &mut driver);
                    let both = futures_lite::future::zip(cancelled, flushed);
                    beside(&mut drivers, both).await;
                    Ok(())
                }
                Stop::Failed => {
                    // Close every hop so that what waits on them fails now, and give the
                    // answers (which name the failure) a moment to reach the client.
                    if let Some(Ok(chain)) = shared.chain.get() {
                        for hop in &chain.hops {
                            hop.rpc.close();
                        }
                    }
                    let flushed = at_most(grace, &mut driver);
                    beside(&mut drivers, flushed).await;
                    client.close();
                    let flushed = at_most(grace, &mut driver);
                    beside(&mut drivers, flushed).await;
                    Err(ChainError::Component(
                        shared.failure().unwrap_or_default().to_owned(),
                    ))
                }
            };
            beside(&mut drivers, shared.shut_down()).await;
            result
        }
    }

    /// Serves the client on this process's stdin and stdout; blocks the calling thread.
    ///
    /// On Linux, when stdin and stdout are pipes (or sockets), the conductor waits on them and
    /// on every component's pipes with acp-host's pipe loop (`acp_host::pipe_loop::PipeSet`):
    /// one `epoll_wait` for all of them on this thread, each pipe registered once, where smol's
    /// reactor re-armed every pipe on each wait, tried every read before waiting and handed
    /// wake-ups to its helper thread (docs/performance-chains.md). Timers and the components'
    /// exit watching keep running on async-io's helper thread, which wakes the loop.
    pub fn serve_stdio(self) -> Result<(), ChainError> {
        #[cfg(target_os = "linux")]
        if let Some((reader, writer)) = crate::stdio::pipe_fds()? {
            let set = acp_host::pipe_loop::PipeSet::new()?;
            let (reader, writer) = set.add(reader, writer)?;
            let reader =
                futures_lite::io::BufReader::with_capacity(crate::stdio::READ_BUFFER, reader);
            let pipes = ComponentPipes::in_set(set.clone());
            return set.block_on(self.run_with(reader, writer, pipes))?;
        }
        let (reader, writer) = crate::stdio::stdio()?;
        smol::block_on(self.run(reader, writer))
    }
}

/// Runs `future` with the components' `drivers` polled beside it (they never end first).
async fn beside<T>(drivers: &mut RunDrivers, future: impl Future<Output = T>) -> T {
    future
        .or(async {
            drivers.await;
            std::future::pending().await
        })
        .await
}

/// Runs `future` for at most `grace`: `None` when the grace ran out first.
async fn at_most<T>(grace: Duration, future: impl Future<Output = T>) -> Option<T> {
    async { Some(future.await) }
        .or(async {
            smol::Timer::after(grace).await;
            None
        })
        .await
}
