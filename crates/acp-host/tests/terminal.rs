//! The terminal host against real processes.
#![cfg(target_os = "linux")]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acp_host::process::ExitStatus;
use acp_host::terminal::{CreateTerminal, TerminalError, TerminalHost};

/// The limit and the scope (as displayed) of a `TooManyTerminals` error.
fn too_many(result: Result<String, TerminalError>) -> (usize, String) {
    match result {
        Err(TerminalError::TooManyTerminals { limit, scope }) => (limit, scope.to_string()),
        other => panic!("expected TooManyTerminals, got {other:?}"),
    }
}
use futures_lite::future;

const SESSION: &str = "session-a";
const OTHER_SESSION: &str = "session-b";

fn sh(script: &str) -> CreateTerminal {
    CreateTerminal {
        args: vec!["-c".into(), script.into()],
        ..CreateTerminal::new("sh")
    }
}

fn root() -> &'static Path {
    Path::new("/")
}

/// Runs `future` to completion, failing the test instead of hanging.
fn run<T>(future: impl Future<Output = T>) -> T {
    smol::block_on(future::or(future, async {
        smol::Timer::after(Duration::from_secs(15)).await;
        panic!("timed out");
    }))
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

fn run_to_exit(host: &TerminalHost, request: CreateTerminal) -> (String, ExitStatus) {
    let id = host.create(SESSION, request, root()).unwrap();
    let status = run(host.wait_for_exit(SESSION, &id)).unwrap();
    let output = host.output(SESSION, &id).unwrap();
    assert_eq!(output.exit_status.as_ref(), Some(&status));
    host.release(SESSION, &id).unwrap();
    (output.output, status)
}

/// Polls `condition` until it holds, or fails after a few seconds.
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the terminal's first output line, the shell's `$$` (its pid = the pgid).
fn first_line_pid(host: &TerminalHost, id: &str) -> i32 {
    let mut pid = None;
    eventually("the script printed its pid", || {
        let output = host.output(SESSION, id).unwrap().output;
        pid = output
            .lines()
            .next()
            .and_then(|line| line.trim().parse().ok());
        pid.is_some() && output.contains('\n')
    });
    pid.unwrap()
}

/// Pids of processes in `pgid` that have not terminated (zombies are dead already; they
/// only await reaping by whoever inherited them).
fn live_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may contain anything, so split after ')'.
        let Some(after_comm) = stat.rfind(')').map(|index| &stat[index + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after_comm.split_whitespace().collect();
        let (state, group) = (fields[0], fields[2].parse::<i32>().unwrap_or(-1));
        if group == pgid && state != "Z" && state != "X" {
            members.push(pid);
        }
    }
    members
}

fn assert_unknown(result: Result<impl std::fmt::Debug, TerminalError>, id: &str) {
    match result {
        Err(TerminalError::UnknownTerminal(unknown)) => assert_eq!(unknown, id),
        other => panic!("expected UnknownTerminal({id}), got {other:?}"),
    }
}

#[test]
fn the_host_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<TerminalHost>();
}

#[test]
fn stdout_and_stderr_are_merged_in_write_order() {
    let host = TerminalHost::new();
    let (output, status) = run_to_exit(&host, sh("echo a; echo b 1>&2; echo c"));
    assert_eq!(output, "a\nb\nc\n");
    assert_eq!(status, exited_with(0));
}

#[test]
fn truncation_keeps_a_character_boundary() {
    let host = TerminalHost::new();
    // 10 × "é😀" = 60 bytes written in many small pieces.
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do printf 'é'; printf '😀'; done";
    let full = "é😀".repeat(10);
    for limit in [0_usize, 3, 5, 6, 7, 59, 60, 1000] {
        let request = CreateTerminal {
            output_byte_limit: Some(limit as u64),
            ..sh(script)
        };
        let id = host.create(SESSION, request, root()).unwrap();
        run(host.wait_for_exit(SESSION, &id)).unwrap();
        let output = host.output(SESSION, &id).unwrap();
        let expected = &full[full.ceil_char_boundary(full.len().saturating_sub(limit))..];
        assert_eq!(output.output, expected, "limit {limit}");
        assert_eq!(output.truncated, limit < full.len(), "limit {limit}");
        if limit == 7 {
            // 7 bytes would start inside a 😀, so only 6 are kept.
            assert_eq!(output.output, "é😀");
        }
        host.release(SESSION, &id).unwrap();
    }
}

