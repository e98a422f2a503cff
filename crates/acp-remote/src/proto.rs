//! The wire formats, with no role: what the server and the client both read and write.
//!
//! - [`ws`]: a WebSocket as the runtime's lines (text frames, fragments, keep-alive, the
//!   socket's bounds), for either end of the upgrade.
//! - [`streamable`]: Streamable HTTP's words both sides use (its headers, the refusals a
//!   client recognises).
//! - [`cursor`]: the durable transport's cursor inside JSON-RPC messages.
//! - [`answer_scan`]: which request a message answers, read from its bytes as they stream.

pub(crate) mod answer_scan;
pub(crate) mod cursor;
pub(crate) mod streamable;
pub(crate) mod ws;
