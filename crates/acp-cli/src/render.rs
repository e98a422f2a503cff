//! How updates are shown: readable text (default) or one JSON line each (`--json`).

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::{Arc, Mutex};

use acp_runtime::Error;
use acp_runtime::client::{DroppedUpdates, TreeUpdate, UnopenedUpdate};
use acp_runtime::terminal::{TerminalHost, TerminalOutput};

pub mod errors;
pub mod status;
pub mod text;
pub mod tree;
#[cfg(feature = "unstable-protocol-v2")]
pub mod v2;

use text::{Subagents, content_text};
use tree::Prefixed;

/// How many released terminals' final output is kept for display: tool calls are rendered as
/// their updates come, so only the latest few can still be waiting for it.
const RELEASED_KEPT: usize = 32;

/// The client's terminal host, and the final output of terminals the agent released (the spec
/// asks a client to keep showing an embedded terminal's output after its release).
#[derive(Clone)]
pub struct Terminals {
    host: Arc<TerminalHost>,
    released: Arc<Mutex<VecDeque<(String, TerminalOutput)>>>,
}

impl Terminals {
    pub fn new() -> Self {
        let released = Arc::new(Mutex::new(VecDeque::new()));
        let sink = released.clone();
        let host = TerminalHost::new().with_release_observer(move |_, id, output| {
            let mut kept = sink.lock().unwrap();
            if kept.len() == RELEASED_KEPT {
                kept.pop_front();
            }
            kept.push_back((id.to_owned(), output));
        });
        Terminals {
            host: Arc::new(host),
            released,
        }
    }

    pub fn host(&self) -> Arc<TerminalHost> {
        self.host.clone()
    }

    /// The terminal's output: live, or as it was when released (taken: shown once).
    fn output(&self, session: &str, id: &str) -> Option<TerminalOutput> {
        if let Ok(output) = self.host.output(session, id) {
            return Some(output);
        }
        let mut kept = self.released.lock().unwrap();
        let at = kept.iter().position(|(kept_id, _)| kept_id == id)?;
        kept.remove(at).map(|(_, output)| output)
    }
}
use acp_types::*;

use crate::diff;

/// Where the stream is: inside a run of message text or of thought text (which end with a
/// newline before anything else is printed), or at the start of a line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    None,
    Message,
    Thought,
    /// The chunks of a message between sessions ([`Renderer::message_run`] says which).
    SessionMessage,
}

pub struct Renderer {
    json: bool,
    color: bool,
    run: Run,
    /// Stdout, each line starting with the current session's prefix (a subagent's title).
    out: Prefixed<std::io::Stdout>,
    /// The session of the last item shown.
    current: Option<SessionId>,
    /// The client's terminals, to show the output of those that tool calls embed.
    terminals: Option<(Terminals, String)>,
    /// Per tool call, the terminals it embedded whose output is not shown yet.
    embedded: HashMap<String, Vec<String>>,
    /// The subagents and session messages seen so far (their updates are patches).
    subagents: Subagents,
    /// The message whose chunks are streaming, while `run` is `SessionMessage`.
    message_run: Option<String>,
    /// The message whose head line (a `session_message` without content) was the last line
    /// printed: its chunks follow it without a second head.
    message_head: Option<String>,
    /// The names of the commands listed last.
    commands: Option<Vec<String>>,
}

const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

impl Renderer {
    pub fn new(json: bool, color: bool) -> Self {
        Renderer {
            json,
            color,
            run: Run::None,
            out: Prefixed::new(std::io::stdout()),
            current: None,
            terminals: None,
            embedded: HashMap::new(),
            subagents: Subagents::new(),
            message_run: None,
            message_head: None,
            commands: None,
        }
    }

    /// Shows the output of terminals that tool calls of `session` embed, from `host`.
    pub fn show_terminals(&mut self, terminals: Terminals, session: &SessionId) {
        self.terminals = Some((terminals, session.to_string()));
    }

