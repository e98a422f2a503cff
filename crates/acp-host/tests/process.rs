//! Agent processes: spawning, stdio, stderr draining, exit reporting and shutdown, against
//! real processes.
#![cfg(target_os = "linux")]

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_host::process::{
    AgentCommand, AgentExit, AgentProcess, AgentProcessError, AgentStdout, ExitStatus, ShutdownStep,
};
use futures_lite::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, future};

fn sh(script: &str) -> AgentCommand {
    AgentCommand::new("sh").arg("-c").arg(script)
}

/// Runs `future` to completion, failing the test instead of hanging.
fn run<T>(future: impl Future<Output = T>) -> T {
    smol::block_on(future::or(future, async {
        smol::Timer::after(Duration::from_secs(15)).await;
        panic!("timed out");
    }))
}

async fn read_line(stdout: &mut AgentStdout) -> String {
    let mut line = String::new();
    stdout.read_line(&mut line).await.unwrap();
    line
}

/// Spawns `script` and waits until it prints `ready` on stdout, so that whatever it set
/// up before (traps, background processes) is in place.
fn spawn_ready(command: AgentCommand) -> (AgentProcess, AgentStdout) {
    let mut agent = command.spawn().unwrap();
    let mut stdout = agent.take_stdout().unwrap();
    assert_eq!(run(read_line(&mut stdout)), "ready\n");
    (agent, stdout)
}

fn exited_with(code: i32) -> ExitStatus {
    ExitStatus {
        code: Some(code),
        signal: None,
    }
}

fn killed_by(signal: &str) -> ExitStatus {
    ExitStatus {
        code: None,
        signal: Some(signal.to_owned()),
    }
}

/// Polls `condition` until it holds, or fails after a few seconds.
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Processes of group `pgid` that are still alive; zombies count as gone, as they only
/// wait for whoever inherited them to reap them.
fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // "pid (comm) state ppid pgrp ...", where comm may contain anything.
            let after_comm = &stat[stat.rfind(')')? + 1..];
            let mut fields = after_comm.split_whitespace();
            let state = fields.next()?;
            let group = fields.nth(1)?.parse::<u32>().ok()?;
            (group == pgid && state != "Z" && state != "X").then_some(pid)
        })
        .collect()
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("acp-process-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

#[test]
fn handles_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<AgentProcess>();
    shareable::<AgentCommand>();
    shareable::<acp_host::process::AgentStdin>();
    shareable::<AgentExit>();
    shareable::<AgentProcessError>();
}

