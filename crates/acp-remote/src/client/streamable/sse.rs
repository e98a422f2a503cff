//! Server-Sent Events, read as the WHATWG HTML standard's "event stream interpretation" says:
//! lines end at CRLF, LF or CR (any mix, also split across reads); a line starting with `:` is
//! a comment; `field: value` loses one space after the colon; `data` lines join with `\n`; a
//! blank line dispatches the event, and an event without data is none. `id` (without NUL) is
//! kept across events, as a reconnection would send it in `Last-Event-ID`; `event` names the
//! next event only. `retry` is read and kept too.
//!
//! Everything kept is bounded: a line or an event's data longer than `max` fails the stream
//! instead of growing.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// The `event` field, if the event had one (the standard's default is "message").
    pub(crate) kind: Option<String>,
    /// The joined `data` lines.
    pub(crate) data: Vec<u8>,
    /// The last `id` seen on the stream so far (the standard's "last event ID").
    pub(crate) last_id: Option<String>,
}

/// Why a stream is given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLong;

/// An incremental event-stream parser: feed it bytes as they arrive, take events out.
#[derive(Debug)]
pub(crate) struct Parser {
    max: usize,
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF first in the next is that line's ending.
    after_cr: bool,
    /// The first line may start with a UTF-8 byte order mark, which is skipped.
    at_start: bool,
    data: Vec<u8>,
    has_data: bool,
    kind: Option<String>,
    last_id: Option<String>,
    /// The standard's "last event ID string": `last_id` as of the last blank line, whether
    /// or not an event was dispatched there (an `id` alone moves it too).
    dispatched_id: Option<String>,
    retry_ms: Option<u64>,
}

impl Parser {
    pub(crate) fn new(max: usize) -> Parser {
        Parser {
            max,
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            data: Vec::new(),
            has_data: false,
            kind: None,
            last_id: None,
            dispatched_id: None,
            retry_ms: None,
        }
    }

    /// The last event id of the stream as of its last complete event (what a reconnection
    /// sends as `Last-Event-ID`): an `id` line whose event has not ended yet does not count.
    pub(crate) fn last_id(&self) -> Option<&str> {
        self.dispatched_id.as_deref()
    }

    /// The reconnection time the server asked for, in milliseconds.
    #[allow(dead_code)]
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Takes in `bytes`, pushing each event completed by them onto `events`.
    pub(crate) fn feed(
        &mut self,
        mut bytes: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<(), TooLong> {
        if bytes.is_empty() {
            return Ok(());
        }
        if std::mem::take(&mut self.after_cr) && bytes[0] == b'\n' {
            bytes = &bytes[1..];
        }
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.push_line_part(&bytes[..end])?;
            let line = std::mem::take(&mut self.line);
            self.process(&line, events)?;
            self.line = line;
            self.line.clear();
            let crlf = bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n');
            if bytes[end] == b'\r' && end + 1 == bytes.len() {
                self.after_cr = true;
            }
            bytes = &bytes[end + if crlf { 2 } else { 1 }..];
        }
        self.push_line_part(bytes)
    }