#[test]
fn invalid_utf8_output_is_replaced() {
    let host = TerminalHost::new();
    let (output, _) = run_to_exit(&host, sh(r"printf 'ok\377\n'; printf '\342\202'"));
    assert_eq!(output, "ok\u{FFFD}\n\u{FFFD}");
}

#[test]
fn the_host_ceiling_caps_the_requested_limit() {
    let host = TerminalHost::with_output_ceiling(10);
    for requested in [None, Some(1_000), Some(u64::MAX)] {
        let request = CreateTerminal {
            output_byte_limit: requested,
            ..sh("printf 0123456789abcdef")
        };
        let id = host.create(SESSION, request, root()).unwrap();
        run(host.wait_for_exit(SESSION, &id)).unwrap();
        let output = host.output(SESSION, &id).unwrap();
        assert_eq!(output.output, "6789abcdef", "requested {requested:?}");
        assert!(output.truncated);
    }
}

#[test]
fn output_reports_the_exit_status_once_exited() {
    let host = TerminalHost::new();
    let id = host
        .create(SESSION, sh("echo partial; exit 3"), root())
        .unwrap();
    assert_eq!(
        run(host.wait_for_exit(SESSION, &id)).unwrap(),
        exited_with(3)
    );
    let output = host.output(SESSION, &id).unwrap();
    assert_eq!(output.output, "partial\n");
    assert!(!output.truncated);
    assert_eq!(output.exit_status, Some(exited_with(3)));

    let running = host.create(SESSION, sh("sleep 1000"), root()).unwrap();
    assert_eq!(host.output(SESSION, &running).unwrap().exit_status, None);
}

#[test]
fn death_by_signal_is_reported_by_name() {
    let host = TerminalHost::new();
    let (_, status) = run_to_exit(&host, sh("kill -TERM $$"));
    assert_eq!(status, killed_by("SIGTERM"));
    let (_, status) = run_to_exit(&host, sh("kill -USR1 $$"));
    assert_eq!(status, killed_by("SIGUSR1"));
}

#[test]
fn kill_keeps_the_terminal_and_release_invalidates_it() {
    let host = TerminalHost::new();
    let id = host
        .create(SESSION, sh("echo started; exec sleep 1000"), root())
        .unwrap();
    eventually("the command printed", || {
        host.output(SESSION, &id).unwrap().output == "started\n"
    });

    host.kill(SESSION, &id).unwrap();
    assert_eq!(
        run(host.wait_for_exit(SESSION, &id)).unwrap(),
        killed_by("SIGKILL")
    );
    let output = host.output(SESSION, &id).unwrap();
    assert_eq!(output.output, "started\n");
    assert_eq!(output.exit_status, Some(killed_by("SIGKILL")));
    // Killing again, and waiting again, are harmless.
    host.kill(SESSION, &id).unwrap();
    assert_eq!(
        run(host.wait_for_exit(SESSION, &id)).unwrap(),
        killed_by("SIGKILL")
    );

    host.release(SESSION, &id).unwrap();
    assert_unknown(host.output(SESSION, &id), &id);
    assert_unknown(run(host.wait_for_exit(SESSION, &id)), &id);
    assert_unknown(host.kill(SESSION, &id), &id);
    assert_unknown(host.release(SESSION, &id), &id);
    assert!(host.is_empty());

    let message = host.output(SESSION, &id).unwrap_err().to_string();
    assert!(
        message.contains(&id) && message.contains("released"),
        "{message}"
    );
}

#[test]
fn release_kills_a_running_command_and_wakes_its_waiters() {
    let host = TerminalHost::new();
    let id = host
        .create(SESSION, sh("echo $$; exec sleep 1000"), root())
        .unwrap();
    let pgid = first_line_pid(&host, &id);
    let waiter = smol::spawn(host.wait_for_exit(SESSION, &id));
    host.release(SESSION, &id).unwrap();
    assert_unknown(run(waiter), &id);
    eventually("the released command is dead", || {
        live_members(pgid).is_empty()
    });
    // The leader is our child: releasing must also reap it rather than leave a zombie.
    eventually("the leader is reaped", || {
        !Path::new(&format!("/proc/{pgid}")).exists()
    });
}

#[test]
fn kill_reaches_every_process_of_the_group() {
    let host = TerminalHost::new();
    let id = host
        .create(
            SESSION,
            sh("echo $$; sleep 1000 & sleep 1000 & wait"),
            root(),
        )
        .unwrap();
    let pgid = first_line_pid(&host, &id);
    eventually("the shell and both sleeps run", || {
        live_members(pgid).len() == 3
    });

    host.kill(SESSION, &id).unwrap();
    assert_eq!(
        run(host.wait_for_exit(SESSION, &id)).unwrap(),
        killed_by("SIGKILL")
    );
    eventually("no process of the group is left", || {
        live_members(pgid).is_empty()
    });
    host.release(SESSION, &id).unwrap();
}

