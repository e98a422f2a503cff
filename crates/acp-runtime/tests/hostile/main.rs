//! Hostile agents against our client, over real pipes: each case is an agent (this same
//! binary, run as `hostile agent <case>`) that streams without being read, floods, fills the
//! in-flight limit or stops reading, and a client that must neither stall nor grow memory
//! beyond its byte budgets.
//!
//! ```text
//! cargo test -p acp-rs-runtime --test hostile                   # every case, with assertions
//! cargo test -p acp-rs-runtime --test hostile -- --peak-rss     # peak RSS of the client per case
//! ```
//!
//! Memory is asserted where the bound is deterministic (the bytes the client keeps for the
//! application); the client's whole-process peak is measured by `--peak-rss`, which runs each
//! case's client as a process of its own, and is not asserted (it depends on the allocator).

mod agents;
mod sessions;

use std::future::Future;
use std::time::{Duration, Instant};

use acp_runtime::client::{
    self, AgentHandle, AutoAllow, ClientOptions, DEFAULT_MAX_SUBAGENTS,
    DEFAULT_SESSION_UPDATE_BUDGET, DEFAULT_SUBAGENT_UPDATE_BUDGET, DEFAULT_TOOL_CALL_BUDGET,
    DEFAULT_UNOPENED_UPDATE_BUDGET, ToolCallState,
};
use acp_runtime::fs::FsHost;
use acp_runtime::process::{AgentCommand, AgentExit};
use acp_runtime::terminal::TerminalHost;
use acp_runtime::{Error, Result};
use acp_types::{SessionUpdate, StopReason, ToolCallId, ToolCallStatus};

/// A case: the client's side of it, asserting what must hold.
type Case = fn() -> Result<()>;

/// Every case, by name.
const CASES: &[(&str, Case)] = &[
    ("many-updates", many_updates),
    ("undrained-session", undrained_session),
    ("in-flight-limit", in_flight_limit),
    ("deaf", deaf),
    ("unopened-flood", unopened_flood),
    ("slow-session", slow_session),
    ("deaf-reads", deaf_reads),
    ("tool-call-flood", tool_call_flood),
    ("in-flight-bytes", in_flight_bytes),
    ("session-flood", sessions::session_flood),
    ("subagent-flood", subagent_flood),
];

/// Hang guard for one case: far above what any case takes, so that a regression fails
/// instead of hanging CI.
const HANG_GUARD: Duration = Duration::from_secs(60);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("agent") => agents::run(&args[1]),
        Some("serve-agent") => sessions::serve_agent(),
        Some("client") => {
            let case = &args[1];
            let (_, run) = CASES.iter().find(|(name, _)| name == case).expect("a case");
            if let Err(error) = run() {
                eprintln!("{case}: {error}");
                std::process::exit(1);
            }
        }
        Some("--peak-rss") => peak_rss(),
        // `cargo test` passes libtest's flags; run everything (or the cases named).
        _ => run_all(&args),
    }
}

fn run_all(args: &[String]) {
    let chosen: Vec<_> = CASES
        .iter()
        .filter(|(name, _)| {
            let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
            filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
        })
        .collect();
    println!("running {} hostile cases", chosen.len());
    let mut failed = 0;
    for (name, run) in chosen {
        let started = Instant::now();
        let (done, result) = std::sync::mpsc::channel();
        let run = *run;
        std::thread::spawn(move || {
            let _ = done.send(run());
        });
        match result.recv_timeout(HANG_GUARD) {
            Ok(Ok(())) => println!("case {name} ... ok ({:.1?})", started.elapsed()),
            Ok(Err(error)) => {
                failed += 1;
                println!("case {name} ... FAILED: {error}");
            }
            Err(_) => {
                failed += 1;
                println!("case {name} ... FAILED: no answer within {HANG_GUARD:?}");
            }
        }
    }
    if failed != 0 {
        println!("{failed} hostile cases failed");
        std::process::exit(1);
    }
}

