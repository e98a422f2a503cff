//! Which request of the agent a message answers, read from its bytes as they stream past,
//! without parsing them: the turn-counting watch reads the agent's answers so, whatever their
//! size and however they are cut, and a POST body refused as too large, of the wrong type or as
//! invalid JSON is looked through so, because the
//! agent's request it answers must fail rather than wait for ever. [`AnswerScan`] is a small
//! state machine over the bytes: it keeps only which top-level member it is in and the raw
//! value of `id` (at most [`MAX_ID`] bytes), never the body, so a refused body of any size is
//! looked through in constant memory, however it is cut into pieces.
//!
//! The rule: the scan reads the top-level members in order and decides at the first point
//! that says what the message is. `method` or `params` make it a request or notification
//! (whose id is the client's, not the agent's): nothing. Once it has seen both an `id` (its
//! value complete) and a `result` or `error` member (its value not needed), it is an answer
//! with that id, wherever in the body the two come. A body that ends, or is cut off (by the
//! time bound, or the peer leaving), before that point names nothing, as does one that is not a
//! JSON object or whose `id` is longer than [`MAX_ID`]: no pending request is failed on a guess
//! (the refused message may as well be a request of the client's), and the agent's request
//! waits for a valid answer, a cancel or the connection's end.

/// The longest raw `id` looked for: the ids are the agent's own (numbers, short strings), so a
/// longer one answers nothing pending.
pub(crate) const MAX_ID: usize = 1024;

/// The raw `id` of the answer that `body` (a whole body, or its start) is, if it says so.
pub(crate) fn answer_id(body: &[u8]) -> Option<String> {
    let mut scan = AnswerScan::new();
    scan.feed(body);
    scan.answer_id().map(str::to_owned)
}

/// Where the scan is in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the opening `{`.
    Start,
    /// Expecting a member's name (after `{` or `,`).
    Key,
    /// Inside a member's name (`escape`: after a backslash).
    InKey { escape: bool },
    /// Expecting the `:` after a name.
    Colon,
    /// Expecting a member's value.
    Value,
    /// Inside a string value.
    Str { escape: bool },
    /// Inside an array or object value, `depth` brackets deep.
    Nested {
        depth: usize,
        in_str: bool,
        escape: bool,
    },
    /// Inside a number, `true`, `false` or `null`: it ends at a delimiter.
    Scalar,
    /// Expecting `,` or `}` after a value.
    After,
    /// Decided (see [`AnswerScan::answer_id`]).
    Done,
}

/// The members that matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Id,
    Other,
}

/// The streaming scan of one message for the id of the answer it is (see the module's rule).
#[derive(Debug)]
pub(crate) struct AnswerScan {
    state: State,
    /// The member name being read, its first bytes only (the names that matter are short).
    key: [u8; 8],
    key_len: usize,
    member: Member,
    /// The value of the `id` member being read.
    value: Vec<u8>,
    /// The last complete `id`.
    id: Option<Vec<u8>>,
    /// A `result` or `error` member was seen.
    answer: bool,
    /// Of those, a `result`.
    success: bool,
    /// The decision: `Some` once [`State::Done`] with an answer's id.
    found: Option<String>,
}

impl Default for AnswerScan {
    fn default() -> Self {
        Self::new()
    }
}

impl AnswerScan {
    pub(crate) fn new() -> AnswerScan {
        AnswerScan {
            state: State::Start,
            key: [0; 8],
            key_len: 0,
            member: Member::Other,
            value: Vec::new(),
            id: None,
            answer: false,
            success: false,
            found: None,
        }
    }

    /// Whether more of the body can change nothing: reading it may stop.
    pub(crate) fn is_decided(&self) -> bool {
        self.state == State::Done
    }

    /// The raw id of the answer the body is, once decided so.
    pub(crate) fn answer_id(&self) -> Option<&str> {
        self.found.as_deref()
    }

    /// Whether the answer found is a success (it has `result`, not `error`).
    pub(crate) fn is_success(&self) -> bool {
        self.found.is_some() && self.success
    }

    /// Looks through the next piece of the body.
    pub(crate) fn feed(&mut self, piece: &[u8]) {
        for &byte in piece {
            if self.state == State::Done {
                return;
            }
            self.byte(byte);
        }
    }

    fn stop(&mut self) {
        self.state = State::Done;
        self.value = Vec::new();
    }

