//! The runtime's error type: what a call to the peer, or a handler, can fail with.

use acp_jsonrpc::{ConnectionError, ErrorCode, RequestError, ResponseError};

/// ACP's own error codes, next to JSON-RPC's.
pub mod codes {
    use acp_jsonrpc::ErrorCode;
    /// Authentication is required before this operation (`-32000`).
    pub const AUTH_REQUIRED: ErrorCode = ErrorCode(-32000);
    /// A resource, such as a session or a file, was not found (`-32002`).
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// The request was cancelled (`-32800`).
    pub const REQUEST_CANCELLED: ErrorCode = ErrorCode(-32800);
}

/// Why a call failed, on either side of a connection.
///
/// Handlers return it too: [`Error::Rpc`] goes to the peer as it is; the other variants become
/// `-32603 Internal error` with their message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The peer answered with a JSON-RPC error (or a handler wants to send one).
    #[error("{0}")]
    Rpc(ResponseError),
    /// The call needs a capability the peer did not advertise; nothing was sent.
    #[error("`{method}` needs the peer's `{capability}` capability, which it did not advertise")]
    NotAdvertised {
        /// The method that was refused.
        method: String,
        /// The capability it needs, as named in the protocol.
        capability: &'static str,
    },
    /// A call other than `initialize` before `initialize` completed; nothing was sent.
    #[error("`{0}` was called before `initialize` completed")]
    NotInitialized(String),
    /// The agent answered `initialize` with a protocol version this runtime does not speak.
    /// The connection is closed.
    #[error("the agent speaks protocol version {offered}, this client speaks {supported:?}")]
    UnsupportedProtocolVersion {
        /// What the agent answered.
        offered: u16,
        /// What this runtime speaks.
        supported: &'static [u16],
    },
    /// The arguments break a rule of the protocol (relative `cwd`, second prompt in flight,
    /// unknown mode...); nothing was sent.
    #[error("{0}")]
    Invalid(String),
    /// The connection closed before an answer came.
    #[error("the connection is closed")]
    ConnectionClosed,
    /// The agent process exited; pending calls fail with this.
    ///
    /// ```no_run
    /// use acp_runtime::prelude::*;
    ///
    /// # fn report(error: Error) {
    /// if let Error::AgentExited { status, stderr_tail } = &error {
    ///     match (status.code, &status.signal) {
    ///         (Some(code), _) => eprintln!("the agent exited with code {code}"),
    ///         (None, Some(signal)) => eprintln!("the agent was killed by {signal}"),
    ///         (None, None) => eprintln!("the agent is gone"),
    ///     }
    ///     eprintln!("{stderr_tail}");
    /// }
    /// # }
    /// ```
    #[error("the agent exited ({status}); last stderr lines:\n{stderr_tail}")]
    AgentExited {
        /// How it ended: its exit code, or the signal that killed it.
        status: crate::process::ExitStatus,
        /// The end of what it wrote to stderr.
        stderr_tail: String,
    },
    /// Updates for a session were dropped because they arrived while its buffer was full:
    /// the application took them more slowly than the agent sent them. Met in the session's
    /// stream of updates where the dropped ones would have been; the updates around it are
    /// whole and in order. The connection and the other sessions were not held up.
    #[error(
        "{updates} updates ({bytes} bytes) for session `{session_id}` were dropped: its buffer of {budget} bytes was full (take updates sooner, or raise `ClientOptions::with_session_update_budget`)"
    )]
    UpdatesDropped {
        /// The session.
        session_id: String,
        /// How many updates were dropped in a row.
        updates: u64,
        /// What they would have held, in bytes.
        bytes: u64,
        /// The session's budget.
        budget: usize,
    },
    /// An update for a session that does not decode (a `null` where a number belongs, a field
    /// a newer agent shapes differently...). It is kept in the session's stream, in order,
    /// with the JSON as the agent sent it, so that nothing the agent said vanishes.
    #[error(
        "an update for session `{}` does not decode ({}): {}",
        acp_jsonrpc::excerpt(session_id),
        acp_jsonrpc::excerpt(error),
        acp_jsonrpc::excerpt(update.get())
    )]
    InvalidUpdate {
        /// The session.
        session_id: String,
        /// The `update` member as sent.
        update: Box<serde_json::value::RawValue>,
        /// Why it does not decode.
        error: String,
    },
    /// A subagent announced on session `session_id` (a `subagent_update`) that this client
    /// does not follow, because it follows
    /// [`ClientOptions::with_max_subagents`](crate::client::ClientOptions::with_max_subagents)
    /// already: it stands in the session's stream right after the announcement, and again
    /// where the subagent's updates were dropped (`updates` of them, `bytes` in all, since the
    /// last such entry).
    #[error(
        "subagent `{}` of session `{}` is not followed ({limit} subagents are followed already; raise `ClientOptions::with_max_subagents`){}",
        acp_jsonrpc::excerpt(subagent),
        acp_jsonrpc::excerpt(session_id),
        dropped_here(*updates, *bytes)
    )]
    SubagentNotFollowed {
        /// The session the subagent was announced on.
        session_id: String,
        /// The subagent's session id.
        subagent: String,
        /// How many subagents a connection follows at once.
        limit: usize,
        /// How many of its updates were dropped (0 where the announcement is told).
        updates: u64,
        /// What they would have held, in bytes.
        bytes: u64,
    },
    /// The call did not complete in time (and was cancelled at the peer).
    #[error("the call timed out")]
    TimedOut,
    /// The answer did not decode into the expected type.
    #[error("the answer does not decode: {0}")]
    Decode(#[source] serde_json::Error),
    /// Reading from or writing to the peer failed: what a connection's driver ends with.
    #[error(transparent)]
    Io(#[from] ConnectionError),
    /// The connection to the agent could not be opened (a transport beside stdio: the
    /// network, a URL, a server that refused). The source is the transport's own error, for
    /// example `acp_remote::ConnectError`, which converts into this variant.
    #[error("could not connect: {0}")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Something else went wrong locally.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// A JSON-RPC error with the given code and message.
    pub fn rpc(code: ErrorCode, message: impl Into<String>) -> Self {
        Error::Rpc(ResponseError::new(code, message))
    }

    /// `-32602 Invalid params`.
    pub fn invalid_params(detail: impl std::fmt::Display) -> Self {
        Error::rpc(ErrorCode::INVALID_PARAMS, detail.to_string())
    }

    /// `-32600 Invalid request`.
    pub fn invalid_request(detail: impl std::fmt::Display) -> Self {
        Error::rpc(ErrorCode::INVALID_REQUEST, detail.to_string())
    }

    /// `-32603 Internal error`.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Error::rpc(ErrorCode::INTERNAL_ERROR, detail.to_string())
    }

    /// `-32601 Method not found`.
    pub fn method_not_found(method: &str) -> Self {
        Error::Rpc(ResponseError::method_not_found(method))
    }

    /// `-32000 Authentication required`.
    pub fn auth_required() -> Self {
        Error::rpc(codes::AUTH_REQUIRED, "Authentication required")
    }

    /// `-32002 Resource not found`, naming the resource in `data`.
    pub fn resource_not_found(what: impl std::fmt::Display, resource: &str) -> Self {
        Error::Rpc(
            ResponseError::new(
                codes::RESOURCE_NOT_FOUND,
                format!("Resource not found: {what}"),
            )
            .with_data(&serde_json::json!({ "uri": resource })),
        )
    }

    /// The JSON-RPC error code, when the peer answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Rpc(error) => Some(error.code),
            _ => None,
        }
    }

    /// Whether the peer asks for `authenticate` first (`-32000`).
    pub fn is_auth_required(&self) -> bool {
        self.code() == Some(codes::AUTH_REQUIRED)
    }

    /// Whether the call was cancelled (`-32800`): the peer answered so to our
    /// `$/cancel_request`, or, on the agent side, the prompt turn the call belonged to was
    /// cancelled before the answer came (see [`Turn`](crate::agent::Turn)).
    pub fn is_cancelled(&self) -> bool {
        self.code() == Some(codes::REQUEST_CANCELLED)
    }

    /// The error to send to the peer for this failure.
    pub fn to_response(&self) -> ResponseError {
        match self {
            Error::Rpc(error) => error.clone(),
            Error::Invalid(message) => ResponseError::new(ErrorCode::INVALID_PARAMS, message),
            other => ResponseError::new(ErrorCode::INTERNAL_ERROR, other.to_string()),
        }
    }
}

