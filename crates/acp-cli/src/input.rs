//! Lines of stdin, read by one thread for the whole run. The prompt loop and the permission
//! prompt both take their next line here: a reader that stops waiting (a permission request
//! answered `cancelled` after Ctrl-C) leaves no blocked read of its own behind, so the line
//! typed next goes to whoever asks next instead of being swallowed.

use std::io::BufRead;
use std::sync::OnceLock;

use smol::channel::{Receiver, bounded};

/// The lines the reader thread has read and nobody has taken yet. One: the thread reads at
/// most a line ahead of the run, as a blocking read waiting for it would.
const AHEAD: usize = 1;

/// The receiving end of the reader thread, started on first use.
fn lines() -> &'static Receiver<String> {
    static LINES: OnceLock<Receiver<String>> = OnceLock::new();
    LINES.get_or_init(|| {
        let (sender, receiver) = bounded(AHEAD);
        // A thread that cannot be started leaves the channel closed: end of input.
        let _ = std::thread::Builder::new()
            .name("acp-stdin".to_owned())
            .spawn(move || {
                let stdin = std::io::stdin();
                loop {
                    let mut line = String::new();
                    match stdin.lock().read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if sender.send_blocking(line).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        receiver
    })
}

/// The next line of stdin, without its line ending; `None` at end of input (or when stdin
/// cannot be read). Dropping the future before it is ready takes nothing: the line stays for
/// the next call.
pub async fn line() -> Option<String> {
    let line = lines().recv().await.ok()?;
    Some(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Where the prompts come from: the `--prompt`s given, in order, or else stdin's lines (blank
/// ones skipped).
pub struct Prompts<'a> {
    given: Option<std::slice::Iter<'a, String>>,
}

impl<'a> Prompts<'a> {
    /// The prompts `given`, or stdin's lines when none were given.
    pub fn new(given: &'a [String]) -> Self {
        Prompts {
            given: (!given.is_empty()).then(|| given.iter()),
        }
    }

    /// The next prompt; `None` once the given ones or stdin are used up.
    pub async fn next(&mut self) -> Option<String> {
        match &mut self.given {
            Some(given) => given.next().cloned(),
            None => loop {
                match line().await {
                    Some(line) if line.trim().is_empty() => continue,
                    other => return other,
                }
            },
        }
    }
}
