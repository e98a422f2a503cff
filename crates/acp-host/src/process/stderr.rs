//! The agent's stderr: drained continuously into a bounded tail of lines.

use std::collections::VecDeque;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use async_process::ChildStderr;

use crate::os::lock;

/// How many stderr lines the tail keeps by default: 64.
pub const DEFAULT_STDERR_TAIL_LINES: usize = 64;

/// How many bytes of stderr text the tail keeps by default: 16 KiB.
pub const DEFAULT_STDERR_TAIL_BYTES: usize = 16 * 1024;

/// The longest stderr line delivered in one piece: 64 KiB. Longer lines reach the
/// callback and the tail as several consecutive lines, so that an agent writing endless
/// text without a line break cannot make the tail grow without bound.
pub const MAX_STDERR_LINE_BYTES: usize = 64 * 1024;

/// Bytes requested from the stderr pipe per read.
pub(super) const STDERR_READ_CHUNK: usize = 64 * 1024;

pub(super) type StderrLineCallback = Arc<dyn Fn(&str) + Send + Sync>;

/// The last lines of stderr, plus the line being written.
pub(super) struct StderrTail {
    lines: VecDeque<String>,
    /// Total length of `lines`.
    bytes: usize,
    max_lines: usize,
    max_bytes: usize,
    /// The start of a line whose line break has not arrived yet.
    partial: Vec<u8>,
}

impl StderrTail {
    pub(super) fn new(max_lines: usize, max_bytes: usize) -> Self {
        Self {
            lines: VecDeque::new(),
            bytes: 0,
            max_lines,
            max_bytes,
            partial: Vec::new(),
        }
    }

    /// Takes in a piece of stderr; each line it completes is kept and, when `completed` is
    /// given, also appended there.
    fn absorb(&mut self, mut chunk: &[u8], mut completed: Option<&mut Vec<String>>) {
        while let Some(newline) = chunk.iter().position(|&byte| byte == b'\n') {
            self.partial.extend_from_slice(&chunk[..newline]);
            if self.partial.last() == Some(&b'\r') {
                self.partial.pop();
            }
            self.complete_line(completed.as_deref_mut());
            chunk = &chunk[newline + 1..];
        }
        self.partial.extend_from_slice(chunk);
        while self.partial.len() > MAX_STDERR_LINE_BYTES {
            let piece = utf8_piece_len(&self.partial, MAX_STDERR_LINE_BYTES);
            let rest = self.partial.split_off(piece);
            self.complete_line(completed.as_deref_mut());
            self.partial = rest;
        }
    }

    /// End of stderr: an unterminated last line still counts.
    fn finish(&mut self, completed: Option<&mut Vec<String>>) {
        if !self.partial.is_empty() {
            self.complete_line(completed);
        }
    }

    fn complete_line(&mut self, completed: Option<&mut Vec<String>>) {
        let line = String::from_utf8_lossy(&self.partial).into_owned();
        self.partial.clear();
        if let Some(completed) = completed {
            completed.push(line.clone());
        }
        self.keep(line);
    }

    fn keep(&mut self, mut line: String) {
        if line.len() > self.max_bytes {
            line = keep_end(&line, self.max_bytes).to_owned();
        }
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.lines.len() > self.max_lines || self.bytes > self.max_bytes {
            let Some(oldest) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= oldest.len();
        }
    }

    pub(super) fn text(&self) -> String {
        let mut text = Vec::from_iter(self.lines.iter().map(String::as_str)).join("\n");
        if !self.partial.is_empty() && self.max_lines > 0 {
            let partial = String::from_utf8_lossy(&self.partial);
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(keep_end(&partial, self.max_bytes));
        }
        text
    }
}

/// The end of `text`, at most `max_bytes` long, starting on a character boundary.
fn keep_end(text: &str, max_bytes: usize) -> &str {
    &text[text.ceil_char_boundary(text.len().saturating_sub(max_bytes))..]
}

/// How much of `bytes` to cut off as one piece of at most `limit` bytes without splitting
/// a UTF-8 sequence (unless the input is not UTF-8 to begin with).
fn utf8_piece_len(bytes: &[u8], limit: usize) -> usize {
    let is_continuation = |byte: u8| byte & 0b1100_0000 == 0b1000_0000;
    (limit.saturating_sub(3)..=limit)
        .rev()
        .find(|&cut| cut > 0 && !is_continuation(bytes[cut]))
        .unwrap_or(limit)
}

/// The reading end of stderr and what to do with each line.
pub(super) struct StderrDrain<'a> {
    pub(super) stderr: ChildStderr,
    /// False once end-of-file (or a read error) was seen.
    pub(super) open: bool,
    pub(super) chunk: Vec<u8>,
    pub(super) tail: &'a Mutex<StderrTail>,
    pub(super) stderr_line: Option<StderrLineCallback>,
}

impl StderrDrain<'_> {
    pub(super) async fn read(&mut self) -> io::Result<usize> {
        futures_lite::AsyncReadExt::read(&mut self.stderr, &mut self.chunk).await
    }

    pub(super) fn absorb(&mut self, read: io::Result<usize>) {
        let mut completed = self.stderr_line.as_ref().map(|_| Vec::new());
        {
            let mut tail = lock(self.tail);
            match read {
                Ok(0) | Err(_) => {
                    // A read error on a pipe does not heal; treat it as the end.
                    self.open = false;
                    tail.finish(completed.as_mut());
                }
                Ok(length) => tail.absorb(&self.chunk[..length], completed.as_mut()),
            }
        }
        // Outside the lock, so the callback may itself look at the tail.
        if let (Some(callback), Some(lines)) = (&self.stderr_line, completed) {
            for line in &lines {
                let _ = catch_unwind(AssertUnwindSafe(|| callback(line)));
            }
        }
    }
}
