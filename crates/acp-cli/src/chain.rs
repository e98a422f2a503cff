//! `acp --proxy CMD … -- AGENT` (feature `unstable`): a proxy chain conducted in process.
//! acp's client connection reaches an in-process [`Conductor`] over an in-memory pipe; the
//! conductor starts the proxies and the agent as subprocesses, as `acp-conductor agent`
//! would, and they all die with acp (the runtime's process supervisor).

use acp_jsonrpc::memory;
use acp_runtime::client::{self, AgentHandle, Client, ClientOptions};
use acp_runtime::conductor::{ChainError, Component, Conductor, command_line};
use acp_runtime::process::AgentCommand;
use acp_runtime::proxy::{self, Proxy};

/// The hidden flag with which `acp` re-runs itself as a pass-through proxy (forwards
/// everything): a chain member for tests and for measuring the cost of a hop.
pub const SERVE_PASS_THROUGH: &str = "--serve-pass-through-proxy";

/// Serves a pass-through proxy on stdin and stdout; the exit status.
pub fn serve_pass_through() -> i32 {
    match proxy::serve_stdio(Proxy::pass_through()) {
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
