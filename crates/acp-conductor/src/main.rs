//! `acp-conductor`: runs a proxy chain as one agent, or one of the built-in proxies.
//!
//! ```text
//! acp-conductor agent [--failure-grace SECS] [--initialize-timeout SECS] PROXY... AGENT
//!                                         the chain, served on stdin/stdout (each a command line)
//! acp-conductor agent [--failure-grace SECS] [--initialize-timeout SECS] --agent ID [--registry FILE|URL] [--refresh] PROXY...
//!                                         the same, the agent from the ACP agent registry
//! acp-conductor proxy [--failure-grace SECS] [--initialize-timeout SECS] PROXY...
//!                                         a chain that is itself a proxy, for another conductor
//! acp-conductor pass-through              a proxy that forwards everything
//! acp-conductor trace-proxy FILE          a proxy that records its hop to FILE (acp-test .jsonl)
//! acp-conductor policy-proxy [--allow KIND]... [--reject KIND]...
//!                                         a proxy that answers permission requests by tool kind
//! ```
//!
//! Usage errors exit with 1 (as before the move to clap, which would use 2), `--help` and
//! `--version` with 0, a failed chain or proxy with 1.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use acp_conductor::policy::Policy;
use acp_conductor::trace::TraceWriter;
use acp_jsonrpc::ConnectionOptions;
use acp_runtime::conductor::command_line;
use acp_runtime::conductor::{Component, Conductor};
use acp_runtime::prelude::ToolKind;
use acp_runtime::proxy::Proxy;
use clap::Parser;

/// Runs a proxy chain as one agent, or one of the built-in proxies.
#[derive(Debug, Parser)]
#[command(name = "acp-conductor", version, args_override_self = true)]
enum Cli {
    /// Runs the chain on stdin/stdout: the proxies in the order given, in front of the agent
    Agent(ChainArgs),
    /// Runs a chain of proxies that is itself a proxy, for another conductor: the last
    /// proxy's successor is this one's
    Proxy(ChainArgs),
    /// A proxy that forwards everything
    PassThrough,
    /// A proxy that records its hop to FILE (an acp-test .jsonl transcript)
    TraceProxy {
        /// The transcript to write (created, or truncated)
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// A proxy that answers permission requests by tool kind, and forwards the others
    PolicyProxy {
        /// Allow (once) the tool calls of KIND (read, edit, execute...); repeatable
        #[arg(long, value_name = "KIND", value_parser = kind)]
        allow: Vec<ToolKind>,
        /// Reject (once) the tool calls of KIND; repeatable
        #[arg(long, value_name = "KIND", value_parser = kind)]
        reject: Vec<ToolKind>,
    },
}

#[derive(Debug, clap::Args)]
struct ChainArgs {
    /// Once a component failed, how long requests in flight get to be answered with the
    /// failure before the client connection closes (fractions allowed; 0 closes at once)
    /// [default: 0.5]
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    failure_grace: Option<Duration>,
    /// How long the client's `initialize` waits for the chain's answer before it gets an
    /// error naming the component that holds it up (fractions allowed) [default: 60]
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    initialize_timeout: Option<Duration>,
    /// `agent` only: the agent is this one of the ACP agent registry, after the proxies given
    /// as components.
    #[command(flatten)]
    registry: acp_registry::cli::RegistryArgs,
    /// Each component's command line (words split as a shell would, quotes kept, nothing
    /// expanded), in order: for `agent` the proxies then the agent (unless --agent names it),
    /// for `proxy` the proxies
    #[arg(required_unless_present = "agent_id", value_name = "COMPONENT")]
    components: Vec<String>,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            // `--help` and `--version` are "errors" printed on stdout.
            return if error.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("acp-conductor: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli {
        Cli::Agent(args) => conduct(args, false),
        Cli::Proxy(args) => conduct(args, true),
        Cli::PassThrough => serve(Proxy::pass_through(), true, ConnectionOptions::default()),
        Cli::TraceProxy { file: path } => {
            let file = std::fs::File::create(&path)
                .map_err(|error| format!("cannot create `{}`: {error}", path.display()))?;
            let trace = TraceWriter::new(std::io::BufWriter::new(file));
            serve(
                Proxy::pass_through(),
                true,
                ConnectionOptions::default().with_observer(trace),
            )
        }
        Cli::PolicyProxy { allow, reject } => {
            let policy = Policy {
                allow: allow.into_iter().collect(),
                reject: reject.into_iter().collect(),
            };
            // Its hook reads v1's permission requests: a v1 proxy.
            serve(policy.proxy(), false, ConnectionOptions::default())
        }
    }
}

/// Serves the chain of `args` on stdin/stdout, as an agent or (`proxy_mode`) as a proxy.
fn conduct(args: ChainArgs, proxy_mode: bool) -> Result<(), String> {
    // Fork the supervisor while this process is small; it kills the chain if the conductor
    // dies, however it dies.
    if let Err(error) = acp_runtime::process::start_supervisor() {
        eprintln!(
            "acp-conductor: no process supervisor ({error}); components may outlive a killed conductor"
        );
    }
    let mut components = args
        .components
        .iter()
        .map(|line| {
            Ok(Component::command(
                line.clone(),
                command_line::command(line)?,
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    if proxy_mode && args.registry.agent_id.is_some() {
        return Err("--agent names the chain's agent; `proxy` has none".into());
    }
    let registry_agent = args
        .registry
        .launch(|message| eprintln!("acp-conductor: {message}"))
        .map_err(|error| error.to_string())?;
    if let Some(launch) = registry_agent {
        components.push(Component::command(launch.to_string(), launch.into()));
    }
    let mut conductor = if proxy_mode {
        Conductor::proxy(components)
    } else {
        Conductor::new(components)
    };
    if let Some(grace) = args.failure_grace {
        conductor = conductor.with_failure_grace(grace);
    }
    if let Some(timeout) = args.initialize_timeout {
        conductor = conductor.with_initialize_timeout(timeout);
    }
    conductor.serve_stdio().map_err(|error| error.to_string())
}

/// `--allow KIND`, `--reject KIND`: a tool kind as the protocol spells it.
fn kind(text: &str) -> Result<ToolKind, String> {
    Policy::kind(text)
}

/// `--failure-grace SECS`, `--initialize-timeout SECS`.
fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| format!("seconds (such as 2 or 0.25), not {text:?}"))
}

/// Serves a built-in proxy on stdin/stdout. With protocol v2 (feature
/// `unstable-protocol-v2`) through the proxy router: as v1, and as v2 too when `speaks_v2`
/// (a proxy without hooks reads no message's params, so it forwards either version); a
/// v1-only proxy answers a v2 chain's `proxy/initialize` as v1, as upstream's `Proxy.v1()`
/// does. Without the feature the proxy forwards whatever version the chain speaks.
#[cfg(feature = "unstable-protocol-v2")]
fn serve(proxy: Proxy, speaks_v2: bool, options: ConnectionOptions) -> Result<(), String> {
    let router = acp_runtime::router::proxy_router().with_options(options);
    let router = if speaks_v2 {
        router.with_v1(proxy.clone()).with_v2(proxy)
    } else {
        router.with_v1(proxy)
    };
    router.serve_stdio().map_err(|error| error.to_string())
}

#[cfg(not(feature = "unstable-protocol-v2"))]
fn serve(proxy: Proxy, _speaks_v2: bool, options: ConnectionOptions) -> Result<(), String> {
    acp_runtime::proxy::serve_stdio_with(proxy, options).map_err(|error| error.to_string())
}
