//! The text of the updates that take more than one line or keep state between updates: plans,
//! subagents, session messages, the agent's commands, and (feature `unstable`) prompt
//! suggestions, cursors, token usage and the session options. Plain functions of what they
//! show: the renderer owns the state and the colours.

use std::collections::{HashMap, VecDeque};

use acp_types::*;

/// Commands listed per `available_commands_update`: agents send dozens (one 5 KB line), and
/// the list is sent again on every change. `--json` has them all.
const COMMANDS_SHOWN: usize = 20;
/// The width a command's line is cut to (name and first line of its description).
const COMMAND_LINE: usize = 80;
/// Entries kept per map of agent-named things (subagents, messages): an agent names as many
/// as it likes, acp keeps the latest.
const KEPT: usize = 256;
/// Characters kept of a subagent's title or description.
const FIELD_KEPT: usize = 200;

/// `text` cut to `max` characters (its first line only), with `...` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or_default();
    let cut = first.chars().count() > max || first.len() < text.trim_end().len();
    if !cut {
        return first.to_owned();
    }
    let kept: String = first.chars().take(max.saturating_sub(3)).collect();
    format!("{kept}...")
}

/// A content block as text: text as is, anything else as a short note with its JSON.
pub fn content_text(block: &ContentBlock) -> String {
    match block.as_text() {
        Some(text) => text.to_owned(),
        None => format!(
            "[content: {}]",
            serde_json::to_string(block).unwrap_or_default()
        ),
    }
}

/// Plan entries as a checklist, one `  [x] step` line each.
pub fn checklist(entries: &[PlanEntry]) -> String {
    let mut text = String::new();
    for entry in entries {
        let mark = match &entry.status {
            PlanEntryStatus::Completed => "[x]",
            PlanEntryStatus::InProgress => "[~]",
            PlanEntryStatus::Pending => "[ ]",
            _ => "[?]",
        };
        text.push_str(&format!("\n  {mark} {}", entry.content));
    }
    text
}

/// A `plan_update`: an item plan as a checklist, a markdown plan as its text.
pub fn plan_update(update: &PlanUpdate) -> String {
    match &update.plan {
        PlanUpdateContent::Items(plan) => {
            format!("plan {}:{}", plan.plan_id, checklist(&plan.entries))
        }
        PlanUpdateContent::Markdown(plan) => {
            let mut text = match &plan.path {
                Some(path) => format!("plan {} ({path}):", plan.plan_id),
                None => format!("plan {}:", plan.plan_id),
            };
            for line in plan.content.lines() {
                text.push_str(&format!("\n  | {line}"));
            }
            text
        }
        PlanUpdateContent::Unknown(raw) => format!("plan (of an unknown type): {raw}"),
        other => format!(
            "plan (of an unknown type): {}",
            serde_json::to_string(other).unwrap_or_default()
        ),
    }
}

/// Insertion-ordered map that keeps the latest [`KEPT`] entries.
#[derive(Debug)]
struct Kept<V> {
    map: HashMap<String, V>,
    order: VecDeque<String>,
}

