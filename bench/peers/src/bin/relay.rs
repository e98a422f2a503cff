//! The floor of "one more process on the path": a byte relay that runs its arguments as a child
//! and copies stdin to the child's stdin and the child's stdout to stdout, writing each read out
//! at once. No framing, no parsing. `cargo xtask bench --chain` compares a conductor and its
//! proxies with as many relays as they put processes between the client and the agent.
//!
//! `relay COMMAND [ARGS...]`; relays nest: `relay relay acp-agent` is two hops. The child's
//! stderr is inherited (the bench's resource report travels there). The relay exits with the
//! child's status once the child's stdout has ended.

use std::io::{self, Read, Write};
use std::process::{Command, ExitCode, Stdio};
use std::thread;

/// One read's worth: the pipe's default capacity, so that a full pipe moves in one read.
const CHUNK: usize = 64 * 1024;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: relay COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let mut child = match Command::new(&program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("relay: cannot start {}: {e}", program.to_string_lossy());
            return ExitCode::from(2);
        }
    };
    let mut child_stdin = child.stdin.take().expect("piped");
    let mut child_stdout = child.stdout.take().expect("piped");
    // Downstream on its own thread: when our stdin ends, the child's stdin is closed by the drop.
    thread::spawn(move || copy(&mut io::stdin().lock(), &mut child_stdin));
    let upstream = copy(&mut child_stdout, &mut io::stdout().lock());
    let status = child.wait();
    match (upstream, status) {
        (Ok(()), Ok(status)) if status.success() => ExitCode::SUCCESS,
        (Ok(()), Ok(status)) => {
            ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1))
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("relay: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Copies until `from` ends, flushing after every read (as a process that forwards messages
/// must: the next byte may not come until the peer has answered this one).
fn copy(from: &mut impl Read, to: &mut impl Write) -> io::Result<()> {
    let mut buffer = vec![0; CHUNK];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buffer[..n])?;
        to.flush()?;
    }
}
