//! The outgoing queue's unit: a chunk of lines the writer takes in one go, what it counts
//! against the queue's budget, and how far it grows.

/// Lines the writer takes in one go, and what they count against.
pub(super) struct Chunk {
    pub(super) bytes: Vec<u8>,
    /// One large message, which nothing is appended to.
    pub(super) large: bool,
    pub(super) metered_cost: usize,
    pub(super) metered_messages: usize,
    pub(super) reply_bytes: usize,
}

/// What a queued frame costs at least, in bytes: the outgoing capacity counts
/// messages of about this size, and larger ones cost their length.
pub(super) const MIN_FRAME_COST: usize = 256;

/// A frame's share of the outgoing queue's budget.
pub(super) fn frame_cost(len: usize) -> usize {
    len.max(MIN_FRAME_COST)
}

/// A message at least this large is queued as a chunk of its own instead of
/// being copied into the chunk of small messages.
pub(super) const LARGE_MESSAGE: usize = 64 * 1024;

/// How far a chunk of small messages grows: one pipe's worth, which one `write` takes at
/// most anyway. A message that would take it past this (and past what the chunk already has
/// room for) starts the next chunk instead: a peer that reads slower than we queue would
/// otherwise have one chunk grow by reallocation, copying everything queued each time it
/// doubles.
pub(super) const CHUNK_CAPACITY: usize = 64 * 1024;

impl Chunk {
    /// Whether `length` more bytes go into this chunk rather than a new one.
    pub(super) fn takes(&self, length: usize) -> bool {
        !self.large && self.bytes.len() + length <= self.bytes.capacity().max(CHUNK_CAPACITY)
    }
}
