//! Hostile processes: a client that dies without cleaning up (SIGKILL, SIGTERM, SIGHUP,
//! Ctrl-C), an agent that ignores end of input and SIGTERM, a terminal command with a
//! background child, terminals that are never released.
//!
//! The clients are this test binary itself, run again with [`ROLE`] set: the `role` test
//! then plays the part named there instead of passing trivially. Each client runs under a
//! "reaper", a third copy of the binary that makes itself the subreaper of everything the
//! client starts and reaps it all: when the reaper exits, every descendant of the client
//! (its agent, its terminal command and that command's background child, the process
//! supervisor) has exited and been reaped, which does not depend on what this machine's
//! init does with orphans.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use acp_host::process::{self, AgentCommand};
use acp_host::terminal::{CreateTerminal, TerminalError, TerminalHost};
use futures_lite::AsyncBufReadExt;

/// The environment variable that turns a run of this binary into one of the roles.
const ROLE: &str = "ACP_HOSTILE_PROCESS_ROLE";

/// Prefix of the lines a role reports on stdout, among the test harness's own.
const REPORT: &str = "hostile-report:";

/// How long anything may take before the test gives up; only a guard against hanging.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// Not a test of its own: the entry point of the roles. Passes at once without [`ROLE`].
#[test]
fn role() {
    match std::env::var(ROLE).as_deref() {
        Ok("reaper") => reaper_role(),
        Ok("client") => client_role(),
        Ok("terminals") => terminals_role(),
        _ => {}
    }
}

/// Runs this binary's `role` test as `role`, killed with SIGKILL if the thread that started
/// it ends first (a test that failed half-way leaves nothing behind).
fn role_command(role: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "role", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .stdin(Stdio::null());
    // SAFETY: prctl is async-signal-safe and touches no memory.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            // An ignored signal stays ignored across exec: under `nohup` (SIGHUP) or as a
            // background job of a script (SIGINT), the client would survive the signal
            // this test sends it. The tests are about what happens when it dies of one.
            for signal in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    command
}

/// The `key value` of a report line; the harness may have printed something before it on
/// the same line.
fn parse_report(line: &str) -> Option<(&str, &str)> {
    let (_, report) = line.split_once(REPORT)?;
    report.trim().split_once(' ')
}

fn report(key: &str, value: impl std::fmt::Display) {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{REPORT} {key} {value}").unwrap();
    stdout.flush().unwrap();
}

/// Becomes the subreaper of the client and all it starts, reaps every one of them, and
/// exits once none is left.
fn reaper_role() {
    // SAFETY: prctl with integer arguments.
    assert_eq!(
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) },
        0
    );
    // In a group of its own, as a shell would start it, so that a Ctrl-C can be aimed at it.
    let client = role_command("client").process_group(0).spawn().unwrap();
    report("client", client.id());
    loop {
        // SAFETY: waits for any child; the status pointer is valid.
        let reaped = unsafe { libc::waitpid(-1, &mut 0, 0) };
        if reaped == -1 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => break,
                other => panic!("waitpid failed: {other:?}"),
            }
        }
    }
    std::process::exit(0);
}