#[test]
fn stdin_and_stdout_carry_data_both_ways() {
    let mut agent = AgentCommand::new("cat").spawn().unwrap();
    let (mut stdout, mut stdin) = agent.take_stdio().unwrap();
    assert!(agent.take_stdio().is_none());
    assert!(agent.take_stdin().is_none());
    assert!(agent.take_stdout().is_none());

    run(async {
        stdin.write_all(b"{\"id\":1}\n").await.unwrap();
        stdin.flush().await.unwrap();
        assert_eq!(read_line(&mut stdout).await, "{\"id\":1}\n");

        // Far more than a pipe holds: only works if both directions flow concurrently.
        let payload: Vec<u8> = (0..2_000_000)
            .map(|index| b'a' + (index % 26) as u8)
            .collect();
        let writer = async {
            stdin.write_all(&payload).await.unwrap();
            stdin.write_all(b"\n").await.unwrap();
            stdin.flush().await.unwrap();
        };
        let reader = async {
            let mut echoed = Vec::new();
            stdout.read_until(b'\n', &mut echoed).await.unwrap();
            echoed
        };
        let ((), echoed) = future::zip(writer, reader).await;
        assert_eq!(echoed.len(), payload.len() + 1);
        assert_eq!(&echoed[..payload.len()], payload.as_slice());
    });

    // The writer is still held: shutdown closes stdin all the same.
    let exit = run(agent.shutdown());
    assert_eq!(exit.status, exited_with(0));
    assert_eq!(exit.step, ShutdownStep::StdinClosed);
    assert_eq!(exit.to_string(), "exit code 0 after its stdin was closed");
    let error = run(stdin.write_all(b"late\n")).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe);
    let mut rest = Vec::new();
    run(stdout.read_to_end(&mut rest)).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn an_agent_that_exits_on_end_of_file_stops_at_the_first_step() {
    let agent = sh("cat > /dev/null")
        .shutdown_grace(Duration::from_secs(10))
        .spawn()
        .unwrap();
    let started = Instant::now();
    let exit = run(agent.shutdown());
    assert_eq!(exit.status, exited_with(0));
    assert_eq!(exit.step, ShutdownStep::StdinClosed);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn an_agent_that_ignores_end_of_file_is_terminated() {
    let (agent, _stdout) = spawn_ready(
        sh("trap 'exit 7' TERM; echo ready; while :; do sleep 0.1; done")
            .shutdown_grace(Duration::from_millis(200))
            .term_grace(Duration::from_secs(10)),
    );
    let started = Instant::now();
    let exit = run(agent.shutdown());
    assert_eq!(exit.status, exited_with(7));
    assert_eq!(exit.step, ShutdownStep::Terminated);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn an_agent_that_ignores_sigterm_is_killed() {
    let (agent, _stdout) = spawn_ready(
        sh("trap '' TERM; echo ready; while :; do sleep 0.1; done")
            .shutdown_grace(Duration::from_millis(200))
            .term_grace(Duration::from_millis(200)),
    );
    let pgid = agent.id();
    let exit = run(agent.shutdown());
    assert_eq!(exit.status, killed_by("SIGKILL"));
    assert_eq!(exit.step, ShutdownStep::Killed);
    assert_eq!(exit.to_string(), "signal SIGKILL after SIGKILL");
    eventually("the group is gone", || group_members(pgid).is_empty());
}

const WITH_GRANDCHILDREN: &str = "sleep 1000 & sleep 1000 & echo ready; cat > /dev/null";

#[test]
fn grandchildren_do_not_outlive_shutdown() {
    let (agent, _stdout) = spawn_ready(sh(WITH_GRANDCHILDREN));
    let pgid = agent.id();
    eventually("the sleeps run", || group_members(pgid).len() >= 3);
    let exit = run(agent.shutdown());
    assert_eq!(exit.status, exited_with(0));
    assert_eq!(exit.step, ShutdownStep::StdinClosed);
    // The leader was reaped before the exit was reported, so not even a zombie is left.
    assert!(!std::path::Path::new(&format!("/proc/{pgid}")).exists());
    eventually("no process of the group is left", || {
        group_members(pgid).is_empty()
    });
}

#[test]
fn grandchildren_do_not_outlive_a_dropped_handle() {
    let (agent, _stdout) = spawn_ready(sh(WITH_GRANDCHILDREN));
    let pgid = agent.id();
    eventually("the sleeps run", || group_members(pgid).len() >= 3);
    let exited = agent.exited();
    drop(agent);
    let exit = run(exited);
    assert_eq!(exit.status, killed_by("SIGKILL"));
    assert_eq!(exit.step, ShutdownStep::Killed);
    eventually("no process of the group is left", || {
        group_members(pgid).is_empty()
    });
}

#[test]
fn grandchildren_do_not_outlive_an_agent_that_exits_by_itself() {
    let (agent, _stdout) = spawn_ready(sh("sleep 1000 & sleep 1000 & echo ready; exit 0"));
    let pgid = agent.id();
    let exit = run(agent.exited());
    assert_eq!(exit.status, exited_with(0));
    assert_eq!(exit.step, ShutdownStep::NotRequested);
    // The handle is still alive: the leftovers were killed because the leader exited.
    eventually("no process of the group is left", || {
        group_members(pgid).is_empty()
    });
    drop(agent);
}

#[test]
fn stderr_is_drained_while_the_agent_does_not_read_stdin() {
    let lines = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&lines);
    // 100 000 lines of 101 bytes: about 10 MB before the agent reads anything.
    let mut agent = sh("yes \"$(printf '%0100d' 7)\" | head -n 100000 >&2; echo last >&2; cat")
        .on_stderr_line(move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
        })
        .spawn()
        .unwrap();
    let (mut stdout, mut stdin) = agent.take_stdio().unwrap();
    run(async {
        stdin.write_all(b"ping\n").await.unwrap();
        stdin.flush().await.unwrap();
        assert_eq!(read_line(&mut stdout).await, "ping\n");
    });
    eventually("every line reached the callback", || {
        lines.load(Ordering::Relaxed) == 100_001
    });
    let tail = agent.stderr_tail();
    assert_eq!(tail.lines().count(), 64);
    assert_eq!(tail.lines().last(), Some("last"));
    let filler = format!("{:0100}", 7);
    assert!(tail.lines().take(63).all(|line| line == filler));
    assert_eq!(run(agent.shutdown()).step, ShutdownStep::StdinClosed);
}

