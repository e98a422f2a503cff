//! Misbehaviours that attack the checker itself rather than break a protocol rule: floods,
//! silence, deafness. The checker must end each of them within its time limits and without
//! growing its memory (`tests/hostile.rs`).

use std::io::Write;
use std::time::Duration;

/// The hostile misbehaviours, with what they do.
pub const HOSTILE: &[(&str, &str)] = &[
    (
        "flood-garbage",
        "writes endless lines that are not JSON, and never reads its stdin",
    ),
    (
        "flood-long-line",
        "writes one endless line without a newline, and never reads its stdin",
    ),
    (
        "flood-notifications",
        "after the first `session/new`, sends endless `session/update` chunks for that session, while serving as usual",
    ),
    (
        "flood-requests-deaf",
        "sends requests to the client endlessly and never reads its stdin",
    ),
    ("silent", "reads its stdin and never answers"),
    ("deaf", "never reads its stdin and never writes"),
];

/// Runs `bug` if it is one that replaces the agent altogether; false otherwise.
pub fn run(bug: &str) -> bool {
    match bug {
        "flood-garbage" => flood(|n, out| {
            let _ = writeln!(out, "this line is not JSON-RPC; it is number {n} of many");
        }),
        "flood-long-line" => flood(|_, out| out.extend_from_slice(&[b'x'; 4096])),
        "flood-requests-deaf" => flood(|n, out| {
            let _ = writeln!(
                out,
                r#"{{"jsonrpc":"2.0","id":"flood-{n}","method":"fs/read_text_file","params":{{"sessionId":"sess-flood","path":"/flood/notes.txt"}}}}"#
            );
        }),
        "silent" => {
            for line in std::io::stdin().lines() {
                if line.is_err() {
                    break;
                }
            }
        }
        // It does not outlive the checker that started it.
        "deaf" => {
            let parent = std::os::unix::process::parent_id();
            while std::os::unix::process::parent_id() == parent {
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        _ => return false,
    }
    true
}

/// Writes what `piece` makes, numbered, in batches of about 64 KiB, until stdout fails.
fn flood(mut piece: impl FnMut(u64, &mut Vec<u8>)) {
    let mut stdout = std::io::stdout().lock();
    let mut batch = Vec::with_capacity(80 * 1024);
    let mut n = 0u64;
    loop {
        batch.clear();
        while batch.len() < 64 * 1024 {
            n += 1;
            piece(n, &mut batch);
        }
        if stdout
            .write_all(&batch)
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Starts sending endless `session/update` chunks for `session` from a thread of their own,
/// a batch at a time, so that the agent's answers still get through between batches.
pub fn flood_updates(session: String) {
    std::thread::spawn(move || {
        let mut batch = Vec::with_capacity(16 * 1024);
        let mut n = 0u64;
        loop {
            batch.clear();
            for _ in 0..64 {
                n += 1;
                let _ = writeln!(
                    batch,
                    r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"flood {n}"}}}}}}}}"#
                );
            }
            let mut stdout = std::io::stdout().lock();
            if stdout
                .write_all(&batch)
                .and_then(|()| stdout.flush())
                .is_err()
            {
                std::process::exit(0);
            }
            drop(stdout);
            std::thread::yield_now();
        }
    });
}
