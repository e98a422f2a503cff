//! Recorded connections between an agent and a client: in memory, or to an agent process.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_jsonrpc::{ConnectionError, memory};
use acp_runtime::agent::{self, Agent};
use acp_runtime::client::{self, AgentHandle, Client, ClientOptions};
use acp_runtime::process::{AgentCommand, AgentExit, AgentProcess};

use crate::normalize::Normalizer;
use crate::scripted_client::ScriptedClient;
use crate::transcript::{Recorder, Transcript};
use crate::wait::within;

/// How long [`Pair::finish`] waits for each side to shut down.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) type Driver = smol::Task<Result<(), ConnectionError>>;

/// A recorded connection between a client (this runtime's, driven through
/// [`agent`](Self::agent)) and an agent: in memory ([`connect`], [`connect_scripted`]) or a
/// process ([`spawn_agent`]). Every message in both directions lands in its
/// [`Recorder`]; [`finish`](Self::finish) closes the connection and returns the normalized
/// [`Transcript`].
///
/// The connection drivers run on smol's global executor, so the test may block on its own
/// future (`smol::block_on`) or run on any executor.
///
/// `H` is the client's handle: v1's [`AgentHandle`], or with the feature
/// `unstable-protocol-v2` v2's `client::v2::Agent` (`acp_test::v2::connect`).
pub struct Pair<H: AgentSide = AgentHandle> {
    agent: H,
    recorder: Recorder,
    normalizer: Normalizer,
    client_driver: Option<Driver>,
    agent_driver: Option<Driver>,
    process: Option<AgentProcess>,
}

/// The client's handle on the agent that a [`Pair`] holds, and closes when it finishes.
pub trait AgentSide: std::fmt::Debug {
    /// Closes the client's connection: what is queued is written, then the agent's input
    /// ends.
    fn close(&self);
}

impl AgentSide for AgentHandle {
    fn close(&self) {
        AgentHandle::close(self);
    }
}

impl<H: AgentSide> Pair<H> {
    /// A pair of `agent`, recorded by `recorder`, with the drivers of both ends.
    pub(crate) fn in_memory(
        agent: H,
        recorder: Recorder,
        normalizer: Normalizer,
        client_driver: Driver,
        agent_driver: Driver,
    ) -> Self {
        Pair {
            agent,
            recorder,
            normalizer,
            client_driver: Some(client_driver),
            agent_driver: Some(agent_driver),
            process: None,
        }
    }
}