#[test]
fn the_tail_keeps_the_last_lines_within_both_limits() {
    let agent = sh("seq 1 1000 >&2").stderr_tail_lines(3).spawn().unwrap();
    assert_eq!(run(agent.exited()).stderr_tail, "998\n999\n1000");

    let agent = sh("seq 1 1000 >&2").stderr_tail_bytes(8).spawn().unwrap();
    assert_eq!(run(agent.exited()).stderr_tail, "999\n1000");

    // A line longer than the byte limit keeps its end.
    let agent = sh("echo short >&2; echo 0123456789 >&2")
        .stderr_tail_bytes(4)
        .spawn()
        .unwrap();
    assert_eq!(run(agent.exited()).stderr_tail, "6789");

    let agent = sh("echo a >&2; printf 'unterminated' >&2").spawn().unwrap();
    let exit = run(agent.exited());
    assert_eq!(exit.stderr_tail, "a\nunterminated");
    assert_eq!(agent.stderr_tail(), "a\nunterminated");
}

#[test]
fn the_callback_sees_every_line_in_order() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let agent = sh("seq 1 5000 >&2; printf 'crlf\\r\\n\\n' >&2; printf 'no newline' >&2")
        .on_stderr_line(move |line| sink.lock().unwrap().push(line.to_owned()))
        .spawn()
        .unwrap();
    run(agent.exited());
    // Everything the agent wrote was taken in before its exit was reported.
    let mut expected: Vec<String> = (1..=5000).map(|number| number.to_string()).collect();
    expected.extend(["crlf".to_owned(), String::new(), "no newline".to_owned()]);
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[test]
fn a_panicking_callback_does_not_stop_the_draining() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let agent = sh("echo one >&2; echo panic >&2; echo three >&2")
        .on_stderr_line(move |line| {
            assert_ne!(line, "panic", "a callback panicking on purpose");
            sink.lock().unwrap().push(line.to_owned());
        })
        .spawn()
        .unwrap();
    let exit = run(agent.exited());
    assert_eq!(exit.stderr_tail, "one\npanic\nthree");
    assert_eq!(*seen.lock().unwrap(), ["one", "three"]);
}

#[test]
fn a_crash_reaches_every_waiter_with_the_stderr_tail() {
    let mut agent = sh("read go; echo boom >&2; exit 3").spawn().unwrap();
    let mut stdin = agent.take_stdin().unwrap();
    let early: Vec<_> = (0..3).map(|_| smol::spawn(agent.exited())).collect();
    assert!(agent.try_exited().is_none());

    run(async {
        stdin.write_all(b"go\n").await.unwrap();
        stdin.flush().await.unwrap();
    });
    let expected = AgentExit {
        status: exited_with(3),
        step: ShutdownStep::NotRequested,
        stderr_tail: "boom".to_owned(),
    };
    for waiter in early {
        assert_eq!(run(waiter), expected);
    }
    assert_eq!(run(agent.exited()), expected);
    assert_eq!(agent.try_exited().as_ref(), Some(&expected));
    assert_eq!(expected.to_string(), "exit code 3");
    assert_eq!(
        AgentProcessError::from(expected.clone()).to_string(),
        "agent exited with exit code 3; last stderr lines:\nboom"
    );
    // Shutting down an exited agent just reports the exit.
    assert_eq!(run(agent.shutdown()), expected);
}

#[test]
fn a_death_by_signal_is_reported_by_name() {
    let agent = sh("kill -USR1 $$").spawn().unwrap();
    let exit = run(agent.exited());
    assert_eq!(exit.status, killed_by("SIGUSR1"));
    assert!(!exit.status.success());
    assert_eq!(
        AgentProcessError::from(exit).to_string(),
        "agent exited with signal SIGUSR1; it wrote nothing to stderr"
    );
}

#[test]
fn a_missing_program_is_reported_with_the_path_searched() {
    let error = AgentCommand::new("acp-no-such-agent")
        .env("PATH", "/acp/nowhere:/acp/elsewhere")
        .spawn()
        .unwrap_err();
    assert!(matches!(
        &error,
        AgentProcessError::NotFound { program, searched_path: Some(path) }
            if program == "acp-no-such-agent" && path == "/acp/nowhere:/acp/elsewhere"
    ));
    assert_eq!(
        error.to_string(),
        "agent program `acp-no-such-agent` not found in any directory of PATH \
         (/acp/nowhere:/acp/elsewhere)"
    );

    let error = AgentCommand::new("acp-no-such-agent").spawn().unwrap_err();
    let path = std::env::var("PATH").unwrap();
    assert!(error.to_string().contains(&path), "{error}");

    let error = AgentCommand::new("/acp/nowhere/agent").spawn().unwrap_err();
    assert!(matches!(
        &error,
        AgentProcessError::NotFound {
            searched_path: None,
            ..
        }
    ));
    assert_eq!(
        error.to_string(),
        "agent program `/acp/nowhere/agent` not found"
    );
}

