//! The body of the `line_reader` fuzz target, kept here so that a unit test
//! runs the very same checks on every CI run.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_io::{AsyncBufRead, AsyncRead};

use crate::{LineEvent, LineReader, Message, strip_byte_order_mark};

/// Feeds `data` through a [`LineReader`] and [`Message::from_slice`] and
/// checks what comes out. Panics on any violation (that is the point).
///
/// The first byte picks the chunk size the input arrives in (1 to 64
/// bytes) and whether reads sometimes return `Pending` first; the rest is
/// the input. Checks:
///
/// - the reader yields exactly the lines a naive splitter finds;
/// - every decoded message encodes and decodes back to itself;
/// - every error reply is itself a valid, decodable response;
/// - nothing without a `method` member is answered with an echoed id, and
///   nothing with `result` or `error` but no `method` is answered at all,
///   but for a line that starts as a request and is not JSON, answered under
///   its id;
/// - a line with leading byte-order marks decodes, once they are stripped,
///   like the same line without them;
/// - whatever the forwarding scan (a router's, which leaves the params unread)
///   accepts has an envelope the decode accepts: with its params replaced by
///   `null` the line decodes to a notification of the same method, and when
///   the whole line decodes, to the same params; and the same of the response
///   scan (a response to the same id, the same result), whose lines the decode
///   refuses whole only as a response to that id, unanswered; and the same of
///   the request scan (a request with the same id and method, the same params),
///   whose lines the decode refuses whole only with an answer to that id.
#[doc(hidden)]
pub fn line_reader(data: &[u8]) {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    const MAX_LINE_LENGTH: usize = 200;
    let chunk_size = usize::from(control & 0x3f) + 1;
    let stalls = control & 0x40 != 0;

    let expected = naive_lines(input, MAX_LINE_LENGTH);
    let reader = ChunkedReader {
        input,
        position: 0,
        chunk_size,
        stalls,
        stalled: false,
    };
    let mut lines = LineReader::with_max_line_length(reader, MAX_LINE_LENGTH);
    let mut seen = Vec::new();
    futures_lite::future::block_on(async {
        while let Some(event) = lines
            .read_line()
            .await
            .expect("in-memory reads cannot fail")
        {
            match event {
                LineEvent::TooLong { length } => {
                    assert!(length > MAX_LINE_LENGTH);
                    seen.push(Expected::TooLong(length));
                }
                LineEvent::Line(line) => {
                    check_line(line);
                    seen.push(Expected::Line(line.to_vec()));
                }
            }
        }
    });
    assert_eq!(seen, expected);
}

fn check_line(line: &[u8]) {
    if let Some(rest) = strip_byte_order_mark(line) {
        // What the connection decodes.
        check_line(rest);
    }
    check_forwarding_scan(line);
    check_response_scan(line);
    check_request_scan(line);
    match Message::from_slice(line) {
        Ok(message) => {
            let mut encoded = Vec::new();
            message.encode(&mut encoded);
            assert_eq!(encoded.last(), Some(&b'\n'));
            let again = Message::from_slice(&encoded[..encoded.len() - 1])
                .expect("an encoded message decodes");
            assert_eq!(again, message);
        }
        Err(error) => {
            if let Some(reply) = error.reply() {
                assert!(reply.result.is_err());
                let members = members(line);
                // A line that starts as a request but is not JSON is answered under that
                // request's id (params a router forwarded unread).
                let starts_as_request = crate::json::malformed_request_id(line).is_some();
                if !members.method && !starts_as_request {
                    assert!(!members.answer, "a response was answered");
                    assert!(reply.id.is_null(), "an id was echoed without a method");
                }
                let mut encoded = Vec::new();
                Message::Response(reply.clone()).encode(&mut encoded);
                let again = Message::from_slice(&encoded[..encoded.len() - 1])
                    .expect("an error reply decodes");
                assert_eq!(again, Message::Response(reply.clone()));
            }
        }
    }
}

