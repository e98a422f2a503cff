//! `acp`: a command-line Agent Client Protocol client. It starts an agent (the bundled demo
//! agent by default) or connects to a remote one by its URL, opens a session and runs prompt turns the way an editor would: it
//! serves the agent's file system and terminal calls, answers permission requests by policy
//! or by asking, and prints each turn as it streams. `acp --help` has the details.

#![forbid(unsafe_code)]

mod args;
mod ask;
#[cfg(feature = "unstable")]
mod chain;
mod control;
mod diff;
mod input;
mod registry;
mod remote;
mod render;
mod report;
mod setup;
mod signal;
mod trace;
mod trace_view;
mod workdir;

// A symbolic link to acp-runtime's example agent (one source for both), which `cargo package`
// packages as the file it points to.
mod demo_agent;
#[cfg(feature = "unstable-protocol-v2")]
mod demo_agent_v2;
#[cfg(feature = "unstable-protocol-v2")]
mod v2;

use std::future::Future;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_runtime::Error;
use acp_runtime::client::{
    self, AgentHandle, AutoAllow, AutoReject, Client, ClientOptions, Session,
};
use acp_runtime::fs::FsHost;
use acp_runtime::process::{AgentCommand, AgentProcess};
use acp_types::*;

use args::{Args, Policy};
use ask::Ask;
use control::{Control, RunningTurn, watch_interrupts};
use render::Renderer;
use report::{color, note, print_auth_methods, registry_failure};
use signal::Interrupts;
use workdir::{Scratch, resolve_cwd};

/// The hidden flag with which `acp` re-runs itself as the bundled demo agent.
const SERVE_DEMO_AGENT: &str = "--serve-demo-agent";

mod exit {
    pub const OK: i32 = 0;
    pub const OTHER: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const AUTH_REQUIRED: i32 = 3;
    pub const REFUSED: i32 = 4;
    pub const AGENT_GONE: i32 = 5;
    /// The agent does not advertise what an option needs (`--system-prompt`, `--options`).
    pub const UNADVERTISED: i32 = 6;
    pub const CANCELLED: i32 = 130;
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().map(String::as_str) == Some(SERVE_DEMO_AGENT) {
        // With protocol v2, both versions through the router: a v2 client gets the v2 demo.
        #[cfg(feature = "unstable-protocol-v2")]
        std::process::exit(demo_agent_v2::serve_stdio());
        #[cfg(not(feature = "unstable-protocol-v2"))]
        std::process::exit(demo_agent::serve_stdio());
    }
    #[cfg(feature = "unstable")]
    if raw.first().map(String::as_str) == Some(chain::SERVE_PASS_THROUGH) {
        std::process::exit(chain::serve_pass_through());
    }
    // Usage errors exit with 2 (exit::USAGE, clap's status too); --help and --version with 0.
    let args = args::parse(raw).unwrap_or_else(|error| error.exit());
    match &args.command {
        Some(args::Command::Completions { shell }) => {
            args::print_completions(*shell);
            return;
        }
        Some(args::Command::Agents { options }) => match registry::list(options) {
            Ok(table) => {
                print!("{table}");
                return;
            }
            Err(failed) => std::process::exit(registry_failure(failed)),
        },
        Some(args::Command::Trace(command)) => std::process::exit(trace_view::run(command)),
        None => {}
    }
    if args.options && cfg!(not(feature = "unstable")) {
        eprintln!(
            "acp: --options sends session/options, an unstable method: this acp was built without the `unstable` feature (cargo install acp-rs-cli --features unstable)"
        );
        std::process::exit(exit::USAGE);
    }
    if !args.proxies.is_empty() && cfg!(not(feature = "unstable")) {
        eprintln!(
            "acp: --proxy runs a proxy chain, an unstable part of the protocol: this acp was built without the `unstable` feature (cargo install acp-rs-cli --features unstable)"
        );
        std::process::exit(exit::USAGE);
    }
    if args.protocol != "1" {
        if cfg!(not(feature = "unstable-protocol-v2")) {
            eprintln!(
                "acp: --protocol {} speaks protocol v2, a published draft: this acp was built without the `unstable-protocol-v2` feature (cargo install acp-rs-cli --features unstable-protocol-v2)",
                args.protocol
            );
            std::process::exit(exit::USAGE);
        }
        if let Some(problem) = args.protocol_conflict(cfg!(feature = "unstable")) {
            args::usage_error(&problem).exit();
        }
    }
    if !args.proxies.is_empty() && remote::url(&args.agent).is_some() {
        args::usage_error("--proxy needs an agent command to start, not a URL").exit();
    }
    if remote::url(&args.agent).is_none()
        && (args.token.is_some() || args.ca.is_some() || args.durable_transport)
    {
        args::usage_error(
            "--token, --ca and --durable-transport apply to a remote agent only: `-- ws://HOST:PORT/PATH` (or wss://, http://, https://)",
        )
        .exit();
    }
    std::process::exit(run_main(args));
}

