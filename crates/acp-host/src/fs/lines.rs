//! Line selection over a stream, bounded in memory, and the wire size of the text it keeps.
//!
//! Two costs are bounded here. Lines before the requested range are skipped inside a
//! fixed-size buffer, never collected, so a skipped line of any length costs [`CHUNK`] bytes.
//! The selected lines are kept only while their size *as a JSON string on the wire* stays
//! within the cap: a file of control characters is up to six times larger once escaped,
//! and it is the escaped line that must fit the peer's line limit.

use std::io::{self, BufRead, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Capacity of the buffer a file is read through: all the memory a skipped line costs.
pub(super) const CHUNK: usize = 64 * 1024;

/// The bytes each byte adds when written inside a JSON string, as serde_json writes it:
/// `"` and `\` gain a backslash, the control characters `\b \t \n \f \r` become two bytes,
/// the other control characters six (`\u00XX`); everything else, UTF-8 continuation bytes
/// included, is written as is.
static EXTRA: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = 5;
        byte += 1;
    }
    table[0x08] = 1;
    table[0x09] = 1;
    table[0x0A] = 1;
    table[0x0C] = 1;
    table[0x0D] = 1;
    table[b'"' as usize] = 1;
    table[b'\\' as usize] = 1;
    table
};

/// The length of `bytes` once escaped inside a JSON string (without the quotes).
pub(super) fn encoded_len(bytes: &[u8]) -> u64 {
    let extra: u64 = bytes
        .iter()
        .map(|&byte| u64::from(EXTRA[byte as usize]))
        .sum();
    bytes.len() as u64 + extra
}

/// What a read shares with the future that waits for it: the future sets `cancelled` when
/// it is dropped, and the read stops at its next chunk; `bytes_read` lets tests watch it.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    cancelled: AtomicBool,
    bytes_read: AtomicU64,
}

impl Progress {
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    pub(crate) fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }
}

/// The error a [`Watched`] read fails with once its request was cancelled.
#[derive(Debug)]
struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request was cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// A reader that stops with [`Cancelled`] once `progress` is cancelled, checked before each
/// read of the underlying file (one per [`CHUNK`] through a `BufReader`).
pub(super) struct Watched<'a, R> {
    inner: R,
    progress: &'a Progress,
}

impl<'a, R> Watched<'a, R> {
    pub(super) fn new(inner: R, progress: &'a Progress) -> Self {
        Self { inner, progress }
    }
}

impl<R: Read> Read for Watched<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.progress.is_cancelled() {
            return Err(io::Error::other(Cancelled));
        }
        let read = self.inner.read(buf)?;
        self.progress
            .bytes_read
            .fetch_add(read as u64, Ordering::Relaxed);
        Ok(read)
    }
}

/// Why [`select_lines`] gave no text.
#[derive(Debug)]
pub(super) enum Selection {
    /// The selected text's encoded size passed the cap.
    TooLarge,
    /// The request was cancelled; nobody waits for an answer.
    Cancelled,
    Io(io::Error),
}

impl From<io::Error> for Selection {
    fn from(error: io::Error) -> Self {
        let cancelled = error.get_ref().is_some_and(|inner| inner.is::<Cancelled>());
        if cancelled {
            Selection::Cancelled
        } else {
            Selection::Io(error)
        }
    }
}

