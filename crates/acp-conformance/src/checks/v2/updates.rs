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

/// Where a byte string stops being UTF-8, if it does: the position of the first bad byte.
fn utf8_error_at(bytes: &[u8]) -> Option<usize> {
    std::str::from_utf8(bytes).err().map(|e| e.valid_up_to())
}

/// The replacement character U+FFFD, as UTF-8.
const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

pub(in crate::checks) fn terminal_output(ctx: &mut Ctx<'_>) -> Verdict {
    let (session, turn) = match ordinary(ctx) {
        Ok(ordinary) => ordinary,
        Err(verdict) => return verdict,
    };
    if !turn.completed() {
        return ordinary_failed(&turn);
    }
    // Each terminal's output: the decoded chunks, in order.
    let mut terminals: Vec<(&str, Vec<Vec<u8>>)> = Vec::new();
    let mut problems = Vec::new();
    for update in updates(&turn.events, &session).filter(|u| kind(u) == "terminal_output_chunk") {
        let id = update
            .get("terminalId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let data = update
            .get("data")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let bytes = match STANDARD.decode(data) {
            Ok(bytes) => bytes,
            Err(error) => {
                problems.push(format!(
                    "a chunk of terminal `{id}` is not base64 on its own ({error}): `{data}`"
                ));
                continue;
            }
        };
        match terminals.iter_mut().find(|(t, _)| *t == id) {
            Some((_, chunks)) => chunks.push(bytes),
            None => terminals.push((id, vec![bytes])),
        }
    }
    if terminals.is_empty() && problems.is_empty() {
        return Verdict::skipped("the ordinary turn sent no terminal output");
    }
    for (id, chunks) in &terminals {
        let joined: Vec<u8> = chunks.concat();
        // Where one chunk ends and the next begins (not the end of the output).
        let mut boundaries: Vec<usize> = chunks
            .iter()
            .scan(0, |end, chunk| {
                *end += chunk.len();
                Some(*end)
            })
            .collect();
        boundaries.pop();
        let near_boundary = |at: usize| boundaries.iter().any(|b| at + 4 > *b && at <= *b + 4);
        // Output that is not UTF-8 away from the boundaries is not text, and not judged as such.
        if let Some(at) = utf8_error_at(&joined) {
            if near_boundary(at) {
                problems.push(format!(
                    "the output of terminal `{id}` stops being UTF-8 at byte {at}, where one chunk ends: a character split between chunks lost bytes"
                ));
            }
            continue;
        }
        for (n, pair) in chunks.windows(2).enumerate() {
            if pair[0].ends_with(REPLACEMENT) || pair[1].starts_with(REPLACEMENT) {
                problems.push(format!(
                    "chunks {} and {} of terminal `{id}` meet at a U+FFFD: a character split between them was replaced instead of sent as bytes",
                    n + 1,
                    n + 2
                ));
            }
        }
    }
    if problems.is_empty() {
        return Verdict::Pass;
    }
    problems.extend(lines_of(&turn.events, &["terminal_output_chunk"]));
    Verdict::fail(
        "terminal output is not sent as independently encoded bytes",
        problems,
    )
}
