//! Bounded, UTF-8-safe accumulation of a command's output.

use std::mem;

/// Output kept for a terminal, bounded by a byte limit.
///
/// Bytes arrive in arbitrary chunks (whatever a `read` returned) and are decoded as UTF-8.
/// Invalid sequences become U+FFFD exactly as [`String::from_utf8_lossy`] would replace them
/// in the concatenation of all chunks: a multi-byte character split across two chunks is
/// held back (at most 3 bytes) until the next chunk completes or invalidates it, or until
/// [`finish`](Self::finish) declares the stream over.
///
/// When the decoded text outgrows the limit, the oldest text is dropped. The kept text
/// always starts at a character boundary, so it can be shorter than the limit by up to
/// 3 bytes. The limit counts bytes of the kept UTF-8 text (a U+FFFD counts as 3).
///
/// Appending is amortised O(bytes): the kept text lives in one `String` whose dropped
/// prefix is compacted away only once it outweighs the kept part, so memory stays below
/// about twice the limit.
///
/// ```
/// use acp_host::terminal::OutputBuffer;
///
/// let mut buffer = OutputBuffer::new(6);
/// buffer.push("h\u{e9}".as_bytes()); // 3 bytes: "h" + "é"
/// buffer.push(&[0xF0, 0x9F]); // first half of "😀"
/// buffer.push(&[0x98, 0x80, b'!']); // second half, then "!"
/// // "hé😀!" is 8 bytes. Dropping just 2 would split "é", so 3 go and 5 remain.
/// assert_eq!(buffer.text(), "😀!");
/// assert!(buffer.truncated());
/// ```
#[derive(Debug, Clone)]
pub struct OutputBuffer {
    /// Decoded text; only `text[start..]` is kept, the prefix awaits compaction.
    text: String,
    start: usize,
    limit: usize,
    truncated: bool,
    /// The beginning of a multi-byte sequence whose remaining bytes have not arrived yet.
    pending: Vec<u8>,
    /// Reused when `pending` must be joined with the next chunk, so that splits do not
    /// allocate on every read.
    scratch: Vec<u8>,
}

impl OutputBuffer {
    /// Creates an empty buffer that keeps at most `limit` bytes of text.
    ///
    /// A limit of 0 keeps nothing; any output then only sets [`truncated`](Self::truncated).
    pub fn new(limit: usize) -> Self {
        Self {
            text: String::new(),
            start: 0,
            limit,
            truncated: false,
            pending: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The byte limit this buffer enforces.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The kept text: valid UTF-8, at most [`limit`](Self::limit) bytes, a suffix of
    /// everything decoded so far. Bytes of an incomplete trailing character are not
    /// included until they are completed or [`finish`](Self::finish) is called.
    pub fn text(&self) -> &str {
        &self.text[self.start..]
    }

    /// Lowers the limit to `limit` (never raises it), dropping the oldest text that no longer
    /// fits and giving back the memory it held.
    ///
    /// ```
    /// use acp_host::terminal::OutputBuffer;
    ///
    /// let mut buffer = OutputBuffer::new(100);
    /// buffer.push(b"hello world");
    /// buffer.shrink_to(5);
    /// assert_eq!((buffer.text(), buffer.limit(), buffer.truncated()), ("world", 5, true));
    /// buffer.push(b"!");
    /// assert_eq!(buffer.text(), "orld!");
    /// ```
    pub fn shrink_to(&mut self, limit: usize) {
        if limit >= self.limit {
            return;
        }
        self.limit = limit;
        let kept = self.text.len() - self.start;
        if kept > limit {
            self.start = self.text.ceil_char_boundary(self.text.len() - limit);
            self.truncated = true;
        }
        self.text.drain(..self.start);
        self.start = 0;
        self.text.shrink_to(limit);
    }

    /// Whether any decoded text has been dropped to respect the limit.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Appends raw output bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pending.is_empty() {
            self.decode(bytes);
        } else {
            // Re-decoding from the start of the held-back sequence is what a decoder
            // reading the whole stream at once would do at this point.
            let mut joined = mem::take(&mut self.scratch);
            joined.clear();
            joined.append(&mut self.pending);
            joined.extend_from_slice(bytes);
            self.decode(&joined);
            self.scratch = joined;
        }
    }

    /// Declares the end of the stream: an incomplete trailing sequence becomes one U+FFFD.
    ///
    /// Further [`push`](Self::push) calls are still accepted and continue the stream.
    pub fn finish(&mut self) {
        if !self.pending.is_empty() {
            self.pending.clear();
            self.append(char::REPLACEMENT_CHARACTER.encode_utf8(&mut [0; 4]));
        }
    }

    fn decode(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            self.append(chunk.valid());
            let invalid = chunk.invalid();
            if invalid.is_empty() {
                continue;
            }
            let at_end = chunks.peek().is_none();
            // `error_len() == None` means "ran out of input", not "impossible sequence":
            // the next chunk may still complete the character.
            let incomplete = std::str::from_utf8(invalid).is_err_and(|e| e.error_len().is_none());
            if at_end && incomplete {
                self.pending.extend_from_slice(invalid);
            } else {
                self.append(char::REPLACEMENT_CHARACTER.encode_utf8(&mut [0; 4]));
            }
        }
    }

    fn append(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if piece.len() >= self.limit {
            // The piece alone fills the limit: everything kept so far goes, and so does
            // the part of the piece that does not fit.
            let keep_from = piece.ceil_char_boundary(piece.len() - self.limit);
            self.truncated |= keep_from > 0 || self.start < self.text.len();
            self.text.clear();
            self.text.push_str(&piece[keep_from..]);
            self.start = 0;
            return;
        }
        self.text.push_str(piece);
        let kept = self.text.len() - self.start;
        if kept > self.limit {
            let drop_to = self.text.ceil_char_boundary(self.text.len() - self.limit);
            self.start = drop_to;
            self.truncated = true;
        }
        // Compact once the dead prefix outweighs the kept text: each byte is then moved
        // at most a constant number of times on average.
        if self.start > 0 && self.start >= self.text.len() - self.start {
            self.text.drain(..self.start);
            self.start = 0;
        }
    }
}
