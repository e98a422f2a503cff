//! How a connection behaves: its limits and byte budgets (docs/limits.md) and its observer.

use std::fmt;
use std::sync::Arc;

use crate::Observer;
use crate::budget::{ByteBudget, DEFAULT_IN_FLIGHT_BUDGET};
use crate::line_reader::DEFAULT_MAX_LINE_LENGTH;
use crate::observer::SharedObserver;

/// How a [`Connection`](crate::Connection) behaves. `ConnectionOptions::default()` is a good
/// start.
#[derive(Clone)]
pub struct ConnectionOptions {
    pub(crate) max_line_length: usize,
    pub(crate) outgoing_capacity: usize,
    pub(crate) max_in_flight_requests: usize,
    pub(crate) reply_budget: usize,
    pub(crate) in_flight_budget: usize,
    pub(crate) shared_in_flight_budget: Option<ByteBudget>,
    pub(crate) shared_reply_budget: Option<ByteBudget>,
    pub(crate) observer: SharedObserver,
    pub(crate) refuse_null_ids: bool,
}

/// The default of [`ConnectionOptions::with_reply_budget`]: 32 MiB.
pub const DEFAULT_REPLY_BUDGET: usize = 32 * 1024 * 1024;

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            max_line_length: DEFAULT_MAX_LINE_LENGTH,
            outgoing_capacity: 1024,
            max_in_flight_requests: 256,
            reply_budget: DEFAULT_REPLY_BUDGET,
            in_flight_budget: DEFAULT_IN_FLIGHT_BUDGET,
            shared_in_flight_budget: None,
            shared_reply_budget: None,
            observer: None,
            refuse_null_ids: false,
        }
    }
}

impl ConnectionOptions {
    /// The maximum line length ([`with_max_line_length`](Self::with_max_line_length)), for a
    /// reader that reads a connection's first lines before handing it over.
    pub fn max_line_length(&self) -> usize {
        self.max_line_length
    }

    /// Whether a request whose id is `null` is refused: answered `-32600` (with id `null`),
    /// reported as [`Problem::NullRequestId`](crate::Problem::NullRequestId), never handled.
    /// JSON-RPC 2.0 discourages `null` ids; ACP v2 forbids them, v1 does not. Default: off
    /// (such a request is handled, and answered with id `null`).
    pub fn with_null_request_ids_refused(mut self, refused: bool) -> Self {
        self.refuse_null_ids = refused;
        self
    }

    /// Lines longer than this many bytes are skipped and reported as
    /// [`Problem::LineTooLong`](crate::Problem::LineTooLong). Default: 64 MiB.
    pub fn with_max_line_length(mut self, bytes: usize) -> Self {
        self.max_line_length = bytes;
        self
    }

    /// How many requests and notifications may wait for the writer before
    /// [`ConnectionHandle::notify`](crate::ConnectionHandle::notify) and [`ConnectionHandle::request`](crate::ConnectionHandle::request) wait
    /// for room. Default: 1024. Counted for messages of up to 256 bytes:
    /// larger ones take their size out of the same budget (1024 × 256 bytes
    /// = 256 KiB by default), so large messages cannot pile up either. A
    /// message larger than the whole budget is queued alone. (Responses are
    /// bounded separately, by [`with_reply_budget`](Self::with_reply_budget).)
    pub fn with_outgoing_capacity(mut self, messages: usize) -> Self {
        self.outgoing_capacity = messages.max(1);
        self
    }

    /// How many of the peer's requests may be in flight: not yet answered,
    /// or with their handler still running. Default: 256.
    ///
    /// A request arriving at the limit is answered at once with
    /// [`ResponseError::too_many_requests`](crate::ResponseError::too_many_requests)
    /// (`-32603`, data `{"maxInFlightRequests": limit}`), reported as
    /// [`Problem::TooManyRequests`](crate::Problem::TooManyRequests), and reading goes on: the responses,
    /// notifications and `$/cancel_request`s that let the running handlers
    /// finish must still get through. (Before, reaching the limit paused
    /// reading instead.)
    pub fn with_max_in_flight_requests(mut self, requests: usize) -> Self {
        self.max_in_flight_requests = requests.max(1);
        self
    }