#[test]
fn exit_is_reported_while_background_children_hold_the_output_open() {
    let host = TerminalHost::new();
    let id = host
        .create(SESSION, sh("echo $$; sleep 1000 & echo done"), root())
        .unwrap();
    assert_eq!(
        run(host.wait_for_exit(SESSION, &id)).unwrap(),
        exited_with(0)
    );
    let pgid = first_line_pid(&host, &id);
    assert!(
        host.output(SESSION, &id)
            .unwrap()
            .output
            .ends_with("done\n")
    );
    assert_eq!(live_members(pgid).len(), 1, "the orphaned sleep still runs");
    // Until release the exited leader stays unreaped, which keeps its pid (the group id)
    // from being reused while the group may still be signalled.
    assert!(Path::new(&format!("/proc/{pgid}")).exists());

    host.release(SESSION, &id).unwrap();
    eventually("release killed the leftover child", || {
        live_members(pgid).is_empty()
    });
}

#[test]
fn dropping_the_host_kills_every_process() {
    let host = TerminalHost::new();
    let first = host
        .create(
            SESSION,
            sh("echo $$; sleep 1000 & sleep 1000 & wait"),
            root(),
        )
        .unwrap();
    let second = host
        .create(OTHER_SESSION, sh("echo $$; exec sleep 1000"), root())
        .unwrap();
    let first_group = first_line_pid(&host, &first);
    let second_group = {
        let mut pid = None;
        eventually("the second script printed its pid", || {
            let output = host.output(OTHER_SESSION, &second).unwrap().output;
            pid = output
                .lines()
                .next()
                .and_then(|line| line.trim().parse().ok());
            pid.is_some()
        });
        pid.unwrap()
    };
    eventually("all processes run", || {
        live_members(first_group).len() == 3 && live_members(second_group).len() == 1
    });

    drop(host);
    eventually("no process outlives the host", || {
        live_members(first_group).is_empty() && live_members(second_group).is_empty()
    });
}

#[test]
fn many_terminals_run_at_once() {
    let host = TerminalHost::new();
    let ids: Vec<String> = (0..50)
        .map(|index| {
            let request = CreateTerminal {
                env: vec![("TERMINAL_INDEX".into(), index.to_string())],
                ..sh("echo $TERMINAL_INDEX")
            };
            host.create(SESSION, request, root()).unwrap()
        })
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 50, "terminal ids are unique");

    let waits: Vec<_> = ids
        .iter()
        .map(|id| host.wait_for_exit(SESSION, id))
        .collect();
    run(async {
        for wait in waits {
            assert_eq!(wait.await.unwrap(), exited_with(0));
        }
    });
    for (index, id) in ids.iter().enumerate() {
        assert_eq!(
            host.output(SESSION, id).unwrap().output,
            format!("{index}\n")
        );
    }
    assert_eq!(host.release_session(SESSION), 50);
    assert!(host.is_empty());
}

#[test]
fn concurrent_waiters_all_resolve() {
    let host = TerminalHost::new();
    let id = host
        .create(SESSION, sh("sleep 0.3; exit 7"), root())
        .unwrap();
    let waiters: Vec<_> = (0..8)
        .map(|_| smol::spawn(host.wait_for_exit(SESSION, &id)))
        .collect();
    run(async {
        for waiter in waiters {
            assert_eq!(waiter.await.unwrap(), exited_with(7));
        }
    });
    // A late waiter gets the same answer at once.
    assert_eq!(
        run(host.wait_for_exit(SESSION, &id)).unwrap(),
        exited_with(7)
    );
}