    fn push_line_part(&mut self, part: &[u8]) -> Result<(), TooLong> {
        if self.line.len().saturating_add(part.len()) > self.max {
            return Err(TooLong);
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    fn process(&mut self, mut line: &[u8], events: &mut Vec<Event>) -> Result<(), TooLong> {
        if std::mem::take(&mut self.at_start) {
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(events);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.data.len().saturating_add(value.len() + 1) > self.max {
                    return Err(TooLong);
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.kind = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry_ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<Event>) {
        self.dispatched_id.clone_from(&self.last_id);
        let kind = self.kind.take().filter(|k| !k.is_empty());
        if !std::mem::take(&mut self.has_data) {
            self.data.clear();
            return;
        }
        events.push(Event {
            kind,
            data: std::mem::take(&mut self.data),
            last_id: self.last_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The standard's steps over a whole stream, written as plainly as possible: normalise the
    /// line endings, split, interpret; the unterminated last line is discarded.
    fn reference(input: &[u8]) -> Vec<Event> {
        let text = String::from_utf8_lossy(input)
            .replace("\r\n", "\n")
            .replace('\r', "\n");
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let mut lines: Vec<&str> = text.split('\n').collect();
        lines.pop();
        let (mut events, mut data, mut kind, mut last_id) =
            (Vec::new(), String::new(), String::new(), None::<String>);
        for line in lines {
            if line.is_empty() {
                if !data.is_empty() {
                    data.pop();
                    events.push(Event {
                        kind: (!kind.is_empty()).then(|| kind.clone()),
                        data: data.clone().into_bytes(),
                        last_id: last_id.clone(),
                    });
                }
                data.clear();
                kind.clear();
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line, ""),
            };
            match field {
                "data" => {
                    data.push_str(value);
                    data.push('\n');
                }
                "event" => kind = value.to_owned(),
                "id" if !value.contains('\0') => last_id = Some(value.to_owned()),
                _ => {}
            }
        }
        events
    }

    fn parse_in(chunks: &[&[u8]]) -> Vec<Event> {
        let mut parser = Parser::new(1 << 20);
        let mut events = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut events).unwrap();
        }
        events
    }

    #[test]
    fn every_line_ending_and_field() {
        let stream =
            b": hello\r\nevent: m\rid: 7\ndata: {\"a\":\r\ndata:1}\r\rdata\n\nretry: 20\n\n";
        let events = parse_in(&[stream]);
        assert_eq!(
            events,
            vec![
                Event {
                    kind: Some("m".into()),
                    data: b"{\"a\":\n1}".to_vec(),
                    last_id: Some("7".into()),
                },
                Event {
                    kind: None,
                    data: Vec::new(),
                    last_id: Some("7".into()),
                },
            ]
        );
        // An `id` counts once its event has ended; alone, at a blank line, it counts too.
        let mut parser = Parser::new(100);
        let mut events = Vec::new();
        parser
            .feed(b"id: 0\n\nid: 1\ndata: x", &mut events)
            .unwrap();
        assert_eq!((parser.last_id(), events.len()), (Some("0"), 0));
        parser.feed(b"\n\n", &mut events).unwrap();
        assert_eq!((parser.last_id(), events.len()), (Some("1"), 1));
        // A CRLF split across two reads is one line ending, not two.
        assert_eq!(
            parse_in(&[b"data: x\r", b"\n", b"\r", b"\ndata: y\n\n"]),
            reference(b"data: x\r\n\r\ndata: y\n\n")
        );
    }

    #[test]
    fn too_long_is_refused() {
        let mut events = Vec::new();
        let mut parser = Parser::new(12);
        assert_eq!(parser.feed(b"data: 12345678", &mut events), Err(TooLong));
        let mut parser = Parser::new(12);
        parser
            .feed(b"data: 1234\ndata: 123\n", &mut events)
            .unwrap();
        assert_eq!(parser.feed(b"data: 12345\n", &mut events), Err(TooLong));
    }

    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "data", "data:", "data: ", "event:", "id:", "id", "retry: 5", ":", " ", "x", "{}",
            "\r", "\n", "\r\n", "\u{feff}", "\0", "é",
        ])
    }

    proptest! {
        #[test]
        fn matches_the_reference(pieces in prop::collection::vec(piece(), 0..40),
                                 cuts in prop::collection::vec(0usize..200, 0..6)) {
            let input: Vec<u8> = pieces.concat().into_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(input.len())).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut at = 0;
            for cut in cuts {
                chunks.push(&input[at..cut]);
                at = cut;
            }
            chunks.push(&input[at..]);
            prop_assert_eq!(parse_in(&chunks), reference(&input));
        }
    }
}
