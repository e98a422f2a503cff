//! What a durable-transport connection carried by WebSockets keeps across them (see
//! `src/server/exchange/ws_durable.rs`): the retention it advertised, how many messages its client's
//! WebSockets delivered, and which WebSocket carries it now.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use acp_jsonrpc::Latch;

use crate::proto::cursor::Retention;

/// The WebSocket side of one connection (a [`crate::server::streamable::HttpConn`] whose messages all
/// go to its connection stream).
#[derive(Debug)]
pub(crate) struct Carried {
    /// What the server keeps for resumptions, advertised in the `initialize` answer.
    pub(crate) retention: Retention,
    /// Messages taken from the client, over all its WebSockets: a resumed client sends again
    /// only those after them.
    received: AtomicU64,
    /// The carrier now: its number (0: none yet) and the latch that stops its reading.
    current: Mutex<(u64, Arc<Latch>)>,
    /// Held by the carrier that reads from its WebSocket; a new carrier takes it only once
    /// the last one stopped reading, so that `received` is exact when it is reported.
    pub(crate) reading: smol::lock::Mutex<()>,
}

impl Carried {
    pub(crate) fn new(retention: Retention) -> Carried {
        Carried {
            retention,
            received: AtomicU64::new(0),
            current: Mutex::new((0, Arc::default())),
            reading: smol::lock::Mutex::new(()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, (u64, Arc<Latch>)> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new WebSocket carries the connection: the last one is told to stop reading. Returns
    /// the new carrier's number and its own stop latch.
    pub(crate) fn take_over(&self) -> (u64, Arc<Latch>) {
        let mut current = self.lock();
        current.1.set();
        let stop = Arc::new(Latch::default());
        *current = (current.0 + 1, stop.clone());
        (current.0, stop)
    }

    /// Whether carrier `number` is still the connection's latest.
    pub(crate) fn is_current(&self, number: u64) -> bool {
        self.lock().0 == number
    }

    /// One more message taken from the client.
    pub(crate) fn received_one(&self) {
        self.received.fetch_add(1, Ordering::SeqCst);
    }

    /// Messages taken from the client so far.
    pub(crate) fn received(&self) -> u64 {
        self.received.load(Ordering::SeqCst)
    }
}