/// Starts an agent that ignores end of input, SIGTERM, SIGHUP and SIGINT, and a terminal
/// command with a background child; reports their groups and the supervisor, then waits to
/// be killed.
fn client_role() {
    let mut agent = AgentCommand::new("sh")
        .arg("-c")
        .arg(r#"trap "" TERM HUP INT; echo ready; while :; do sleep 1; done"#)
        .spawn()
        .unwrap();
    let mut stdout = agent.take_stdout().unwrap();
    let mut line = String::new();
    smol::block_on(stdout.read_line(&mut line)).unwrap();
    assert_eq!(line, "ready\n");

    let terminals = TerminalHost::new();
    let request = CreateTerminal {
        args: vec!["-c".into(), "sleep 1000 & echo $$; sleep 1000".into()],
        ..CreateTerminal::new("sh")
    };
    let id = terminals.create("s", request, Path::new("/")).unwrap();
    let deadline = Instant::now() + HANG_GUARD;
    let terminal_group = loop {
        let output = terminals.output("s", &id).unwrap().output;
        if let Some((first, _)) = output.split_once('\n') {
            break first.parse::<i32>().unwrap();
        }
        assert!(Instant::now() < deadline, "the terminal printed nothing");
        std::thread::sleep(Duration::from_millis(10));
    };

    report("agent", agent.id());
    report("terminal", terminal_group);
    report("supervisor", process::supervisor_id().unwrap());
    report("ready", 0);
    // Holds `agent`, `stdout` and `terminals` until killed.
    loop {
        std::thread::sleep(Duration::from_secs(1000));
    }
}

/// What a reaper reported.
struct Client {
    reaper: Child,
    client: i32,
    agent_group: i32,
    terminal_group: i32,
    supervisor: i32,
}

impl Client {
    fn start() -> Self {
        let mut reaper = role_command("reaper")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (lines, reports) = mpsc::channel();
        let stdout = BufReader::new(reaper.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let Some((key, value)) = parse_report(&line) else {
                    continue;
                };
                if lines
                    .send((key.to_owned(), value.parse::<i32>().unwrap()))
                    .is_err()
                {
                    break;
                }
            }
        });
        let mut client = Client {
            reaper,
            client: 0,
            agent_group: 0,
            terminal_group: 0,
            supervisor: 0,
        };
        loop {
            let (key, value) = reports
                .recv_timeout(HANG_GUARD)
                .expect("the client did not report ready");
            match key.as_str() {
                "client" => client.client = value,
                "agent" => client.agent_group = value,
                "terminal" => client.terminal_group = value,
                "supervisor" => client.supervisor = value,
                "ready" => break,
                _ => {}
            }
        }
        assert!(client.client > 1 && client.agent_group > 1 && client.terminal_group > 1);
        assert!(client.supervisor > 1);
        client
    }

    /// Waits until the reaper has exited, that is until nothing the client started is left.
    fn everything_ended(&mut self) -> bool {
        let deadline = Instant::now() + HANG_GUARD;
        while Instant::now() < deadline {
            if self.reaper.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Whatever happened, leave nothing behind.
        for group in [self.agent_group, self.terminal_group, self.client] {
            if group > 1 {
                // SAFETY: sends a signal.
                unsafe { libc::killpg(group, libc::SIGKILL) };
            }
        }
        let _ = self.reaper.kill();
        let _ = self.reaper.wait();
    }
}

/// `kill(pid, 0)`: whether anything with that id (or group id, when negative) exists.
fn exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn nothing_survives(kill: impl FnOnce(&Client)) {
    let mut client = Client::start();
    assert!(exists(-client.agent_group), "the agent runs");
    assert!(exists(-client.terminal_group), "the terminal command runs");

    kill(&client);
    assert!(
        client.everything_ended(),
        "processes started by the client outlived it"
    );
    assert!(!exists(-client.agent_group), "the agent's group is gone");
    assert!(
        !exists(-client.terminal_group),
        "the terminal's group is gone"
    );
    assert!(!exists(client.supervisor), "the supervisor exited");
}

