//! The conductor binary with real processes over pipes: three pass-through proxies and a
//! trace proxy in front of an agent (this very binary, in agent mode), 100,000 streamed
//! updates in order, a component crash mid-turn, a SIGKILLed conductor, a client that goes
//! away mid-turn or mid-handshake, a component that never answers its `initialize`, and the
//! conductor's memory for large messages; with `unstable-protocol-v2`, v2 through the built-in
//! proxies (v2.rs).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use acp_jsonrpc::transcript;
use acp_runtime::prelude::*;
use acp_runtime::process::AgentCommand;

#[cfg(feature = "unstable-protocol-v2")]
mod v2;

const MODE: &str = "ACP_CHAIN_TEST_AGENT";
const MARKER: &str = "ACP_CHAIN_TEST_RUN";
/// The file a cancelled `hang` turn writes (a killed agent writes nothing).
const NOTE: &str = "ACP_CHAIN_TEST_NOTE";
/// The argument that makes this binary a component that never answers ([`deaf`]).
const DEAF: &str = "deaf";

struct TestAgent;

impl Agent for TestAgent {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new(agent::new_session_id()))
    }

    async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
        let text = request
            .prompt
            .first()
            .and_then(ContentBlock::as_text)
            .unwrap_or_default();
        let (what, count) = text.split_once(' ').unwrap_or((text, "0"));
        let count: usize = count.parse().unwrap_or(0);
        for i in 0..count {
            turn.message(ContentBlock::from(i.to_string())).await?;
        }
        match what {
            // `echo TEXT`: one update carrying the whole prompt back.
            "echo" => turn.message(ContentBlock::from(text)).await?,
            "crash" => {
                eprintln!("test agent: boom after {count} updates");
                std::process::exit(3);
            }
            "hang" => {
                let _noted = NoteWhenCancelled;
                std::future::pending::<()>().await
            }
            _ => {}
        }
        Ok(StopReason::EndTurn.into())
    }
}

/// Where a turn dropped by its cancellation says so: in the file named by [`NOTE`].
struct NoteWhenCancelled;

impl Drop for NoteWhenCancelled {
    fn drop(&mut self) {
        if let Some(path) = std::env::var_os(NOTE) {
            let _ = std::fs::write(path, "cancelled");
        }
    }
}

fn conductor(proxies: &[String], marker: &str) -> AgentCommand {
    conductor_with(&[], proxies, marker)
}

/// `acp-conductor agent OPTIONS... PROXIES... <this test binary>`.
fn conductor_with(options: &[&str], proxies: &[String], marker: &str) -> AgentCommand {
    let me = std::env::current_exe().unwrap();
    let mut command = AgentCommand::new(env!("CARGO_BIN_EXE_acp-conductor"))
        .arg("agent")
        .env(MARKER, marker)
        .env(MODE, "1");
    for option in options {
        command = command.arg(*option);
    }
    for proxy in proxies {
        command = command.arg(proxy);
    }
    command.arg(me.display().to_string())
}

fn pass_through() -> String {
    format!("{} pass-through", env!("CARGO_BIN_EXE_acp-conductor"))
}

