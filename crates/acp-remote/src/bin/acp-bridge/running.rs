//! The turns a client left running, seen as its lines pass through the bridge: when the client
//! goes away (a close, or a connection that died), its agent is sent `session/cancel` for each
//! of them before its input ends, so that it stops acting for nobody (issue 33).
//!
//! A `session/prompt` from the client starts a turn; the agent's answer with the same id ends
//! it. A line is scanned only if it can matter: from the client, one that names
//! `session/prompt`; from the agent, while turns run, one without a `"method"` member name
//! (an answer, not one of the turn's many updates). Those are read with acp-jsonrpc's envelope
//! scan, and only a prompt's line is decoded further, for its `sessionId`. What is kept is bounded: at most [`MAX_TURNS`] turns, ids and session
//! ids of at most [`MAX_ID`] bytes, and a line split across reads is reassembled only up to
//! [`MAX_CARRY`] bytes. Every shortcut errs toward one cancel too many: an answer the bridge
//! does not see leaves its turn counted, and a `session/cancel` for a session that is idle is
//! one an agent ignores (the protocol makes cancelling a notification with no answer).

use std::collections::HashMap;

use acp_jsonrpc::json::envelope;
use memchr::memmem;
use serde::Deserialize;

/// Turns followed per connection; a prompt beyond is not followed (its turn ends as before:
/// by the end of the agent's input).
pub(crate) const MAX_TURNS: usize = 256;
/// The longest request id or session id followed, in bytes of JSON text.
pub(crate) const MAX_ID: usize = 256;
/// The longest line reassembled from pieces. Longer lines (large prompts, large answers) are
/// skipped: a prompt so sent is not followed, an answer so sent leaves its turn counted.
pub(crate) const MAX_CARRY: usize = 64 * 1024;

/// One direction's lines, reassembled from the pieces a copy reads.
#[derive(Default)]
struct Lines {
    /// The start of a line whose end has not been read yet.
    carry: Vec<u8>,
    /// The current line is longer than [`MAX_CARRY`]: skip to its end.
    skipping: bool,
}

impl Lines {
    /// Calls `line` with every complete line in `chunk`, the carried start included.
    fn feed(&mut self, mut chunk: &[u8], mut line: impl FnMut(&[u8])) {
        while let Some(end) = chunk.iter().position(|&b| b == b'\n') {
            let (head, rest) = (&chunk[..end], &chunk[end + 1..]);
            if self.skipping {
                self.skipping = false;
            } else if self.carry.is_empty() {
                line(head);
            } else if self.carry.len() + head.len() <= MAX_CARRY {
                self.carry.extend_from_slice(head);
                line(&self.carry);
            }
            self.carry.clear();
            chunk = rest;
        }
        if chunk.is_empty() || self.skipping {
            return;
        }
        if self.carry.len() + chunk.len() > MAX_CARRY {
            self.carry = Vec::new();
            self.skipping = true;
        } else {
            self.carry.extend_from_slice(chunk);
        }
    }
}

/// The turns running on one connection, by request id (its JSON text).
#[derive(Default)]
pub(crate) struct RunningTurns {
    turns: HashMap<String, String>,
    from_client: Lines,
    from_agent: Lines,
}

#[derive(Deserialize)]
struct Prompt<'a> {
    #[serde(borrow)]
    params: PromptParams<'a>,
}

#[derive(Deserialize)]
struct PromptParams<'a> {
    #[serde(borrow, rename = "sessionId")]
    session_id: std::borrow::Cow<'a, str>,
}

