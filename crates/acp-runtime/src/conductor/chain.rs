//! The components of a chain once started: one connection per hop, the processes behind
//! them, and what the conductor knows when one of them fails. What each connection does with
//! its messages is the caller's (`route.rs`): this module takes the handler of each hop as a
//! parameter, so that the routing rules can depend on the chain and not the reverse.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use acp_jsonrpc::{Connection, ConnectionHandle, ConnectionOptions, Handler};
use event_listener::Event;
use futures_lite::{AsyncBufRead, AsyncWrite, FutureExt};

use crate::conductor::drivers::{Driver, Drivers};
use crate::conductor::handshake::Handshake;
#[cfg(unix)]
use crate::process::{AgentCommand, AgentProcess};

type BoxReader = Box<dyn AsyncBufRead + Unpin + Send>;
type BoxWriter = Box<dyn AsyncWrite + Unpin + Send>;

/// How long the conductor waits for a failed component's exit status before describing the
/// failure without it (its stdout closed first).
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// One component of a chain: a proxy, or the agent at its end.
pub struct Component {
    pub(crate) name: String,
    pub(crate) kind: Kind,
}

pub(crate) enum Kind {
    #[cfg(unix)]
    Command(AgentCommand),
    Streams(BoxReader, BoxWriter),
}

impl fmt::Debug for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            #[cfg(unix)]
            Kind::Command(_) => "command",
            Kind::Streams(..) => "streams",
        };
        f.debug_struct("Component")
            .field("name", &self.name)
            .field("kind", &kind)
            .finish()
    }
}

impl Component {
    /// A subprocess, started when the client's first `initialize` arrives, in a process group
    /// of its own that dies with the conductor (see [`crate::process`]). `name` is how errors
    /// name it.
    #[cfg(unix)]
    pub fn command(name: impl Into<String>, command: AgentCommand) -> Self {
        Component {
            name: name.into(),
            kind: Kind::Command(command),
        }
    }

    /// An in-process component: the conductor reads its messages from `reader` and writes
    /// to `writer`; whoever holds the other ends serves a [`crate::proxy::Proxy`] or an
    /// [`crate::agent::Agent`] on them (see [`acp_jsonrpc::memory::pair`]).
    pub fn streams(
        name: impl Into<String>,
        reader: impl AsyncBufRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Self {
        Component {
            name: name.into(),
            kind: Kind::Streams(Box::new(reader), Box::new(writer)),
        }
    }

    /// Its name, as errors give it.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Where the components' pipes are waited on: smol's reactor, or the pipe set of acp-host's
/// pipe loop that the conductor runs on (Linux, when its own stdio are pipes:
/// `Conductor::serve_stdio`), which then waits on the client's pipes and every component's
/// with one `epoll_wait` and no helper thread.
#[derive(Default)]
pub(crate) struct ComponentPipes {
    #[cfg(target_os = "linux")]
    set: Option<acp_host::pipe_loop::PipeSet>,
}

impl ComponentPipes {
    /// The components' pipes go into `set`, whose loop runs the conductor.
    #[cfg(target_os = "linux")]
    pub(crate) fn in_set(set: acp_host::pipe_loop::PipeSet) -> Self {
        ComponentPipes { set: Some(set) }
    }

    /// The protocol pipes of a component just started, reader first.
    #[cfg(unix)]
    fn take(&self, process: &mut AgentProcess) -> Result<(BoxReader, BoxWriter), String> {
        #[cfg(target_os = "linux")]
        if let Some(set) = &self.set {
            // The connection closes its writer when the hop is closed, so the component still
            // sees end of input before its staged shutdown (which no longer holds its stdin).
            let (stdout, stdin) = process
                .take_pipe_fds()
                .ok_or("its pipes were taken")?
                .map_err(|error| format!("its pipes: {error}"))?;
            let (reader, writer) = set
                .add(stdout, stdin)
                .map_err(|error| format!("its pipes: {error}"))?;
            let reader =
                futures_lite::io::BufReader::with_capacity(crate::stdio::READ_BUFFER, reader);
            return Ok((Box::new(reader), Box::new(writer)));
        }
        let (stdout, stdin) = process.take_stdio().ok_or("its pipes were taken")?;
        Ok((Box::new(stdout), Box::new(stdin)))
    }
}

/// A started component: the conductor's connection to it (the conductor is its client).
pub(crate) struct Hop {
    pub(crate) name: String,
    pub(crate) rpc: ConnectionHandle,
    /// Whether it has a successor, so is initialized with `proxy/initialize`.
    pub(crate) is_proxy: bool,
    #[cfg(unix)]
    pub(crate) process: Mutex<Option<AgentProcess>>,
}

pub(crate) struct Chain {
    pub(crate) hops: Vec<Hop>,
    /// Each hop's `is_proxy`, as the routing rule takes them (read for every message).
    pub(crate) is_proxy: Vec<bool>,
    /// How far the client's `initialize` got.
    pub(crate) handshake: Handshake,
}

/// What the whole conductor shares: the chain (once started), the client's connection, and
/// the first failure.
pub(crate) struct Shared {
    pub(crate) components: Mutex<Option<Vec<Component>>>,
    pub(crate) chain: smol::lock::OnceCell<Result<Arc<Chain>, String>>,
    pub(crate) client: OnceLock<ConnectionHandle>,
    pub(crate) options: ConnectionOptions,
    /// Whether the conductor is itself a proxy: every component is then a proxy, and the
    /// last one's successor is the conductor's own, reached through the client connection.
    pub(crate) proxy_mode: bool,
    /// How long the client's `initialize` may wait for the chain's answer.
    pub(crate) initialize_timeout: Duration,
    failure: OnceLock<String>,
    failed: Event,
    /// Where the tasks that wait run (a relayed request's finishing, a process's shutdown):
    /// its runner is one of `drivers`.
    pub(crate) executor: Arc<smol::Executor<'static>>,
    /// The components' drivers and exit watchers, polled with the client's driver
    /// (`drivers.rs`).
    pub(crate) drivers: Drivers,
    /// Where the components' pipes are waited on.
    component_pipes: ComponentPipes,
    /// Set once the conductor is shutting down: a component's end is expected from then on.
    pub(crate) stopping: std::sync::atomic::AtomicBool,
    /// Messages being forwarded, and the event of that count reaching zero.
    forwarding: AtomicUsize,
    forwarding_done: Event,
    /// Whether the chain speaks protocol v2: the chain's answer to the client's `initialize`
    /// named it. Its connections then refuse `null` request ids.
    #[cfg(feature = "unstable-protocol-v2")]
    pub(crate) speaks_v2: std::sync::atomic::AtomicBool,
}

/// A message being forwarded, counted from its handler's start to its end (or its drop,
/// when it is cancelled).
pub(crate) struct Forwarding<'a>(&'a Shared);

impl Drop for Forwarding<'_> {
    fn drop(&mut self) {
        self.0.forwarded();
    }
}

