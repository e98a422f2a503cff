//! Forks a session of any agent (`session/fork`, unstable): initializes, opens a session in
//! the current directory, forks it, checks the fork, lists the agent's sessions when it
//! advertises `session/list`, and prints a one-line verdict. No prompt is sent, so an agent
//! that needs a model provider only for its turns gets this far offline.
//!
//! ```text
//! cargo run -p acp-rs-runtime --features unstable-session-fork --example fork -- AGENT [ARGS…]
//! cargo run -p acp-rs-runtime --features unstable-session-fork --example fork -- --trace AGENT …
//! cargo run -p acp-rs-runtime --features unstable-session-fork --example fork -- --prompt /context AGENT …
//! ```
//!
//! `--trace` prints every JSON-RPC line to stderr (`->` sent, `<-` received). `--prompt TEXT`
//! runs one turn on the original session before forking it (an agent that keeps its sessions
//! on disk may have nothing to fork from until the session saw a turn); the turn's stop reason
//! goes into the verdict, and a turn that fails fails the run. The verdict is
//! one line on stdout, `fork: ok …` (exit 0) or `fork: FAIL …` (exit 1); exit 2 is a usage
//! error. The checks: the agent advertises `sessionCapabilities.fork` (else the call would be
//! refused locally), the fork answers with a session id other than the original's, and both
//! the `session/new` and the `session/fork` answers decode with nothing dropped by the
//! lenient fields (`acp_types::de::collect_dropped`). The whole run is bounded by 60 s
//! (`FORK_TIMEOUT` seconds).

use std::time::Duration;

use acp_runtime::client::{self, AgentHandle, AutoReject, ClientOptions, PrintTraffic, Session};
use acp_runtime::process::AgentCommand;
use acp_types::de::collect_dropped;
use acp_types::*;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let (mut trace, mut prompt) = (false, None);
    loop {
        match args.first().map(String::as_str) {
            Some("--trace") => trace = true,
            Some("--prompt") if args.len() > 1 => prompt = Some(args.remove(1)),
            _ => break,
        }
        args.remove(0);
    }
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: fork [--trace] [--prompt TEXT] AGENT [ARGS…]");
        std::process::exit(2);
    };
    let timeout = std::env::var("FORK_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(60), Duration::from_secs);
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => fail("cwd", &error),
    };

    let mut options =
        ClientOptions::default().with_info("acp-fork-example", env!("CARGO_PKG_VERSION"));
    if trace {
        options = options.with_observer(PrintTraffic);
    }
    let command = AgentCommand::new(program).args(rest).cwd(&cwd);
    let run = client::run_spawned(AutoReject, command, options, |agent| async move {
        let work = fork(&agent, &cwd, prompt.as_deref());
        let limit = async {
            smol::Timer::after(timeout).await;
            Err(Step::new(
                "timeout",
                format!("no verdict within {} s", timeout.as_secs()),
            ))
        };
        Ok(futures_lite::future::or(work, limit).await)
    });
    match run {
        Ok((Ok(verdict), exit)) => println!("fork: ok — {verdict}; agent exited: {exit}"),
        Ok((Err(step), exit)) => {
            println!(
                "fork: FAIL — {}: {}; agent exited: {exit}",
                step.stage, step.why
            );
            std::process::exit(1);
        }
        Err(error) => fail("run", &error),
    }
}

fn fail(stage: &str, error: &dyn std::fmt::Display) -> ! {
    println!("fork: FAIL — {stage}: {error}");
    std::process::exit(1);
}

/// Where the run stopped, and why.
struct Step {
    stage: &'static str,
    why: String,
}

impl Step {
    fn new(stage: &'static str, why: impl Into<String>) -> Self {
        Step {
            stage,
            why: why.into(),
        }
    }
}

/// Attaches the stage to an error.
fn at<T>(stage: &'static str, result: acp_runtime::Result<T>) -> Result<T, Step> {
    result.map_err(|error| Step::new(stage, error.to_string()))
}

async fn fork(
    agent: &AgentHandle,
    cwd: &std::path::Path,
    prompt: Option<&str>,
) -> Result<String, Step> {
    let init = at("initialize", agent.initialize().await)?;
    let who = init.agent_info.as_ref().map_or_else(
        || "an agent without agentInfo".to_owned(),
        |info| format!("{} {}", info.name, info.version),
    );
    let capabilities = &init.agent_capabilities.session_capabilities;
    if capabilities.fork.is_none() {
        return Err(Step::new(
            "initialize",
            format!("{who} does not advertise sessionCapabilities.fork"),
        ));
    }

    let session = at("session/new", agent.new_session(cwd).await)?;
    whole_answer::<NewSessionResponse>("session/new", &session)?;
    let mut turn_note = String::new();
    if let Some(text) = prompt {
        turn_note = format!(" after a turn ({})", one_turn(&session, text).await?);
    }

    let forked = at("session/fork", session.fork().await)?;
    if forked.id() == session.id() {
        return Err(Step::new(
            "session/fork",
            format!("the fork has the original's id {}", session.id()),
        ));
    }
    let answer = whole_answer::<ForkSessionResponse>("session/fork", &forked)?;
    let mut verdict = format!(
        "{who}: session {}{turn_note} forked into {} ({} modes, {} config options)",
        session.id(),
        forked.id(),
        answer.modes.as_ref().map_or(0, |m| m.available_modes.len()),
        answer.config_options.as_ref().map_or(0, Vec::len),
    );
    // The fork is a session like any other: it takes the same turn.
    if let Some(text) = prompt {
        verdict += &format!(
            ", then a turn on the fork ({})",
            one_turn(&forked, text).await?
        );
    }

    if capabilities.list.is_some() {
        let listed = at("session/list", agent.list_all_sessions(Some(cwd)).await)?;
        let has = |id: &SessionId| listed.iter().any(|s| &s.session_id == id);
        verdict += &format!(
            "; session/list: {} sessions in the cwd (original listed: {}, fork listed: {})",
            listed.len(),
            yes_no(has(session.id())),
            yes_no(has(forked.id())),
        );
    } else {
        verdict += "; session/list not advertised";
    }
    Ok(verdict)
}

/// Runs one turn; a turn that fails, or an update that does not decode, fails the run.
async fn one_turn(session: &Session, text: &str) -> Result<String, Step> {
    let mut turn = at("session/prompt", session.prompt(vec![text.into()]).await)?;
    let mut updates = 0;
    while let Some(update) = turn.next().await {
        at("session/prompt", update)?;
        updates += 1;
    }
    let response = at("session/prompt", turn.end().await)?;
    Ok(format!(
        "{text:?}: {updates} updates, {}",
        response.stop_reason
    ))
}

/// Decodes the session's whole answer again, failing if a lenient field dropped anything.
fn whole_answer<T: serde::de::DeserializeOwned>(
    stage: &'static str,
    session: &Session,
) -> Result<T, Step> {
    let raw = session
        .answer()
        .ok_or_else(|| Step::new(stage, "the session kept no answer"))?;
    let (decoded, dropped) = collect_dropped(|| serde_json::from_str::<T>(raw.get()));
    let decoded =
        decoded.map_err(|e| Step::new(stage, format!("the answer does not decode: {e}")))?;
    if let Some(first) = dropped.first() {
        return Err(Step::new(
            stage,
            format!(
                "{} value(s) of the answer dropped, first a {}: {} ({})",
                dropped.len(),
                first.expected,
                first.value,
                first.error
            ),
        ));
    }
    Ok(decoded)
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