/// Lines `line ..` (1-based; `limit` of them, or to the end) of `reader`, keeping their
/// terminators.
///
/// Lines before the range are skipped inside `reader`'s buffer (`skip_until`), never
/// collected. The kept text is refused with [`Selection::TooLarge`] as soon as its encoded
/// size ([`encoded_len`]) passes `max`, before the chunk that passes it is kept; since a byte
/// never encodes smaller than itself, the text never holds more than `max` bytes.
pub(super) fn select_lines(
    mut reader: impl BufRead,
    line: Option<u32>,
    limit: Option<u32>,
    max: u64,
) -> Result<Vec<u8>, Selection> {
    for _ in 1..line.unwrap_or(1) {
        if reader.skip_until(b'\n')? == 0 {
            return Ok(Vec::new());
        }
    }
    let room = usize::try_from(max).unwrap_or(usize::MAX);
    let mut text = Vec::new();
    let mut encoded = 0;
    let mut lines = 0;
    while limit.is_none_or(|limit| lines < limit) {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            break;
        }
        let (piece, ends_line) = match available.iter().position(|&byte| byte == b'\n') {
            Some(end) => (&available[..=end], true),
            None => (available, false),
        };
        encoded += encoded_len(piece);
        if encoded > max {
            return Err(Selection::TooLarge);
        }
        // Grow by doubling as usual, but never past `max`: the text cannot need more.
        if text.capacity() - text.len() < piece.len() {
            let wanted = (text.capacity() * 2)
                .min(room)
                .max(text.len() + piece.len());
            text.reserve_exact(wanted - text.len());
        }
        text.extend_from_slice(piece);
        let used = piece.len();
        reader.consume(used);
        if ends_line {
            lines += 1;
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn select(text: &[u8], line: Option<u32>, limit: Option<u32>, max: u64) -> Option<Vec<u8>> {
        let reader = io::BufReader::with_capacity(4, text);
        select_lines(reader, line, limit, max).ok()
    }

    #[test]
    fn encoded_len_counts_escapes() {
        assert_eq!(encoded_len(b""), 0);
        assert_eq!(encoded_len(b"plain text"), 10);
        assert_eq!(encoded_len(b"\"\\"), 4);
        assert_eq!(encoded_len(b"\n\r\t\x08\x0C"), 10);
        assert_eq!(encoded_len(b"\x00\x01\x1F"), 18);
        assert_eq!(encoded_len(b"\x7F/"), 2);
        assert_eq!(encoded_len("é😀".as_bytes()), 6);
    }

    #[test]
    fn the_cap_is_on_the_encoded_size_and_inclusive() {
        // 3 lines of "a\n": 3 bytes each once encoded.
        assert_eq!(
            select(b"a\na\na\n", None, None, 9).as_deref(),
            Some(&b"a\na\na\n"[..])
        );
        assert!(select(b"a\na\na\n", None, None, 8).is_none());
        assert_eq!(
            select(b"a\na\na\n", Some(2), Some(1), 3).as_deref(),
            Some(&b"a\n"[..])
        );
        assert!(select(b"\x01", None, None, 5).is_none());
        assert_eq!(
            select(b"\x01", None, None, 6).as_deref(),
            Some(&b"\x01"[..])
        );
    }

    #[test]
    fn a_cancelled_read_stops_at_the_next_chunk() {
        let progress = Progress::default();
        let zeros = io::repeat(0).take(1 << 30);
        let reader = io::BufReader::with_capacity(CHUNK, Watched::new(zeros, &progress));
        progress.cancel();
        let result = select_lines(reader, Some(2), None, 100);
        assert!(matches!(result, Err(Selection::Cancelled)), "{result:?}");
        assert_eq!(progress.bytes_read(), 0);
    }

    proptest! {
        #[test]
        fn encoded_len_matches_serde_json(text in any::<String>()) {
            let json = serde_json::to_string(&text).unwrap();
            prop_assert_eq!(encoded_len(text.as_bytes()), json.len() as u64 - 2);
        }

        #[test]
        fn selection_matches_splitting_in_memory(
            text in "[a\n\"\x01é]{0,40}",
            line in 1u32..8,
            limit in proptest::option::of(0u32..8),
        ) {
            let expected: String = text
                .split_inclusive('\n')
                .skip(line as usize - 1)
                .take(limit.map_or(usize::MAX, |limit| limit as usize))
                .collect();
            let cost = encoded_len(expected.as_bytes());
            let kept = select(text.as_bytes(), Some(line), limit, cost).unwrap();
            prop_assert_eq!(String::from_utf8(kept).unwrap(), expected);
            if cost > 0 {
                prop_assert!(select(text.as_bytes(), Some(line), limit, cost - 1).is_none());
            }
        }
    }
}
