//! The `tracing` feature: a span per connection and per request, an event
//! per message, problems at `WARN` (what is emitted: the crate docs,
//! "Tracing").
//!
//! The rest of the crate calls only what this module exports, one line per
//! call site. Without the feature every type here is empty and every
//! function does nothing, so those lines compile to nothing: no dependency,
//! no field, no branch. Both versions keep the same signatures, which CI
//! checks by building the crate with and without the feature.

#[cfg(feature = "tracing")]
pub(crate) use on::*;

#[cfg(not(feature = "tracing"))]
pub(crate) use off::*;

#[cfg(feature = "tracing")]
mod on {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Mutex, MutexGuard};
    use std::time::{Duration, Instant};

    use tracing::Span;

    use crate::{ConnectionError, Message, Problem, Request, RequestId, ResponseError};

    /// Every span and event has this target, whatever module emits it, so
    /// that one filter directive (`acp_jsonrpc=debug`) selects them all.
    const TARGET: &str = "acp_jsonrpc";

    /// Numbers connections in spans, to tell the two ends of an in-process
    /// pair (or many agents) apart.
    static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

    /// An event about a message: `WARN` when it carries an error, else
    /// `DEBUG`. (`tracing` fixes an event's level at its call site.)
    macro_rules! message_event {
        ($error:expr, $($rest:tt)*) => {
            if $error {
                tracing::warn!(target: TARGET, $($rest)*)
            } else {
                tracing::debug!(target: TARGET, $($rest)*)
            }
        };
    }

    /// Ignores poisoning, as `shared::lock` does (not imported from there:
    /// `shared` imports this module).
    fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn micros(duration: Duration) -> u64 {
        u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
    }

    /// A request we sent and whose response has not arrived.
    struct Waiting {
        span: Span,
        method: Box<str>,
        sent: Instant,
    }

    /// A connection's span, and what its events need to remember.
    pub(crate) struct ConnectionTrace {
        span: Span,
        /// Our requests by id, so that the event for a response names its
        /// method and how long it took.
        waiting: Mutex<HashMap<i64, Waiting>>,
    }

    impl ConnectionTrace {
        pub(crate) fn new() -> Self {
            let connection = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
            ConnectionTrace {
                span: tracing::info_span!(target: TARGET, "connection", connection),
                waiting: Mutex::new(HashMap::new()),
            }
        }

        /// Entered while the driver is polled, so that what the handlers
        /// log inside it belongs to the connection. Owned (a clone of the
        /// span), so that the driver can go on borrowing itself mutably.
        pub(crate) fn enter(&self) -> tracing::span::EnteredSpan {
            self.span.clone().entered()
        }

        /// A message was read (`bytes`: the line without its `\n`). For a
        /// request, returns its span, which its handler runs in.
        /// A response read, decoded (with its `error`, if any) or with its result unread.
        pub(crate) fn response_received(
            &self,
            id: &RequestId,
            bytes: usize,
            error: Option<&ResponseError>,
        ) {
            let waiting = id.as_i64().and_then(|id| lock(&self.waiting).remove(&id));
            let span = waiting.as_ref().map_or(&self.span, |w| &w.span);
            let method = waiting.as_ref().map(|w| &*w.method);
            let duration_us = waiting.as_ref().map(|w| micros(w.sent.elapsed()));
            message_event!(error.is_some(), parent: span, direction = "in",
                kind = "response", method, id = %id, bytes, duration_us,
                error_code = error.map(|e| e.code.0),
                error_message = error.map(|e| e.message.as_str()), "received");
        }

        /// A notification read (whether forwarded as it is or handled).
        pub(crate) fn notification_received(&self, method: &str, bytes: usize) {
            tracing::debug!(target: TARGET, parent: &self.span, direction = "in",
                kind = "notification", method, bytes, "received");
        }

        /// A request read and decoded; returns its span.
        pub(crate) fn request_received(&self, request: &Request, bytes: usize) -> IncomingTrace {
            self.request_received_as(&request.id, &request.method, bytes)
        }

        /// A request read with its params unread, by its id and method; returns its span.
        pub(crate) fn request_received_as(
            &self,
            id: &RequestId,
            method: &str,
            bytes: usize,
        ) -> IncomingTrace {
            let span = tracing::debug_span!(target: TARGET, parent: &self.span, "request",
                direction = "in", method, id = %id);
            tracing::debug!(target: TARGET, parent: &span, direction = "in",
                kind = "request", method, id = %id, bytes, "received");
            IncomingTrace {
                span,
                method: method.into(),
                received: Some(Instant::now()),
            }
        }

        pub(crate) fn received(&self, message: &Message, bytes: usize) -> IncomingTrace {
            match message {
                Message::Request(request) => self.request_received(request, bytes),
                Message::Notification(notification) => {
                    self.notification_received(&notification.method, bytes);
                    IncomingTrace::default()
                }
                Message::Response(response) => {
                    let error = response.result.as_ref().err();
                    self.response_received(&response.id, bytes, error);
                    IncomingTrace::default()
                }
            }
        }

        /// Our request `id` is handed to the outgoing queue (`encoded`: its
        /// line, `\n` included). Its duration counts from here, so it
        /// includes a wait for room in the queue.
        pub(crate) fn request_sent(&self, request: OutgoingTrace, id: i64, encoded: usize) {
            tracing::debug!(target: TARGET, parent: &request.span, direction = "out",
                kind = "request", method = &*request.method, id, bytes = encoded - 1, "sent");
            let waiting = Waiting {
                span: request.span,
                method: request.method,
                sent: Instant::now(),
            };
            lock(&self.waiting).insert(id, waiting);
        }

        /// Our request `id` will get no response: `cancelled` (its future was
        /// dropped and the peer told), or the connection closed first.
        pub(crate) fn request_abandoned(&self, id: i64, cancelled: bool) {
            if let Some(waiting) = lock(&self.waiting).remove(&id) {
                let reason = if cancelled {
                    "cancelled"
                } else {
                    "connection closed"
                };
                tracing::debug!(target: TARGET, parent: &waiting.span,
                    method = &*waiting.method, id, reason, "no response");
            }
        }

        /// A notification of ours was queued (`encoded`: its line, `\n`
        /// included).
        pub(crate) fn notification_sent(&self, method: &str, encoded: usize) {
            tracing::debug!(target: TARGET, parent: &self.span, direction = "out",
                kind = "notification", method, bytes = encoded - 1, "sent");
        }

        /// An error answer the connection decided on itself (a refused or
        /// malformed request).
        pub(crate) fn error_sent(&self, id: &RequestId, encoded: usize, error: &ResponseError) {
            tracing::warn!(target: TARGET, parent: &self.span, direction = "out",
                kind = "response", id = %id, bytes = encoded - 1, error_code = error.code.0,
                error_message = error.message.as_str(), "sent");
        }

        pub(crate) fn problem(&self, problem: &Problem) {
            tracing::warn!(target: TARGET, parent: &self.span, "{problem}");
        }

        pub(crate) fn finished(&self, result: &Result<(), ConnectionError>) {
            match result {
                Ok(()) => tracing::debug!(target: TARGET, parent: &self.span, "closed"),
                Err(error) => {
                    tracing::warn!(target: TARGET, parent: &self.span, %error, "failed")
                }
            }
            // Requests still waiting will not be answered: close their spans.
            lock(&self.waiting).clear();
        }

        /// The span of our request `id` to `method`, opened when the request
        /// is made.
        pub(crate) fn request(&self, id: i64, method: &str) -> OutgoingTrace {
            OutgoingTrace {
                span: tracing::debug_span!(target: TARGET, parent: &self.span, "request",
                    direction = "out", method, id),
                method: method.into(),
            }
        }
    }

    /// Our request, from its creation until it is queued.
    pub(crate) struct OutgoingTrace {
        span: Span,
        method: Box<str>,
    }

    /// A request of the peer: its span, and what the event for our answer
    /// says.
    pub(crate) struct IncomingTrace {
        span: Span,
        method: Box<str>,
        received: Option<Instant>,
    }

    impl Default for IncomingTrace {
        fn default() -> Self {
            IncomingTrace {
                span: Span::none(),
                method: "".into(),
                received: None,
            }
        }
    }

    impl IncomingTrace {
        /// Entered while the request's handler is polled.
        pub(crate) fn enter(&self) -> tracing::span::Entered<'_> {
            self.span.enter()
        }

        /// The handler answered (`encoded`: the response's line, `\n`
        /// included); `queued` is false when the connection was closed and
        /// the answer dropped.
        pub(crate) fn responded(
            &self,
            id: &RequestId,
            encoded: usize,
            error: Option<&ResponseError>,
            queued: bool,
        ) {
            let (method, bytes) = (&*self.method, encoded - 1);
            if !queued {
                tracing::warn!(target: TARGET, parent: &self.span, direction = "out",
                    kind = "response", method, id = %id, bytes,
                    "response dropped: the connection is closed");
                return;
            }
            let duration_us = self.received.map(|r| micros(r.elapsed()));
            message_event!(error.is_some(), parent: &self.span, direction = "out",
                kind = "response", method, id = %id, bytes, duration_us,
                error_code = error.map(|e| e.code.0),
                error_message = error.map(|e| e.message.as_str()), "sent");
        }
    }
}