/// A failure that ends the run, with its exit status.
struct Failure {
    code: i32,
    message: String,
    /// The agent went away without saying how (a closed connection): report its exit.
    report_exit: bool,
}

impl Failure {
    fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
            report_exit: false,
        }
    }

    /// A failed call: what it was doing, and the status its error means.
    fn call(doing: &str, error: Error) -> Self {
        let code = match &error {
            Error::Rpc(_) if error.is_auth_required() => exit::AUTH_REQUIRED,
            Error::Rpc(_) => exit::REFUSED,
            Error::AgentExited { .. } | Error::ConnectionClosed => exit::AGENT_GONE,
            _ => exit::OTHER,
        };
        let mut failure = Failure::new(
            code,
            format!("{doing}: {}", render::errors::error_text(&error)),
        );
        failure.report_exit = matches!(error, Error::ConnectionClosed);
        failure
    }
}

fn run_main(mut args: Args) -> i32 {
    // `--system-prompt @FILE` becomes the file's text here, before the agent starts: a
    // missing file costs no agent start.
    if let Some(value) = args.system_prompt.take() {
        match args::system_prompt_text(&value) {
            Ok(text) => args.system_prompt = Some(text),
            Err(message) => {
                eprintln!("acp: {message}");
                return exit::OTHER;
            }
        }
    }
    // The demo agent writes files: without --cwd it works in a scratch directory, never in
    // the directory acp was started in.
    let demo_scratch = args.runs_demo() && args.cwd.is_none() && args.load.is_none();
    let (cwd, _scratch) = if demo_scratch {
        match Scratch::create() {
            Ok(scratch) => {
                note(
                    args.json,
                    &format!(
                        "demo agent: working in the scratch directory {}",
                        scratch.0.display()
                    ),
                );
                (scratch.0.clone(), Some(scratch))
            }
            Err(error) => {
                eprintln!("acp: creating the demo's scratch directory: {error}");
                return exit::OTHER;
            }
        }
    } else {
        match resolve_cwd(args.cwd.clone()) {
            Ok(cwd) => (cwd, None),
            Err(message) => {
                eprintln!("acp: {message}");
                return exit::OTHER;
            }
        }
    };
    let target = if let Some(url) = remote::url(&args.agent) {
        match remote::connector(url, args.token.clone(), args.ca.as_deref()) {
            Ok(connector) if args.durable_transport => {
                Target::Remote(connector.with_durable_transport())
            }
            Ok(connector) => Target::Remote(connector),
            Err(message) => {
                eprintln!("acp: {message}");
                return exit::OTHER;
            }
        }
    } else {
        let from_registry = match registry::command(&args.registry) {
            Ok(found) => found,
            Err(failed) => return registry_failure(failed),
        };
        match (from_registry, args.agent.split_first()) {
            (Some((command, line)), _) => {
                note(args.json, &format!("registry agent: {line}"));
                Target::Command(command)
            }
            (None, Some((program, rest))) => Target::Command(AgentCommand::new(program).args(rest)),
            (None, None) => match std::env::current_exe() {
                Ok(me) => Target::Command(AgentCommand::new(me).arg(SERVE_DEMO_AGENT)),
                Err(error) => {
                    eprintln!("acp: cannot find my own binary to run the demo agent: {error}");
                    return exit::OTHER;
                }
            },
        }
    };
    #[cfg(feature = "unstable")]
    let target = match target {
        Target::Command(command) if !args.proxies.is_empty() => {
            let name = match (&args.registry.agent_id, args.agent.is_empty()) {
                (Some(id), _) => format!("registry agent {id}"),
                (None, true) => "the demo agent".to_owned(),
                (None, false) => args.agent.join(" "),
            };
            match chain::components(&args.proxies, command.clone(), name.clone()) {
                #[cfg(feature = "unstable-protocol-v2")]
                Ok(_) if args.protocol != "1" => Target::ChainV2(chain::Spec {
                    proxies: args.proxies.clone(),
                    agent: command,
                    name,
                }),
                Ok(components) => Target::Chain(components),
                Err(message) => {
                    // A --proxy command line that does not split: a usage error, in clap's
                    // format like the others.
                    let _ = args::usage_error(&message).print();
                    return exit::USAGE;
                }
            }
        }
        target => target,
    };
    let policy = args.policy().unwrap_or(if std::io::stdin().is_terminal() {
        Policy::Ask
    } else {
        Policy::Reject
    });
    let interrupts = match Interrupts::install() {
        Ok(interrupts) => interrupts,
        Err(error) => {
            eprintln!("acp: catching Ctrl-C: {error}");
            return exit::OTHER;
        }
    };
    smol::block_on(async {
        match policy {
            Policy::Yes => run(AutoAllow, policy, &args, cwd, target, interrupts).await,
            Policy::Ask => run(Ask, policy, &args, cwd, target, interrupts).await,
            Policy::Reject => run(AutoReject, policy, &args, cwd, target, interrupts).await,
        }
    })
}

