//! Properties of the bounded terminal output buffer.

use acp_host::terminal::OutputBuffer;
use proptest::prelude::*;

/// The longest suffix of `text` that fits in `limit` bytes and starts on a character.
fn expected_tail(text: &str, limit: usize) -> &str {
    &text[text.ceil_char_boundary(text.len().saturating_sub(limit))..]
}

fn fed(limit: usize, chunks: &[&[u8]]) -> OutputBuffer {
    let mut buffer = OutputBuffer::new(limit);
    for chunk in chunks {
        buffer.push(chunk);
    }
    buffer.finish();
    buffer
}

#[test]
fn keeps_everything_under_the_limit() {
    let buffer = fed(100, &[b"hello ", "wörld".as_bytes()]);
    assert_eq!(buffer.text(), "hello wörld");
    assert!(!buffer.truncated());
}

#[test]
fn exactly_at_the_limit_is_not_truncated() {
    let buffer = fed(5, &[b"ab", b"cde"]);
    assert_eq!(buffer.text(), "abcde");
    assert!(!buffer.truncated());
}

#[test]
fn drops_from_the_beginning_at_a_character_boundary() {
    // "é" is 2 bytes, "😀" is 4: cutting 7 bytes from the end would split a 😀.
    let text = "é😀".repeat(10);
    for limit in [0, 1, 3, 4, 5, 6, 7, 59, 60, 61] {
        let buffer = fed(limit, &[text.as_bytes()]);
        assert_eq!(buffer.text(), expected_tail(&text, limit), "limit {limit}");
        assert_eq!(buffer.truncated(), limit < text.len(), "limit {limit}");
    }
    assert_eq!(fed(7, &[text.as_bytes()]).text(), "é😀");
    assert_eq!(fed(5, &[text.as_bytes()]).text(), "😀");
}

#[test]
fn a_character_split_across_reads_is_reassembled() {
    let emoji = "😀".as_bytes();
    let mut buffer = OutputBuffer::new(16);
    buffer.push(&emoji[..1]);
    assert_eq!(buffer.text(), "", "an incomplete character is held back");
    buffer.push(&emoji[1..3]);
    assert_eq!(buffer.text(), "");
    buffer.push(&emoji[3..]);
    assert_eq!(buffer.text(), "😀");
    assert!(!buffer.truncated());
}

#[test]
fn invalid_bytes_become_replacement_characters() {
    let buffer = fed(100, &[b"a\xffb", b"\xe2\x82", b"c"]);
    assert_eq!(buffer.text(), "a\u{FFFD}b\u{FFFD}c");
}

#[test]
fn an_incomplete_character_at_the_end_becomes_one_replacement_character() {
    let mut buffer = OutputBuffer::new(100);
    buffer.push(b"ok\xf0\x9f\x98");
    assert_eq!(buffer.text(), "ok");
    buffer.finish();
    assert_eq!(buffer.text(), "ok\u{FFFD}");
}

#[test]
fn a_zero_limit_keeps_nothing_but_reports_truncation() {
    let mut buffer = OutputBuffer::new(0);
    buffer.finish();
    assert!(!buffer.truncated(), "no output, nothing dropped");
    buffer.push(b"x");
    assert_eq!(buffer.text(), "");
    assert!(buffer.truncated());
}

#[test]
fn a_replacement_character_counts_three_bytes() {
    let buffer = fed(2, &[b"\xff"]);
    assert_eq!(buffer.text(), "");
    assert!(buffer.truncated());
}

#[test]
fn large_volumes_with_a_small_limit_stay_linear() {
    // Quadratic copying would make this take minutes, not milliseconds.
    let chunk = "ab😀\n".repeat(512);
    let mut buffer = OutputBuffer::new(64 * 1024);
    for _ in 0..8 * 1024 {
        buffer.push(chunk.as_bytes());
    }
    buffer.finish();
    assert!(buffer.truncated());
    assert!(buffer.text().len() <= 64 * 1024);
    assert!(buffer.text().ends_with("ab😀\n"));
}

/// Byte streams rich in multi-byte characters and invalid sequences, split into chunks
/// at arbitrary points (often inside characters).
fn chunked_stream() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let piece = prop_oneof![
        any::<char>().prop_map(|c| c.to_string().into_bytes()),
        prop::sample::select(vec!["é", "😀", "€", "a", "\n", "\r\n"])
            .prop_map(|s| s.as_bytes().to_vec()),
        // Lone continuation bytes, truncated leaders, overlong forms, surrogates.
        prop::collection::vec(
            prop::sample::select(vec![0x80u8, 0xBF, 0xC0, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xFF]),
            1..4
        ),
        any::<u8>().prop_map(|b| vec![b]),
    ];
    (
        prop::collection::vec(piece, 0..40),
        prop::collection::vec(0usize..8, 0..40),
    )
        .prop_map(|(pieces, cut_lengths)| {
            let bytes: Vec<u8> = pieces.concat();
            let mut chunks = Vec::new();
            let mut rest = bytes.as_slice();
            for length in cut_lengths {
                let (head, tail) = rest.split_at(length.min(rest.len()));
                chunks.push(head.to_vec());
                rest = tail;
            }
            chunks.push(rest.to_vec());
            chunks
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn kept_text_is_the_longest_fitting_suffix_of_the_lossy_decoding(
        chunks in chunked_stream(),
        limit in prop_oneof![0usize..80, Just(usize::MAX)],
    ) {
        let mut buffer = OutputBuffer::new(limit);
        let mut seen = Vec::new();
        for chunk in &chunks {
            buffer.push(chunk);
            seen.extend_from_slice(chunk);
            prop_assert!(buffer.text().len() <= limit);
            // Before the end, a held-back incomplete character may still be missing
            // from the text (it would decode as one trailing U+FFFD).
            let so_far = String::from_utf8_lossy(&seen);
            let without_pending = so_far.strip_suffix('\u{FFFD}').unwrap_or(&so_far);
            prop_assert!(
                so_far.ends_with(buffer.text()) || without_pending.ends_with(buffer.text()),
                "{:?} is not a suffix of {:?}", buffer.text(), so_far
            );
        }
        buffer.finish();

        let full = String::from_utf8_lossy(&chunks.concat()).into_owned();
        prop_assert!(buffer.text().len() <= limit);
        prop_assert_eq!(buffer.text(), expected_tail(&full, limit));
        prop_assert_eq!(buffer.truncated(), buffer.text().len() < full.len());
    }
}
