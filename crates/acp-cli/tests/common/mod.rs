//! What both test files do with the `acp` binary: scratch projects, running it to the end, and
//! starting a turn to interrupt.
#![allow(dead_code)] // each test binary uses its own part

pub mod server;
pub mod sh;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const ACP: &str = env!("CARGO_BIN_EXE_acp");

/// How long any one run of `acp` may take before the test fails.
const LIMIT: Duration = Duration::from_secs(60);

/// A fresh scratch directory holding the demo's `notes.txt`, unique per call: tests run
/// concurrently and several share a `name`, so one must never delete another's directory.
pub fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let test = env!("CARGO_CRATE_NAME");
    let dir =
        std::env::temp_dir().join(format!("acp-cli-{test}-{}-{name}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("notes.txt"),
        "buy milk\nship the release\ncall Ada\n",
    )
    .unwrap();
    dir
}

/// Runs `command` (stdin as it set it) to the end, collecting stdout and stderr; fails the
/// test after a minute.
pub fn run(command: &mut Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run acp");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    // Both pipes at once: a child blocked on a full stderr would never finish its stdout.
    let stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = out.read_to_end(&mut bytes);
        bytes
    });
    let stderr = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err.read_to_end(&mut bytes);
        bytes
    });
    let status = wait_at_most(&mut child);
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Waits for the child; kills it and fails the test when it runs longer than a minute.
pub fn wait_at_most(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("acp did not exit within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts that the run exited with 0 (showing its stdout and stderr if not) and returns its
/// stdout.
pub fn succeeded(out: &Output) -> String {
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    stdout
}

/// Starts `command` (an `acp --json` run) and waits for its first line, the turn's first
/// chunk, which must say `working`.
pub fn start_turn(command: &mut Command) -> (Child, BufReader<ChildStdout>) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("working"), "{line}");
    (child, stdout)
}

/// Ctrl-C, as a terminal sends it to acp.
pub fn interrupt(child: &Child) {
    // SAFETY: sends a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
}

/// Waits for the child to exit (at most a minute); its exit code, the rest of stdout, and
/// stderr.
pub fn finish(mut child: Child, stdout: BufReader<ChildStdout>) -> (Option<i32>, String, String) {
    let stderr = BufReader::new(child.stderr.take().unwrap());
    finish_with(child, stdout, stderr)
}

pub fn finish_with(
    mut child: Child,
    mut stdout: BufReader<ChildStdout>,
    mut stderr_reader: BufReader<ChildStderr>,
) -> (Option<i32>, String, String) {
    let status = wait_at_most(&mut child);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let mut stderr = String::new();
    stderr_reader.read_to_string(&mut stderr).unwrap();
    (status.code(), rest, stderr)
}
