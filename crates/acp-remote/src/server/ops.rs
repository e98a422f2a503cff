//! What an operator watches: the server's counters (connections by transport, sessions, turns,
//! refusals by reason) and the draining state that a graceful drain sets
//! ([`ShutdownHandle::drain`](crate::ShutdownHandle::drain)). `server/exchange/health.rs` serves them.
//!
//! The counters are plain atomics, always kept (the drain needs the running turns); only the
//! rendering in the Prometheus text format (`server/exchange/metrics.rs`) is behind the `metrics` feature.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// The transport of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    WebSocket,
    StreamableHttp,
}

impl Transport {
    #[cfg(feature = "metrics")]
    fn label(self) -> &'static str {
        match self {
            Transport::WebSocket => "websocket",
            Transport::StreamableHttp => "streamable_http",
        }
    }
}

/// Why a request or a socket was refused, as the `reason` label of
/// `acp_remote_refusals_total` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// The connection limit (503).
    MaxConnections,
    /// The server is draining: no new connection (503).
    Draining,
    /// The socket cap, or the peer's share of it (503, or closed).
    Sockets,
    /// No or wrong credentials (401).
    Unauthenticated,
    /// A browser Origin not allowed (403).
    Origin,
    /// Another path, or an unknown or ended connection or session (404).
    NotFound,
    /// A message or request head over its limit (413, 431).
    TooLarge,
    /// Any other refusal of a request (400, 405, 406, 409, 411, 415, 501, ...).
    BadRequest,
}

const REASONS: [Reason; 8] = [
    Reason::MaxConnections,
    Reason::Draining,
    Reason::Sockets,
    Reason::Unauthenticated,
    Reason::Origin,
    Reason::NotFound,
    Reason::TooLarge,
    Reason::BadRequest,
];

impl Reason {
    #[cfg(feature = "metrics")]
    fn label(self) -> &'static str {
        match self {
            Reason::MaxConnections => "max_connections",
            Reason::Draining => "draining",
            Reason::Sockets => "sockets",
            Reason::Unauthenticated => "unauthenticated",
            Reason::Origin => "origin",
            Reason::NotFound => "not_found",
            Reason::TooLarge => "too_large",
            Reason::BadRequest => "bad_request",
        }
    }

    /// The reason of a refusal answered with `status`; `None` for an answer that is not a
    /// refusal, or a 503 (counted where it is decided, with its reason).
    fn of_status(status: u16) -> Option<Reason> {
        match status {
            0..=399 | 503 => None,
            401 => Some(Reason::Unauthenticated),
            403 => Some(Reason::Origin),
            404 => Some(Reason::NotFound),
            413 | 431 => Some(Reason::TooLarge),
            _ => Some(Reason::BadRequest),
        }
    }
}

/// The server's counters.
#[derive(Debug, Default)]
pub(crate) struct Ops {
    draining: AtomicBool,
    websockets: AtomicUsize,
    streamable: AtomicUsize,
    websockets_total: AtomicU64,
    streamable_total: AtomicU64,
    sessions: AtomicUsize,
    turns_running: AtomicUsize,
    turns_total: AtomicU64,
    /// Requests that a drain waits for: turns, and the session requests (`session/new`, ...)
    /// that come before one.
    busy: AtomicUsize,
    /// How many busy requests ever began.
    busy_began: AtomicU64,
    /// Notified whenever a turn ends, or another busy request (for the drain).
    turn_ended: event_listener::Event,
    refusals: [AtomicU64; REASONS.len()],
}

/// Counts a connection while it is open.
#[derive(Debug)]
pub(crate) struct Open(std::sync::Arc<Ops>, Transport);

impl Open {
    /// The transport's name, for spans.
    #[cfg(feature = "tracing")]
    pub(crate) fn transport_name(&self) -> &'static str {
        match self.1 {
            Transport::WebSocket => "websocket",
            Transport::StreamableHttp => "streamable_http",
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open_count(self.1).fetch_sub(1, Ordering::SeqCst);
    }
}

impl Ops {
    fn open_count(&self, transport: Transport) -> &AtomicUsize {
        match transport {
            Transport::WebSocket => &self.websockets,
            Transport::StreamableHttp => &self.streamable,
        }
    }

    /// Counts a connection opened, until the guard is dropped.
    pub(crate) fn opened(self: &std::sync::Arc<Self>, transport: Transport) -> Open {
        self.open_count(transport).fetch_add(1, Ordering::SeqCst);
        match transport {
            Transport::WebSocket => &self.websockets_total,
            Transport::StreamableHttp => &self.streamable_total,
        }
        .fetch_add(1, Ordering::Relaxed);
        Open(self.clone(), transport)
    }

