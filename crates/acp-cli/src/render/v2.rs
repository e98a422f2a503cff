//! Protocol v2's updates on the terminal (feature `unstable-protocol-v2`): streamed message
//! and thought chunks, a tool call's line each time its title or status changes, plans,
//! terminal output as it comes (a character split between chunks printed whole), and the
//! turn's end from the `idle` state. The whole entities are rebuilt by the runtime's
//! [`Conversation`]; this only decides what to print. With `--json`, one line per update:
//! `{"sessionId":…,"update":…}`, as v1's.

use std::collections::HashMap;
use std::io::Write;

use acp_runtime::acp_types::v2::*;
use acp_runtime::client::v2::{Changed, Conversation};

use super::text::truncate;
use super::{BOLD, CYAN, DIM, RESET};

/// What was printed last without a newline.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    None,
    Message,
    Thought,
    Terminal,
}

/// Prints one v2 session's updates.
pub struct Renderer {
    json: bool,
    color: bool,
    run: Run,
    chat: Conversation,
    /// Per tool call, the line printed last for it (a new line only when it changes).
    tool_lines: HashMap<ToolCallId, String>,
    /// Per terminal, how many bytes of its output are printed.
    printed: HashMap<TerminalId, usize>,
    /// The prompt acp sent last, until its echo comes (which is not printed again).
    pending_prompt: Option<String>,
    /// Whether the last thing printed ended a line.
    at_line_start: bool,
    out: std::io::Stdout,
}

impl Renderer {
    pub fn new(json: bool, color: bool) -> Self {
        Renderer {
            json,
            color,
            run: Run::None,
            chat: Conversation::default(),
            tool_lines: HashMap::new(),
            printed: HashMap::new(),
            pending_prompt: None,
            at_line_start: true,
            out: std::io::stdout(),
        }
    }

    /// The user's prompt, before its turn; its echo is not printed again.
    pub fn prompt(&mut self, text: &str) {
        self.pending_prompt = Some(text.to_owned());
        if !self.json {
            let shown = self.paint(BOLD, &format!("> {text}"));
            self.line(&shown);
        }
    }

    /// A user message from the agent: shown unless it is the echo of acp's own prompt.
    fn user_message(&mut self, text: String) {
        if self.pending_prompt.as_deref() == Some(text.as_str()) {
            self.pending_prompt = None;
            return;
        }
        self.line(&format!("user: {text}"));
    }

    /// The end of a turn, from its `idle` state (`{"stopReason":…}` with `--json`).
    pub fn stop(&mut self, kind: &IdleStateUpdateKind) {
        let value = serde_json::to_value(kind).unwrap_or_default();
        if self.json {
            self.json_line(&value);
            return;
        }
        let reason = value["stopReason"].as_str().unwrap_or("unknown").to_owned();
        let detail = match value.get("error").and_then(|e| e.get("message")) {
            Some(message) => format!(": {}", message.as_str().unwrap_or_default()),
            None => String::new(),
        };
        let shown = self.paint(DIM, &format!("[turn ended: {reason}{detail}]"));
        self.line(&shown);
    }

    /// A note between updates (`[replay complete]`, say), dimmed.
    pub fn note(&mut self, text: &str) {
        if !self.json {
            let shown = self.paint(DIM, text);
            self.line(&shown);
        }
    }

    /// Ends a run of streamed text with a newline.
    pub fn finish_line(&mut self) {
        if self.run != Run::None {
            self.run = Run::None;
            if !self.at_line_start {
                let _ = writeln!(self.out);
                self.at_line_start = true;
            }
        }
        let _ = self.out.flush();
    }

