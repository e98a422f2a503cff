//! A peer that speaks JSON lines to an implementation served on a thread over real pipes
//! (`std::io::pipe`), for the suites about a whole connection: v2's agent, the version router.

use std::io::{BufRead, BufReader, Write};
use std::thread::JoinHandle;

use smol::Unblock;

/// A pipe's reading end, async (what the served side reads, or a client over pipes).
pub type AsyncPipeReader = futures_lite::io::BufReader<Unblock<std::io::PipeReader>>;
/// A pipe's writing end, async.
pub type AsyncPipeWriter = Unblock<std::io::PipeWriter>;

/// One connection to an implementation served over real pipes; dropping it closes the
/// connection and waits until the implementation is done with it.
pub struct PipePeer {
    to_served: Option<std::io::PipeWriter>,
    from_served: BufReader<std::io::PipeReader>,
    served: Option<JoinHandle<()>>,
    ids: Vec<String>,
}

impl PipePeer {
    /// Runs `serve` on a thread with its end of the pipes.
    pub fn new(serve: impl FnOnce(AsyncPipeReader, AsyncPipeWriter) + Send + 'static) -> Self {
        let (served_in, to_served) = std::io::pipe().unwrap();
        let (from_served, served_out) = std::io::pipe().unwrap();
        let served = std::thread::spawn(move || {
            serve(
                futures_lite::io::BufReader::new(Unblock::new(served_in)),
                Unblock::new(served_out),
            )
        });
        PipePeer {
            to_served: Some(to_served),
            from_served: BufReader::new(from_served),
            served: Some(served),
            ids: Vec::new(),
        }
    }

    pub fn send(&mut self, line: &str) {
        writeln!(self.to_served.as_mut().unwrap(), "{line}").unwrap();
    }

    /// The next line, with v2's message ids (`msg_…`) named `msg-1`, `msg-2`, ... in order of
    /// first appearance.
    pub fn read(&mut self) -> String {
        let mut line = String::new();
        self.from_served.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "the served side closed its output");
        self.name_ids(line.trim_end())
    }

    /// Lines up to and including the first that contains `needle`.
    pub fn read_until(&mut self, needle: &str) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let line = self.read();
            let done = line.contains(needle);
            lines.push(line);
            if done {
                return lines;
            }
        }
    }

    /// Sends `line` and gives back the answer to request `id`, skipping what comes before it.
    pub fn ask(&mut self, id: u64, line: &str) -> serde_json::Value {
        self.send(line);
        loop {
            let answer: serde_json::Value = serde_json::from_str(&self.read()).unwrap();
            if answer["id"] == id {
                return answer;
            }
        }
    }

    fn name_ids(&mut self, line: &str) -> String {
        let mut out = String::new();
        let mut rest = line;
        while let Some(at) = rest.find("msg_") {
            out.push_str(&rest[..at]);
            let end = rest[at..].find('"').map_or(rest.len(), |quote| at + quote);
            let id = rest[at..end].to_owned();
            let n = match self.ids.iter().position(|known| *known == id) {
                Some(n) => n,
                None => {
                    self.ids.push(id);
                    self.ids.len() - 1
                }
            };
            out.push_str(&format!("msg-{}", n + 1));
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    }
}

impl Drop for PipePeer {
    fn drop(&mut self) {
        drop(self.to_served.take());
        if let Some(served) = self.served.take() {
            served.join().unwrap();
        }
    }
}