impl RunningTurns {
    /// What the client sent, as the copy to the agent reads it.
    pub(crate) fn client_sent(&mut self, chunk: &[u8]) {
        let turns = &mut self.turns;
        self.from_client.feed(chunk, |line| {
            // The envelope scan reads no escaped `method`, so a prompt always names it so.
            if memmem::find(line, b"session/prompt").is_none() {
                return;
            }
            let Some(text) = std::str::from_utf8(line).ok() else {
                return;
            };
            let Some(seen) = envelope(text) else { return };
            let (Some("session/prompt"), Some(id)) = (seen.method, seen.id) else {
                return;
            };
            if turns.len() >= MAX_TURNS || id.len() > MAX_ID {
                return;
            }
            let Ok(prompt) = serde_json::from_str::<Prompt<'_>>(text) else {
                return;
            };
            let session = prompt.params.session_id;
            if session.len() <= MAX_ID {
                turns.insert(id.to_owned(), session.into_owned());
            }
        });
    }

    /// What the agent sent, as the copy to the client reads it.
    pub(crate) fn agent_sent(&mut self, chunk: &[u8]) {
        if self.turns.is_empty() && self.from_agent.carry.is_empty() && !self.from_agent.skipping {
            // Nothing to end, and no line in the middle: only the last line's start matters.
            if let Some(end) = chunk.iter().rposition(|&b| b == b'\n') {
                self.from_agent.feed(&chunk[end + 1..], |_| {});
                return;
            }
        }
        let turns = &mut self.turns;
        self.from_agent.feed(chunk, |line| {
            // Updates and the agent's own requests are most lines of a turn; an answer whose
            // result holds a `"method"` name is skipped too, leaving its turn to be cancelled.
            if memmem::find(line, b"\"method\"").is_some() {
                return;
            }
            let Some(text) = std::str::from_utf8(line).ok() else {
                return;
            };
            if let Some(seen) = envelope(text)
                && seen.method.is_none()
                && let Some(id) = seen.id
            {
                turns.remove(id);
            }
        });
    }

    /// The `session/cancel` lines for the sessions with a turn still running, one per session,
    /// newline-terminated, in a stable order.
    pub(crate) fn cancels(&self) -> Vec<u8> {
        let mut sessions: Vec<&str> = self.turns.values().map(String::as_str).collect();
        sessions.sort_unstable();
        sessions.dedup();
        let mut out = Vec::new();
        for session in sessions {
            let line = serde_json::json!({
                "jsonrpc": "2.0",
                "method": "session/cancel",
                "params": { "sessionId": session },
            });
            out.extend_from_slice(line.to_string().as_bytes());
            out.push(b'\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(id: &str, session: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[]}}}}"#
        ) + "\n"
    }

    #[test]
    fn an_answered_turn_is_not_cancelled_and_a_running_one_is() {
        let mut turns = RunningTurns::default();
        turns.client_sent(prompt("1", "a").as_bytes());
        turns.client_sent(prompt("\"x\"", "b").as_bytes());
        turns.agent_sent(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\n");
        turns.agent_sent(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"stopReason\":\"end_turn\"}}\n",
        );
        assert_eq!(
            String::from_utf8(turns.cancels()).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"b\"}}\n"
        );
    }

    #[test]
    fn an_answer_naming_a_method_errs_toward_a_cancel() {
        let mut turns = RunningTurns::default();
        turns.client_sent(prompt("1", "a").as_bytes());
        turns.agent_sent(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"_meta\":{\"method\":1}}}\n");
        assert!(
            String::from_utf8(turns.cancels())
                .unwrap()
                .contains("\"a\"")
        );
    }

    #[test]
    fn lines_split_across_reads_are_followed_both_ways() {
        let mut turns = RunningTurns::default();
        let line = prompt("7", "s");
        let (a, b) = line.split_at(20);
        turns.client_sent(a.as_bytes());
        turns.client_sent(b.as_bytes());
        assert!(!turns.cancels().is_empty());
        let answer = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n";
        for byte in answer.chunks(1) {
            turns.agent_sent(byte);
        }
        assert!(turns.cancels().is_empty());
    }

    #[test]
    fn what_is_kept_is_bounded() {
        let mut turns = RunningTurns::default();
        for i in 0..MAX_TURNS + 10 {
            turns.client_sent(prompt(&i.to_string(), &format!("s{i}")).as_bytes());
        }
        assert_eq!(turns.turns.len(), MAX_TURNS);
        // A line longer than the carry is skipped whole, and the next one is read.
        let mut turns = RunningTurns::default();
        turns.client_sent(&vec![b'x'; MAX_CARRY + 1]);
        assert!(turns.from_client.carry.is_empty());
        turns.client_sent(b"\n");
        turns.client_sent(prompt("1", "after").as_bytes());
        assert!(
            String::from_utf8(turns.cancels())
                .unwrap()
                .contains("after")
        );
        // A long id is not followed.
        let mut turns = RunningTurns::default();
        turns.client_sent(prompt(&format!("\"{}\"", "i".repeat(MAX_ID)), "s").as_bytes());
        assert!(turns.cancels().is_empty());
    }
}