    /// The output of the terminals `tool_call` embedded, once their commands have exited (or
    /// at once with `finished`, when the tool call is over).
    fn terminal_output(&mut self, tool_call: &ToolCallId, finished: bool) {
        let Some((terminals, session)) = self.terminals.clone() else {
            return;
        };
        let Some(ids) = self.embedded.get_mut(tool_call.as_str()) else {
            return;
        };
        let mut shown = Vec::new();
        ids.retain(|id| match terminals.output(&session, id) {
            Some(output) if finished || output.exit_status.is_some() => {
                shown.push((id.clone(), output));
                false
            }
            Some(_) => true,
            // Released before it could be seen, and no longer kept.
            None => false,
        });
        for (id, output) in shown {
            let status = match &output.exit_status {
                Some(status) => match (status.code, &status.signal) {
                    (Some(code), _) => format!("exit code {code}"),
                    (None, Some(signal)) => format!("killed by {signal}"),
                    _ => "exited".to_owned(),
                },
                None => "still running".to_owned(),
            };
            let truncated = if output.truncated { ", truncated" } else { "" };
            let head = self.paint(DIM, &format!("    [terminal {id}: {status}{truncated}]"));
            self.line(&head);
            for line in output.output.lines() {
                self.line(&format!("    | {line}"));
            }
        }
    }

