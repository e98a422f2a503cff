//! JSON-RPC 2.0 over newline-delimited streams, as the Agent Client
//! Protocol uses it: one UTF-8 JSON object per `\n`-terminated line, with
//! both sides sending requests and notifications.
//!
//! This crate knows nothing about ACP's messages and depends on no async
//! runtime. It is built to never lose, reorder or stall a message:
//!
//! - **Nothing is lost.** The [`LineReader`] keeps a partly read line in
//!   itself, not in a future, so racing a read against anything else never
//!   drops bytes. Malformed input is answered as JSON-RPC prescribes and
//!   reported to an [`Observer`], never fatal.
//! - **Nothing is reordered.** Notifications are handled one at a time in
//!   arrival order, and each finishes before any later message is read —
//!   so an update sent before a response is processed before the request
//!   awaiting that response returns. Everything we send goes through one
//!   queue, in order.
//! - **Nothing stalls or grows without bound.** Incoming requests run
//!   concurrently; queues are bounded in bytes, so a slow peer slows the
//!   sender down instead of filling memory, and the limits never stop the
//!   connection from reading the messages that would lift them; writes are
//!   batched and flushed when the queue runs empty. See
//!   [Resource limits](#resource-limits).
//!
//! # Using it
//!
//! [`Connection::new`] takes a reader, a writer and a [`Handler`], and
//! returns a [`ConnectionHandle`] to send with plus the *driver*: one future
//! that reads, writes and runs every handler inside itself. Poll it on the
//! executor of your choice — nothing is spawned and no thread is started.
//!
//! ```
//! use acp_jsonrpc::{
//!     Connection, ConnectionOptions, Handler, IncomingRequest, Responder, memory,
//! };
//!
//! struct Calculator;
//!
//! impl Handler for Calculator {
//!     async fn request(&self, request: IncomingRequest, responder: Responder) {
//!         match request.method() {
//!             "add" => responder.respond(request.params::<[i64; 2]>().map(|[a, b]| a + b)),
//!             _ => responder.respond_error(request.method_not_found()),
//!         }
//!     }
//! }
//!
//! // Two peers joined by an in-memory pipe; over stdio, pass the process's
//! // stdin (buffered) and stdout instead.
//! let (client_end, agent_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
//! let (client, client_driver) =
//!     Connection::new(client_end.reader, client_end.writer, (), ConnectionOptions::default());
//! let (_agent, agent_driver) = Connection::new(
//!     agent_end.reader,
//!     agent_end.writer,
//!     Calculator,
//!     ConnectionOptions::default(),
//! );
//!
//! smol::block_on(async {
//!     let drivers = smol::future::zip(client_driver, agent_driver);
//!     let calls = async {
//!         let sum: i64 = client.request("add", &[2, 3]).await?;
//!         assert_eq!(sum, 5);
//!         client.close(); // the agent sees end of input and stops too
//!         Ok::<_, acp_jsonrpc::RequestError>(())
//!     };
//!     let ((client_result, agent_result), calls_result) = smol::future::zip(drivers, calls).await;
//!     client_result.unwrap();
//!     agent_result.unwrap();
//!     calls_result.unwrap();
//! });
//! ```
//!
//! # Handlers
//!
//! A [`Handler`] answers requests through a [`Responder`] (exactly one
//! response per request, even when the handler panics or forgets) and
//! handles notifications in order. A handler whose futures are not `Send`
//! implements [`LocalHandler`] and is run with [`Connection::new_local`].
//! The handler reaches the peer through
//! [`IncomingRequest::connection`]. Every handler is first polled in the
//! order its message arrived (a request's before a later notification's),
//! so what a router does before its first await happens in arrival order;
//! [`ConnectionHandle::send_request_raw`] lets it queue a request before
//! the next message is handled, and [`ConnectionHandle::send_request_forwarded`]
//! does the same for a request whose answer it forwards unread
//! ([`ForwardedResult`], [`Responder::respond_forwarded`]).
//!
//! What the connection answers by itself:
//!
//! | situation | answer |
//! |---|---|
//! | line is not valid JSON (but starts with `{`), or not UTF-8 | `-32700`, id `null`; but a line that starts `{"jsonrpc":"2.0","id":N,"result":` (or `"error":`) is a malformed response: nothing, and our request `N` fails with [`RequestError::MalformedResponse`] |
//! | a batch (array), a non-object, a malformed request | `-32600`, with the request's id when it could be read |
//! | a request whose id is already in flight | `-32600` |
//! | a request beyond the in-flight limit | `-32603` [`ResponseError::too_many_requests`], data `{"maxInFlightRequests": N}` |
//! | a request beyond the in-flight byte budget | `-32603` [`ResponseError::too_many_request_bytes`], data `{"maxInFlightBytes": N, "requestBytes": M, "scope": "connection"}` |
//! | a handler panicked or dropped its responder | `-32603` |
//! | a handler was cancelled by `$/cancel_request` | `-32800` |
//! | a line that is not JSON at all (a stray log line) | nothing; reported |
//! | a line longer than the maximum | nothing (no id could be read); skipped and reported |
//! | any notification, even unknown or malformed | nothing, ever |
//! | any response (`result` or `error`, no `method`), even malformed | nothing, ever; reported |
//! | an object with neither `method` nor `result`/`error` | `-32600`, id `null`, if it has a string or number id; else nothing |
//! | a line starting with a byte-order mark | the mark is skipped ([`strip_byte_order_mark`]) and reported |
//!
//! Handlers produce `-32601` ([`IncomingRequest::method_not_found`]) and
//! `-32602` ([`IncomingRequest::params`] returns it ready-made).
//!
//! # Requests, timeouts and cancellation
//!
//! [`ConnectionHandle::request`] returns a [`RequestFuture`] that decodes
//! the result into the caller's type. Dropping it after the request went
//! out sends `$/cancel_request` to the peer; so a timeout is just a race
//! against any timer, which [`RequestFuture::with_timeout`] packages.
//! An incoming `$/cancel_request` is handled by the connection itself (the
//! handler never sees it): it drops the matching handler's future, and the
//! responder inside answers `-32800`.
//!
//! # Resource limits
//!
//! | bound | default | when it is reached |
//! |---|---|---|
//! | line length, [`ConnectionOptions::with_max_line_length`] | 64 MiB | the line is skipped (nothing answered: its id was never read) and reported as [`Problem::LineTooLong`] |
//! | the peer's requests in flight (unanswered, or handler still running), [`ConnectionOptions::with_max_in_flight_requests`] | 256 | a further request is answered at once with `-32603` [`ResponseError::too_many_requests`] and reported as [`Problem::TooManyRequests`]; reading goes on |
//! | the bytes those requests hold (their size on the wire), [`ConnectionOptions::with_in_flight_budget`], and optionally a [`ByteBudget`] shared with other connections, [`ConnectionOptions::with_shared_in_flight_budget`] | 64 MiB | a further request is answered at once with `-32603` [`ResponseError::too_many_request_bytes`] and reported as [`Problem::InFlightBudgetExceeded`]; reading goes on. One request larger than the budget passes while nothing else is in flight |
//! | notifications being handled | 1 | reading waits for the handler: that is the ordering guarantee |
//! | our requests and notifications waiting for the writer, [`ConnectionOptions::with_outgoing_capacity`] | 1024 × 256 B = 256 KiB | [`ConnectionHandle::notify`] and [`ConnectionHandle::request`] wait for room; a message larger than the whole budget goes out alone |
//! | our responses waiting for the writer, [`ConnectionOptions::with_reply_budget`], and optionally a [`ByteBudget`] shared with other connections, [`ConnectionOptions::with_shared_reply_budget`] | 32 MiB | the driver reads nothing more from the peer until the writer catches up (or has taken every response the shared budget had no room for); [`Responder::reserve`] waits for room. A response itself is never refused |
//!
//! So everything queued for the peer is bounded in bytes: requests and
//! notifications by the outgoing budget (senders wait), responses by the
//! reply budget (the reader pauses, reservers wait), and
//! `$/cancel_request`s, which cannot wait (they are sent from destructors),
//! by the requests they cancel. The writer holds one more batch: up to
//! 64 KiB of small messages, or one large message. Responses go over the
//! budget by at most one response when large ones are reserved for; the
//! handlers already running when the reader paused can still add theirs
//! unreserved, so a handler that may answer megabytes should reserve.
//!
//! The one thing that stops reading besides a running notification handler
//! is a peer that does not read our answers. Two peers that both stop
//! reading because each has more than its reply budget queued for the other
//! wait for each other forever; a large enough budget makes that a matter
//! of misbehaving peers only.
//!
//! # Shutdown
//!
//! | event | effect |
//! |---|---|
//! | [`ConnectionHandle::close`] | sending fails from then on, pending requests fail with [`RequestError::ConnectionClosed`], running handlers are dropped, what was already queued is written and flushed, the writer is closed, and the driver returns `Ok(())` |
//! | the peer closes its side (end of input) | pending requests fail with `ConnectionClosed` at once (no answer can come), new requests fail too; running request handlers finish and their responses and queued messages are written; then as for `close` |
//! | the driver future is dropped | everything stops at once: nothing more is written, pending requests fail with `ConnectionClosed`, handlers are dropped |
//! | every [`ConnectionHandle`] is dropped | nothing: the connection keeps serving the peer |
//! | an I/O error | the driver returns it; otherwise as for dropping |
//!
//! # Executors
//!
//! The driver is an ordinary future: `smol::spawn(driver)`,
//! `futures_lite::future::block_on(driver)`, or any other executor. With
//! tokio, whose I/O types implement tokio's own `AsyncRead`/`AsyncWrite`,
//! convert them with the `tokio-util` crate's `compat` feature:
//!
//! ```text
//! use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
//!
//! let reader = futures_lite::io::BufReader::new(tokio::io::stdin().compat());
//! let writer = tokio::io::stdout().compat_write();
//! let (handle, driver) = Connection::new(reader, writer, handler, ConnectionOptions::default());
//! tokio::spawn(driver);
//! ```
//!
//! # Observing
//!
//! [`ConnectionOptions::with_observer`] installs an [`Observer`] that sees
//! every line in and out and every [`Problem`]; without one, the hooks cost
//! a branch per message.
//!
//! # Tracing
//!
//! With the `tracing` cargo feature (off by default), connections report to
//! the [`tracing`](https://docs.rs/tracing) crate, target `acp_jsonrpc`:
//!
//! | what | level | fields |
//! |---|---|---|
//! | span `connection`, one per connection, entered while its driver is polled | `INFO` | `connection` (a number, to tell connections apart) |
//! | span `request`, one per request either way; a handler runs inside the span of its request | `DEBUG` | `direction` (`in`: the peer's, `out`: ours), `method`, `id` |
//! | event `received` / `sent`, one per message: a request's and its response's in the request's span, a notification's in the connection's | `DEBUG` | `direction`, `kind` (`request`, `notification`, `response`), `method` (a response's is its request's), `id`, `bytes` (the line, without `\n`), `duration_us` (responses: since the request was received, or queued by us) |
//! | the same for a response carrying an error | `WARN` | also `error_code`, `error_message` |
//! | event `no response`: our request was cancelled, or the connection closed first | `DEBUG` | `method`, `id`, `reason` |
//! | every [`Problem`] (malformed, refused or unanswered messages, panics), a response dropped because the connection closed, a connection that failed | `WARN` | the problem as the message |
//! | event `closed` | `DEBUG` | |
//!
//! An outgoing message's event comes when it is handed to the outgoing
//! queue. Without the feature none of this is compiled: no dependency, no
//! field, no branch. Any subscriber shows it; with `tracing-subscriber`:
//!
//! ```text
//! tracing_subscriber::fmt().with_max_level(tracing::Level::DEBUG).init();
//! ```
//!
//! gives, for one call (`cargo run -p acp-rs-jsonrpc --features tracing
//! --example tracing`):
//!
//! ```text
//! DEBUG connection{connection=1}:request{direction="out" method="add" id=0}: acp_jsonrpc: sent direction="out" kind="request" method="add" id=0 bytes=54
//! DEBUG connection{connection=2}:request{direction="in" method="add" id=0}: acp_jsonrpc: received direction="in" kind="request" method="add" id=0 bytes=54
//! DEBUG connection{connection=2}:request{direction="in" method="add" id=0}: acp_jsonrpc: sent direction="out" kind="response" method="add" id=0 bytes=35 duration_us=17
//! DEBUG connection{connection=1}:request{direction="out" method="add" id=0}: acp_jsonrpc: received direction="in" kind="response" method="add" id=0 bytes=35 duration_us=338
//! ```

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod budget;
mod connect;
mod connection;
mod driver;
mod error;
mod forwarded;
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod handoff;
mod id;
mod id_map;
pub mod json;
mod latch;
mod line_reader;
pub mod memory;
mod message;
mod observer;
mod oneshot;
mod relay;
mod shared;
mod task_set;
mod trace;
pub mod transcript;
mod wakeup;

pub use budget::{BudgetListener, BudgetScope, ByteBudget, DEFAULT_IN_FLIGHT_BUDGET};
pub use connect::Connection;
pub use connection::{
    ConnectionHandle, ConnectionOptions, DEFAULT_REPLY_BUDGET, NotifyFuture, RequestFuture,
};
pub use error::{ConnectionError, EXCERPT_CHARS, ErrorCode, RequestError, ResponseError, excerpt};
pub use forwarded::ForwardedResult;
pub use handler::{
    Handler, IncomingNotification, IncomingRequest, LocalHandler, RawNotification, RawRequest,
    Responder,
};
pub use handoff::Handoff;
pub use id::RequestId;
pub use latch::{Latch, LatchListener, Waiter};
pub use line_reader::{
    DEFAULT_MAX_LINE_LENGTH, LineEvent, LineReader, strip_byte_order_mark, write_message,
};
pub use message::{DecodeError, DecodeErrorKind, Message, Notification, Request, Response};
pub use observer::{Observer, Problem};
pub use relay::RelayHooks;
pub use shared::CANCEL_REQUEST_METHOD;

/// The README's examples, compiled as doctests so that they keep up with the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
