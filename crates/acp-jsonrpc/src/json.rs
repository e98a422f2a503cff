//! JSON at the byte level, for speed, always agreeing with serde_json: the one place of the
//! crate that touches JSON text by hand, a leaf that imports nothing else of the crate.
//!
//! Public: small reading helpers for hand-written fast paths over a message's raw params.
//! A layer above this crate that decodes one very frequent shape by hand (acp-runtime does so
//! for streamed text chunks and for file contents) needs to read JSON strings exactly as
//! serde_json reads them, and quickly. [`string_at`] does: strings without escapes are found
//! sixteen bytes per step and borrowed; the two-character escapes are decoded into one
//! allocation; a string with a `\u` escape is handed to serde_json, so that both agree on
//! every escape (a property test compares them).
//!
//! ```
//! use acp_jsonrpc::json::{skip_whitespace, string_at};
//!
//! let params = r#"{ "text": "two\nlines" }"#;
//! let key_at = skip_whitespace(params, 1);
//! let (key, after_key) = string_at(params, key_at).unwrap();
//! assert_eq!(key, "text");
//! let value_at = skip_whitespace(params, skip_whitespace(params, after_key) + 1);
//! let (value, _) = string_at(params, value_at).unwrap();
//! assert_eq!(value, "two\nlines");
//! ```
//!
//! For routers: [`envelope`] reads a message's (or an embedded message's) `method` and borrows
//! its `params` ([`Envelope::raw_params`]) without decoding them, and [`inner_message`] splices
//! `{"method":…,"params":…}` around raw params without reading them again, as acp-runtime's
//! conductor and pass-through proxy do for `proxy/successor`.
//!
//! For the forwarding path: [`UncheckedJson`], JSON text a router copies without reading it,
//! as a non-validating scan (`forward`) found it in a notification it forwards; and
//! [`carried_message`], the same walk over a `proxy/successor` request's params, which the
//! line's decode already validated (so they are not read a second time).
//!
//! Inside the crate: the compact writer for outgoing messages (`write`: byte for byte what
//! `serde_json::to_writer` writes), the one-pass scan of an incoming message's envelope
//! (`scan`), and the serde helpers that keep a present `null` member apart from an absent one.
//! All three find the end of a string's plain run with the same sixteen-bytes-per-step search
//! (`next_escape`, in the writer: the bytes that end a plain run are the bytes JSON escapes) and
//! skip whitespace with the same loop.

mod envelope;
mod forward;
mod raw;
mod read;
mod scan;
mod unchecked;
mod write;

pub use envelope::{Envelope, envelope};
pub use forward::{CarriedMessage, carried_message};
pub(crate) use forward::{
    ForwardRequest, KnownMethods, carried_in, malformed_request_id, malformed_response_id,
    notification as forwardable_notification, request as forwardable_request,
    response as forwardable_response, starts_with_id,
};
pub(crate) use raw::borrowed_raw;
pub use raw::inner_message;
pub(crate) use raw::write_inner_message;
pub(crate) use read::{present_borrowed, present_owned, skip_ws};
pub use read::{skip_whitespace, string_at};
pub(crate) use scan::{Members, members, plain_string};
pub use unchecked::UncheckedJson;
pub(crate) use write::{short_and_plain, write, write_str};
