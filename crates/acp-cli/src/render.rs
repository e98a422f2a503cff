//! How updates are shown: readable text (default) or one JSON line each (`--json`).

use std::io::Write;

use acp_runtime::Error;
use acp_types::*;

use crate::diff;

/// Where the stream is: inside a run of message text or of thought text (which end with a
/// newline before anything else is printed), or at the start of a line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    None,
    Message,
    Thought,
}

pub struct Renderer {
    json: bool,
    color: bool,
    run: Run,
    out: std::io::Stdout,
}

const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

impl Renderer {
    pub fn new(json: bool, color: bool) -> Self {
        Renderer {
            json,
            color,
            run: Run::None,
            out: std::io::stdout(),
        }
    }

    fn paint(&self, style: &str, text: &str) -> String {
        if self.color {
            format!("{style}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }

    /// Ends a run of streamed text with a newline.
    fn end_run(&mut self) {
        if self.run != Run::None {
            self.run = Run::None;
            let _ = writeln!(self.out);
        }
    }

    fn line(&mut self, text: &str) {
        self.end_run();
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    fn json_line(&mut self, value: &serde_json::Value) {
        let _ = writeln!(self.out, "{value}");
        let _ = self.out.flush();
    }

    /// One item of a turn's update stream.
    pub fn item(&mut self, item: &Result<SessionUpdate, Error>) {
        match item {
            Ok(update) => self.update(update),
            Err(error) => self.stream_error(error),
        }
    }

    /// The user's prompt, before its turn.
    pub fn prompt(&mut self, text: &str) {
        if !self.json {
            let shown = self.paint(BOLD, &format!("> {text}"));
            self.line(&shown);
        }
    }

    /// The end of a turn.
    pub fn stop(&mut self, reason: &StopReason) {
        if self.json {
            self.json_line(&serde_json::json!({ "stopReason": reason }));
        } else {
            let shown = self.paint(DIM, &format!("[turn ended: {reason}]"));
            self.line(&shown);
        }
    }

    fn stream_error(&mut self, error: &Error) {
        let kind = match error {
            Error::UpdatesDropped { .. } => "updates_dropped",
            Error::InvalidUpdate { .. } => "invalid_update",
            _ => "error",
        };
        if self.json {
            let mut body = serde_json::json!({ "kind": kind, "message": error.to_string() });
            match error {
                Error::InvalidUpdate {
                    session_id,
                    update,
                    error,
                } => {
                    body["sessionId"] = session_id.as_str().into();
                    body["update"] =
                        serde_json::from_str(update.get()).unwrap_or_else(|_| update.get().into());
                    body["decodeError"] = error.as_str().into();
                }
                Error::UpdatesDropped {
                    session_id,
                    updates,
                    bytes,
                    ..
                } => {
                    body["sessionId"] = session_id.as_str().into();
                    body["updates"] = (*updates).into();
                    body["bytes"] = (*bytes).into();
                }
                _ => {}
            }
            self.json_line(&serde_json::json!({ "error": body }));
            return;
        }
        let text = match error {
            Error::InvalidUpdate { update, error, .. } => {
                format!("[invalid update] {error}\n  raw: {}", update.get())
            }
            Error::UpdatesDropped { .. } => format!("[updates dropped] {error}"),
            other => format!("[error] {other}"),
        };
        let shown = self.paint(RED, &text);
        self.line(&shown);
    }

    fn update(&mut self, update: &SessionUpdate) {
        if self.json {
            let value = serde_json::to_value(update).unwrap_or_else(
                |e| serde_json::json!({ "error": { "kind": "encode", "message": e.to_string() } }),
            );
            self.json_line(&value);
            return;
        }
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if self.run == Run::Thought {
                    self.end_run();
                }
                self.run = Run::Message;
                let text = content_text(&chunk.content);
                let _ = write!(self.out, "{text}");
                let _ = self.out.flush();
            }
            SessionUpdate::AgentThoughtChunk(chunk) => {
                if self.run == Run::Message {
                    self.end_run();
                }
                let text = content_text(&chunk.content);
                let shown = self.paint(DIM, &text);
                if self.run == Run::None {
                    let prefix = self.paint(DIM, "(thinking) ");
                    let _ = write!(self.out, "{prefix}");
                }
                self.run = Run::Thought;
                let _ = write!(self.out, "{shown}");
                let _ = self.out.flush();
            }
            SessionUpdate::UserMessageChunk(chunk) => {
                let text = format!("user: {}", content_text(&chunk.content));
                self.line(&text);
            }
            SessionUpdate::Plan(plan) => {
                let mut text = String::from("plan:");
                for entry in &plan.entries {
                    let mark = match &entry.status {
                        PlanEntryStatus::Completed => "[x]",
                        PlanEntryStatus::InProgress => "[~]",
                        PlanEntryStatus::Pending => "[ ]",
                        PlanEntryStatus::Unknown(_) => "[?]",
                    };
                    text.push_str(&format!("\n  {mark} {}", entry.content));
                }
                let shown = self.paint(CYAN, &text);
                self.line(&shown);
            }
            SessionUpdate::ToolCall(call) => {
                let kind = call
                    .kind
                    .as_ref()
                    .map_or("tool".to_owned(), |k| k.to_string());
                let status = call
                    .status
                    .as_ref()
                    .map_or(String::new(), |s| format!(" [{s}]"));
                let head = format!(
                    "tool call {} ({kind}): {}{status}",
                    call.tool_call_id, call.title
                );
                let shown = self.paint(BOLD, &head);
                self.line(&shown);
                if let Some(content) = &call.content {
                    self.tool_content(content);
                }
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let mut changes = Vec::new();
                if let Some(title) = &update.title {
                    changes.push(format!("title: {title}"));
                }
                if let Some(kind) = &update.kind {
                    changes.push(format!("kind: {kind}"));
                }
                if let Some(status) = &update.status {
                    changes.push(format!("status: {status}"));
                }
                if update.raw_output.is_some() {
                    changes.push("output".to_owned());
                }
                if update.content.is_some() {
                    changes.push("content".to_owned());
                }
                if changes.is_empty() {
                    changes.push("updated".to_owned());
                }
                let text = format!("  {} -> {}", update.tool_call_id, changes.join(", "));
                self.line(&text);
                if let Some(content) = &update.content {
                    self.tool_content(content);
                }
            }
            SessionUpdate::CurrentModeUpdate(mode) => {
                let text = format!("[mode: {}]", mode.current_mode_id);
                self.line(&text);
            }
            SessionUpdate::Unknown(raw) => {
                let text = format!("[unknown update] {raw}");
                self.line(&text);
            }
            other => {
                let kind = serde_json::to_value(other)
                    .ok()
                    .and_then(|v| {
                        v.get("sessionUpdate")
                            .and_then(|k| k.as_str())
                            .map(str::to_owned)
                    })
                    .unwrap_or_else(|| "update".to_owned());
                let raw = serde_json::to_string(other).unwrap_or_default();
                let text = self.paint(DIM, &format!("[{kind}] {raw}"));
                self.line(&text);
            }
        }
    }

    fn tool_content(&mut self, content: &[ToolCallContent]) {
        for item in content {
            match item {
                ToolCallContent::Diff(d) => {
                    let text = diff::unified(&d.path, d.old_text.as_deref(), &d.new_text);
                    for line in text.lines() {
                        let style = match line.as_bytes().first() {
                            _ if line.starts_with("---") || line.starts_with("+++") => BOLD,
                            Some(b'+') => GREEN,
                            Some(b'-') => RED,
                            Some(b'@') => CYAN,
                            _ => "",
                        };
                        let shown = if style.is_empty() {
                            format!("    {line}")
                        } else {
                            format!("    {}", self.paint(style, line))
                        };
                        self.line(&shown);
                    }
                }
                ToolCallContent::Terminal(t) => {
                    let text = format!("    [terminal {} embedded]", t.terminal_id);
                    self.line(&text);
                }
                ToolCallContent::Content(c) => {
                    let text = content_text(&c.content);
                    for line in text.lines() {
                        self.line(&format!("    {line}"));
                    }
                }
                ToolCallContent::Unknown(raw) => {
                    let text = format!("    [unknown tool call content] {raw}");
                    self.line(&text);
                }
            }
        }
    }
}

/// A content block as text: text as is, anything else as a short note with its JSON.
fn content_text(block: &ContentBlock) -> String {
    match block.as_text() {
        Some(text) => text.to_owned(),
        None => format!(
            "[content: {}]",
            serde_json::to_string(block).unwrap_or_default()
        ),
    }
}