#[test]
fn other_spawn_failures_are_reported_precisely() {
    let error = AgentCommand::new("cat")
        .cwd("/acp/nowhere")
        .spawn()
        .unwrap_err();
    assert!(
        matches!(&error, AgentProcessError::MissingCwd(dir) if dir.as_os_str() == "/acp/nowhere")
    );

    let error = AgentCommand::new("/dev/null").spawn().unwrap_err();
    match &error {
        AgentProcessError::Spawn { program, source } => {
            assert_eq!(program, "/dev/null");
            assert_eq!(source.kind(), std::io::ErrorKind::PermissionDenied);
        }
        other => panic!("expected a spawn error, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("could not start agent program `/dev/null`: ")
    );
}

#[test]
fn env_and_cwd_are_honoured() {
    let dir = scratch_dir("cwd");
    let mut agent = sh("echo \"$ACP_AGENT_GREETING\"; pwd -P")
        .env("ACP_AGENT_GREETING", "hello agent")
        .cwd(&dir)
        .spawn()
        .unwrap();
    let mut stdout = agent.take_stdout().unwrap();
    assert_eq!(run(read_line(&mut stdout)), "hello agent\n");
    assert_eq!(run(read_line(&mut stdout)), format!("{}\n", dir.display()));
    assert_eq!(run(agent.exited()).status, exited_with(0));
    std::fs::remove_dir(dir).unwrap();
}

#[test]
fn dropping_the_writer_closes_the_agents_stdin() {
    let mut agent = AgentCommand::new("cat").spawn().unwrap();
    drop(agent.take_stdin());
    let exit = run(agent.exited());
    assert_eq!(exit.status, exited_with(0));
    assert_eq!(exit.step, ShutdownStep::NotRequested);
}

#[test]
fn a_writer_blocked_on_a_full_pipe_is_released_by_shutdown() {
    let (mut agent, _stdout) =
        spawn_ready(sh("echo ready; exec sleep 1000").shutdown_grace(Duration::from_millis(100)));
    let mut stdin = agent.take_stdin().unwrap();
    let writer = smol::spawn(async move {
        // Nobody reads: this blocks once the pipe is full.
        stdin.write_all(&vec![b'x'; 4 << 20]).await
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(!writer.is_finished());

    let exit = run(agent.shutdown());
    assert_eq!(exit.status, killed_by("SIGTERM"));
    assert_eq!(exit.step, ShutdownStep::Terminated);
    let error = run(writer).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe);
}

#[test]
fn shutdown_of_a_deaf_agent_that_ignores_sigterm_takes_the_staged_timeouts_only() {
    let (grace, term_grace) = (Duration::from_millis(300), Duration::from_millis(300));
    // Never reads its stdin, ignores SIGTERM (an ignored signal stays ignored across exec).
    let (mut agent, _stdout) = spawn_ready(
        sh(r#"trap "" TERM; echo ready; exec sleep 1000"#)
            .shutdown_grace(grace)
            .term_grace(term_grace),
    );
    let pgid = agent.id();
    let mut stdin = agent.take_stdin().unwrap();
    // Holds the stdin handle with data it cannot write.
    let writer = smol::spawn(async move { stdin.write_all(&vec![b'x'; 4 << 20]).await });
    std::thread::sleep(Duration::from_millis(100));
    assert!(!writer.is_finished());

    let started = Instant::now();
    let exit = run(agent.shutdown());
    let took = started.elapsed();
    eprintln!("shutdown of a deaf agent that ignores SIGTERM took {took:?}");
    assert_eq!(exit.step, ShutdownStep::Killed);
    assert_eq!(exit.status, killed_by("SIGKILL"));
    assert!(
        took >= grace + term_grace,
        "each step waited its grace: {took:?}"
    );
    // Only a guard against hanging; the exit follows the SIGKILL at once.
    assert!(
        took < grace + term_grace + Duration::from_secs(5),
        "{took:?}"
    );
    let error = run(writer).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe);
    eventually("the group is gone", || group_members(pgid).is_empty());
}

#[test]
fn a_spawn_starts_the_process_supervisor() {
    let (agent, _stdout) = spawn_ready(sh("echo ready; exec sleep 1000"));
    let supervisor = acp_host::process::supervisor_id().expect("the supervisor runs");
    assert_ne!(supervisor, agent.id());
    drop(agent);
}