    /// How many bytes of our responses may wait for the writer before the
    /// connection stops reading the peer's input. Default:
    /// [`DEFAULT_REPLY_BUDGET`] (32 MiB).
    ///
    /// A response is never refused (a [`Responder`](crate::Responder)
    /// answers without waiting), so the budget is kept in two ways: while the
    /// queued responses exceed it, the peer is evidently not reading our
    /// answers and the driver reads no more of its messages (taking more
    /// requests would only grow memory); and handlers that produce large
    /// answers wait for room first with
    /// [`Responder::reserve`](crate::Responder::reserve). The connection's
    /// own error answers count too.
    pub fn with_reply_budget(mut self, bytes: usize) -> Self {
        self.reply_budget = bytes;
        self
    }

    /// How many bytes the peer's requests in flight may hold together, counted at their
    /// size on the wire from when they are read until their handler has finished and they
    /// are answered. Default: [`DEFAULT_IN_FLIGHT_BUDGET`] (64 MiB).
    ///
    /// The count limit ([`with_max_in_flight_requests`](Self::with_max_in_flight_requests))
    /// alone let requests that wait (a permission the user has not answered, a
    /// `terminal/wait_for_exit`) hold 256 lines of up to 64 MiB each. A request that does not
    /// fit is answered at once with
    /// [`ResponseError::too_many_request_bytes`](crate::ResponseError::too_many_request_bytes)
    /// (`-32603`), reported as [`Problem::InFlightBudgetExceeded`](crate::Problem::InFlightBudgetExceeded), and reading goes on, as
    /// for the count limit. One request larger than the whole budget is still taken while no
    /// other request is in flight.
    pub fn with_in_flight_budget(mut self, bytes: usize) -> Self {
        self.in_flight_budget = bytes;
        self
    }

    /// Makes the peer's requests in flight draw from `budget` too, besides this connection's
    /// own budget: give the same [`ByteBudget`] to several connections (a server's, one per
    /// client) to bound what all of them hold together. A request that does not fit in it is
    /// refused like one that does not fit in the connection's own, with `"scope": "shared"`
    /// in the error's data.
    pub fn with_shared_in_flight_budget(mut self, budget: ByteBudget) -> Self {
        self.shared_in_flight_budget = Some(budget);
        self
    }

    /// Makes the responses waiting for the writer draw from `budget` too, besides this
    /// connection's own reply budget ([`with_reply_budget`](Self::with_reply_budget)): give
    /// the same [`ByteBudget`] to several connections (a server's, one per client) to bound
    /// what all of them queue for peers that do not read. A response is still never refused:
    /// one that does not fit in the shared budget (under its reserve's rule, see
    /// [`ByteBudget::with_reserve`], for a connection that then queues that much) is queued
    /// beside it, and the driver reads nothing more from the peer until the writer has taken
    /// every such response, so that a connection over its share only waits on its own peer.
    ///
    /// ```
    /// use acp_jsonrpc::{ByteBudget, ConnectionOptions};
    ///
    /// let server = ByteBudget::new(256 << 20);
    /// let options = ConnectionOptions::default()
    ///     .with_shared_in_flight_budget(server.clone())
    ///     .with_shared_reply_budget(server);
    /// # let _ = options;
    /// ```
    pub fn with_shared_reply_budget(mut self, budget: ByteBudget) -> Self {
        self.shared_reply_budget = Some(budget);
        self
    }

    /// Lets `observer` see every line read and written and every problem.
    pub fn with_observer(self, observer: impl Observer) -> Self {
        self.with_shared_observer(Arc::new(observer))
    }

    /// Like [`with_observer`](Self::with_observer), for an observer that is
    /// already shared.
    pub fn with_shared_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }
}

impl fmt::Debug for ConnectionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionOptions")
            .field("max_line_length", &self.max_line_length)
            .field("outgoing_capacity", &self.outgoing_capacity)
            .field("max_in_flight_requests", &self.max_in_flight_requests)
            .field("reply_budget", &self.reply_budget)
            .field("in_flight_budget", &self.in_flight_budget)
            .field("shared_in_flight_budget", &self.shared_in_flight_budget)
            .field("shared_reply_budget", &self.shared_reply_budget)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}