/// Processes of this run still alive (their environment holds the marker).
fn survivors(marker: &str) -> Vec<u32> {
    let needle = format!("{MARKER}={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        });
        if !zombie
            && environ
                .split(|&b| b == 0)
                .any(|var| var == needle.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

fn wait_for_no_survivors(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = survivors(marker);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn marker(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

fn streams_in_order_through_three_proxies_and_a_trace() {
    const UPDATES: usize = 100_000;
    let run = marker("stream");
    let trace: PathBuf =
        std::env::temp_dir().join(format!("acp-chain-trace-{}.jsonl", std::process::id()));
    let proxies = [
        pass_through(),
        pass_through(),
        format!(
            "{} trace-proxy {}",
            env!("CARGO_BIN_EXE_acp-conductor"),
            trace.display()
        ),
    ];
    let (result, exit) = client::run_spawned(
        AutoAllow,
        conductor(&proxies, &run),
        ClientOptions::default(),
        |agent| async move {
            let init = agent.initialize().await?;
            assert_eq!(init.protocol_version, ProtocolVersion(1));
            let session = agent.new_session(std::env::temp_dir()).await?;
            let mut turn = session
                .prompt(vec![format!("stream {UPDATES}").into()])
                .await?;
            let mut next = 0usize;
            while let Some(update) = turn.next().await {
                if let SessionUpdate::AgentMessageChunk(chunk) = update? {
                    assert_eq!(
                        chunk.content.as_text(),
                        Some(next.to_string().as_str()),
                        "out of order"
                    );
                    next += 1;
                }
            }
            assert_eq!(turn.end().await?.stop_reason, StopReason::EndTurn);
            Ok(next)
        },
    )
    .unwrap();
    assert_eq!(result, UPDATES);
    assert!(exit.status.success(), "conductor: {exit}");
    wait_for_no_survivors(&run);
    let text = std::fs::read_to_string(&trace).unwrap();
    let transcript: Vec<_> = text
        .lines()
        .filter(|line| !transcript::is_comment(line))
        .map(|line| transcript::Entry::parse_line(line).unwrap())
        .collect();
    let methods: Vec<_> = transcript
        .iter()
        .take(4)
        .map(|e| (e.dir.as_str(), e.method().map(str::to_owned)))
        .collect();
    assert_eq!(methods[0], ("client->agent", Some("initialize".to_owned())));
    assert_eq!(methods[1], ("agent->client", None));
    let updates = transcript
        .iter()
        .filter(|e| e.method() == Some("session/update"))
        .count();
    assert_eq!(updates, UPDATES);
    let _ = std::fs::remove_file(trace);
    println!("ok: {UPDATES} updates in order through 3 proxies, traced");
}

fn a_crash_mid_turn_is_a_clear_error_and_leaves_nothing() {
    let run = marker("crash");
    let proxies = [pass_through(), pass_through()];
    // A grace longer than the test: the client closes once answered, which ends it.
    let outcome = client::run_spawned(
        AutoAllow,
        conductor_with(&["--failure-grace", "60"], &proxies, &run),
        ClientOptions::default(),
        |agent| async move {
            agent.initialize().await?;
            let session = agent.new_session(std::env::temp_dir()).await?;
            let mut turn = session.prompt(vec!["crash 10".into()]).await?;
            while let Some(update) = turn.next().await {
                update?;
            }
            turn.end().await
        },
    );
    let error = match outcome {
        Err(error) => error.to_string(),
        Ok((answer, exit)) => panic!("expected an error, got {answer:?} ({exit})"),
    };
    assert!(error.contains("chain component 2"), "{error}");
    assert!(error.contains("exit code 3"), "{error}");
    assert!(error.contains("boom after 10 updates"), "{error}");
    wait_for_no_survivors(&run);
    println!(
        "ok: a crash mid-turn: {}",
        error.lines().next().unwrap_or_default()
    );
}

fn a_chain_in_proxy_mode_runs_inside_a_chain() {
    const UPDATES: usize = 1_000;
    let run = marker("nested");
    let bin = env!("CARGO_BIN_EXE_acp-conductor");
    let trace: PathBuf =
        std::env::temp_dir().join(format!("acp-chain-nested-{}.jsonl", std::process::id()));
    // `acp-conductor proxy` with two proxies, between two more of the outer chain.
    let inner = format!(
        "{bin} proxy '{bin} pass-through' '{bin} trace-proxy {}'",
        trace.display()
    );
    let proxies = [pass_through(), inner, pass_through()];
    let (result, exit) = client::run_spawned(
        AutoAllow,
        conductor(&proxies, &run),
        ClientOptions::default(),
        |agent| async move {
            let init = agent.initialize().await?;
            assert_eq!(init.protocol_version, ProtocolVersion(1));
            let session = agent.new_session(std::env::temp_dir()).await?;
            let mut turn = session
                .prompt(vec![format!("stream {UPDATES}").into()])
                .await?;
            let mut next = 0usize;
            while let Some(update) = turn.next().await {
                if let SessionUpdate::AgentMessageChunk(chunk) = update? {
                    assert_eq!(chunk.content.as_text(), Some(next.to_string().as_str()),);
                    next += 1;
                }
            }
            assert_eq!(turn.end().await?.stop_reason, StopReason::EndTurn);
            Ok(next)
        },
    )
    .unwrap();
    assert_eq!(result, UPDATES);
    assert!(exit.status.success(), "conductor: {exit}");
    wait_for_no_survivors(&run);
    // The inner chain's last proxy saw the conversation: its hop to its successor (through
    // both conductors) carried `initialize` and every update.
    let recorded = std::fs::read_to_string(&trace).unwrap();
    assert!(recorded.contains("\"initialize\""), "{recorded:.400}");
    let updates = recorded
        .lines()
        .filter(|line| line.contains("agent_message_chunk"))
        .count();
    assert_eq!(updates, UPDATES);
    let _ = std::fs::remove_file(trace);
    println!("ok: {UPDATES} updates in order through a chain in proxy mode inside a chain");
}

fn usage_errors_exit_with_1_and_help_with_0() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_acp-conductor"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    for args in [
        &[][..],
        &["agent"],
        &["proxy"],
        &["agent", "--failure-grace", "soon", "x"],
        &["policy-proxy", "--allow", "typo"],
        &["trace-proxy"],
        &["no-such-command"],
        &["agent", "'unterminated"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    for args in [&["--help"][..], &["agent", "--help"], &["--version"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
    println!("ok: usage errors exit with 1, --help and --version with 0");
}

fn a_killed_conductor_takes_the_chain_with_it() {
    let run = marker("kill");
    let proxies = [pass_through(), pass_through()];
    let started = smol::block_on(async {
        let (agent, driver, process) = client::spawn(
            AutoAllow,
            conductor(&proxies, &run),
            ClientOptions::default(),
        )
        .unwrap();
        let driver = smol::spawn(driver);
        agent.initialize().await.unwrap();
        let session = agent.new_session(std::env::temp_dir()).await.unwrap();
        let turn = session.prompt(vec!["hang 5".into()]).await.unwrap();
        // Every component is up and the agent is mid-turn.
        assert!(survivors(&run).len() >= 4, "{:?}", survivors(&run));
        let pid = process.id();
        unsafe { libc_kill(pid) };
        let _ = process.exited().await;
        drop(turn);
        drop(driver);
        pid
    });
    wait_for_no_survivors(&run);
    println!("ok: SIGKILL of the conductor ({started}) left nothing behind");
}

unsafe extern "C" {
    fn kill(pid: i32, signal: i32) -> i32;
}

unsafe fn libc_kill(pid: u32) {
    // SIGKILL is 9 on every Unix.
    unsafe { kill(pid as i32, 9) };
}

/// A component that reads everything and never answers, nor exits when its input ends:
/// only a signal ends it.
fn deaf() {
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn deaf_component() -> String {
    let me = std::env::current_exe().unwrap();
    format!("{} {DEAF}", me.display())
}

/// Waits at most `within` for `process` to exit by itself; its status.
fn exits_within(
    process: &acp_runtime::process::AgentProcess,
    within: Duration,
) -> acp_runtime::process::AgentExit {
    smol::block_on(async {
        let exited = process.exited();
        futures_lite::FutureExt::or(async { Some(exited.await) }, async {
            smol::Timer::after(within).await;
            None
        })
        .await
    })
    .unwrap_or_else(|| panic!("the conductor still runs {within:?} after its client left"))
}

/// Starts the conductor for `components` (the last one the agent), sends `initialize`
/// (and, when `prompt` is given, a session and that prompt), closes its stdin while that
/// is unanswered, and checks that the conductor and every component are gone soon after:
/// within the components' shutdown grace (2 s) and SIGTERM's (1 s), plus slack.
/// Returns how long that took, and whether the agent's turn was cancelled (rather than its
/// process ended).
fn client_leaves(run: &str, components: &[String], prompt: Option<&str>) -> (Duration, bool) {
    let (me, agent_last) = components.split_last().unwrap();
    let note = std::env::temp_dir().join(format!("acp-chain-note-{run}"));
    let _ = std::fs::remove_file(&note);
    let mut command = AgentCommand::new(env!("CARGO_BIN_EXE_acp-conductor"))
        .arg("agent")
        .env(MARKER, run)
        .env(MODE, "1")
        .env(NOTE, &note);
    for component in agent_last {
        command = command.arg(component);
    }
    command = command.arg(me);
    let (agent, driver, process) =
        client::spawn(AutoAllow, command, ClientOptions::default()).unwrap();
    let components = components.len();
    let left = smol::block_on(async {
        let driver = smol::spawn(driver);
        let asked = match prompt {
            None => smol::spawn(async move {
                let _ = agent.initialize().await;
            }),
            Some(prompt) => {
                agent.initialize().await.unwrap();
                let session = agent.new_session(std::env::temp_dir()).await.unwrap();
                let prompt = prompt.to_owned();
                smol::spawn(async move {
                    let _ = session.prompt(vec![prompt.into()]).await;
                })
            }
        };
        // Every component is up and holds something unanswered.
        let deadline = Instant::now() + Duration::from_secs(10);
        while survivors(run).len() < components + 1 {
            assert!(Instant::now() < deadline, "{:?}", survivors(run));
            smol::Timer::after(Duration::from_millis(50)).await;
        }
        smol::Timer::after(Duration::from_millis(200)).await;
        // The client goes: dropping the connection's driver closes the conductor's stdin.
        drop(driver.cancel().await);
        drop(asked);
        Instant::now()
    });
    let exit = exits_within(&process, Duration::from_secs(8));
    assert!(exit.status.success(), "the conductor: {exit}");
    wait_for_no_survivors(run);
    let took = left.elapsed();
    let cancelled = std::fs::remove_file(&note).is_ok();
    (took, cancelled)
}

fn a_client_gone_mid_turn_ends_the_chain() {
    let run = marker("gone-turn");
    let me = std::env::current_exe().unwrap().display().to_string();
    let (took, cancelled) =
        client_leaves(&run, &[pass_through(), pass_through(), me], Some("hang 1"));
    // The cancellation travelled down the chain before the components' stdin closed.
    assert!(cancelled, "the agent's turn was not cancelled");
    println!("ok: a client gone mid-turn: the turn cancelled, the chain ended in {took:.1?}");
}

fn a_client_gone_mid_handshake_ends_the_chain() {
    let run = marker("gone-init");
    let me = std::env::current_exe().unwrap().display().to_string();
    // The proxy swallows `proxy/initialize` and ignores the end of its input.
    let (took, _) = client_leaves(&run, &[deaf_component(), me], None);
    println!(
        "ok: a client gone while a proxy withholds `proxy/initialize`: the chain ended in {took:.1?}"
    );
}

fn an_unanswered_initialize_times_out_naming_the_component() {
    for (deaf_at, asked) in [(0, "proxy/initialize"), (1, "`initialize`")] {
        let run = marker(&format!("init-timeout-{deaf_at}"));
        let me = std::env::current_exe().unwrap().display().to_string();
        // The deaf component is the proxy (0) or the agent behind a pass-through (1).
        let (proxies, agent) = if deaf_at == 0 {
            (vec![deaf_component()], me)
        } else {
            (vec![pass_through()], deaf_component())
        };
        let mut command = AgentCommand::new(env!("CARGO_BIN_EXE_acp-conductor"))
            .args(["agent", "--initialize-timeout", "0.5"])
            .env(MARKER, &run)
            .env(MODE, "1");
        for proxy in &proxies {
            command = command.arg(proxy);
        }
        command = command.arg(agent);
        let outcome = client::run_spawned(
            AutoAllow,
            command,
            ClientOptions::default(),
            |agent| async move { agent.initialize().await.map(|_| ()) },
        );
        let error = match outcome {
            Err(error) => error.to_string(),
            Ok((_, exit)) => panic!("expected an error, got an answer ({exit})"),
        };
        assert!(
            error.contains(&format!("chain component {deaf_at}")),
            "{error}"
        );
        assert!(error.contains(asked), "{error}");
        assert!(error.contains("did not answer"), "{error}");
        assert!(error.contains("within 500ms"), "{error}");
        wait_for_no_survivors(&run);
        println!("ok: {error}");
    }
}

/// The conductor's peak RSS (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Large prompts echoed as updates of the same size, through two proxies: what the
/// conductor holds per message is a small multiple of it, not a copy per hop and queue
/// (docs/limits.md): 4 to 6 times the message here (17.5 before the conductor let go of a
/// message once its copy was queued, and connections of lines once decoded and of buffers
/// once written).
fn large_messages_stay_within_a_byte_bound() {
    const MESSAGE: usize = 8 << 20;
    const MESSAGES: usize = 3;
    /// What the conductor may hold above its peak before the large messages, per byte of
    /// the largest message: 5 through proxies (docs/limits.md), with room for the
    /// allocator's slack.
    const BOUND: usize = 10;
    let run = marker("large");
    let proxies = [pass_through(), pass_through()];
    let (agent, driver, process) = client::spawn(
        AutoAllow,
        conductor(&proxies, &run),
        ClientOptions::default(),
    )
    .unwrap();
    let pid = process.id();
    let (before, after) = smol::block_on(async {
        let driver = smol::spawn(driver);
        agent.initialize().await.unwrap();
        let session = agent.new_session(std::env::temp_dir()).await.unwrap();
        let mut turn = session.prompt(vec!["echo small".into()]).await.unwrap();
        while let Some(update) = turn.next().await {
            update.unwrap();
        }
        turn.end().await.unwrap();
        let before = peak_rss(pid);
        let text = format!("echo {}", "x".repeat(MESSAGE));
        for _ in 0..MESSAGES {
            let mut turn = session.prompt(vec![text.clone().into()]).await.unwrap();
            let mut echoed = 0;
            while let Some(update) = turn.next().await {
                if let SessionUpdate::AgentMessageChunk(chunk) = update.unwrap() {
                    echoed += chunk.content.as_text().map_or(0, str::len);
                }
            }
            assert_eq!(echoed, text.len());
            assert_eq!(turn.end().await.unwrap().stop_reason, StopReason::EndTurn);
        }
        let after = peak_rss(pid);
        // The client leaves: dropping the driver closes the conductor's stdin.
        drop(driver.cancel().await);
        (before, after)
    });
    let _ = exits_within(&process, Duration::from_secs(8));
    wait_for_no_survivors(&run);
    let grown = after.saturating_sub(before);
    println!(
        "ok: {MESSAGES} × {} MiB through 2 proxies: the conductor's peak grew by {:.1} MiB ({:.1} × the message; bound {BOUND})",
        MESSAGE >> 20,
        grown as f64 / (1 << 20) as f64,
        grown as f64 / MESSAGE as f64
    );
    assert!(
        grown <= BOUND * MESSAGE,
        "the conductor's peak grew by {grown} bytes, more than {BOUND} × {MESSAGE}"
    );
}

fn main() {
    if std::env::var_os(MODE).is_some() {
        if std::env::args().nth(1).as_deref() == Some(DEAF) {
            deaf();
        }
        #[cfg(feature = "unstable-protocol-v2")]
        if std::env::args().nth(1).as_deref() == Some(v2::V2_AGENT) {
            return v2::serve_v2_agent();
        }
        agent::serve_stdio(TestAgent).unwrap();
        return;
    }
    let filter = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let tests: [(&str, fn()); 9] = [
        (
            "streams_in_order_through_three_proxies_and_a_trace",
            streams_in_order_through_three_proxies_and_a_trace,
        ),
        (
            "a_crash_mid_turn_is_a_clear_error_and_leaves_nothing",
            a_crash_mid_turn_is_a_clear_error_and_leaves_nothing,
        ),
        (
            "a_chain_in_proxy_mode_runs_inside_a_chain",
            a_chain_in_proxy_mode_runs_inside_a_chain,
        ),
        (
            "usage_errors_exit_with_1_and_help_with_0",
            usage_errors_exit_with_1_and_help_with_0,
        ),
        (
            "a_killed_conductor_takes_the_chain_with_it",
            a_killed_conductor_takes_the_chain_with_it,
        ),
        (
            "a_client_gone_mid_turn_ends_the_chain",
            a_client_gone_mid_turn_ends_the_chain,
        ),
        (
            "a_client_gone_mid_handshake_ends_the_chain",
            a_client_gone_mid_handshake_ends_the_chain,
        ),
        (
            "an_unanswered_initialize_times_out_naming_the_component",
            an_unanswered_initialize_times_out_naming_the_component,
        ),
        (
            "large_messages_stay_within_a_byte_bound",
            large_messages_stay_within_a_byte_bound,
        ),
    ];
    #[cfg(feature = "unstable-protocol-v2")]
    let tests = {
        let v2: (&str, fn()) = (
            "the_built_in_proxies_forward_v2_or_answer_it_as_v1",
            v2::the_built_in_proxies_forward_v2_or_answer_it_as_v1,
        );
        tests.into_iter().chain([v2])
    };
    for (name, test) in tests {
        if filter.as_deref().is_none_or(|f| name.contains(f)) {
            println!("test {name}");
            test();
        }
    }
}
