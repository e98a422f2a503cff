//! v2's session updates as state: tool call upserts, and terminal output as bytes.
//!
//! Both are judged on the ordinary turn, and skipped when it has no tool call or no terminal
//! output: the checker cannot make an agent use tools.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::super::Ctx;
use super::{kind, ordinary, ordinary_failed, updates};
use crate::report::Verdict;
use crate::wire::{Event, received};

/// Evidence lines of the updates of one kind, in order.
fn lines_of<'a>(events: impl IntoIterator<Item = &'a Event>, kinds: &[&str]) -> Vec<String> {
    events
        .into_iter()
        .filter(|event| {
            event
                .session_update()
                .is_some_and(|(_, kind)| kinds.contains(&kind))
        })
        .filter_map(Event::raw)
        .map(received)
        .take(crate::limits::LOG_LINES)
        .collect()
}

pub(in crate::checks) fn upsert(ctx: &mut Ctx<'_>) -> Verdict {
    let (session, turn) = match ordinary(ctx) {
        Ok(ordinary) => ordinary,
        Err(verdict) => return verdict,
    };
    if !turn.completed() {
        return ordinary_failed(&turn);
    }
    // Each tool call's status as a client holds it; absent until the call is first seen.
    let mut status: HashMap<&str, String> = HashMap::new();
    let mut problems = Vec::new();
    let mut seen = false;
    for update in updates(&turn.events, &session).filter(|u| kind(u) == "tool_call_update") {
        seen = true;
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else {
            continue; // the schema check reports it
        };
        let before = status.get(id).cloned();
        // Omitted: unchanged (a new call starts `pending`); `null`: reset to `pending`.
        let after = match update.get("status") {
            None => before.clone().unwrap_or_else(|| "pending".to_owned()),
            Some(Value::Null) => "pending".to_owned(),
            Some(value) => value.as_str().unwrap_or_default().to_owned(),
        };
        if let Some(before) = &before
            && before != "pending"
            && after == "pending"
        {
            let how = if update.get("status") == Some(&Value::Null) {
                "`status: null`, which resets it to `pending`"
            } else {
                "`status: pending`"
            };
            problems.push(format!(
                "tool call `{id}` moved back from `{before}` to `pending` ({how})"
            ));
        }
        status.insert(id, after);
    }
    if !seen {
        return Verdict::skipped("the ordinary turn made no tool call");
    }
    if problems.is_empty() {
        return Verdict::Pass;
    }
    problems.extend(lines_of(&turn.events, &["tool_call_update"]));
    Verdict::fail(
        "applied as v2's upserts, the tool call updates do not say what the agent did",
        problems,
    )
}

/// The replacement character U+FFFD, as UTF-8.
const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// Whether a chunk is text apart from its edges: after at most three leading continuation
/// bytes (the end of a character begun in the chunk before), it is UTF-8, but for a character
/// left incomplete at its end (continued in the next chunk).
fn text_inside(chunk: &[u8]) -> bool {
    let lead = chunk
        .iter()
        .take(3)
        .take_while(|b| (0x80..0xC0).contains(*b))
        .count();
    match std::str::from_utf8(&chunk[lead..]) {
        Ok(_) => true,
        Err(error) => error.error_len().is_none(),
    }
}

/// What is wrong with the output chunks of one terminal (`data` as sent, in order): each must
/// be base64 on its own; text split between chunks must join back whole, with no U+FFFD
/// where two chunks meet. Output that is not text inside a chunk is not judged as text.
pub(super) fn judge_terminal(id: &str, chunks: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut decoded = Vec::new();
    for data in chunks {
        match STANDARD.decode(data) {
            Ok(bytes) => decoded.push(bytes),
            Err(error) => problems.push(format!(
                "a chunk of terminal `{id}` is not base64 on its own ({error}): `{data}`"
            )),
        }
    }
    if !problems.is_empty() || !decoded.iter().all(|chunk| text_inside(chunk)) {
        return problems;
    }
    if let Err(error) = std::str::from_utf8(&decoded.concat()) {
        problems.push(format!(
            "the output of terminal `{id}` is text in every chunk but stops being UTF-8 at byte {} of the whole, where chunks meet: a character split between chunks lost bytes",
            error.valid_up_to()
        ));
    }
    for (n, pair) in decoded.windows(2).enumerate() {
        if pair[0].ends_with(REPLACEMENT) || pair[1].starts_with(REPLACEMENT) {
            problems.push(format!(
                "chunks {} and {} of terminal `{id}` meet at a U+FFFD: a character split between them was replaced instead of sent as bytes",
                n + 1,
                n + 2
            ));
        }
    }
    problems
}