fn check_forwarding_scan(line: &[u8]) {
    let known = crate::json::KnownMethods::default();
    let Some(found) = crate::json::forwardable_notification(line, &known) else {
        return;
    };
    let mut stripped = line.to_vec();
    if let Some(params) = found.params {
        let start = params.as_bytes().as_ptr() as usize - line.as_ptr() as usize;
        stripped.splice(start..start + params.as_bytes().len(), *b"null");
    }
    match Message::from_slice(&stripped) {
        Ok(Message::Notification(notification)) => assert_eq!(notification.method, found.method),
        other => panic!("the forwarding scan accepted a malformed envelope: {other:?}"),
    }
    if let Ok(Message::Notification(whole)) = Message::from_slice(line) {
        let params = whole
            .params
            .as_deref()
            .map(|params| params.get().as_bytes());
        assert_eq!(params, found.params.map(|params| params.as_bytes()));
    }
}

fn check_response_scan(line: &[u8]) {
    let Some(found) = crate::json::forwardable_response(line) else {
        return;
    };
    let id = crate::RequestId::from(found.id);
    let result = found.result.as_bytes();
    let start = result.as_ptr() as usize - line.as_ptr() as usize;
    let mut stripped = line.to_vec();
    stripped.splice(start..start + result.len(), *b"null");
    match Message::from_slice(&stripped) {
        Ok(Message::Response(response)) => assert_eq!(response.id, id),
        other => panic!("the response scan accepted a malformed envelope: {other:?}"),
    }
    match Message::from_slice(line) {
        Ok(Message::Response(whole)) => {
            assert_eq!(whole.id, id);
            let whole = whole.result.expect("a result");
            assert_eq!(whole.get().as_bytes(), result);
        }
        Ok(other) => panic!("the response scan accepted {other:?}"),
        Err(error) => {
            assert_eq!(error.reply(), None);
            assert_eq!(error.response_id(), Some(&id));
        }
    }
}

fn check_request_scan(line: &[u8]) {
    let known = crate::json::KnownMethods::default();
    let Some(found) = crate::json::forwardable_request(line, &known) else {
        return;
    };
    let id = crate::RequestId::from(found.id);
    let params = found
        .scan
        .params
        .expect("the usual spelling has params")
        .as_bytes();
    let start = params.as_ptr() as usize - line.as_ptr() as usize;
    let mut stripped = line.to_vec();
    stripped.splice(start..start + params.len(), *b"null");
    match Message::from_slice(&stripped) {
        Ok(Message::Request(request)) => {
            assert_eq!((&request.id, &*request.method), (&id, found.scan.method));
        }
        other => panic!("the request scan accepted a malformed envelope: {other:?}"),
    }
    match Message::from_slice(line) {
        Ok(Message::Request(whole)) => {
            assert_eq!(whole.id, id);
            let whole = whole.params.expect("params");
            assert_eq!(whole.get().as_bytes(), params);
        }
        Ok(other) => panic!("the request scan accepted {other:?}"),
        Err(error) => assert_eq!(error.reply().map(|reply| &reply.id), Some(&id)),
    }
}

/// Which of `method`, `result` and `error` a line has at its top level
/// (none when it is not a JSON object).
#[derive(Default)]
struct TopMembers {
    method: bool,
    answer: bool,
}

fn members(line: &[u8]) -> TopMembers {
    let Ok(serde_json::Value::Object(object)) = serde_json::from_slice(line) else {
        return TopMembers::default();
    };
    TopMembers {
        method: object.contains_key("method"),
        answer: object.contains_key("result") || object.contains_key("error"),
    }
}

#[derive(Debug, PartialEq)]
enum Expected {
    Line(Vec<u8>),
    TooLong(usize),
}

/// The reader's contract, written as plainly as possible.
fn naive_lines(input: &[u8], max: usize) -> Vec<Expected> {
    let mut out = Vec::new();
    let mut segments: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if segments.last().is_some_and(|last| last.is_empty()) {
        segments.pop();
    }
    for segment in segments {
        if segment.len() > max {
            out.push(Expected::TooLong(segment.len()));
            continue;
        }
        let line = segment.strip_suffix(b"\r").unwrap_or(segment);
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            continue;
        }
        out.push(Expected::Line(line.to_vec()));
    }
    out
}

