//! `acp` at a real terminal: a pseudo-terminal is its stdin, stdout and stderr (so `--ask` is
//! the default policy) and its controlling terminal, and Ctrl-C is the `^C` byte typed into
//! it, which the terminal's line discipline turns into SIGINT for acp's process group, as at
//! a keyboard. Pinned: Ctrl-C at the permission prompt reaches the agent as `session/cancel`
//! and ends the turn `cancelled` at once, a second one quits, and the line typed after it is
//! the next prompt (no read of the abandoned prompt is left to swallow it).
#![cfg(target_os = "linux")]

mod common;

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::BorrowedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{ACP, scratch};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};

/// How long acp may take to show what a step waits for. Generous for a loaded machine: the
/// point is that the answer comes (before the fix, Ctrl-C at the prompt waited for a line).
const LIMIT: Duration = Duration::from_secs(20);

/// `acp` running on a pseudo-terminal; what it printed so far is collected by a thread.
struct Terminal {
    keyboard: File,
    screen: Arc<Mutex<Vec<u8>>>,
    child: Child,
}

impl Terminal {
    /// Starts `acp ARGS` with a new pseudo-terminal as its controlling terminal and stdio.
    fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
        let master = openpt(flags).expect("a pseudo-terminal");
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(name.to_str().unwrap())
            .unwrap();
        let mut command = Command::new(ACP);
        command
            .args(args)
            .envs(env.iter().copied())
            .env("NO_COLOR", "1")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: between fork and exec the child only makes two system calls (no allocation,
        // no lock): a session of its own, whose controlling terminal is its stdin, so that the
        // terminal's ^C goes to its process group.
        unsafe {
            command.pre_exec(|| {
                rustix::process::setsid()?;
                rustix::process::ioctl_tiocsctty(BorrowedFd::borrow_raw(0))?;
                Ok(())
            });
        }
        let child = command.spawn().expect("start acp");
        // The parent's copies of the slave are gone with `command`: reading the master ends
        // (EIO) once acp and everything it started have closed the terminal.
        drop(command);
        let keyboard = File::from(master);
        let mut reader = keyboard.try_clone().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let sink = screen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Terminal {
            keyboard,
            screen,
            child,
        }
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).replace("\r\n", "\n")
    }

    fn typed(&mut self, keys: &str) {
        self.keyboard.write_all(keys.as_bytes()).unwrap();
    }

    /// Waits until `text` has been printed `times` times; fails the test after [`LIMIT`].
    fn wait_for(&self, text: &str, times: usize) {
        let deadline = Instant::now() + LIMIT;
        while self.screen().matches(text).count() < times {
            if Instant::now() > deadline {
                panic!(
                    "no {text:?} (×{times}) within {LIMIT:?}; the screen:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for acp to exit (killing it after [`LIMIT`]); its exit code.
    fn exit_code(mut self) -> Option<i32> {
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "acp did not exit within {LIMIT:?}; the screen:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// What acp sent, from its `--trace` file: each message's method and its params.
fn sent(trace: &Path) -> Vec<(String, serde_json::Value)> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|entry| entry["dir"] == "client->agent")
        .filter_map(|entry| {
            let method = entry["msg"]["method"].as_str()?.to_owned();
            Some((method, entry["msg"]["params"].clone()))
        })
        .collect()
}

/// Prompts typed on the terminal, the demo agent asking before it writes: Ctrl-C at that
/// question cancels the turn within the limit, and the next line typed is the next prompt.
#[test]
fn ctrl_c_at_the_permission_prompt_cancels_the_turn_and_the_next_line_is_a_prompt() {
    let dir = scratch("pty");
    let trace = dir.join("wire.jsonl");
    let (cwd, trace_arg) = (dir.to_str().unwrap(), trace.to_str().unwrap());
    let mut terminal = Terminal::start(&["--cwd", cwd, "--trace", trace_arg], &[]);
    terminal.typed("first\n");
    terminal.wait_for("choose 1-2: ", 1);

    let pressed = Instant::now();
    terminal.typed("\x03");
    terminal.wait_for("[turn ended: cancelled]", 1);
    eprintln!(
        "Ctrl-C to the cancelled turn's end: {:?}",
        pressed.elapsed()
    );
    terminal.wait_for("cancelling the turn (Ctrl-C again to quit)", 1);

    terminal.typed("second\n");
    terminal.wait_for(r#"The user asked: "second""#, 1);
    terminal.wait_for("choose 1-2: ", 2);
    terminal.typed("2\n");
    terminal.wait_for("[turn ended: end_turn]", 1);
    terminal.wait_for("and I did not write summary.txt.", 1);
    // ^D at the start of a line: end of input, the end of the run.
    terminal.typed("\x04");
    let screen = terminal.screen();
    assert_eq!(terminal.exit_code(), Some(0), "{screen}");

    let sent = sent(&trace);
    let cancels = sent.iter().filter(|(m, _)| m == "session/cancel").count();
    assert_eq!(cancels, 1, "{sent:?}");
    let prompts: Vec<&serde_json::Value> = sent
        .iter()
        .filter(|(m, _)| m == "session/prompt")
        .map(|(_, params)| &params["prompt"][0]["text"])
        .collect();
    assert_eq!(prompts, ["first", "second"], "{sent:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `--prompt`, a turn cancelled at the permission prompt ends the run with 130.
#[test]
fn ctrl_c_at_the_permission_prompt_of_a_given_prompt_exits_130() {
    let dir = scratch("pty-p");
    let mut terminal = Terminal::start(&["-p", "go", "--cwd", dir.to_str().unwrap()], &[]);
    terminal.wait_for("choose 1-2: ", 1);
    terminal.typed("\x03");
    terminal.wait_for("[turn ended: cancelled]", 1);
    let screen = terminal.screen();
    assert_eq!(terminal.exit_code(), Some(130), "{screen}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An agent in `sh` that asks permission for its tool call, then neither answers its turn
/// nor heeds `session/cancel`, which it records in `$CANCELS`.
const STUBBORN_AGENT: &str = r#"
reply() { printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$1"; }
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*) reply '{"protocolVersion":1,"agentCapabilities":{}}' ;;
    *'"method":"session/new"'*) reply '{"sessionId":"s1"}' ;;
    *'"method":"session/prompt"'*)
      printf '%s\n' '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Delete the build","status":"pending"}}}'
      printf '%s\n' '{"jsonrpc":"2.0","id":"ask-1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"Delete the build"},"options":[{"optionId":"yes","name":"Allow","kind":"allow_once"}]}}' ;;
    *'"method":"session/cancel"'*) echo cancel >> "$CANCELS" ;;
  esac
done
"#;

/// The first Ctrl-C at the prompt reaches the agent as `session/cancel`; the agent ignores
/// it, and the second Ctrl-C quits with 130.
#[test]
fn a_second_ctrl_c_quits_when_the_agent_ignores_the_cancel() {
    let dir = scratch("pty-stubborn");
    let cancels = dir.join("cancels");
    let mut terminal = Terminal::start(
        &["-p", "go", "--", "sh", "-c", STUBBORN_AGENT],
        &[("CANCELS", cancels.to_str().unwrap())],
    );
    terminal.wait_for("choose 1-1: ", 1);
    terminal.typed("\x03");
    terminal.wait_for("cancelling the turn", 1);
    let deadline = Instant::now() + LIMIT;
    while std::fs::read_to_string(&cancels).unwrap_or_default() != "cancel\n" {
        assert!(
            Instant::now() < deadline,
            "session/cancel did not reach the agent"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    terminal.typed("\x03");
    terminal.wait_for("shutting the agent down", 1);
    let screen = terminal.screen();
    assert_eq!(terminal.exit_code(), Some(130), "{screen}");
    let _ = std::fs::remove_dir_all(&dir);
}