pub(in crate::checks) fn terminal_output(ctx: &mut Ctx<'_>) -> Verdict {
    let (session, turn) = match ordinary(ctx) {
        Ok(ordinary) => ordinary,
        Err(verdict) => return verdict,
    };
    if !turn.completed() {
        return ordinary_failed(&turn);
    }
    // Each terminal's chunks, in order.
    let mut terminals: Vec<(&str, Vec<&str>)> = Vec::new();
    for update in updates(&turn.events, &session).filter(|u| kind(u) == "terminal_output_chunk") {
        let field = |name: &str| update.get(name).and_then(Value::as_str).unwrap_or_default();
        let (id, data) = (field("terminalId"), field("data"));
        match terminals.iter_mut().find(|(t, _)| *t == id) {
            Some((_, chunks)) => chunks.push(data),
            None => terminals.push((id, vec![data])),
        }
    }
    if terminals.is_empty() {
        return Verdict::skipped("the ordinary turn sent no terminal output");
    }
    let mut problems: Vec<String> = terminals
        .iter()
        .flat_map(|(id, chunks)| judge_terminal(id, chunks))
        .collect();
    if problems.is_empty() {
        return Verdict::Pass;
    }
    problems.extend(lines_of(&turn.events, &["terminal_output_chunk"]));
    Verdict::fail(
        "terminal output is not sent as independently encoded bytes",
        problems,
    )
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use proptest::prelude::*;

    use super::judge_terminal;

    /// `bytes` cut at `cuts` (positions, any order, out of range ones ignored).
    fn split(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in cuts.into_iter().chain([bytes.len()]) {
            chunks.push(bytes[start..cut].to_vec());
            start = cut;
        }
        chunks
    }

    fn judge(chunks: &[Vec<u8>]) -> Vec<String> {
        let encoded: Vec<String> = chunks.iter().map(|c| STANDARD.encode(c)).collect();
        let data: Vec<&str> = encoded.iter().map(String::as_str).collect();
        judge_terminal("t", &data)
    }

    proptest! {
        /// Text split anywhere, even inside a character, each chunk encoded on its own, passes.
        #[test]
        fn text_split_anywhere_as_bytes_passes(text in "\\PC{0,40}", cuts in prop::collection::vec(0usize..200, 0..6)) {
            let text = text.replace('\u{FFFD}', "?");
            prop_assert!(judge(&split(text.as_bytes(), &cuts)).is_empty());
        }

        /// A character split between two chunks and replaced by U+FFFD on both sides fails,
        /// and so does one that lost a byte at the split.
        #[test]
        fn a_split_character_replaced_or_cut_short_fails(
            before in "[a-z]{0,8}",
            wide in "[\u{80}-\u{10FFFF}]",
            after in "[a-z]{0,8}",
            at in 1usize..4,
        ) {
            let wide = wide.replace('\u{FFFD}', "é");
            let at = at.min(wide.len() - 1);
            let (head, tail) = wide.as_bytes().split_at(at);
            let replaced = [
                [before.as_bytes(), "\u{FFFD}".as_bytes()].concat(),
                ["\u{FFFD}".as_bytes(), after.as_bytes()].concat(),
            ];
            prop_assert!(!judge(&replaced).is_empty());
            let cut_short = [
                [before.as_bytes(), head].concat(),
                [&tail[1..], after.as_bytes()].concat(),
            ];
            prop_assert!(!judge(&cut_short).is_empty());
        }

        /// Output that is not text inside a chunk is not judged as text.
        #[test]
        fn binary_output_is_not_judged_as_text(bytes in prop::collection::vec(any::<u8>(), 0..64), cuts in prop::collection::vec(0usize..80, 0..4)) {
            let chunks = split(&bytes, &cuts);
            let binary = chunks.iter().any(|c| !super::text_inside(c));
            if binary {
                prop_assert!(judge(&chunks).is_empty());
            }
        }
    }

    #[test]
    fn a_base64_text_split_between_chunks_fails() {
        let whole = STANDARD.encode("✓ done\n");
        let problems = judge_terminal("t", &[&whole[..5], &whole[5..]]);
        assert!(
            problems[0].contains("is not base64 on its own"),
            "{problems:?}"
        );
    }
}