impl Shared {
    pub(crate) fn new(
        components: Vec<Component>,
        options: ConnectionOptions,
        proxy_mode: bool,
        initialize_timeout: Duration,
        component_pipes: ComponentPipes,
    ) -> Self {
        Shared {
            components: Mutex::new(Some(components)),
            chain: smol::lock::OnceCell::new(),
            client: OnceLock::new(),
            options,
            proxy_mode,
            initialize_timeout,
            failure: OnceLock::new(),
            failed: Event::new(),
            executor: Arc::new(smol::Executor::new()),
            drivers: Drivers::default(),
            component_pipes,
            stopping: std::sync::atomic::AtomicBool::new(false),
            forwarding: AtomicUsize::new(0),
            forwarding_done: Event::new(),
            #[cfg(feature = "unstable-protocol-v2")]
            speaks_v2: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Counts a message as being forwarded until the returned guard is dropped.
    pub(crate) fn forwarding(&self) -> Forwarding<'_> {
        self.forwarding.fetch_add(1, Ordering::AcqRel);
        Forwarding(self)
    }

    /// Counts a relayed request as being forwarded, until [`forwarded`](Self::forwarded).
    pub(crate) fn relaying(&self) {
        self.forwarding.fetch_add(1, Ordering::AcqRel);
    }

    /// A message counted by [`forwarding`](Self::forwarding) or
    /// [`relaying`](Self::relaying) is no longer under way.
    pub(crate) fn forwarded(&self) {
        if self.forwarding.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.forwarding_done.notify(usize::MAX);
        }
    }

    /// Resolves once no message is being forwarded: after the client left, once every
    /// cancellation has travelled down the chain (each dropped handler cancels its request
    /// on the next hop, whose handler is dropped in turn).
    pub(crate) async fn nothing_forwarded(&self) {
        loop {
            if self.forwarding.load(Ordering::Acquire) == 0 {
                return;
            }
            let listener = self.forwarding_done.listen();
            if self.forwarding.load(Ordering::Acquire) == 0 {
                return;
            }
            listener.await;
        }
    }

    /// Records the chain's first failure; the conductor stops on it.
    pub(crate) fn fail(&self, description: String) {
        if self.stopping.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        if self.failure.set(description).is_ok() {
            self.failed.notify(usize::MAX);
        }
    }

    pub(crate) fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// Resolves with the first failure.
    pub(crate) async fn failed(&self) -> String {
        loop {
            if let Some(failure) = self.failure.get() {
                return failure.clone();
            }
            let listener = self.failed.listen();
            if let Some(failure) = self.failure.get() {
                return failure.clone();
            }
            listener.await;
        }
    }

