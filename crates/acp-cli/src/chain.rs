//! `acp --proxy CMD … -- AGENT` (feature `unstable`): a proxy chain conducted in process.
//! acp's client connection reaches an in-process [`Conductor`] over an in-memory pipe; the
//! conductor starts the proxies and the agent as subprocesses, as `acp-conductor agent`
//! would, and they all die with acp (the runtime's process supervisor).

use acp_jsonrpc::memory;
use acp_runtime::client::{self, AgentHandle, Client, ClientOptions};
use acp_runtime::conductor::{ChainError, Component, Conductor, command_line};
use acp_runtime::process::AgentCommand;
use acp_runtime::proxy::Proxy;

/// The hidden flag with which `acp` re-runs itself as a pass-through proxy (forwards
/// everything): a chain member for tests and for measuring the cost of a hop.
pub const SERVE_PASS_THROUGH: &str = "--serve-pass-through-proxy";

/// Serves a pass-through proxy on stdin and stdout (with protocol v2, both versions through
/// the proxy router); the exit status.
pub fn serve_pass_through() -> i32 {
    #[cfg(feature = "unstable-protocol-v2")]
    let served = acp_runtime::router::proxy_router()
        .with_v1(Proxy::pass_through())
        .with_v2(Proxy::pass_through())
        .serve_stdio();
    #[cfg(not(feature = "unstable-protocol-v2"))]
    let served = acp_runtime::proxy::serve_stdio(Proxy::pass_through());
    match served {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("acp: pass-through proxy: {error}");
            1
        }
    }
}

/// The chain's components: each `--proxy` command line, then the agent (named `agent_name`
/// in errors). The error is a usage error's message.
pub fn components(
    proxies: &[String],
    agent: AgentCommand,
    agent_name: String,
) -> Result<Vec<Component>, String> {
    let mut components = proxies
        .iter()
        .map(|line| {
            let command = command_line::command(line).map_err(|e| format!("--proxy: {e}"))?;
            Ok(Component::command(line.clone(), command))
        })
        .collect::<Result<Vec<_>, String>>()?;
    components.push(Component::command(agent_name, agent));
    Ok(components)
}

/// Starts the conductor for `components` and connects `policy` to it. Returns the handle to
/// the chain (an agent to acp), the client connection's driver, and the conductor's task:
/// it ends once acp closes the connection (`Ok`, the chain shut down) or a component fails
/// (the error names it, with its exit status and stderr tail).
pub fn start<C: Client>(
    components: Vec<Component>,
    policy: C,
    options: ClientOptions,
) -> (
    AgentHandle,
    impl Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send + use<C>,
    smol::Task<Result<(), ChainError>>,
) {
    // Forked now, while acp is small: it kills the chain however acp dies.
    if let Err(error) = acp_runtime::process::start_supervisor() {
        eprintln!("acp: no process supervisor ({error}); the chain may outlive a killed acp");
    }
    let (ours, theirs) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let conductor = smol::spawn(Conductor::new(components).run(theirs.reader, theirs.writer));
    let (agent, driver) = client::connect(policy, ours.reader, ours.writer, options);
    (agent, driver, conductor)
}

/// A chain as `--proxy` gave it, to start once more when `--protocol auto` falls back to v1
/// on a fresh connection (components are processes, started anew each time).
#[cfg(feature = "unstable-protocol-v2")]
pub struct Spec {
    pub proxies: Vec<String>,
    pub agent: AgentCommand,
    pub name: String,
}

/// The conductor's task, as [`start`] returns it.
#[cfg(feature = "unstable-protocol-v2")]
pub type Conducting = smol::Task<Result<(), ChainError>>;

/// Starts the conductor for `spec` and returns the client's end of its connection, for the
/// connector to initialize in the version it picks, and the conductor's task.
#[cfg(feature = "unstable-protocol-v2")]
pub fn open(
    spec: &Spec,
) -> acp_runtime::Result<(memory::PipeReader, memory::PipeWriter, Conducting)> {
    let components = components(&spec.proxies, spec.agent.clone(), spec.name.clone())
        .map_err(acp_runtime::Error::Invalid)?;
    if let Err(error) = acp_runtime::process::start_supervisor() {
        eprintln!("acp: no process supervisor ({error}); the chain may outlive a killed acp");
    }
    let (ours, theirs) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let conductor = smol::spawn(Conductor::new(components).run(theirs.reader, theirs.writer));
    Ok((ours.reader, ours.writer, conductor))
}

/// Waits for the proxy chain to shut down once its client connection closed (a grace of two
/// shutdowns); a failed component is reported by name, with its exit status and stderr tail.
pub async fn ended(conductor: smol::Task<Result<(), ChainError>>, code: i32) -> i32 {
    let timeout = async {
        smol::Timer::after(acp_runtime::process::DEFAULT_SHUTDOWN_GRACE * 2).await;
        None
    };
    if let Some(Err(error)) =
        futures_lite::future::or(async { Some(conductor.await) }, timeout).await
    {
        eprintln!("acp: the proxy chain failed: {error}");
    }
    code
}
