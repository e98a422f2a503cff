//! [`PrintTraffic`]: the simplest observer, for debugging.

use acp_jsonrpc::{Observer, Problem};

/// An [`Observer`] that prints every message in and out to stderr, for debugging.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrintTraffic;

impl Observer for PrintTraffic {
    fn incoming(&self, line: &[u8]) {
        eprintln!("<- {}", String::from_utf8_lossy(line));
    }
    fn outgoing(&self, line: &[u8]) {
        eprintln!("-> {}", String::from_utf8_lossy(line));
    }
    fn problem(&self, problem: &Problem) {
        eprintln!("!! {problem}");
    }
}