    /// The started chain: starts it on the first call (the client's first `initialize`, or
    /// `proxy/initialize` in proxy mode), serving component `index`'s connection with
    /// `handler(index)`.
    /// An error names the component that could not start.
    pub(crate) async fn chain<H: Handler>(
        self: &Arc<Self>,
        handler: impl Fn(usize) -> H,
    ) -> Result<Arc<Chain>, String> {
        self.chain
            .get_or_init(|| async { self.start(handler) })
            .await
            .clone()
    }

    fn start<H: Handler>(
        self: &Arc<Self>,
        handler: impl Fn(usize) -> H,
    ) -> Result<Arc<Chain>, String> {
        let components = lock(&self.components).take().unwrap_or_default();
        let count = components.len();
        let mut hops = Vec::with_capacity(count);
        let mut drivers: Vec<Driver> = Vec::with_capacity(count * 2);
        for (index, component) in components.into_iter().enumerate() {
            let name = component.name;
            let is_proxy = self.proxy_mode || index + 1 < count;
            let (reader, writer, process): (BoxReader, BoxWriter, _) = match component.kind {
                #[cfg(unix)]
                Kind::Command(command) => {
                    let mut process = command
                        .spawn()
                        .map_err(|error| describe(index, &name, &error.to_string()))?;
                    let (reader, writer) = self
                        .component_pipes
                        .take(&mut process)
                        .map_err(|reason| describe(index, &name, &reason))?;
                    (reader, writer, Some(process))
                }
                Kind::Streams(reader, writer) => (reader, writer, None),
            };
            let (rpc, driver) =
                Connection::new(reader, writer, handler(index), self.options.clone());
            let shared = self.clone();
            let watched = name.clone();
            drivers.push(Box::pin(async move {
                let reason = match driver.await {
                    Ok(()) => "closed its output".to_owned(),
                    Err(error) => error.to_string(),
                };
                let description = shared.describe_end(index, &watched, reason).await;
                shared.fail(description);
            }));
            #[cfg(unix)]
            if let Some(process) = &process {
                let exited = process.exited();
                let shared = self.clone();
                let watched = name.clone();
                drivers.push(Box::pin(async move {
                    let exit = exited.await;
                    shared.fail(describe_exit(index, &watched, &exit));
                }));
            }
            #[cfg(not(unix))]
            let _ = process;
            hops.push(Hop {
                name,
                rpc,
                is_proxy,
                #[cfg(unix)]
                process: Mutex::new(process),
            });
        }
        if hops.is_empty() {
            return Err(if self.proxy_mode {
                "the chain has no components: it needs at least a proxy".to_owned()
            } else {
                "the chain has no components: it needs at least an agent".to_owned()
            });
        }
        for driver in drivers {
            self.drivers.add(driver);
        }
        let handshake = Handshake::new(hops.len());
        let is_proxy = hops.iter().map(|hop| hop.is_proxy).collect();
        Ok(Arc::new(Chain {
            hops,
            is_proxy,
            handshake,
        }))
    }

    /// Why component `index` is gone, with its exit status and stderr tail when it is a
    /// process that exits within [`EXIT_WAIT`].
    pub(crate) async fn describe_end(&self, index: usize, name: &str, reason: String) -> String {
        #[cfg(unix)]
        if let Some(Ok(chain)) = self.chain.get()
            && let Some(hop) = chain.hops.get(index)
        {
            let exited = lock(&hop.process).as_ref().map(AgentProcess::exited);
            if let Some(exited) = exited {
                let exit = async { Some(exited.await) }
                    .or(async {
                        smol::Timer::after(EXIT_WAIT).await;
                        None
                    })
                    .await;
                if let Some(exit) = exit {
                    return describe_exit(index, name, &exit);
                }
            }
        }
        describe(index, name, &reason)
    }

    /// Closes every connection (what is queued on it is written, then the component's stdin
    /// closes) and ends every process in steps, all at once (see [`AgentProcess::shutdown`]:
    /// each gets its command's `shutdown_grace` to exit on its own).
    pub(crate) async fn shut_down(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::Release);
        let Some(Ok(chain)) = self.chain.get() else {
            return;
        };
        for hop in &chain.hops {
            hop.rpc.close();
        }
        #[cfg(unix)]
        {
            let processes: Vec<AgentProcess> = chain
                .hops
                .iter()
                .filter_map(|hop| lock(&hop.process).take())
                .collect();
            let mut endings: Vec<_> = processes
                .into_iter()
                .map(|process| self.executor.spawn(process.shutdown()))
                .collect();
            for ending in endings.drain(..) {
                ending.await;
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `component 2 (name): reason`.
pub(crate) fn describe(index: usize, name: &str, reason: &str) -> String {
    format!("chain component {index} (`{name}`): {reason}")
}

#[cfg(unix)]
fn describe_exit(index: usize, name: &str, exit: &crate::process::AgentExit) -> String {
    let tail = if exit.stderr_tail.is_empty() {
        "it wrote nothing to stderr".to_owned()
    } else {
        format!("last stderr lines:\n{}", exit.stderr_tail)
    };
    describe(index, name, &format!("exited with {exit}; {tail}"))
}