fn signal(pid: i32, signal: libc::c_int) {
    // SAFETY: sends a signal.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

#[test]
fn nothing_outlives_a_client_killed_with_sigkill() {
    nothing_survives(|client| signal(client.client, libc::SIGKILL));
}

#[test]
fn nothing_outlives_a_client_ended_by_sigterm() {
    nothing_survives(|client| signal(client.client, libc::SIGTERM));
}

#[test]
fn nothing_outlives_a_client_ended_by_sighup() {
    nothing_survives(|client| signal(client.client, libc::SIGHUP));
}

#[test]
fn nothing_outlives_a_client_interrupted_by_ctrl_c() {
    // A terminal's Ctrl-C: SIGINT to the client's whole process group.
    nothing_survives(|client| signal(-client.client, libc::SIGINT));
}

#[test]
fn the_supervisor_holds_one_descriptor_and_little_memory() {
    let supervisor = process::start_supervisor().unwrap();
    assert_eq!(process::supervisor_id(), Some(supervisor));
    // Starting it again is a no-op.
    assert_eq!(process::start_supervisor().unwrap(), supervisor);

    let proc_dir = format!("/proc/{supervisor}");
    let field = |name: &str| {
        std::fs::read_to_string(format!("{proc_dir}/status"))
            .unwrap()
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|value| value.trim().to_owned())
            .unwrap_or_default()
    };
    // The child names itself right after the fork; on a loaded machine this test can read its
    // status before that, when it still carries the parent's (the test thread's) name.
    let deadline = Instant::now() + HANG_GUARD;
    while field("Name:") != "acp-supervisor" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(field("Name:"), "acp-supervisor");
    assert_eq!(field("PPid:"), std::process::id().to_string());

    // Unmapping what it inherited happens right after the fork; give it a moment.
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let descriptors = std::fs::read_dir(format!("{proc_dir}/fd")).unwrap().count();
        let status = std::fs::read_to_string(format!("{proc_dir}/status")).unwrap();
        let anonymous_kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("RssAnon:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        // One socket, no pipe of an agent, no stdout; no copy of this process's heap.
        if descriptors == 1 && anonymous_kib < 4096 {
            eprintln!("supervisor: {descriptors} descriptor, {anonymous_kib} KiB anonymous");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the supervisor holds {descriptors} descriptors and {anonymous_kib} KiB"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many terminals [`terminals_role`] creates and lets finish.
const FINISHED_TERMINALS: usize = 1000;

/// Creates many terminals whose commands finish, releases none, and reports how many
/// descriptors and zombies this process holds before and after. A process of its own, so
/// that no other test's processes and descriptors are counted.
fn terminals_role() {
    let terminals = TerminalHost::new()
        .with_max_terminals(FINISHED_TERMINALS)
        .with_max_terminals_per_session(FINISHED_TERMINALS);
    let run = |session: &str| {
        let request = CreateTerminal {
            args: vec!["-c".into(), "echo done".into()],
            ..CreateTerminal::new("sh")
        };
        let id = terminals.create(session, request, Path::new("/")).unwrap();
        smol::block_on(terminals.wait_for_exit(session, &id)).unwrap();
        id
    };
    // One terminal first, so that the reactor, the supervisor and the helper threads exist.
    let first = run("warm-up");
    terminals.release("warm-up", &first).unwrap();
    settle(0);
    report("descriptors-before", descriptors());
    report("zombies-before", zombies());

    for index in 0..FINISHED_TERMINALS {
        run(&format!("session-{}", index % 10));
    }
    assert_eq!(terminals.len(), FINISHED_TERMINALS);
    // Every output is still there.
    let id = format!("term-{}", FINISHED_TERMINALS + 1);
    assert_eq!(terminals.output("session-9", &id).unwrap().output, "done\n");
    settle(0);
    report("descriptors-after", descriptors());
    report("zombies-after", zombies());
    report("ready", 0);
}

/// Waits (up to the hang guard) until this process has at most `zombies` zombie children:
/// reaping happens a moment after the exit is observed.
fn settle(zombies_left: usize) {
    let deadline = Instant::now() + HANG_GUARD;
    while zombies() > zombies_left && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Descriptors of reaped children close on async-process's thread right after.
    std::thread::sleep(Duration::from_millis(200));
}

fn descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Children of this process that have exited and not been reaped.
fn zombies() -> usize {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                return false;
            };
            // "pid (comm) state ppid ...", where comm may contain anything.
            let Some(after_comm) = stat.rfind(')').map(|index| &stat[index + 1..]) else {
                return false;
            };
            let mut fields = after_comm.split_whitespace();
            fields.next() == Some("Z") && fields.next() == Some(me.as_str())
        })
        .count()
}

#[test]
fn finished_terminals_hold_no_process_and_no_descriptor() {
    let output = role_command("terminals")
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    let value = |key: &str| -> usize {
        text.lines()
            .filter_map(parse_report)
            .find_map(|(found, value)| (found == key).then(|| value.parse().unwrap()))
            .unwrap_or_else(|| panic!("no {key} in {text}"))
    };
    let (before, after) = (value("descriptors-before"), value("descriptors-after"));
    eprintln!(
        "{FINISHED_TERMINALS} finished terminals: descriptors {before} -> {after}, zombies {} -> {}",
        value("zombies-before"),
        value("zombies-after")
    );
    assert_eq!(value("zombies-after"), 0);
    // Not one per terminal: a few of this crate's own at most.
    assert!(after <= before + 8, "descriptors {before} -> {after}");
}

#[test]
fn the_session_limit_counts_finished_terminals() {
    let terminals = TerminalHost::new().with_max_terminals_per_session(2);
    let request = CreateTerminal {
        args: vec!["-c".into(), "exit 0".into()],
        ..CreateTerminal::new("sh")
    };
    let mut ids = Vec::new();
    for _ in 0..2 {
        let id = terminals
            .create("s", request.clone(), Path::new("/"))
            .unwrap();
        smol::block_on(terminals.wait_for_exit("s", &id)).unwrap();
        ids.push(id);
    }
    match terminals.create("s", request.clone(), Path::new("/")) {
        Err(TerminalError::TooManyTerminals { limit: 2, scope }) => {
            assert_eq!(scope.to_string(), "the session");
        }
        other => panic!("expected TooManyTerminals, got {other:?}"),
    }
    terminals.release("s", &ids[0]).unwrap();
    let id = terminals.create("s", request, Path::new("/")).unwrap();
    terminals.release("s", &id).unwrap();
}
