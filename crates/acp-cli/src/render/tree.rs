//! How a session's subagents are shown beside it: every line a subagent's update prints
//! starts with its title, indented by its depth (`  [Explore] ...`, `    [Search] ...`), so
//! that a person can follow two at once as their lines interleave; with `--json`, each
//! update is wrapped with the session it belongs to (and, for a subagent, its parent). Also
//! the JSON of the reports of what the runtime dropped or does not follow.

use std::io::Write;

use acp_runtime::Error;
use acp_runtime::client::{DropReason, DroppedUpdates, Session};
use acp_types::{SessionId, SessionUpdate};
use serde_json::{Value, json};

use super::text::truncate;

/// Characters of a subagent's title shown before each of its lines.
const TITLE_SHOWN: usize = 24;

/// What starts each line of `session`'s updates: nothing for the session acp opened, the
/// title (or the id) of a subagent, indented two spaces per level.
pub fn prefix(session: &Session) -> String {
    let Some(subagent) = session.subagent() else {
        return String::new();
    };
    let name = match subagent.title.as_deref().map(str::trim) {
        Some(title) if !title.is_empty() => truncate(title, TITLE_SHOWN),
        _ => truncate(session.id().as_str(), TITLE_SHOWN),
    };
    format!("{}[{name}] ", "  ".repeat(subagent.depth))
}

/// What starts each line of the updates for a session id acp neither opened nor follows.
pub fn unopened_prefix(id: &SessionId) -> String {
    format!("[{}, not announced] ", truncate(id.as_str(), TITLE_SHOWN))
}

/// A writer that starts every line with a prefix (the current session's), whatever wrote
/// it: the renderer streams text in pieces and does not know where lines begin.
pub struct Prefixed<W> {
    inner: W,
    prefix: String,
    line_start: bool,
}

impl<W: Write> Prefixed<W> {
    pub fn new(inner: W) -> Self {
        Prefixed {
            inner,
            prefix: String::new(),
            line_start: true,
        }
    }

    /// The prefix of the lines written from now on.
    pub fn set_prefix(&mut self, prefix: String) {
        self.prefix = prefix;
    }
}

impl<W: Write> Write for Prefixed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for piece in buf.split_inclusive(|b| *b == b'\n') {
            if self.line_start && !self.prefix.is_empty() {
                self.inner.write_all(self.prefix.as_bytes())?;
            }
            self.inner.write_all(piece)?;
            self.line_start = piece.ends_with(b"\n");
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `--json`: an update with its session (and, for a subagent, the session it belongs to).
pub fn update_json(session: &Session, update: &SessionUpdate) -> Value {
    let update = serde_json::to_value(update)
        .unwrap_or_else(|e| json!({ "error": { "kind": "encode", "message": e.to_string() } }));
    let mut line = json!({ "sessionId": session.id().as_str(), "update": update });
    if let Some(parent) = session.parent_id() {
        line["parentSessionId"] = parent.as_str().into();
    }
    line
}

/// `--json`: the fields of a stream error that [`super`]'s generic ones do not cover.
pub fn error_fields(error: &Error, body: &mut Value) {
    if let Error::SubagentNotFollowed {
        subagent,
        limit,
        updates,
        bytes,
        ..
    } = error
    {
        body["subagent"] = subagent.as_str().into();
        body["limit"] = (*limit).into();
        body["updates"] = (*updates).into();
        body["bytes"] = (*bytes).into();
    }
}

/// `--json`: a report of updates dropped where no session stream could tell it.
pub fn dropped_json(report: &DroppedUpdates) -> Value {
    let reason = match report.reason {
        DropReason::UnopenedBudget { .. } => "unopened_budget",
        DropReason::UnopenedIds { .. } => "unopened_ids",
        _ => "other",
    };
    json!({ "error": {
        "kind": "updates_dropped",
        "message": report.to_string(),
        "sessionId": report.session_id,
        "updates": report.updates,
        "bytes": report.bytes,
        "reason": reason,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_gets_the_prefix_however_it_was_written() {
        let mut out = Prefixed::new(Vec::new());
        out.write_all(b"parent line\n").unwrap();
        out.set_prefix("  [child] ".into());
        out.write_all(b"stream").unwrap();
        out.write_all(b"ed text\nand a sec").unwrap();
        out.write_all(b"ond line\n").unwrap();
        out.set_prefix(String::new());
        out.write_all(b"parent again\n").unwrap();
        let text = String::from_utf8(out.inner).unwrap();
        assert_eq!(
            text,
            "parent line\n  [child] streamed text\n  [child] and a second line\nparent again\n"
        );
    }
}
