//! WebSocket keep-alive: pings while the connection is quiet, and the dead-peer timeout.
//!
//! A peer that vanished without closing (a laptop asleep, a NAT that forgot the flow, a
//! cable pulled) leaves a TCP connection that looks open for as long as nothing is sent; an
//! idle proxy may also cut a quiet one. So the reader of a WebSocket, while it waits for the
//! next frame, pings the peer once the connection has been quiet for the interval, and gives
//! up when a ping stays without any frame back for the timeout: the read fails with
//! [`io::ErrorKind::TimedOut`], and the connection ends with that error. Any frame counts as
//! an answer (a pong, a message), and every WebSocket peer answers pings by itself (browsers,
//! and the libraries of the TypeScript and Python SDKs too).
//!
//! Pings are sent only while the reader is polled: a connection whose runtime stopped reading
//! (back-pressure, see docs/limits.md) is not waiting for its peer, and is not judged.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use smol::Timer;

/// The keep-alive of one WebSocket: when to ping, and how long a ping may stay unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeepAliveConfig {
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
}

/// Default ping interval, for the server and for clients.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);
/// Default dead-peer timeout.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for KeepAliveConfig {
    fn default() -> Self {
        KeepAliveConfig {
            interval: DEFAULT_INTERVAL,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// What the reader is to do when [`KeepAlive::poll`] is ready.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Due {
    Ping,
    /// The error the read fails with.
    Dead,
}

#[derive(Debug)]
pub(crate) struct KeepAlive {
    config: KeepAliveConfig,
    timer: Timer,
    /// When `timer` fires; `None` once it has. Frames only move the next ping later, so the
    /// timer is re-armed only when it has fired or must fire sooner: not once per frame.
    armed: Option<Instant>,
    /// The last frame received.
    received: Instant,
    /// The last ping sent.
    pinged: Instant,
    /// The first ping sent since the last frame received.
    unanswered: Option<Instant>,
}

impl KeepAlive {
    pub(crate) fn new(config: KeepAliveConfig) -> KeepAlive {
        let now = Instant::now();
        KeepAlive {
            config,
            timer: Timer::at(now + config.interval),
            armed: Some(now + config.interval),
            received: now,
            pinged: now,
            unanswered: None,
        }
    }

    /// A frame came in (any: a pong, a message, a ping of the peer's).
    pub(crate) fn received(&mut self) {
        self.received = Instant::now();
        self.unanswered = None;
    }

    /// A ping was sent.
    pub(crate) fn pinged(&mut self) {
        let now = Instant::now();
        self.pinged = now;
        self.unanswered.get_or_insert(now);
    }

    fn next(&self) -> Instant {
        let ping = self.received.max(self.pinged) + self.config.interval;
        match self.unanswered {
            Some(since) => ping.min(since + self.config.timeout),
            None => ping,
        }
    }

    /// Ready when a ping is due or the peer is to be given up; registers `cx` otherwise.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Due> {
        loop {
            let now = Instant::now();
            if self
                .unanswered
                .is_some_and(|since| now >= since + self.config.timeout)
            {
                return Poll::Ready(Due::Dead);
            }
            if now >= self.received.max(self.pinged) + self.config.interval {
                return Poll::Ready(Due::Ping);
            }
            let next = self.next();
            if self.armed.is_none_or(|armed| next < armed) {
                self.timer.set_at(next);
                self.armed = Some(next);
            }
            if Pin::new(&mut self.timer).poll(cx).is_pending() {
                return Poll::Pending;
            }
            // Fired, perhaps early for a deadline that frames moved on: the loop looks again.
            self.armed = None;
        }
    }

    /// The error of a read that gave up on the peer.
    pub(crate) fn dead(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the WebSocket peer answered no ping within {:?} (keep-alive): the connection \
                 is taken for dead",
                self.config.timeout
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ping_is_due_after_a_quiet_interval_and_death_after_an_unanswered_timeout() {
        let config = KeepAliveConfig {
            interval: Duration::from_millis(20),
            timeout: Duration::from_millis(40),
        };
        let mut keepalive = KeepAlive::new(config);
        let poll = |k: &mut KeepAlive| smol::block_on(std::future::poll_fn(|cx| k.poll(cx)));
        assert_eq!(poll(&mut keepalive), Due::Ping);
        keepalive.pinged();
        // Answered: the next ping is an interval later, never death.
        keepalive.received();
        assert_eq!(poll(&mut keepalive), Due::Ping);
        keepalive.pinged();
        let since = Instant::now();
        assert_eq!(poll(&mut keepalive), Due::Ping);
        keepalive.pinged();
        assert_eq!(poll(&mut keepalive), Due::Dead);
        assert!(since.elapsed() >= Duration::from_millis(35));
    }
}