    pub(crate) fn refused(&self, reason: Reason) {
        let at = REASONS.iter().position(|r| *r == reason).unwrap_or(0);
        self.refusals[at].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts the answer to a request when it is a refusal.
    pub(crate) fn answered(&self, status: u16) {
        if let Some(reason) = Reason::of_status(status) {
            self.refused(reason);
        }
    }

    pub(crate) fn sessions_changed(&self, added: usize, removed: usize) {
        self.sessions.fetch_add(added, Ordering::SeqCst);
        self.sessions.fetch_sub(removed, Ordering::SeqCst);
    }

    pub(crate) fn turn_started(&self) {
        self.turns_running.fetch_add(1, Ordering::SeqCst);
    }

    /// `finished` turns ended with their answer, `dropped` with their connection.
    pub(crate) fn turns_ended(&self, finished: usize, dropped: usize) {
        self.turns_running
            .fetch_sub(finished + dropped, Ordering::SeqCst);
        self.turns_total
            .fetch_add(finished as u64, Ordering::Relaxed);
        self.turn_ended.notify(usize::MAX);
    }

    /// A request the drain waits for began.
    pub(crate) fn busy_started(&self) {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.busy_began.fetch_add(1, Ordering::SeqCst);
    }

    /// `n` of them ended (answered, or their connection gone).
    pub(crate) fn busy_ended(&self, n: usize) {
        self.busy.fetch_sub(n, Ordering::SeqCst);
        self.turn_ended.notify(usize::MAX);
    }

    #[cfg(test)]
    pub(crate) fn sessions_now(&self) -> usize {
        self.sessions.load(Ordering::SeqCst)
    }

    pub(crate) fn turns_running(&self) -> usize {
        self.turns_running.load(Ordering::SeqCst)
    }

    /// Resolves once no turn is running nor a session request answered, and none began for
    /// `quiet`: a client that just opened its session is given the time to begin its turn.
    pub(crate) async fn turns_done(&self, quiet: std::time::Duration) {
        loop {
            loop {
                let listener = self.turn_ended.listen();
                if self.busy.load(Ordering::SeqCst) == 0 {
                    break;
                }
                listener.await;
            }
            let began = self.busy_began.load(Ordering::SeqCst);
            smol::Timer::after(quiet).await;
            if self.busy.load(Ordering::SeqCst) == 0
                && self.busy_began.load(Ordering::SeqCst) == began
            {
                return;
            }
        }
    }

    pub(crate) fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// A snapshot of the counters, for the metrics.
#[cfg(feature = "metrics")]
pub(crate) struct Snapshot {
    pub(crate) draining: bool,
    /// (transport, open now, opened in all)
    pub(crate) connections: Vec<(&'static str, u64, u64)>,
    pub(crate) sessions: u64,
    pub(crate) turns_running: u64,
    pub(crate) turns_total: u64,
    pub(crate) refusals: Vec<(&'static str, u64)>,
}

#[cfg(feature = "metrics")]
impl Ops {
    pub(crate) fn snapshot(&self) -> Snapshot {
        let load = |a: &AtomicUsize| a.load(Ordering::SeqCst) as u64;
        let load64 = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Snapshot {
            draining: self.is_draining(),
            connections: vec![
                (
                    Transport::WebSocket.label(),
                    load(&self.websockets),
                    load64(&self.websockets_total),
                ),
                (
                    Transport::StreamableHttp.label(),
                    load(&self.streamable),
                    load64(&self.streamable_total),
                ),
            ],
            sessions: load(&self.sessions),
            turns_running: load(&self.turns_running),
            turns_total: load64(&self.turns_total),
            refusals: REASONS
                .iter()
                .zip(&self.refusals)
                .map(|(r, n)| (r.label(), load64(n)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_classified_by_status() {
        assert_eq!(Reason::of_status(200), None);
        assert_eq!(Reason::of_status(202), None);
        assert_eq!(Reason::of_status(503), None);
        assert_eq!(Reason::of_status(401), Some(Reason::Unauthenticated));
        assert_eq!(Reason::of_status(431), Some(Reason::TooLarge));
        assert_eq!(Reason::of_status(415), Some(Reason::BadRequest));
    }

    #[test]
    fn turns_done_resolves_when_the_last_turn_ends() {
        let ops = std::sync::Arc::new(Ops::default());
        ops.turn_started();
        ops.turn_started();
        ops.busy_started();
        ops.busy_started();
        ops.turns_ended(1, 0);
        ops.busy_ended(1);
        assert_eq!(ops.turns_running(), 1);
        let waiter = {
            let ops = ops.clone();
            std::thread::spawn(move || {
                smol::block_on(ops.turns_done(std::time::Duration::from_millis(10)))
            })
        };
        ops.turns_ended(0, 1);
        ops.busy_ended(1);
        waiter.join().unwrap();
        assert_eq!(ops.turns_total.load(Ordering::Relaxed), 1);
    }
}
