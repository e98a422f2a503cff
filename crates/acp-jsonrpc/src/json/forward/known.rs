//! The methods a connection's forwarding scan has already checked as UTF-8, so that the same
//! few (`session/update`, `proxy/successor`) are compared by their bytes rather than checked
//! again on every line: `str::from_utf8` costs about 100 instructions a call for a 14-byte
//! method, most of it per call, and acp-jsonrpc has no `unsafe` to take checked bytes as text.

use std::cell::OnceCell;

use super::super::unchecked::same;

/// How many methods a connection remembers: the first this many distinct ones it forwards.
const SLOTS: usize = 8;

/// The longest method remembered, in bytes: with [`SLOTS`], what one connection keeps (256
/// bytes of text at most, docs/limits.md).
const LONGEST: usize = 32;

/// Methods checked once as UTF-8 (and as needing no escape: the scan remembers only those),
/// each kept for the connection's life: the first [`SLOTS`] distinct ones of at most
/// [`LONGEST`] bytes. Slots are set once and never replaced, so a method borrowed from one
/// stays valid while the scan's result is in use; a peer that sends many methods only fills
/// them, and the rest are checked as before.
#[derive(Debug, Default)]
pub(crate) struct KnownMethods {
    slots: [OnceCell<Box<str>>; SLOTS],
}

impl KnownMethods {
    /// `bytes` as text: a remembered method with the same bytes, else `bytes` checked as
    /// UTF-8 (and remembered if there is a free slot and it is short enough); `None` when
    /// they are not UTF-8.
    #[inline]
    pub(crate) fn text<'a>(&'a self, bytes: &'a [u8]) -> Option<&'a str> {
        for slot in &self.slots {
            match slot.get() {
                Some(known) if same(known.as_bytes(), bytes) => return Some(known),
                Some(_) => {}
                None => return self.check(slot, bytes),
            }
        }
        std::str::from_utf8(bytes).ok()
    }

    /// The miss: checked, and kept in the free `slot` when short enough.
    #[cold]
    fn check<'a>(&'a self, slot: &'a OnceCell<Box<str>>, bytes: &'a [u8]) -> Option<&'a str> {
        let text = std::str::from_utf8(bytes).ok()?;
        if text.len() > LONGEST {
            return Some(text);
        }
        Some(slot.get_or_init(|| text.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_first_short_methods_and_checks_the_rest() {
        let known = KnownMethods::default();
        let line = b"session/update";
        let first = known.text(line).unwrap();
        assert_eq!(first, "session/update");
        // Remembered: the text now comes from the slot, not the line.
        assert!(!std::ptr::eq(first.as_bytes(), line.as_slice()));
        assert!(std::ptr::eq(known.text(line).unwrap(), first));
        assert_eq!(known.text(b"\xff"), None);
        let long = "x".repeat(LONGEST + 1);
        assert!(std::ptr::eq(
            known.text(long.as_bytes()).unwrap().as_bytes(),
            long.as_bytes()
        ));
        for n in 0..SLOTS * 2 {
            let method = format!("m{n}");
            assert_eq!(known.text(method.as_bytes()), Some(method.as_str()));
        }
        assert_eq!(
            known
                .slots
                .iter()
                .filter(|slot| slot.get().is_some())
                .count(),
            SLOTS
        );
        assert_eq!(known.text(b"ses\xffon/update"), None);
    }

    #[test]
    fn compares_every_length_exactly() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789";
        for length in 0..=text.len() {
            let a = &text.as_bytes()[..length];
            assert!(same(a, a));
            for at in 0..length {
                let mut b = a.to_vec();
                b[at] ^= 1;
                assert!(!same(a, &b), "{length} {at}");
            }
            assert!(!same(a, &text.as_bytes()[..length.saturating_sub(1)]) || length == 0);
        }
    }
}