/// Hands out the input a few bytes at a time, optionally saying `Pending`
/// before each chunk.
struct ChunkedReader<'a> {
    input: &'a [u8],
    position: usize,
    chunk_size: usize,
    stalls: bool,
    stalled: bool,
}

impl AsyncRead for ChunkedReader<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let available = match self.as_mut().poll_fill_buf(cx) {
            Poll::Ready(Ok(available)) => available,
            other => return other.map(|r| r.map(|_| 0)),
        };
        let count = available.len().min(buf.len());
        buf[..count].copy_from_slice(&available[..count]);
        self.consume(count);
        Poll::Ready(Ok(count))
    }
}

impl AsyncBufRead for ChunkedReader<'_> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.stalls && !this.stalled {
            this.stalled = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let end = (this.position + this.chunk_size).min(this.input.len());
        Poll::Ready(Ok(&this.input[this.position..end]))
    }

    fn consume(self: Pin<&mut Self>, amount: usize) {
        let this = self.get_mut();
        this.position += amount;
        this.stalled = false;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nasty_inputs() {
        let inputs: &[&[u8]] = &[
            b"",
            b"\x00",
            b"\x00\n\n\r\n \t\r\n",
            b"\x41{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}",
            b"\x05{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"m\",\"params\":[1,{}]}\n",
            b"\x02{\"jsonrpc\":\"2.0\",\"id\":-0,\"error\":{\"code\":1,\"message\":\"\\u0000\",\"data\":null}}\n",
            b"\x07\xff\xfe{\n{\"a\":\"\xff\"}\n[1,2]\n[INFO] hello\n42\n\"x\"\n",
            b"\x3f{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"method\":\"n\"}\n{\"jsonrpc\":\"1.0\",\"id\":{},\"method\":1}\n",
            b"\x00{\"jsonrpc\":\"2.0\",\"id\":1.5e300,\"result\":{\"deep\":[[[[[[[]]]]]]]}}\n",
            b"\x40\r\r\r\n\r",
            b"\x01{",
            b"\x04\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\n \xef\xbb\xbf\xef\xbb\xbf\n\xef\xbb\xbf\n",
            b"\x09{\"jsonrpc\":\"2.0\",\"error\":{\"code\":1,\"message\":\"x\"}}\n{\"id\":1,\"result\":1,\"result\":2}\n{}\n",
            b"\x0a\xef\xbb\xbf{\"id\":null}\n{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"params\":{}}\n{\"method\":\"m\"}\xef\xbb\xbf\n",
            // What the forwarding scan reads: params left unread, carried messages, and
            // envelopes it must decline.
            b"\x3f{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":tru,\"b\":\"\\x\xff\"}}\n",
            b"\x3f{\"jsonrpc\":\"2.0\",\"method\":\"proxy/successor\",\"params\":{\"method\":\"u\",\"params\":[1]}}\n",
            b"\x3f{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[}\n",
            b"\x3f{\"jsonrpc\":\"2.0\",\"params\":1,\"method\":\"m\",\"id\":2}\n{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"x\":1}\n",
        ];
        for input in inputs {
            super::line_reader(input);
        }
        let mut long = vec![0x03];
        long.extend(std::iter::repeat_n(b'x', 1000));
        long.extend_from_slice(b"\r\n{\"jsonrpc\":\"2.0\",\"method\":\"after\"}\n");
        long.extend(std::iter::repeat_n(b'y', 201));
        super::line_reader(&long);
        let mut exact = vec![0x10];
        exact.extend(std::iter::repeat_n(b'z', 200));
        exact.push(b'\n');
        exact.extend(std::iter::repeat_n(b'z', 199));
        exact.extend_from_slice(b"\r\n");
        super::line_reader(&exact);
    }
}