impl<V: Default> Kept<V> {
    fn new() -> Self {
        Kept {
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    fn entry(&mut self, key: &str) -> &mut V {
        if !self.map.contains_key(key) {
            if self.order.len() == KEPT
                && let Some(oldest) = self.order.pop_front()
            {
                self.map.remove(&oldest);
            }
            self.order.push_back(key.to_owned());
        }
        self.map.entry(key.to_owned()).or_default()
    }

    fn get(&self, key: &str) -> Option<&V> {
        self.map.get(key)
    }
}

/// What is known of a subagent, its `subagent_update` patches applied.
#[derive(Debug, Default)]
struct Subagent {
    title: Option<String>,
    description: Option<String>,
    state: Option<String>,
}

/// A message between sessions, as its `session_message` upserts describe it.
#[derive(Debug, Default)]
struct Message {
    from: Option<String>,
    to: Option<String>,
}

/// The subagents and session messages of a session: `subagent_update` and `session_message`
/// are patches, shown with what earlier updates said.
#[derive(Debug)]
pub struct Subagents {
    agents: Kept<Subagent>,
    messages: Kept<Message>,
}

fn apply<T, U>(patch: &Patch<T>, field: &mut Option<U>, show: impl Fn(&T) -> U) {
    match patch {
        Patch::Unchanged => {}
        Patch::Clear => *field = None,
        Patch::Set(value) => *field = Some(show(value)),
    }
}

impl Subagents {
    pub fn new() -> Self {
        Subagents {
            agents: Kept::new(),
            messages: Kept::new(),
        }
    }

    /// Applies a `subagent_update`; the subagent as it now is.
    pub fn update(&mut self, update: &SubagentUpdate) -> String {
        let id = update.session_id.as_str();
        let agent = self.agents.entry(id);
        apply(&update.title, &mut agent.title, |t| truncate(t, FIELD_KEPT));
        apply(&update.description, &mut agent.description, |d| {
            truncate(d, FIELD_KEPT)
        });
        apply(&update.state, &mut agent.state, state_text);
        let mut text = format!("subagent {id}");
        if let Some(title) = &agent.title {
            text.push_str(&format!(": {title}"));
        }
        text.push_str(&format!(
            " [{}]",
            agent.state.as_deref().unwrap_or("state not reported")
        ));
        if let Some(description) = &agent.description {
            text.push_str(&format!("\n  {description}"));
        }
        text
    }

    /// A session named by tool-call content (`{type:"session"}`), with its title if known.
    pub fn reference(&self, session: &SessionId) -> String {
        let id = session.as_str();
        match self.agents.get(id) {
            Some(agent) => {
                let title = agent
                    .title
                    .as_deref()
                    .map_or(String::new(), |t| format!(": {t}"));
                let state = agent.state.as_deref().unwrap_or("state not reported");
                format!("[subagent {id}{title} ({state})]")
            }
            None => format!("[session {id}]"),
        }
    }

    /// Applies a `session_message`; its head line and content.
    pub fn message(&mut self, message: &SessionMessage) -> String {
        let id = message.message_id.as_str();
        let known = self.messages.entry(id);
        apply(&message.sender_session_id, &mut known.from, |s| {
            s.to_string()
        });
        apply(&message.recipient_session_id, &mut known.to, |s| {
            s.to_string()
        });
        let mut text = self.head(id);
        match &message.content {
            Patch::Set(content) if !content.is_empty() => {
                for block in content {
                    for line in content_text(block).lines() {
                        text.push_str(&format!("\n  {line}"));
                    }
                }
            }
            Patch::Set(_) | Patch::Clear => text.push_str(" (content cleared)"),
            Patch::Unchanged => {}
        }
        text
    }

    /// `[message ID from A to B]`, with what is known of its sessions.
    pub fn head(&self, id: &str) -> String {
        let mut text = format!("[message {id}");
        if let Some(known) = self.messages.get(id) {
            if let Some(from) = &known.from {
                text.push_str(&format!(" from {from}"));
            }
            if let Some(to) = &known.to {
                text.push_str(&format!(" to {to}"));
            }
        }
        text.push(']');
        text
    }
}

/// A subagent's state: `running`, `idle (end_turn)`, `requires action`, or what the agent
/// named it.
fn state_text(state: &StateUpdate) -> String {
    let value = serde_json::to_value(state).unwrap_or_default();
    let name = value
        .get("state")
        .and_then(|s| s.as_str())
        .unwrap_or("unknown");
    let name = name.replace('_', " ");
    match value.get("stopReason").and_then(|r| r.as_str()) {
        Some(reason) => format!("{name} ({reason})"),
        None => name,
    }
}

/// The agent's slash commands, one short line each; `previous` is the list shown last, to
/// say "unchanged" instead of repeating it.
pub fn commands(commands: &[AvailableCommand], previous: Option<&[String]>) -> String {
    let names: Vec<String> = commands.iter().map(|c| c.name.clone()).collect();
    if previous == Some(names.as_slice()) {
        return format!("commands: unchanged ({})", names.len());
    }
    if commands.is_empty() {
        return "commands: none".to_owned();
    }
    let mut text = format!("commands ({}):", commands.len());
    for command in commands.iter().take(COMMANDS_SHOWN) {
        let line = format!("/{}  {}", command.name, command.description);
        text.push_str(&format!("\n  {}", truncate(&line, COMMAND_LINE)));
    }
    if commands.len() > COMMANDS_SHOWN {
        text.push_str(&format!(
            "\n  ... and {} more (--json shows them all)",
            commands.len() - COMMANDS_SHOWN
        ));
    }
    text
}

/// A `prompt_suggestions_update`: the list that replaces the previous one.
#[cfg(feature = "unstable")]
pub fn suggestions(update: &PromptSuggestionsUpdate) -> String {
    if update.suggestions.is_empty() {
        return "suggestions: none".to_owned();
    }
    let mut text = String::from("suggestions:");
    for (n, suggestion) in update.suggestions.iter().enumerate() {
        let prompt: Vec<String> = suggestion.prompt.iter().map(content_text).collect();
        text.push_str(&format!(
            "\n  {}. {}",
            n + 1,
            truncate(&prompt.join(" "), 76)
        ));
    }
    text
}

/// A `cursor_update`: where the cursor is (given once, with its first update) and whether a
/// session can be forked at it.
#[cfg(feature = "unstable")]
pub fn cursor(update: &CursorUpdate) -> String {
    let mut text = format!("[cursor {}", update.cursor_id);
    if let Some(anchor) = &update.anchor {
        let value = serde_json::to_value(anchor).unwrap_or_default();
        let field = |key: &str| value.get(key).and_then(|v| v.as_str()).unwrap_or("?");
        let id = ["messageId", "toolCallId", "compactionId"]
            .iter()
            .find_map(|key| value.get(*key).and_then(|v| v.as_str()))
            .unwrap_or("?");
        let kind = field("type").replace('_', " ");
        text.push_str(&format!(" {} {kind} {id}", field("position")));
    }
    match &update.capabilities {
        Patch::Set(capabilities) if capabilities.fork.is_some() => text.push_str(", forkable"),
        Patch::Set(_) | Patch::Clear => text.push_str(", not forkable"),
        Patch::Unchanged => {}
    }
    text.push(']');
    text
}

/// The token usage a turn ended with: `; 1200 tokens (1000 in, 200 out, ...)`.
#[cfg(feature = "unstable")]
pub fn usage(usage: &Usage) -> String {
    let mut parts = vec![
        format!("{} in", usage.input_tokens),
        format!("{} out", usage.output_tokens),
    ];
    let optional = [
        (usage.thought_tokens, "thought"),
        (usage.cached_read_tokens, "cached read"),
        (usage.cached_write_tokens, "cached write"),
    ];
    for (count, what) in optional {
        if let Some(count) = count {
            parts.push(format!("{count} {what}"));
        }
    }
    format!("; {} tokens ({})", usage.total_tokens, parts.join(", "))
}

/// The answer of `session/options`: the modes and config options, current values marked.
#[cfg(feature = "unstable")]
pub fn session_options(options: &SessionOptionsResponse) -> String {
    let mut text = String::new();
    match &options.modes {
        Some(modes) => {
            text.push_str("modes (--mode ID):");
            for mode in &modes.available_modes {
                let mark = if mode.id == modes.current_mode_id {
                    "*"
                } else {
                    " "
                };
                text.push_str(&format!("\n  {mark} {}  {}", mode.id, mode.name));
                if let Some(description) = &mode.description {
                    text.push_str(&format!(" - {}", truncate(description, 60)));
                }
            }
        }
        None => text.push_str("modes: none"),
    }
    match options.config_options.as_deref() {
        Some(config) if !config.is_empty() => {
            text.push_str("\nconfig options (--config ID=VALUE):");
            for option in config {
                let category = option
                    .category
                    .as_ref()
                    .map_or(String::new(), |c| format!(" [{c}]"));
                text.push_str(&format!("\n  {}  {}{category}", option.id, option.name));
                match &option.kind {
                    SessionConfigOptionKind::Boolean(b) => {
                        text.push_str(&format!("\n    true/false (now {})", b.current_value));
                    }
                    SessionConfigOptionKind::Select(select) => {
                        let values: Vec<&SessionConfigSelectOption> = match &select.options {
                            SessionConfigSelectOptions::Ungrouped(values) => {
                                values.iter().collect()
                            }
                            SessionConfigSelectOptions::Grouped(groups) => {
                                groups.iter().flat_map(|g| g.options.iter()).collect()
                            }
                            _ => Vec::new(),
                        };
                        for value in values {
                            let mark = if value.value == select.current_value {
                                "*"
                            } else {
                                " "
                            };
                            text.push_str(&format!("\n    {mark} {}  {}", value.value, value.name));
                        }
                    }
                    other => text.push_str(&format!(
                        "\n    (a kind this version does not know: {})",
                        serde_json::to_string(other).unwrap_or_default()
                    )),
                }
            }
        }
        _ => text.push_str("\nconfig options: none"),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_cuts_at_characters_and_keeps_the_first_line() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("ééééééééééé", 6), "ééé...");
        assert_eq!(truncate("one\ntwo", 10), "one...");
    }

    #[test]
    fn subagent_patches_keep_clear_and_replace() {
        let mut agents = Subagents::new();
        let update: SubagentUpdate = serde_json::from_value(serde_json::json!({
            "sessionId": "child", "title": "Research", "state": {"state": "running"}
        }))
        .unwrap();
        assert_eq!(agents.update(&update), "subagent child: Research [running]");
        let update: SubagentUpdate = serde_json::from_value(serde_json::json!({
            "sessionId": "child", "title": null,
            "state": {"state": "idle", "stopReason": "end_turn"}
        }))
        .unwrap();
        assert_eq!(agents.update(&update), "subagent child [idle (end_turn)]");
    }

    #[test]
    fn the_kept_maps_are_bounded() {
        let mut kept: Kept<u8> = Kept::new();
        for n in 0..KEPT + 10 {
            *kept.entry(&n.to_string()) = 1;
        }
        assert_eq!(kept.map.len(), KEPT);
        assert!(kept.get("0").is_none());
        assert!(kept.get(&(KEPT + 9).to_string()).is_some());
    }
}