/// Runs each case's client as a process of its own and prints its peak resident set size.
fn peak_rss() {
    let exe = std::env::current_exe().expect("own path");
    println!("| case | client peak RSS | time |");
    println!("|---|---:|---:|");
    for (name, _) in CASES {
        let started = Instant::now();
        // Reaped by wait4 below, which also gives its peak RSS; `Child::wait` cannot.
        #[expect(clippy::zombie_processes, reason = "reaped by wait4")]
        let child = std::process::Command::new(&exe)
            .args(["client", name])
            .spawn()
            .expect("spawn the client");
        let pid = child.id() as libc::pid_t;
        let mut status = 0;
        // SAFETY: rusage is plain data; wait4 fills it for the child we own.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child, with valid pointers.
        unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        println!(
            "| {name} | {:.1} MiB{} | {:.1?} |",
            usage.ru_maxrss as f64 / 1024.0,
            if ok { "" } else { " (FAILED)" },
            started.elapsed()
        );
    }
}

fn agent(case: &str) -> AgentCommand {
    AgentCommand::new(std::env::current_exe().expect("own path"))
        .args(["agent", case])
        .shutdown_grace(Duration::from_millis(200))
        .term_grace(Duration::from_millis(200))
}

/// Runs the hostile agent `case` under a client with `options`, and `work` once the agent is
/// initialized; returns what `work` returned and how the agent exited.
fn against<T, F: Future<Output = Result<T>>>(
    case: &str,
    options: ClientOptions,
    work: impl FnOnce(AgentHandle) -> F,
) -> Result<(T, AgentExit)> {
    client::run_spawned(AutoAllow, agent(case), options, |agent| async move {
        agent.initialize().await?;
        work(agent).await
    })
}

fn check(condition: bool, what: impl FnOnce() -> String) -> Result<()> {
    if condition {
        Ok(())
    } else {
        Err(Error::Internal(what()))
    }
}

fn text_of(update: &SessionUpdate) -> Option<&str> {
    match update {
        SessionUpdate::AgentMessageChunk(chunk) => chunk.content.as_text(),
        _ => None,
    }
}

/// One `go` turn on a new session: the text of its updates, which is how a hostile agent
/// reports what it saw.
async fn report_of_one_turn(agent: &AgentHandle) -> Result<String> {
    let session = agent.new_session("/tmp").await?;
    let mut turn = session.prompt(vec!["go".into()]).await?;
    let mut report = String::new();
    while let Some(update) = turn.next().await {
        report.push_str(text_of(&update?).unwrap_or_default());
    }
    turn.end().await?;
    Ok(report)
}

/// `end()` after 1000 streamed updates nobody read: the turn still ends (it once waited for
/// ever once 128 were buffered).
fn many_updates() -> Result<()> {
    let (stop, exit) = against(
        "many-updates",
        ClientOptions::default(),
        |agent| async move {
            let session = agent.new_session("/tmp").await?;
            session.prompt(vec!["hi".into()]).await?.end().await
        },
    )?;
    check(stop.stop_reason == StopReason::EndTurn, || {
        "the turn did not end".into()
    })?;
    check(exit.status.success(), || format!("agent: {exit}"))
}

/// 1000 updates to a session nobody reads, then another session opens at once; the first
/// session still has every update, in order.
fn undrained_session() -> Result<()> {
    against(
        "undrained-session",
        ClientOptions::default(),
        |agent| async move {
            let a = agent.new_session("/tmp").await?;
            let b = agent.new_session("/tmp").await?;
            check(b.id() == "B", || "second session".into())?;
            for i in 0..1000 {
                let update = a.try_next_update().expect("every update was kept")?;
                let expected = i.to_string();
                check(text_of(&update) == Some(expected.as_str()), || {
                    format!("update {i}: {update:?}")
                })?;
            }
            Ok::<_, Error>(())
        },
    )?;
    Ok(())
}

/// 300 `terminal/wait_for_exit` calls and a `terminal/kill`: the excess is answered at once
/// instead of the client ceasing to read, so the agent's cancellation and its second kill get
/// through and end every wait.
fn in_flight_limit() -> Result<()> {
    let options = ClientOptions::default().with_terminals(TerminalHost::new());
    let (report, _) = against("in-flight-limit", options, |agent| async move {
        report_of_one_turn(&agent).await
    })?;
    check(
        report == "refused:44 kill1:-32603 cancelled:1 kill2:ok exited:255 other:0",
        || format!("the agent saw: {report}"),
    )
}