impl From<ResponseError> for Error {
    fn from(error: ResponseError) -> Self {
        Error::Rpc(error)
    }
}

impl From<RequestError> for Error {
    fn from(error: RequestError) -> Self {
        match error {
            RequestError::Response(error) => Error::Rpc(error),
            RequestError::ConnectionClosed => Error::ConnectionClosed,
            RequestError::TimedOut => Error::TimedOut,
            RequestError::Decode(error) => Error::Decode(error),
            RequestError::Encode(error) => {
                Error::Internal(format!("params do not encode: {error}"))
            }
            RequestError::MalformedResponse(detail) => {
                Error::Internal(format!("malformed response: {detail}"))
            }
            other => Error::Internal(other.to_string()),
        }
    }
}

/// The runtime's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The tail of [`Error::SubagentNotFollowed`]'s message: what was dropped where it stands.
fn dropped_here(updates: u64, bytes: u64) -> String {
    match updates {
        0 => String::new(),
        n => format!(": {n} of its updates ({bytes} bytes) dropped here"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_update_shows_an_excerpt_of_its_json() {
        let long = format!(r#"{{"sessionUpdate":"x","text":"{}"}}"#, "é".repeat(10_000));
        let error = Error::InvalidUpdate {
            session_id: "s".into(),
            update: serde_json::value::RawValue::from_string(long.clone()).unwrap(),
            error: "bad".into(),
        };
        let message = error.to_string();
        assert!(message.starts_with(
            r#"an update for session `s` does not decode (bad): {"sessionUpdate":"x""#
        ));
        assert!(
            message.ends_with(&format!("… ({} bytes)", long.len())),
            "{message}"
        );
        assert!(message.len() < 600);
    }
}
