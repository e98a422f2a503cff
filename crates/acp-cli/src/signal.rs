//! Ctrl-C as a stream of SIGINTs, from `async-signal` (smol's own signal crate, already in the
//! tree through async-process): its handler only writes a byte to a socket that the stream
//! reads, so the handler stays async-signal-safe and the watcher wakes at once, with no timer.

use std::io;

use async_signal::{Signal, Signals};
use futures_lite::{StreamExt, future};

/// SIGINT, caught: while this lives, Ctrl-C no longer ends the process but shows up here.
#[derive(Debug)]
pub struct Interrupts(Signals);

impl Interrupts {
    /// Catches SIGINT from now on. Called before the agent starts, so that a Ctrl-C that
    /// comes early is counted too (the stream keeps it until [`Interrupts::next`] reads it).
    pub fn install() -> io::Result<Self> {
        Signals::new([Signal::Int]).map(Interrupts)
    }

    /// Waits for the next Ctrl-C. Should the signal stream fail, no more will come: it waits
    /// forever, and the run goes on as it would without a Ctrl-C.
    pub async fn next(&mut self) {
        match self.0.next().await {
            Some(Ok(_)) => {}
            Some(Err(_)) | None => future::pending().await,
        }
    }
}