    fn byte(&mut self, byte: u8) {
        let ws = byte.is_ascii_whitespace();
        if self.member == Member::Id
            && matches!(
                self.state,
                State::Str { .. } | State::Nested { .. } | State::Scalar
            )
            && !(self.state == State::Scalar && (ws || matches!(byte, b',' | b'}' | b']')))
        {
            if self.value.len() >= MAX_ID {
                return self.stop();
            }
            self.value.push(byte);
        }
        self.state = match self.state {
            State::Done => State::Done,
            _ if ws && !self.in_text() => return,
            State::Start if byte == b'{' => State::Key,
            State::Key if byte == b'"' => {
                self.key_len = 0;
                State::InKey { escape: false }
            }
            State::InKey { escape: true } => self.key_byte(byte, false),
            State::InKey { escape: false } if byte == b'"' => State::Colon,
            State::InKey { escape: false } => self.key_byte(byte, byte == b'\\'),
            State::Colon if byte == b':' => return self.member_named(),
            State::Value => {
                if self.member == Member::Id {
                    self.value.clear();
                    self.value.push(byte);
                }
                match byte {
                    b'"' => State::Str { escape: false },
                    b'{' | b'[' => State::Nested {
                        depth: 1,
                        in_str: false,
                        escape: false,
                    },
                    b',' | b'}' | b']' | b':' => return self.stop(),
                    _ => State::Scalar,
                }
            }
            State::Str { escape: true } => State::Str { escape: false },
            State::Str { escape: false } => match byte {
                b'"' => return self.value_ended(),
                b'\\' => State::Str { escape: true },
                _ => State::Str { escape: false },
            },
            State::Nested {
                depth,
                in_str: true,
                escape,
            } => State::Nested {
                depth,
                in_str: escape || byte != b'"',
                escape: !escape && byte == b'\\',
            },
            State::Nested { depth, .. } => match byte {
                b'"' => State::Nested {
                    depth,
                    in_str: true,
                    escape: false,
                },
                b'{' | b'[' => State::Nested {
                    depth: depth + 1,
                    in_str: false,
                    escape: false,
                },
                b'}' | b']' if depth == 1 => return self.value_ended(),
                b'}' | b']' => State::Nested {
                    depth: depth - 1,
                    in_str: false,
                    escape: false,
                },
                _ => State::Nested {
                    depth,
                    in_str: false,
                    escape: false,
                },
            },
            State::Scalar if ws || matches!(byte, b',' | b'}' | b']') => {
                self.value_ended();
                if self.state != State::Done {
                    self.byte(byte);
                }
                return;
            }
            State::Scalar => State::Scalar,
            State::After if byte == b',' => State::Key,
            // The object closed without deciding: not an answer (or no id).
            _ => return self.stop(),
        };
    }

    /// Whether whitespace is part of the text being read (inside a string or name), not
    /// between tokens.
    fn in_text(&self) -> bool {
        matches!(
            self.state,
            State::InKey { .. }
                | State::Str { .. }
                | State::Nested { in_str: true, .. }
                | State::Scalar
        )
    }

    fn key_byte(&mut self, byte: u8, escape: bool) -> State {
        if self.key_len < self.key.len() {
            self.key[self.key_len] = byte;
        }
        self.key_len += 1;
        State::InKey { escape }
    }

    /// The `:` after a name: what its member says about the message.
    fn member_named(&mut self) {
        let key = &self.key[..self.key_len.min(self.key.len())];
        let key = if self.key_len > self.key.len() {
            &b""[..]
        } else {
            key
        };
        self.member = Member::Other;
        match key {
            b"method" | b"params" => return self.stop(),
            b"result" | b"error" => {
                self.answer = true;
                self.success = key == b"result";
                if self.id.is_some() {
                    return self.decide();
                }
            }
            b"id" => self.member = Member::Id,
            _ => {}
        }
        self.state = State::Value;
    }

    fn value_ended(&mut self) {
        self.state = State::After;
        if self.member == Member::Id {
            self.id = Some(std::mem::take(&mut self.value));
            if self.answer {
                self.decide();
            }
        }
    }

    fn decide(&mut self) {
        self.found = self
            .id
            .as_deref()
            .and_then(|id| std::str::from_utf8(id).ok())
            .map(|id| id.trim().to_owned());
        self.stop();
    }
}

#[cfg(test)]
mod tests;