#[test]
fn env_and_cwd_are_honoured() {
    let host = TerminalHost::new();
    let dir = std::env::temp_dir().canonicalize().unwrap();
    let request = CreateTerminal {
        env: vec![
            ("ACP_GREETING".into(), "hello there".into()),
            ("HOME".into(), "/nonexistent-home".into()),
        ],
        cwd: Some(dir.clone()),
        ..sh(r#"printf '%s|%s|%s' "$ACP_GREETING" "$HOME" "$(pwd -P)""#)
    };
    let (output, _) = run_to_exit(&host, request);
    assert_eq!(
        output,
        format!("hello there|/nonexistent-home|{}", dir.display())
    );

    // Inherited variables stay; the default cwd applies when none is given.
    let id = host.create(
        SESSION,
        sh(r#"printf '%s|%s' "${PATH:+set}" "$(pwd -P)""#),
        &dir,
    );
    let id = id.unwrap();
    run(host.wait_for_exit(SESSION, &id)).unwrap();
    assert_eq!(
        host.output(SESSION, &id).unwrap().output,
        format!("set|{}", dir.display())
    );
}

#[test]
fn direct_commands_take_arguments_verbatim() {
    let host = TerminalHost::new();
    let request = CreateTerminal {
        args: vec!["%s|%s".into(), "two words".into(), "$HOME".into()],
        ..CreateTerminal::new("printf")
    };
    let (output, status) = run_to_exit(&host, request);
    assert_eq!(output, "two words|$HOME");
    assert_eq!(status, exited_with(0));
}

#[test]
fn a_terminal_of_another_session_is_refused() {
    let host = TerminalHost::new();
    let id = host.create(SESSION, sh("exec sleep 1000"), root()).unwrap();
    let refused = |result: Result<(), TerminalError>| match result {
        Err(TerminalError::WrongSession {
            id: refused,
            session,
        }) => {
            assert_eq!(
                (refused.as_str(), session.as_str()),
                (id.as_str(), OTHER_SESSION)
            );
        }
        other => panic!("expected WrongSession, got {other:?}"),
    };
    refused(host.output(OTHER_SESSION, &id).map(drop));
    refused(run(host.wait_for_exit(OTHER_SESSION, &id)).map(drop));
    refused(host.kill(OTHER_SESSION, &id));
    refused(host.release(OTHER_SESSION, &id));
    assert_eq!(host.release_session(OTHER_SESSION), 0);
    let message = host.kill(OTHER_SESSION, &id).unwrap_err().to_string();
    assert_eq!(
        message,
        format!("terminal `{id}` does not belong to session `{OTHER_SESSION}`")
    );

    // Still running and usable by its own session.
    assert_eq!(host.output(SESSION, &id).unwrap().exit_status, None);
    assert_eq!(host.release_session(SESSION), 1);
}

#[test]
fn creation_errors_are_precise() {
    let host = TerminalHost::new();
    let missing = CreateTerminal::new("acp-definitely-not-a-command");
    let error = host.create(SESSION, missing, root()).unwrap_err();
    assert!(matches!(error, TerminalError::Spawn { .. }), "{error:?}");
    assert!(
        error.to_string().contains("acp-definitely-not-a-command"),
        "{error}"
    );

    let relative = CreateTerminal {
        cwd: Some(PathBuf::from("relative/dir")),
        ..sh("true")
    };
    let error = host.create(SESSION, relative, root()).unwrap_err();
    assert!(matches!(error, TerminalError::RelativeCwd(_)), "{error:?}");
    assert!(error.to_string().contains("relative/dir"), "{error}");

    let error = host
        .create(SESSION, sh("true"), Path::new("/acp/no/such/dir"))
        .unwrap_err();
    assert!(matches!(error, TerminalError::MissingCwd(_)), "{error:?}");
    assert!(error.to_string().contains("/acp/no/such/dir"), "{error}");
    assert!(host.is_empty());
}

#[test]
fn release_session_releases_only_that_session() {
    let host = TerminalHost::new();
    let mine = host.create(SESSION, sh("exec sleep 1000"), root()).unwrap();
    let theirs = host
        .create(OTHER_SESSION, sh("exec sleep 1000"), root())
        .unwrap();
    assert_eq!(host.release_session(SESSION), 1);
    assert_unknown(host.output(SESSION, &mine), &mine);
    assert!(host.output(OTHER_SESSION, &theirs).is_ok());
    assert_eq!(host.len(), 1);
}

#[test]
fn the_limits_have_documented_defaults() {
    let host = TerminalHost::new();
    assert_eq!(host.max_terminals_per_session(), 64);
    assert_eq!(host.max_terminals(), 256);
    assert_eq!(
        host.max_terminals_per_session(),
        TerminalHost::DEFAULT_MAX_TERMINALS_PER_SESSION
    );
    assert_eq!(host.max_terminals(), TerminalHost::DEFAULT_MAX_TERMINALS);
}

#[test]
fn the_session_limit_refuses_one_more_and_a_release_frees_a_slot() {
    let host = TerminalHost::new().with_max_terminals_per_session(3);
    let ids: Vec<String> = (0..3)
        .map(|_| host.create(SESSION, sh("sleep 1000"), root()).unwrap())
        .collect();
    let (limit, scope) = too_many(host.create(SESSION, sh("sleep 1000"), root()));
    assert_eq!((limit, scope.as_str()), (3, "the session"));
    let error = host
        .create(SESSION, sh("sleep 1000"), root())
        .unwrap_err()
        .to_string();
    assert!(error.contains("too many terminals"), "{error}");
    assert_eq!(host.len(), 3, "nothing was started");

    // Another session has slots of its own.
    let other = host
        .create(OTHER_SESSION, sh("sleep 1000"), root())
        .unwrap();
    host.release(OTHER_SESSION, &other).unwrap();

    host.release(SESSION, &ids[0]).unwrap();
    let id = host.create(SESSION, sh("sleep 1000"), root()).unwrap();
    assert_eq!(host.len(), 3);
    host.release(SESSION, &id).unwrap();
}

#[test]
fn the_host_limit_counts_every_session() {
    let host = TerminalHost::new().with_max_terminals(2);
    host.create("first", sh("sleep 1000"), root()).unwrap();
    host.create("second", sh("sleep 1000"), root()).unwrap();
    let (limit, scope) = too_many(host.create("third", sh("sleep 1000"), root()));
    assert_eq!((limit, scope.as_str()), (2, "the connection"));

    assert_eq!(host.release_session("first"), 1);
    host.create("third", sh("sleep 1000"), root()).unwrap();
}

#[test]
fn failed_creations_take_no_slot() {
    let host = TerminalHost::new()
        .with_max_terminals_per_session(1)
        .with_max_terminals(1);
    for _ in 0..3 {
        let missing = host.create(SESSION, CreateTerminal::new("/nonexistent/program"), root());
        assert!(
            matches!(missing, Err(TerminalError::Spawn { .. })),
            "{missing:?}"
        );
        let relative = CreateTerminal {
            cwd: Some("relative".into()),
            ..sh("true")
        };
        assert!(matches!(
            host.create(SESSION, relative, root()),
            Err(TerminalError::RelativeCwd(_))
        ));
    }
    let id = host.create(SESSION, sh("true"), root()).unwrap();
    too_many(host.create(OTHER_SESSION, sh("true"), root()));
    host.release(SESSION, &id).unwrap();
    host.create(OTHER_SESSION, sh("true"), root()).unwrap();
}

#[test]
fn a_finished_terminal_kills_its_leftovers_and_reaps_its_leader() {
    let host = TerminalHost::new();
    // The background sleep does not hold the output open: once the shell has exited the
    // terminal is finished.
    let id = host
        .create(SESSION, sh("echo $$; sleep 1000 >/dev/null 2>&1 &"), root())
        .unwrap();
    assert_eq!(
        run(host.wait_for_exit(SESSION, &id)).unwrap(),
        exited_with(0)
    );
    let pgid = first_line_pid(&host, &id);
    eventually("the leftover sleep was killed", || {
        live_members(pgid).is_empty()
    });
    eventually("the leader was reaped", || {
        !Path::new(&format!("/proc/{pgid}")).exists()
    });
    // The terminal itself stays until released, with its output and status.
    let output = host.output(SESSION, &id).unwrap();
    assert_eq!(output.output, format!("{pgid}\n"));
    assert_eq!(output.exit_status, Some(exited_with(0)));
    host.kill(SESSION, &id).unwrap();
    host.release(SESSION, &id).unwrap();
}

/// Chatty commands nobody releases: their output together stays within the host's budget
/// (plus the floor each terminal keeps), each terminal still ends with its latest output.
#[test]
fn the_output_budget_bounds_what_all_terminals_keep() {
    let budget = 1 << 20;
    let host = TerminalHost::new().with_output_budget(budget);
    let mut ids = Vec::new();
    for i in 0..8 {
        let script = format!("head -c 1048576 /dev/zero | tr '\\0' x; echo end-{i}");
        let id = host.create(SESSION, sh(&script), root()).unwrap();
        assert_eq!(
            run(host.wait_for_exit(SESSION, &id)).unwrap(),
            exited_with(0)
        );
        ids.push(id);
    }
    let floor = 64 * 1024;
    assert!(
        host.output_kept() <= budget + ids.len() * floor,
        "{} bytes kept",
        host.output_kept()
    );
    for (i, id) in ids.iter().enumerate() {
        let output = host.output(SESSION, id).unwrap();
        assert!(output.output.ends_with(&format!("end-{i}\n")));
    }
    for id in &ids {
        host.release(SESSION, id).unwrap();
    }
    eventually("the released output is given back", || {
        host.output_kept() == 0
    });
}
