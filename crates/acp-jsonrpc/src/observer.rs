//! Watching a connection's traffic and the problems it ran into.

use std::fmt;

use crate::{DecodeError, RequestId, Response};

/// Sees every line a connection reads and writes, and every problem it
/// recovers from: for tracing, logging and transcripts.
///
/// All methods default to doing nothing. A connection without an observer
/// pays one branch per message for this feature.
///
/// The methods are called from inside the connection's driver future (for
/// [`problem`](Self::problem), sometimes from a handle), so they should be
/// quick: hand the data to a channel or a logger rather than doing I/O.
pub trait Observer: Send + Sync + 'static {
    /// A non-blank line was read from the peer (without its line ending),
    /// before it is decoded. Not guaranteed to be UTF-8.
    fn incoming(&self, line: &[u8]) {
        let _ = line;
    }

    /// A message is about to be written to the peer (one line of JSON,
    /// always UTF-8, without its `\n`).
    fn outgoing(&self, line: &[u8]) {
        let _ = line;
    }

    /// Something went wrong and the connection carried on.
    fn problem(&self, problem: &Problem) {
        let _ = problem;
    }
}

/// Something that went wrong without stopping the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A line was not a valid message. The error says whether, and with
    /// what, the peer was answered.
    Malformed(DecodeError),
    /// A line began with a UTF-8 byte-order mark (U+FEFF), which JSON text
    /// sent over a network must not (RFC 8259, section 8.1). The mark was
    /// skipped and the rest of the line handled as if it were absent (see
    /// [`strip_byte_order_mark`](crate::strip_byte_order_mark)).
    ByteOrderMark,
    /// A line longer than the maximum was skipped. Nothing is answered: its
    /// id, if any, was never read.
    LineTooLong {
        /// Its length in bytes.
        length: usize,
    },
    /// A response arrived for an id with no pending request: already
    /// answered, cancelled, timed out, never sent — or `null`, which is how
    /// a peer reports that it could not read one of our messages.
    UnknownResponse(Response),
    /// A request arrived with id `null` on a connection that refuses them
    /// ([`ConnectionOptions::with_null_request_ids_refused`](crate::ConnectionOptions::with_null_request_ids_refused));
    /// it was answered `-32600` and never reached the handler.
    NullRequestId {
        /// The refused request's method.
        method: String,
    },
    /// A request arrived with the id of a request of the peer that is still
    /// being handled; it was refused with `-32600`.
    DuplicateRequestId(RequestId),
    /// A request arrived while `limit` of the peer's requests were already
    /// in flight; it was answered at once with
    /// [`ResponseError::too_many_requests`](crate::ResponseError::too_many_requests)
    /// and never reached the handler.
    TooManyRequests {
        /// The refused request's id.
        id: RequestId,
        /// The limit ([`ConnectionOptions::with_max_in_flight_requests`](crate::ConnectionOptions::with_max_in_flight_requests)).
        limit: usize,
    },
    /// A request did not fit in what was left of an in-flight byte budget; it was answered
    /// at once with
    /// [`ResponseError::too_many_request_bytes`](crate::ResponseError::too_many_request_bytes)
    /// and never reached the handler.
    InFlightBudgetExceeded {
        /// The refused request's id.
        id: RequestId,
        /// Its size on the wire.
        bytes: usize,
        /// The size of the budget that had no room for it.
        limit: usize,
        /// Which budget that was.
        scope: crate::BudgetScope,
    },
    /// A request handler panicked; the request was answered with `-32603`.
    RequestHandlerPanicked {
        /// The request's id.
        id: RequestId,
        /// The panic message, when it was a string.
        message: String,
    },
    /// A notification handler panicked.
    NotificationHandlerPanicked {
        /// The notification's method.
        method: String,
        /// The panic message, when it was a string.
        message: String,
    },
    /// A notification was not handled: unknown method, or params that did
    /// not decode. Reported by handlers through
    /// [`IncomingNotification::report_unhandled`](crate::IncomingNotification::report_unhandled).
    UnhandledNotification {
        /// The notification's method.
        method: String,
        /// Why it was not handled.
        reason: String,
    },
    /// A `$/cancel_request` notification whose params did not say which
    /// request to cancel.
    InvalidCancelRequest(String),
    /// The peer sent something a rule of the protocol forbids (an update kind the receiver did
    /// not opt into, say). It was handled all the same: lenient in what we accept; this
    /// tells whoever debugs the peer. Reported by the layer that knows the rule.
    PeerBrokeRule {
        /// The method of the offending message.
        method: String,
        /// Which rule, and how it was broken.
        rule: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Malformed(error) => write!(f, "malformed message: {error}"),
            Problem::ByteOrderMark => {
                f.write_str("skipped a byte-order mark (U+FEFF) at the start of a line")
            }
            Problem::LineTooLong { length } => {
                write!(
                    f,
                    "skipped a line of {length} bytes: longer than the maximum"
                )
            }
            Problem::UnknownResponse(response) => {
                write!(f, "response with unknown id {}", response.id)?;
                if let Err(error) = &response.result {
                    write!(f, ": {error}")?;
                }
                Ok(())
            }
            Problem::NullRequestId { method } => {
                write!(f, "refused a `{method}` request: its id is null")
            }
            Problem::DuplicateRequestId(id) => {
                write!(
                    f,
                    "refused request {id}: a request with that id is in flight"
                )
            }
            Problem::TooManyRequests { id, limit } => {
                write!(
                    f,
                    "refused request {id}: {limit} requests are already in flight"
                )
            }
            Problem::InFlightBudgetExceeded {
                id,
                bytes,
                limit,
                scope,
            } => {
                write!(
                    f,
                    "refused request {id} of {bytes} bytes: the requests in flight would hold more than the {} budget of {limit} bytes",
                    scope.as_str()
                )
            }
            Problem::RequestHandlerPanicked { id, message } => {
                write!(f, "handler of request {id} panicked: {message}")
            }
            Problem::NotificationHandlerPanicked { method, message } => {
                write!(f, "handler of notification {method:?} panicked: {message}")
            }
            Problem::UnhandledNotification { method, reason } => {
                write!(f, "notification {method:?} not handled: {reason}")
            }
            Problem::InvalidCancelRequest(detail) => {
                write!(f, "invalid $/cancel_request: {detail}")
            }
            Problem::PeerBrokeRule { method, rule } => {
                write!(f, "{method:?} breaks a rule of the protocol: {rule}")
            }
        }
    }
}

/// Doing nothing through an `Option<Arc<dyn Observer>>` is one branch.
pub(crate) type SharedObserver = Option<std::sync::Arc<dyn Observer>>;