/// Connects `client` (with `options`) to `agent` over an in-memory pipe and records the
/// traffic, as the agent's end sees it.
///
/// ```
/// use acp_runtime::client::{AutoAllow, ClientOptions};
/// use acp_test::ScriptedAgent;
///
/// smol::block_on(async {
///     let pair = acp_test::connect(ScriptedAgent::new(), AutoAllow, ClientOptions::default());
///     pair.agent().initialize().await.unwrap();
///     let transcript = pair.finish().await;
///     assert_eq!(transcript.entries()[0].method(), Some("initialize"));
/// });
/// ```
pub fn connect<A: Agent, C: Client>(agent: A, client: C, options: ClientOptions) -> Pair {
    let (client_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let recorder = Recorder::agent_side();
    let (_client_handle, agent_driver) = agent::serve(
        agent,
        agent_end.reader,
        agent_end.writer,
        recorder.connection_options().into(),
    );
    let (handle, client_driver) =
        client::connect(client, client_end.reader, client_end.writer, options);
    Pair::in_memory(
        handle,
        recorder,
        Normalizer::new(),
        smol::spawn(client_driver),
        smol::spawn(agent_driver),
    )
}

/// [`connect`] with a [`ScriptedClient`] and the options it advertises
/// ([`ScriptedClient::options`]). Keep a clone of the client to inspect its records.
pub fn connect_scripted<A: Agent>(agent: A, client: &ScriptedClient) -> Pair {
    connect(agent, client.clone(), client.options())
}

/// Spawns an agent command (any ACP agent, in any language) and connects `client` to it over
/// its stdin and stdout, recording the traffic as the client's end sees it.
///
/// The recorder takes the connection options' observer slot: `options`' own
/// [`ClientOptions::with_connection_options`] is replaced by default options with the
/// recorder. [`Pair::finish`] closes the connection and shuts the process down.
pub fn spawn_agent<C: Client>(
    command: AgentCommand,
    client: C,
    options: ClientOptions,
) -> acp_runtime::Result<Pair> {
    let recorder = Recorder::client_side();
    let options = options.with_connection_options(recorder.connection_options());
    let (handle, driver, process) = client::spawn(client, command, options)?;
    Ok(Pair {
        agent: handle,
        recorder,
        normalizer: Normalizer::new(),
        client_driver: Some(smol::spawn(driver)),
        agent_driver: None,
        process: Some(process),
    })
}

impl<H: AgentSide> Pair<H> {
    /// The client's handle on the agent: initialize, open sessions, prompt.
    pub fn agent(&self) -> &H {
        &self.agent
    }

    /// The recorder of this connection.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// The normalizer [`transcript`](Self::transcript) and [`finish`](Self::finish) apply
    /// (default: [`Normalizer::new`]).
    pub fn with_normalizer(mut self, normalizer: Normalizer) -> Self {
        self.normalizer = normalizer;
        self
    }

    /// Adds `dir` as the `<tmp>` directory of the normalizer.
    pub fn with_temp_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.normalizer = self.normalizer.temp_dir(dir);
        self
    }

    /// The normalized transcript so far.
    pub fn transcript(&self) -> Transcript {
        self.normalizer.normalize(&self.recorder.transcript())
    }

    /// The transcript so far, as sent.
    pub fn raw_transcript(&self) -> Transcript {
        self.recorder.transcript()
    }

    /// Closes the connection, waits for both sides to finish (and the agent process to exit),
    /// and returns the normalized transcript. Panics if a side does not finish within 10
    /// seconds or its connection failed.
    pub async fn finish(self) -> Transcript {
        self.finish_with_exit().await.0
    }

    /// [`finish`](Self::finish), also returning how the agent process ended (`None` for an
    /// in-memory pair): for a fake agent process such as `acp-test-agent`, whose exit status
    /// says whether the client followed its transcript.
    pub async fn finish_with_exit(mut self) -> (Transcript, Option<AgentExit>) {
        self.agent.close();
        // A process may die and break the pipe: its exit status tells the story then.
        let strict = self.process.is_none();
        if let Some(driver) = self.client_driver.take() {
            wait_for_driver("the client connection", driver, strict).await;
        }
        if let Some(driver) = self.agent_driver.take() {
            wait_for_driver("the agent connection", driver, strict).await;
        }
        let mut exit = None;
        if let Some(process) = self.process.take() {
            match within(SHUTDOWN_TIMEOUT * 2, process.shutdown()).await {
                Some(status) => exit = Some(status),
                None => panic!("the agent process did not shut down"),
            }
        }
        (self.transcript(), exit)
    }
}

async fn wait_for_driver(
    what: &str,
    driver: impl Future<Output = Result<(), ConnectionError>>,
    strict: bool,
) {
    match within(SHUTDOWN_TIMEOUT, driver).await {
        Some(Ok(())) => {}
        Some(Err(error)) if strict => panic!("{what} failed: {error}"),
        Some(Err(_)) => {}
        None => panic!("{what} did not shut down within {SHUTDOWN_TIMEOUT:?}"),
    }
}

impl<H: AgentSide> std::fmt::Debug for Pair<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair")
            .field("agent", &self.agent)
            .field("recorded", &self.recorder.len())
            .field("process", &self.process.as_ref().map(AgentProcess::id))
            .finish()
    }
}

/// A fresh scratch directory under the system's temporary directory, removed when dropped.
/// Give it to the normalizer ([`Normalizer::temp_dir`], [`Pair::with_temp_dir`]) so that its
/// path shows as `<tmp>`.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates the directory. Panics if it cannot.
    pub fn new() -> TempDir {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "acp-test-{}-{}-{nanos:08x}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        TempDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path inside the directory, as a string (ACP paths are strings).
    pub fn join(&self, relative: impl AsRef<Path>) -> String {
        self.path.join(relative).to_string_lossy().into_owned()
    }
}

impl Default for TempDir {
    fn default() -> Self {
        TempDir::new()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