/// Where the agent is: a command to start, or a remote agent's URL.
enum Target {
    Command(AgentCommand),
    Remote(acp_remote::Connector),
    /// `--proxy`: the proxies, then the agent, conducted in process.
    #[cfg(feature = "unstable")]
    Chain(Vec<acp_runtime::conductor::Component>),
    /// `--proxy` with `--protocol 2|auto`: the chain to start for each connection tried.
    #[cfg(all(feature = "unstable", feature = "unstable-protocol-v2"))]
    ChainV2(chain::Spec),
}

/// The connection's driver, whichever way the agent was reached.
type Driver = Pin<Box<dyn Future<Output = Result<(), acp_jsonrpc::ConnectionError>> + Send>>;

async fn run<C: Client>(
    client: C,
    // The v1 client above answers by it; with `--protocol 2`, the v2 client too.
    policy: Policy,
    args: &Args,
    cwd: PathBuf,
    target: Target,
    interrupts: Interrupts,
) -> i32 {
    // Only a v2 client is made here; the v1 one came made.
    #[cfg(not(feature = "unstable-protocol-v2"))]
    let _ = policy;
    let json = args.json;
    let connection = acp_jsonrpc::ConnectionOptions::default();
    // Kept to the end of the run: dropping it ends the live view (`--trace-view`).
    let (connection, _live_view) = match trace::install(args, connection) {
        Ok(installed) => installed,
        Err(message) => {
            eprintln!("acp: {message}");
            return exit::OTHER;
        }
    };
    let terminals = render::Terminals::new();
    let options = ClientOptions::default()
        .with_info("acp", env!("CARGO_PKG_VERSION"))
        .with_capabilities(setup::client_capabilities())
        .with_file_system(FsHost::new())
        .with_terminals(terminals.host())
        .with_connection_options(connection);
    #[cfg(feature = "unstable")]
    let mut conductor = None;
    // With --protocol 2 or auto, `initialize` is sent by the connector, which learns the
    // version from it.
    #[cfg(feature = "unstable-protocol-v2")]
    let mut initialized = None;
    #[cfg(not(feature = "unstable-protocol-v2"))]
    let initialized = None;
    let (agent, driver, process): (AgentHandle, Driver, Option<AgentProcess>) = match target {
        #[cfg(feature = "unstable-protocol-v2")]
        Target::Command(command) if args.protocol != "1" => {
            use acp_runtime::client::connector::{self, Connected};
            let protocol = args.protocol.parse().unwrap_or_default();
            let (v2_client, updates) = v2::client(policy);
            match connector::spawn(protocol, client, v2_client, command, options).await {
                Ok(Connected::V1 {
                    agent,
                    init,
                    driver,
                    keep,
                }) => {
                    initialized = Some(*init);
                    (agent, driver, Some(keep))
                }
                Ok(Connected::V2 {
                    agent,
                    init,
                    driver,
                    keep,
                }) => {
                    let connection = v2::Connection {
                        agent,
                        init: *init,
                        driver,
                        process: Some(keep),
                        updates,
                    };
                    return v2::run(connection, args, &cwd, interrupts).await;
                }
                Err(error) => {
                    eprintln!(
                        "acp: starting the agent (protocol {}): {error}",
                        args.protocol
                    );
                    return exit::AGENT_GONE;
                }
            }
        }
        #[cfg(feature = "unstable-protocol-v2")]
        Target::Remote(connector) if args.protocol != "1" => {
            use acp_runtime::client::connector::{self, Connected};
            let protocol = args.protocol.parse().unwrap_or_default();
            let (v2_client, updates) = v2::client(policy);
            let open = || async {
                let remote = connector.connect().await?;
                Ok((remote.reader, remote.writer, ()))
            };
            match connector::connect_with_protocol(protocol, client, v2_client, open, options).await
            {
                Ok(Connected::V1 {
                    agent,
                    init,
                    driver,
                    ..
                }) => {
                    initialized = Some(*init);
                    (agent, driver, None)
                }
                Ok(Connected::V2 {
                    agent,
                    init,
                    driver,
                    ..
                }) => {
                    let connection = v2::Connection {
                        agent,
                        init: *init,
                        driver,
                        process: None,
                        updates,
                    };
                    return v2::run(connection, args, &cwd, interrupts).await;
                }
                Err(error) => {
                    eprintln!(
                        "acp: {}",
                        remote::unreachable(connector.url(), &error.to_string())
                    );
                    return exit::AGENT_GONE;
                }
            }
        }
        Target::Command(command) => match client::spawn(client, command, options) {
            Ok((agent, driver, process)) => (agent, Box::pin(driver), Some(process)),
            Err(error) => {
                eprintln!("acp: starting the agent: {error}");
                return exit::AGENT_GONE;
            }
        },
        Target::Remote(connector) => match remote::connect(&connector, client, options).await {
            Ok((agent, driver)) => (agent, Box::pin(driver), None),
            Err(message) => {
                eprintln!("acp: {message}");
                return exit::AGENT_GONE;
            }
        },
        #[cfg(feature = "unstable")]
        Target::Chain(components) => {
            let (agent, driver, task) = chain::start(components, client, options);
            conductor = Some(task);
            (agent, Box::pin(driver), None)
        }
        #[cfg(all(feature = "unstable", feature = "unstable-protocol-v2"))]
        Target::ChainV2(spec) => {
            use acp_runtime::client::connector::{self, Connected};
            let protocol = args.protocol.parse().unwrap_or_default();
            let (v2_client, updates) = v2::client(policy);
            let open = || std::future::ready(chain::open(&spec));
            match connector::connect_with_protocol(protocol, client, v2_client, open, options).await
            {
                Ok(Connected::V1 {
                    agent,
                    init,
                    driver,
                    keep,
                }) => {
                    initialized = Some(*init);
                    conductor = Some(keep);
                    (agent, driver, None)
                }
                Ok(Connected::V2 {
                    agent,
                    init,
                    driver,
                    keep,
                }) => {
                    let connection = v2::Connection {
                        agent,
                        init: *init,
                        driver,
                        process: None,
                        updates,
                    };
                    let code = v2::run(connection, args, &cwd, interrupts).await;
                    return chain::ended(keep, code).await;
                }
                Err(error) => {
                    eprintln!("acp: starting the proxy chain: {error}");
                    return exit::AGENT_GONE;
                }
            }
        }
    };
    let driver = smol::spawn(driver);
    let control = Arc::new(Control {
        agent: agent.clone(),
        turn: Mutex::new(None),
        process: Mutex::new(process),
        quitting: AtomicBool::new(false),
    });
    let watcher = smol::spawn(watch_interrupts(control.clone(), interrupts));

    let mut out = Renderer::new(json, !json && color(std::io::stdout()));
    let result = session_and_turns(
        &agent,
        initialized,
        args,
        &cwd,
        &control,
        &mut out,
        terminals,
    )
    .await;
    if control.quitting.load(Ordering::SeqCst) {
        // The run failed because the watcher is shutting the agent down; it exits with 130.
        futures_lite::future::pending::<()>().await;
    }
    let mut report_exit = false;
    let code = match result {
        Ok(code) => code,
        Err(failure) => {
            report_exit = failure.report_exit;
            out.finish_line();
            eprintln!("acp: {}", failure.message);
            if failure.code == exit::AUTH_REQUIRED {
                print_auth_methods(&agent);
            }
            failure.code
        }
    };
    drop(watcher);
    agent.close();
    // What is still queued gets a grace period to be written: an agent that stopped reading
    // must not keep acp from exiting. Then the staged shutdown.
    let grace = async {
        smol::Timer::after(acp_runtime::process::DEFAULT_SHUTDOWN_GRACE).await;
        Ok(())
    };
    let _ = futures_lite::future::or(driver, grace).await;
    let crashed = code == exit::AGENT_GONE;
    if report_exit {
        // The status and stderr tail, also when the failure was only a closed connection.
        let process = control.process.lock().unwrap().take();
        if let Some(process) = process {
            let exited = process.exited();
            let timeout = async {
                smol::Timer::after(Duration::from_secs(2)).await;
                None
            };
            match futures_lite::future::or(async { Some(exited.await) }, timeout).await {
                Some(exit) => {
                    eprintln!("agent exited: {exit}");
                    if !exit.stderr_tail.is_empty() {
                        eprintln!(
                            "agent stderr (last lines):\n{}",
                            exit.stderr_tail.trim_end()
                        );
                    }
                }
                None => {
                    control.process.lock().unwrap().replace(process);
                }
            }
        }
    }
    control.shutdown(json || crashed).await;
    #[cfg(feature = "unstable")]
    if let Some(conductor) = conductor {
        return chain::ended(conductor, code).await;
    }
    code
}

