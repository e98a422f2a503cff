//! A small JSON reader for the hand-written fast paths of the few message shapes that are the
//! bulk of real traffic (streamed text chunks on the client, file contents on the agent).
//!
//! It reads exactly one expected shape and answers `None` for anything else: a member name it
//! was not told about or a repeated one, a name or literal spelled with escapes, a value of another JSON type,
//! or text that is not JSON. `None` is never an error, only "not mine": the caller then
//! decodes through the generated `Deserialize` impls, which hold every rule. So a fast path can
//! only ever agree with the generic decode, and each one has a property test saying so.

use acp_jsonrpc::json::{skip_whitespace, string_at};
use std::borrow::Cow;

pub(crate) struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    pub(crate) fn new(text: &'a str) -> Self {
        Reader { text, at: 0 }
    }

    /// Skips whitespace, then takes `byte` if it comes next.
    #[inline]
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.at = skip_whitespace(self.text, self.at);
        (self.text.as_bytes().get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    /// A string value, borrowed when it has no escapes.
    #[inline]
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.at = skip_whitespace(self.text, self.at);
        let (value, end) = string_at(self.text, self.at)?;
        self.at = end;
        Some(value)
    }

    /// Which of `options` the next string is, spelled without escapes (a spelling with escapes
    /// is left to the generic decode, as anything else this reader does not expect).
    #[inline]
    pub(crate) fn literal(&mut self, options: &[&str]) -> Option<usize> {
        self.at = skip_whitespace(self.text, self.at);
        let rest = self.text.as_bytes().get(self.at..)?.strip_prefix(b"\"")?;
        let found = options.iter().position(|option| {
            rest.strip_prefix(option.as_bytes())
                .is_some_and(|after| after.first() == Some(&b'"'))
        })?;
        self.at += options[found].len() + 2;
        Some(found)
    }

    /// Reads an object whose member names are among `keys` (at most 32), each at most once,
    /// handing each name's index to `member`, which reads the value.
    #[inline]
    pub(crate) fn object(
        &mut self,
        keys: &[&str],
        mut member: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        self.expect(b'{')?;
        let mut seen = 0u32;
        loop {
            let key = self.literal(keys)?;
            if seen & (1 << key) != 0 {
                return None;
            }
            seen |= 1 << key;
            self.expect(b':')?;
            member(self, key)?;
            if self.expect(b',').is_none() {
                return self.expect(b'}');
            }
        }
    }

    /// A text content block, `{"type":"text","text":…}` (either protocol version's), and its
    /// text.
    pub(crate) fn text_block(&mut self) -> Option<Cow<'a, str>> {
        let mut is_text = false;
        let mut text = None;
        self.object(&["type", "text"], |reader, key| match key {
            0 => reader.literal(&["text"]).map(|_| is_text = true),
            _ => reader.string().map(|value| text = Some(value)),
        })?;
        text.filter(|_| is_text)
    }

    /// Nothing but whitespace is left.
    #[inline]
    pub(crate) fn end(&self) -> Option<()> {
        (skip_whitespace(self.text, self.at) == self.text.len()).then_some(())
    }
}