#[cfg(not(feature = "tracing"))]
mod off {
    use crate::{ConnectionError, Message, Problem, RequestId, ResponseError};

    pub(crate) struct ConnectionTrace;

    /// What `enter` returns: a value rather than `()`, so that the call
    /// sites' `let _entered = ...` holds the span guard with the feature on.
    pub(crate) struct Entered;

    impl ConnectionTrace {
        #[inline(always)]
        pub(crate) fn new() -> Self {
            ConnectionTrace
        }

        #[inline(always)]
        pub(crate) fn enter(&self) -> Entered {
            Entered
        }

        #[inline(always)]
        pub(crate) fn received(&self, _: &Message, _: usize) -> IncomingTrace {
            IncomingTrace
        }

        #[inline(always)]
        pub(crate) fn request_received_as(
            &self,
            _: &RequestId,
            _: &str,
            _: usize,
        ) -> IncomingTrace {
            IncomingTrace
        }

        #[inline(always)]
        pub(crate) fn response_received(&self, _: &RequestId, _: usize, _: Option<&ResponseError>) {
        }

        #[inline(always)]
        pub(crate) fn notification_received(&self, _: &str, _: usize) {}

        #[inline(always)]
        pub(crate) fn request_sent(&self, _: OutgoingTrace, _: i64, _: usize) {}

        #[inline(always)]
        pub(crate) fn request_abandoned(&self, _: i64, _: bool) {}

        #[inline(always)]
        pub(crate) fn notification_sent(&self, _: &str, _: usize) {}

        #[inline(always)]
        pub(crate) fn error_sent(&self, _: &RequestId, _: usize, _: &ResponseError) {}

        #[inline(always)]
        pub(crate) fn problem(&self, _: &Problem) {}

        #[inline(always)]
        pub(crate) fn finished(&self, _: &Result<(), ConnectionError>) {}

        #[inline(always)]
        pub(crate) fn request(&self, _: i64, _: &str) -> OutgoingTrace {
            OutgoingTrace
        }
    }

    pub(crate) struct OutgoingTrace;

    #[derive(Default)]
    pub(crate) struct IncomingTrace;

    impl IncomingTrace {
        #[inline(always)]
        pub(crate) fn enter(&self) -> Entered {
            Entered
        }

        #[inline(always)]
        pub(crate) fn responded(
            &self,
            _: &RequestId,
            _: usize,
            _: Option<&ResponseError>,
            _: bool,
        ) {
        }
    }
}