    /// One `session/update`.
    pub fn update(&mut self, notification: &UpdateSessionNotification) {
        let update = &notification.update;
        let changed = self.chat.apply(update);
        if self.json {
            let line = serde_json::json!({
                "sessionId": notification.session_id,
                "update": update,
            });
            self.json_line(&line);
            return;
        }
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                self.stream(Run::Message, "", &content_text(&chunk.content));
            }
            SessionUpdate::AgentThoughtChunk(chunk) => {
                let text = self.paint(DIM, &content_text(&chunk.content));
                let head = self.paint(DIM, "(thinking) ");
                self.stream(Run::Thought, &head, &text);
            }
            SessionUpdate::AgentMessage(message) => {
                if let Some(content) = message.content.as_set() {
                    self.line(&blocks_text(content));
                }
            }
            SessionUpdate::AgentThought(thought) => {
                if let Some(content) = thought.content.as_set() {
                    let shown = self.paint(DIM, &format!("(thinking) {}", blocks_text(content)));
                    self.line(&shown);
                }
            }
            SessionUpdate::UserMessage(message) => {
                if let Some(content) = message.content.as_set() {
                    self.user_message(blocks_text(content));
                }
            }
            SessionUpdate::UserMessageChunk(chunk) => {
                self.user_message(content_text(&chunk.content));
            }
            SessionUpdate::ToolCallUpdate(_) | SessionUpdate::ToolCallContentChunk(_) => {
                if let Changed::ToolCall(index) = changed {
                    self.tool_call(index);
                }
            }
            SessionUpdate::TerminalUpdate(_) | SessionUpdate::TerminalOutputChunk(_) => {
                match changed {
                    Changed::Terminal(index) => self.terminal(index),
                    Changed::Other(Some(reason)) => {
                        let shown = self.paint(DIM, &format!("[terminal output: {reason}]"));
                        self.line(&shown);
                    }
                    _ => {}
                }
            }
            SessionUpdate::PlanUpdate(update) => {
                let text = format!("plan:{}", plan_text(&update.plan));
                let shown = self.paint(CYAN, &text);
                self.line(&shown);
            }
            SessionUpdate::PlanRemoved(removed) => {
                let shown = self.paint(CYAN, &format!("plan {} removed", removed.plan_id));
                self.line(&shown);
            }
            SessionUpdate::StateUpdate(StateUpdate::RequiresAction(_)) => {
                let shown = self.paint(DIM, "[requires action]");
                self.line(&shown);
            }
            SessionUpdate::StateUpdate(_) => {}
            SessionUpdate::ReplayComplete(_) => self.note("[replay complete]"),
            other => {
                let kind = serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.get("sessionUpdate").cloned())
                    .and_then(|k| k.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "unknown".to_owned());
                let shown = self.paint(DIM, &format!("[{kind}]"));
                self.line(&shown);
            }
        }
    }

    /// The tool call's line, when its title or status changed since it was last printed.
    fn tool_call(&mut self, index: usize) {
        let call = &self.chat.tool_calls()[index];
        let title = call.title.clone().unwrap_or_else(|| call.id.to_string());
        let status = call.status.as_ref().map_or("pending".to_owned(), |s| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        });
        let text = format!("tool: {} [{status}]", truncate(&title, 200));
        if self.tool_lines.get(&call.id) == Some(&text) {
            return;
        }
        self.tool_lines.insert(call.id.clone(), text.clone());
        let shown = self.paint(CYAN, &text);
        self.line(&shown);
    }

    /// What the terminal printed since last time (up to its last whole character), and its
    /// exit once known.
    fn terminal(&mut self, index: usize) {
        let terminal = &self.chat.terminals()[index];
        let id = terminal.id.clone();
        let from = self.printed.get(&id).copied().unwrap_or(0);
        let new = terminal.output.get(from..).unwrap_or_default();
        let whole = match std::str::from_utf8(new) {
            Ok(text) => text.len(),
            // A character split at the end waits for its next chunk; a byte that is not UTF-8
            // at all is printed replaced.
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            Err(_) => new.len(),
        };
        let text = String::from_utf8_lossy(&new[..whole]).into_owned();
        let exit = terminal.exit_status.clone();
        let command = terminal.command.clone();
        if from == 0 && !self.printed.contains_key(&id) {
            let head = format!(
                "terminal {id}{}",
                command.map_or(String::new(), |c| format!(": {c}"))
            );
            let shown = self.paint(DIM, &head);
            self.line(&shown);
        }
        self.printed.insert(id.clone(), from + whole);
        if !text.is_empty() {
            let shown = self.paint(DIM, &text);
            self.stream(Run::Terminal, "", &shown);
        }
        if let Some(exit) = exit {
            let code = exit
                .exit_code
                .map_or("no exit code".to_owned(), |c| format!("exit {c}"));
            let shown = self.paint(DIM, &format!("[terminal {id}: {code}]"));
            self.line(&shown);
        }
    }

    fn stream(&mut self, run: Run, head: &str, text: &str) {
        if self.run != run {
            self.finish_line();
            let _ = write!(self.out, "{head}");
        }
        self.run = run;
        let _ = write!(self.out, "{text}");
        if !text.is_empty() {
            self.at_line_start = text.ends_with('\n') || text.ends_with(&format!("\n{RESET}"));
        }
        let _ = self.out.flush();
    }

    fn line(&mut self, text: &str) {
        self.finish_line();
        let _ = writeln!(self.out, "{text}");
        self.at_line_start = true;
        let _ = self.out.flush();
    }

    fn json_line(&mut self, value: &serde_json::Value) {
        let _ = writeln!(self.out, "{value}");
        let _ = self.out.flush();
    }

    fn paint(&self, color: &str, text: &str) -> String {
        match self.color {
            true => format!("{color}{text}{RESET}"),
            false => text.to_owned(),
        }
    }
}

/// A content block as text: the text, or what it is.
fn content_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        other => format!(
            "[content: {}]",
            serde_json::to_string(other).unwrap_or_default()
        ),
    }
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks.iter().map(content_text).collect()
}

/// A plan as a checklist, one `  [x] step` line per item, or its markdown.
fn plan_text(plan: &PlanUpdateContent) -> String {
    match plan {
        PlanUpdateContent::Items(items) => {
            let mut text = String::new();
            for entry in &items.entries {
                let mark = match entry.status {
                    PlanEntryStatus::Completed => "[x]",
                    PlanEntryStatus::InProgress => "[~]",
                    _ => "[ ]",
                };
                text.push_str(&format!("\n  {mark} {}", entry.content));
            }
            text
        }
        PlanUpdateContent::Markdown(markdown) => format!("\n{}", markdown.content),
        other => format!(" {}", serde_json::to_string(other).unwrap_or_default()),
    }
}
