//! Which request of the agent a refused POST was answering, from the start of its body only:
//! a body refused as too large, of the wrong type or as invalid JSON is not parsed, yet the
//! agent's request it answers must fail rather than wait for ever. The scan reads the
//! top-level members in order and decides at the first that says what the message is: an
//! `id` with a `result` or `error` member is an answer; `method` or `params` make it a
//! request or notification (whose id is the client's, not the agent's). A body cut before
//! that point, or that is not a JSON object, names nothing.

/// How much of a refused body is looked at for its id.
pub(crate) const PREFIX: usize = 64 * 1024;

/// The raw `id` of the answer that `prefix` (the start of a message) is, if it says so
/// within it.
pub(crate) fn answer_id(prefix: &[u8]) -> Option<&str> {
    let mut at = Cursor {
        bytes: prefix,
        at: 0,
    };
    at.ws();
    at.eat(b'{')?;
    let (mut id, mut answer) = (None, false);
    loop {
        at.ws();
        let key = at.string()?;
        at.ws();
        at.eat(b':')?;
        at.ws();
        match key {
            b"id" => id = Some(at.value()?),
            b"method" | b"params" => return None,
            b"result" | b"error" => {
                answer = true;
                if id.is_some() {
                    break;
                }
                at.value()?;
            }
            _ => {
                at.value()?;
            }
        }
        at.ws();
        match at.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    let id = std::str::from_utf8(id?).ok()?.trim();
    answer.then_some(id)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn next(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    fn ws(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.at += 1;
        }
    }

    /// A string's raw contents (escapes left as they are), past its closing quote.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        loop {
            match self.next()? {
                b'\\' => {
                    self.next()?;
                }
                b'"' => return Some(&self.bytes[start..self.at - 1]),
                _ => {}
            }
        }
    }

    /// One value's raw text, skipped whole (nested arrays and objects, strings with their
    /// brackets); `None` if the prefix ends inside it (a number too: it may go on).
    fn value(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        match *self.bytes.get(self.at)? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.bytes.get(self.at)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                    self.at += 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            _ => loop {
                let byte = *self.bytes.get(self.at)?;
                if matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace() {
                    break;
                }
                self.at += 1;
            },
        }
        Some(&self.bytes[start..self.at])
    }
}

#[cfg(test)]
mod tests {
    use super::answer_id;

    #[test]
    fn answers_are_told_from_requests_within_a_prefix() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"jsonrpc":"2.0","id":5,"result":{"outcome":"#, Some("5")),
            (
                r#"{"jsonrpc":"2.0","id":"a\"b","error":{"#,
                Some(r#""a\"b""#),
            ),
            (r#" { "id" : 7 , "result" : null } "#, Some("7")),
            (
                r#"{"result":{"a":[1,{"b":"}"}]},"jsonrpc":"2.0","id":3}"#,
                Some("3"),
            ),
            (r#"{"result":{"a":[1,2"#, None),
            (r#"{"jsonrpc":"2.0","id":5,"method":"x","params":{"#, None),
            (r#"{"jsonrpc":"2.0","id":5,"params":{},"result":1}"#, None),
            (r#"{"jsonrpc":"2.0","id":5"#, None),
            (r#"{"jsonrpc":"2.0","id":5}"#, None),
            (r#"[{"id":5,"result":1}]"#, None),
            ("not json", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(answer_id(text.as_bytes()), *want, "{text}");
        }
    }
}