async fn session_and_turns(
    agent: &AgentHandle,
    initialized: Option<InitializeResponse>,
    args: &Args,
    cwd: &std::path::Path,
    control: &Control,
    out: &mut Renderer,
    terminals: render::Terminals,
) -> Result<i32, Failure> {
    let init = match initialized {
        Some(init) => init,
        None => agent.initialize().await.map_err(|error| {
            match remote::url(&args.agent)
                .and_then(|url| remote::initialize_unreachable(url, &error))
            {
                Some(message) => Failure::new(exit::AGENT_GONE, message),
                None => Failure::call("initialize", error),
            }
        })?,
    };
    let name = init
        .agent_info
        .as_ref()
        .map_or("agent".to_owned(), |i| format!("{} {}", i.name, i.version));
    note(
        args.json,
        &format!("connected to {name} (protocol {})", init.protocol_version),
    );

    if let Some(method) = &args.auth {
        agent
            .authenticate(method.as_str())
            .await
            .map_err(|e| Failure::call(&format!("authenticate with `{method}`"), e))?;
        note(args.json, &format!("authenticated with {method}"));
    }

    let cwd_text = cwd.to_string_lossy().into_owned();
    #[cfg(feature = "unstable")]
    if args.options {
        setup::session_options(&init.agent_capabilities)
            .map_err(|message| Failure::new(exit::UNADVERTISED, message))?;
        let options = agent
            .request(&SessionOptionsRequest::new(cwd_text))
            .await
            .map_err(|e| Failure::call("session/options", e))?;
        out.session_options(&options);
        return Ok(exit::OK);
    }
    // Checked before any session request: an agent that did not advertise the system
    // prompt (or its mode) gets no session request at all.
    let system_prompt = setup::given_system_prompt(args, |text, mode| {
        setup::system_prompt(text, mode, &init.agent_capabilities)
    })?;
    let session = match &args.load {
        Some(id) => {
            let mut request =
                LoadSessionRequest::new(Vec::<McpServer>::new(), cwd_text, id.as_str());
            if let Some(prompt) = system_prompt {
                request = request.with_system_prompt(prompt);
            }
            let (session, _) = agent
                .load_session(request)
                .await
                .map_err(|e| Failure::call(&format!("session/load {id}"), e))?;
            note(
                args.json,
                &format!("session {} loaded in {}", session.id(), cwd.display()),
            );
            // The replayed history.
            while let Some(item) = session.try_next_in_tree() {
                out.tree_item(&item);
            }
            session
        }
        None => {
            let mut request = NewSessionRequest::new(cwd_text, Vec::<McpServer>::new());
            if let Some(prompt) = system_prompt {
                request = request.with_system_prompt(prompt);
            }
            let session = agent
                .new_session_with(request)
                .await
                .map_err(|e| Failure::call("session/new", e))?;
            note(
                args.json,
                &format!("session {} in {}", session.id(), cwd.display()),
            );
            session
        }
    };
    out.show_terminals(terminals, session.id());

    if let Some(mode) = &args.mode {
        session
            .set_mode(mode.as_str())
            .await
            .map_err(|e| Failure::call(&format!("--mode {mode}"), e))?;
        note(args.json, &format!("mode: {mode}"));
    }
    let mut config = args.config.clone();
    if let Some(model) = &args.model {
        // Models are picked through the stable config options: the one the agent marks as
        // its model selector.
        let selector = session.config_options().and_then(|options| {
            options
                .into_iter()
                .find(|o| o.category == Some(SessionConfigOptionCategory::Model))
        });
        let Some(selector) = selector else {
            return Err(Failure::new(
                exit::OTHER,
                format!(
                    "--model {model}: the agent advertises no model selector (a config option of category `model`)"
                ),
            ));
        };
        config.insert(0, (selector.id.to_string(), model.clone()));
    }
    for (id, value) in &config {
        let boolean = session.config_options().is_some_and(|options| {
            options.iter().any(|o| {
                o.id.as_str() == id && matches!(o.kind, SessionConfigOptionKind::Boolean(_))
            })
        });
        let kind = match setup::config_value(id, value, boolean)
            .map_err(|message| Failure::new(exit::USAGE, message))?
        {
            setup::ConfigValue::Boolean(value) => SetSessionConfigOptionRequestKind::Boolean(
                SetSessionConfigOptionRequestKindBoolean::new(value),
            ),
            setup::ConfigValue::Id(value) => SetSessionConfigOptionRequestKind::ValueId(
                SetSessionConfigOptionRequestKindValueId::new(value),
            ),
        };
        session
            .set_config_option(id.as_str(), kind)
            .await
            .map_err(|e| Failure::call(&format!("--config {id}={value}"), e))?;
        note(args.json, &format!("config: {id}={value}"));
    }

    let mut prompts = input::Prompts::new(&args.prompts);
    while let Some(prompt) = prompts.next().await {
        out.prompt(&prompt);
        *control.turn.lock().unwrap() = Some(RunningTurn {
            session: session.clone(),
            cancelled: false,
        });
        let result = turn(agent, &session, prompt, out).await;
        control.turn.lock().unwrap().take();
        let reason = result?;
        // Prompts given with --prompt are a script, which a cancelled turn ends; prompts
        // typed on stdin go on with the next line.
        if reason == StopReason::Cancelled && !args.prompts.is_empty() {
            return Ok(exit::CANCELLED);
        }
    }
    Ok(exit::OK)
}

/// Runs one turn, showing its session's updates and its subagents' (each under its title)
/// in the order they arrived, and the reports of updates dropped where no session could say.
async fn turn(
    agent: &AgentHandle,
    session: &Session,
    prompt: String,
    out: &mut Renderer,
) -> Result<StopReason, Failure> {
    let mut turn = session
        .prompt(vec![prompt.into()])
        .await
        .map_err(|e| Failure::call("session/prompt", e))?;
    while let Some(item) = turn.next_in_tree().await {
        // What came for sessions nobody opened while this item waited came before it.
        elsewhere(agent, out);
        out.tree_item(&item);
    }
    elsewhere(agent, out);
    let response = turn
        .end()
        .await
        .map_err(|e| Failure::call("session/prompt", e))?;
    out.stop(&response);
    Ok(response.stop_reason)
}

/// Shows the updates for session ids acp neither opened nor follows, and the reports of
/// those the runtime dropped: acp opens no other session, so they are never taken otherwise.
fn elsewhere(agent: &AgentHandle, out: &mut Renderer) {
    for unopened in agent.take_unopened_updates() {
        out.unopened(&unopened);
    }
    for report in agent.take_dropped_updates() {
        out.dropped(&report);
    }
}