    fn paint(&self, style: &str, text: &str) -> String {
        if self.color {
            format!("{style}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }

    /// Ends the line streamed text left open, before something else (an error on stderr)
    /// is printed: it must not be glued to the agent's last words.
    pub fn finish_line(&mut self) {
        self.end_run();
        let _ = self.out.flush();
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
        self.message_head = None;
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    fn json_line(&mut self, value: &serde_json::Value) {
        let _ = writeln!(self.out, "{value}");
        let _ = self.out.flush();
    }

    /// One item of a session's stream or of one of its subagents' (their lines start with
    /// the subagent's title; with `--json`, each update names its session).
    pub fn tree_item(&mut self, item: &TreeUpdate) {
        self.switch_to(Some(item.session.id()), || tree::prefix(&item.session));
        match &item.update {
            Ok(update) if self.json => {
                let line = tree::update_json(&item.session, update);
                self.json_line(&line);
            }
            other => self.item(other),
        }
    }

    /// An update for a session id acp neither opened nor follows (a subagent the agent never
    /// announced): its lines start with the id.
    pub fn unopened(&mut self, unopened: &UnopenedUpdate) {
        let id = &unopened.session_id;
        self.switch_to(Some(id), || tree::unopened_prefix(id));
        match &unopened.update {
            Ok(update) if self.json => {
                let line = serde_json::json!({ "sessionId": id.as_str(), "update": update });
                self.json_line(&line);
            }
            other => self.item(other),
        }
    }

    /// Updates the runtime dropped where no session's stream could tell it.
    pub fn dropped(&mut self, report: &DroppedUpdates) {
        self.switch_to(None, String::new);
        if self.json {
            self.json_line(&tree::dropped_json(report));
        } else {
            let shown = self.paint(RED, &format!("[updates dropped] {report}"));
            self.line(&shown);
        }
    }

    /// Lines from now on are `session`'s: a run of another session's text ends first.
    fn switch_to(&mut self, session: Option<&SessionId>, prefix: impl FnOnce() -> String) {
        if self.current.as_ref() == session {
            return;
        }
        self.end_run();
        self.message_head = None;
        self.current = session.cloned();
        let prefix = prefix();
        let prefix = match prefix.is_empty() || self.json {
            true => String::new(),
            false => self.paint(CYAN, &prefix),
        };
        self.out.set_prefix(prefix);
    }

    /// One item of a turn's update stream.
    fn item(&mut self, item: &Result<SessionUpdate, Error>) {
        match item {
            Ok(update) => self.update(update),
            Err(error) => self.stream_error(error),
        }
    }

    /// The user's prompt, before its turn.
    pub fn prompt(&mut self, text: &str) {
        self.switch_to(None, String::new);
        if !self.json {
            let shown = self.paint(BOLD, &format!("> {text}"));
            self.line(&shown);
        }
    }

    /// The end of a turn: its stop reason (and, with the `unstable` feature, the token
    /// usage the agent reported).
    pub fn stop(&mut self, response: &PromptResponse) {
        self.switch_to(None, String::new);
        let reason = &response.stop_reason;
        if self.json {
            let line = serde_json::json!({ "stopReason": reason });
            #[cfg(feature = "unstable")]
            let line = {
                let mut line = line;
                if let Some(usage) = &response.usage {
                    line["usage"] = serde_json::to_value(usage).unwrap_or_default();
                }
                line
            };
            self.json_line(&line);
        } else {
            #[cfg(feature = "unstable")]
            let usage = response.usage.as_ref().map(text::usage).unwrap_or_default();
            #[cfg(not(feature = "unstable"))]
            let usage = "";
            let text = format!("[turn ended: {reason}{usage}]");
            let shown = self.paint(DIM, &text);
            self.line(&shown);
        }
    }

    /// What `session/options` answered (`--options`): the listing, or its JSON on one line.
    #[cfg(feature = "unstable")]
    pub fn session_options(&mut self, options: &SessionOptionsResponse) {
        if self.json {
            let value = serde_json::to_value(options).unwrap_or_default();
            self.json_line(&value);
        } else {
            self.line(&text::session_options(options));
        }
    }

    fn stream_error(&mut self, error: &Error) {
        let kind = match error {
            Error::UpdatesDropped { .. } => "updates_dropped",
            Error::InvalidUpdate { .. } => "invalid_update",
            Error::SubagentNotFollowed { .. } => "subagent_not_followed",
            _ => "error",
        };
        if self.json {
            let message = match error {
                // Its text quotes the update; the fields below say it, bounded.
                Error::InvalidUpdate { .. } => "an update does not decode".to_owned(),
                other => errors::error_text(other),
            };
            let mut body = serde_json::json!({ "kind": kind, "message": message });
            match error {
                Error::InvalidUpdate {
                    session_id,
                    update,
                    error,
                } => {
                    body["sessionId"] = session_id.as_str().into();
                    let raw = update.get();
                    body["bytes"] = raw.len().into();
                    // Whole while small; a large one as its start, on one line.
                    if raw.len() <= errors::RAW_KEPT {
                        body["update"] = serde_json::from_str(raw).unwrap_or_else(|_| raw.into());
                    } else {
                        body["updateStart"] = errors::one_line(raw, errors::LINE_KEPT).into();
                    }
                    body["decodeError"] = errors::one_line(error, errors::LINE_KEPT).into();
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
                Error::SubagentNotFollowed { session_id, .. } => {
                    body["sessionId"] = session_id.as_str().into();
                    tree::error_fields(error, &mut body);
                }
                _ => {}
            }
            self.json_line(&serde_json::json!({ "error": body }));
            return;
        }
        let text = match error {
            Error::InvalidUpdate { update, error, .. } => {
                errors::rejected_update(update.get(), error)
            }
            Error::UpdatesDropped { .. } => format!("[updates dropped] {error}"),
            Error::SubagentNotFollowed { .. } => format!("[subagent not followed] {error}"),
            other => format!("[error] {}", errors::error_text(other)),
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
                if self.run != Run::Message {
                    self.end_run();
                }
                self.run = Run::Message;
                let text = content_text(&chunk.content);
                let _ = write!(self.out, "{text}");
                let _ = self.out.flush();
            }
            SessionUpdate::AgentThoughtChunk(chunk) => {
                if self.run != Run::Thought {
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
                let text = format!("plan:{}", text::checklist(&plan.entries));
                let shown = self.paint(CYAN, &text);
                self.line(&shown);
            }
            SessionUpdate::PlanUpdate(update) => {
                let shown = self.paint(CYAN, &text::plan_update(update));
                self.line(&shown);
            }
            SessionUpdate::PlanRemoved(removed) => {
                let shown = self.paint(CYAN, &format!("plan {} removed", removed.plan_id));
                self.line(&shown);
            }
            SessionUpdate::SubagentUpdate(update) => {
                let text = self.subagents.update(update);
                let shown = self.paint(CYAN, &text);
                self.line(&shown);
            }
            SessionUpdate::SessionMessage(message) => {
                let text = self.subagents.message(message);
                self.line(&text);
                if message.content.is_unchanged() {
                    self.message_head = Some(message.message_id.to_string());
                }
            }
            SessionUpdate::SessionMessageChunk(chunk) => {
                let id = chunk.message_id.as_str();
                let same =
                    self.run == Run::SessionMessage && self.message_run.as_deref() == Some(id);
                if !same {
                    if self.message_head.as_deref() != Some(id) {
                        let head = self.subagents.head(id);
                        self.line(&head);
                    }
                    let _ = write!(self.out, "  ");
                    self.run = Run::SessionMessage;
                    self.message_run = Some(id.to_owned());
                }
                let text = content_text(&chunk.content).replace('\n', "\n  ");
                let _ = write!(self.out, "{text}");
                let _ = self.out.flush();
            }
            SessionUpdate::AvailableCommandsUpdate(update) => {
                let text = text::commands(&update.available_commands, self.commands.as_deref());
                self.commands = Some(
                    update
                        .available_commands
                        .iter()
                        .map(|c| c.name.clone())
                        .collect(),
                );
                let shown = self.paint(DIM, &text);
                self.line(&shown);
            }
            #[cfg(feature = "unstable")]
            SessionUpdate::PromptSuggestionsUpdate(update) => {
                let shown = self.paint(CYAN, &text::suggestions(update));
                self.line(&shown);
            }
            #[cfg(feature = "unstable")]
            SessionUpdate::CursorUpdate(update) => {
                let shown = self.paint(DIM, &text::cursor(update));
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
                    self.tool_content(&call.tool_call_id, content);
                }
                self.terminal_output(&call.tool_call_id, false);
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
                    self.tool_content(&update.tool_call_id, content);
                }
                let finished = matches!(
                    update.status,
                    Some(ToolCallStatus::Completed | ToolCallStatus::Failed)
                );
                self.terminal_output(&update.tool_call_id, finished);
            }
            SessionUpdate::CurrentModeUpdate(mode) => {
                let text = format!("[mode: {}]", mode.current_mode_id);
                self.line(&text);
            }
            SessionUpdate::Notice(notice) => {
                let (loudness, text) = status::notice(notice);
                let style = match loudness {
                    status::Loudness::Info => CYAN,
                    status::Loudness::Warning => YELLOW,
                    status::Loudness::Error => RED,
                };
                let shown = self.paint(style, &text);
                self.line(&shown);
            }
            SessionUpdate::UsageUpdate(usage) => {
                let shown = self.paint(DIM, &status::usage(usage));
                self.line(&shown);
            }
            SessionUpdate::SessionInfoUpdate(info) => {
                let shown = self.paint(DIM, &status::session_info(info));
                self.line(&shown);
            }
            SessionUpdate::ConfigOptionUpdate(update) => {
                let shown = self.paint(DIM, &status::config_options(update));
                self.line(&shown);
            }
            SessionUpdate::Unknown(raw) => {
                let raw = raw.to_string();
                let text = format!(
                    "[unknown update] {}",
                    errors::one_line(&raw, errors::LINE_KEPT)
                );
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
                let raw = errors::one_line(&raw, errors::LINE_KEPT);
                let text = self.paint(DIM, &format!("[{kind}] {raw}"));
                self.line(&text);
            }
        }
    }

    fn tool_content(&mut self, tool_call: &ToolCallId, content: &[ToolCallContent]) {
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
                    let ids = self.embedded.entry(tool_call.to_string()).or_default();
                    if !ids.contains(&t.terminal_id.to_string()) {
                        ids.push(t.terminal_id.to_string());
                    }
                }
                ToolCallContent::Content(c) => {
                    let text = content_text(&c.content);
                    for line in text.lines() {
                        self.line(&format!("    {line}"));
                    }
                }
                ToolCallContent::Session(session) => {
                    let text = format!("    {}", self.subagents.reference(&session.session_id));
                    self.line(&text);
                }
                ToolCallContent::Unknown(raw) => {
                    let text = format!("    [unknown tool call content] {raw}");
                    self.line(&text);
                }
                other => {
                    let text = format!("    [unknown tool call content] {other:?}");
                    self.line(&text);
                }
            }
        }
    }
}
