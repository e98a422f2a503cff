//! `Handoff` loses and repeats nothing: whatever number of lines a router reads (through a
//! small buffer, so that it holds bytes past the last line it read), the connection it hands
//! over reads exactly the lines of the whole input, in order (property test).

use acp_jsonrpc::{Handoff, LineEvent, LineReader};
use futures_lite::future::block_on;
use futures_lite::io::BufReader;
use proptest::prelude::*;

/// Every line of `reader`, as strings.
fn all_lines<R: futures_lite::AsyncBufRead + Unpin>(lines: &mut LineReader<R>) -> Vec<String> {
    block_on(async {
        let mut out = Vec::new();
        while let Some(event) = lines.read_line().await.unwrap() {
            match event {
                LineEvent::Line(line) => out.push(String::from_utf8(line.to_vec()).unwrap()),
                LineEvent::TooLong { .. } => unreachable!("no line is that long"),
            }
        }
        out
    })
}

proptest! {
    #[test]
    fn the_handed_over_connection_reads_every_line_once(
        lines in proptest::collection::vec("[a-z{}:\"0-9]{1,40}", 1..20),
        routed in 0usize..20,
        buffer in 1usize..64,
    ) {
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut router = LineReader::new(BufReader::with_capacity(buffer, input.as_bytes()));
        let mut read = Vec::new();
        for _ in 0..routed.min(lines.len()) {
            match block_on(router.read_line()).unwrap() {
                Some(LineEvent::Line(line)) => read.push(line.to_vec()),
                other => panic!("{other:?}"),
            }
        }
        let (rest, partial) = router.into_parts();
        let mut handed = LineReader::new(Handoff::new(read, rest).with_partial(&partial));
        prop_assert_eq!(all_lines(&mut handed), lines);
    }
}