/// The agent stops reading while a megabyte is queued for it, and ignores SIGTERM:
/// `run_spawned` still returns, after the final flush's grace and the staged shutdown.
fn deaf() -> Result<()> {
    let started = Instant::now();
    let (queued, exit) = against("deaf", ClientOptions::default(), |agent| async move {
        agent.new_session("/tmp").await?;
        let blob = serde_json::value::to_raw_value(&"x".repeat(1 << 20)).unwrap();
        let blob = serde_json::value::to_raw_value(&serde_json::json!({ "blob": blob })).unwrap();
        agent
            .connection()
            .notify_raw("_hostile/blob", Some(&blob))
            .await?;
        Ok::<_, Error>(())
    })?;
    let () = queued;
    check(!exit.status.success(), || format!("agent: {exit}"))?;
    check(started.elapsed() < Duration::from_secs(30), || {
        format!("took {:?}", started.elapsed())
    })
}

/// 480 updates of 32 KiB and 4 of 16 MiB for 20 ids the client never opened: what is kept
/// stays within the unopened-session budget, and the session opened afterwards learns what it
/// lost.
fn unopened_flood() -> Result<()> {
    against(
        "unopened-flood",
        ClientOptions::default(),
        |agent| async move {
            let session = agent.new_session("/tmp").await?;
            let kept = agent.buffered_update_bytes();
            check(kept <= DEFAULT_UNOPENED_UPDATE_BUDGET, || {
                format!("{kept} bytes kept")
            })?;
            let mut updates = 0;
            let mut dropped = 0;
            while let Some(update) = session.try_next_update() {
                match update {
                    Ok(_) => updates += 1,
                    Err(Error::UpdatesDropped { updates, .. }) => dropped += updates,
                    Err(other) => return Err(other),
                }
            }
            check(updates > 0 && dropped > 0, || {
                format!("{updates} kept, {dropped} dropped")
            })?;
            Ok::<_, Error>(())
        },
    )?;
    Ok(())
}

/// 48 updates of 1 MiB to a session whose turn is not read: the session keeps at most its
/// budget (plus one update), the connection goes on (a second session opens), and reading
/// afterwards yields the kept updates, then the drop, in order.
fn slow_session() -> Result<()> {
    against(
        "slow-session",
        ClientOptions::default(),
        |agent| async move {
            let session = agent.new_session("/tmp").await?;
            let mut turn = session.prompt(vec!["go".into()]).await?;
            // Sends the prompt without taking an update.
            let first = turn.next().await.expect("an update")?;
            agent.new_session("/tmp").await?;
            let kept = session.buffered_update_bytes();
            check(kept <= DEFAULT_SESSION_UPDATE_BUDGET + (1 << 20), || {
                format!("{kept} bytes kept")
            })?;
            let mut kept_updates = 1;
            let mut dropped = 0;
            while let Some(update) = turn.next().await {
                match update {
                    Ok(update) => {
                        check(text_of(&update) == text_of(&first), || "text".into())?;
                        kept_updates += 1;
                    }
                    Err(Error::UpdatesDropped { updates, .. }) => dropped += updates,
                    Err(other) => return Err(other),
                }
            }
            check(kept_updates + dropped == 48 && dropped > 0, || {
                format!("{kept_updates} kept, {dropped} dropped")
            })?;
            turn.end().await?;
            Ok::<_, Error>(())
        },
    )?;
    Ok(())
}

/// 80 subagents of 1 MiB each in a turn whose reader takes only the parent's updates: 64 are
/// followed and their queues keep at most their shared budget (plus one update); the other
/// 16 are told in the parent's stream; afterwards every child's update is delivered or its
/// drop met, in the child's stream.
fn subagent_flood() -> Result<()> {
    against(
        "subagent-flood",
        ClientOptions::default().with_subagents(),
        |agent| async move {
            let session = agent.new_session("/tmp").await?;
            let mut turn = session.prompt(vec!["go".into()]).await?;
            let (mut announced, mut told) = (0, 0);
            while let Some(update) = turn.next().await {
                match update {
                    Ok(SessionUpdate::SubagentUpdate(_)) => announced += 1,
                    Err(Error::SubagentNotFollowed { updates, .. }) => told += updates,
                    other => return Err(Error::Internal(format!("{other:?}"))),
                }
            }
            turn.end().await?;
            let kept = agent.buffered_subagent_bytes();
            check(
                kept <= DEFAULT_SUBAGENT_UPDATE_BUDGET + (1 << 20) + 1024,
                || format!("{kept} bytes kept"),
            )?;
            check(agent.subagent_count() == DEFAULT_MAX_SUBAGENTS, || {
                format!("{} followed", agent.subagent_count())
            })?;
            let (mut delivered, mut dropped) = (0, 0);
            while let Some(item) = session.try_next_in_tree() {
                match item.update {
                    Ok(_) => delivered += 1,
                    Err(Error::UpdatesDropped { updates, .. }) => dropped += updates,
                    Err(other) => return Err(other),
                }
            }
            check(
                announced == 80 && told == 16 && delivered + dropped == 64 && dropped > 0,
                || {
                    format!(
                        "{announced} announced, {told} told, {delivered} delivered, {dropped} dropped"
                    )
                },
            )
        },
    )?;
    Ok(())
}

/// 32 concurrent reads of a 15 MiB file by an agent that does not read its stdin: the reads
/// wait for room in the reply budget instead of each holding the file (once 480 MiB queued).
fn deaf_reads() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("acp-hostile-reads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::Internal(e.to_string()))?;
    std::fs::write(dir.join("big.txt"), "a".repeat(15 << 20))
        .map_err(|e| Error::Internal(e.to_string()))?;
    let options = ClientOptions::default().with_file_system(FsHost::new());
    let work_dir = dir.clone();
    let result = against("deaf-reads", options, |agent| {
        async move {
            let session = agent.new_session(&work_dir).await?;
            session.next_update().await.expect("the agent's note")?;
            // Watch the answers pile up until they stop growing: the reads run on a blocking
            // pool and take seconds in a debug build on a busy machine, so wait for the first
            // answer (up to the hang guard), then for two quiet seconds.
            let connection = agent.connection();
            let (mut held, mut quiet) = (0, 0);
            while quiet < 20 {
                smol::Timer::after(Duration::from_millis(100)).await;
                let now = connection.queued_reply_bytes() + connection.reserved_reply_bytes();
                quiet = if now > held || held == 0 {
                    0
                } else {
                    quiet + 1
                };
                held = held.max(now);
            }
            let bound = connection.reply_budget() + (15 << 20) + 1024;
            check(held > 0 && held <= bound, || {
                format!("{held} bytes of answers held, bound {bound}")
            })
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    result.map(drop)
}

/// 200 tool calls with ids of 1 MiB and 20,000 with ids of 1000 bytes: the long ids reach
/// the application as updates that do not decode (never tracked), and what the session
/// remembers of its calls stays within its budget, the latest call included.
fn tool_call_flood() -> Result<()> {
    against(
        "tool-call-flood",
        ClientOptions::default(),
        |agent| async move {
            let session = agent.new_session("/tmp").await?;
            let mut turn = session.prompt(vec!["go".into()]).await?;
            let (mut invalid, mut dropped, mut most) = (0, 0, 0);
            while let Some(update) = turn.next().await {
                match update {
                    Ok(_) => {}
                    Err(Error::InvalidUpdate { error, .. }) => {
                        check(error.contains("tool call id of"), || error.clone())?;
                        invalid += 1;
                    }
                    Err(Error::UpdatesDropped { updates, .. }) => dropped += updates,
                    Err(other) => return Err(other),
                }
                most = most.max(session.tool_call_bytes());
            }
            turn.end().await?;
            check(invalid > 0 && invalid + dropped >= 200, || {
                format!("{invalid} invalid, {dropped} dropped")
            })?;
            check(most <= DEFAULT_TOOL_CALL_BUDGET, || {
                format!("the tool calls held {most} bytes")
            })?;
            let last = session.tool_call(&ToolCallId::new("last"));
            check(
                last == Some(ToolCallState::Reported(Some(ToolCallStatus::InProgress))),
                || format!("last: {last:?}"),
            )?;
            let first = session.tool_call(&ToolCallId::new(format!("{:0>1000}", 0)));
            check(first.is_none(), || {
                "the oldest finished call is remembered".into()
            })
        },
    )?;
    Ok(())
}

/// Ten `terminal/wait_for_exit` calls of 8 MiB each against an in-flight budget of 16 MiB:
/// nine are refused at once with the byte error, the kill that follows is taken, and the one
/// wait taken ends when the command does.
fn in_flight_bytes() -> Result<()> {
    let options = ClientOptions::default()
        .with_terminals(TerminalHost::new())
        .with_in_flight_budget(16 << 20);
    let (report, _) = against("in-flight-bytes", options, |agent| async move {
        let report = report_of_one_turn(&agent).await?;
        let held = agent.connection().in_flight_request_bytes();
        check(held == 0, || format!("{held} bytes still held"))?;
        Ok::<_, Error>(report)
    })?;
    check(report == "refused:9 kill:ok exited:1 other:0", || {
        format!("the agent saw: {report}")
    })
}
