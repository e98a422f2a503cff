//! The updates about the session rather than the turn, in plain words: notices (`notice`),
//! the context window (`usage_update`), the session's title and last activity
//! (`session_info_update`) and its config options (`config_option_update`). Plain functions
//! of what they show, bounded whatever the agent sends: the renderer picks the colours.

use acp_types::*;

use super::errors::one_line;

/// Lines of a notice's description shown (`--json` has them all).
const DESCRIPTION_LINES: usize = 10;
/// Characters kept of each line of a notice, or of a title or value.
const KEPT: usize = 500;
/// Config options listed per `config_option_update` (agents send the whole set each time).
const OPTIONS_SHOWN: usize = 20;

/// How loud a notice is, for its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loudness {
    Info,
    Warning,
    Error,
}

/// A `notice`: `warning: TITLE` (or `notice:`, `error:`, `notice (SEVERITY):` for a severity
/// this version does not know) and its description, indented.
pub fn notice(notice: &Notice) -> (Loudness, String) {
    let (loudness, head) = match &notice.severity {
        NoticeSeverity::Info => (Loudness::Info, "notice".to_owned()),
        NoticeSeverity::Warning => (Loudness::Warning, "warning".to_owned()),
        NoticeSeverity::Error => (Loudness::Error, "error".to_owned()),
        other => (
            Loudness::Info,
            format!("notice ({})", one_line(other.as_str(), 40)),
        ),
    };
    let mut text = format!("{head}: {}", one_line(&notice.title, KEPT));
    if let Some(description) = &notice.description {
        let lines: Vec<&str> = description.lines().collect();
        for line in lines.iter().take(DESCRIPTION_LINES) {
            text.push_str(&format!("\n  {}", one_line(line, KEPT)));
        }
        if lines.len() > DESCRIPTION_LINES {
            text.push_str(&format!(
                "\n  ... and {} more lines (--json shows them all)",
                lines.len() - DESCRIPTION_LINES
            ));
        }
    }
    (loudness, text)
}

/// A `usage_update`: `context: 12000 of 200000 tokens (6%), cost 0.42 USD`.
pub fn usage(update: &UsageUpdate) -> String {
    let mut text = format!("context: {} of {} tokens", update.used, update.size);
    if update.size > 0 {
        let percent = u128::from(update.used) * 100 / u128::from(update.size);
        text.push_str(&format!(" ({percent}%)"));
    }
    if let Some(cost) = &update.cost {
        text.push_str(&format!(
            ", cost {} {}",
            cost.amount,
            one_line(&cost.currency, 20)
        ));
    }
    text
}

/// A `session_info_update`: `session title: "Fix the build", last activity 2026-...`; the
/// fields are patches (omitted keeps, `null` clears).
pub fn session_info(update: &SessionInfoUpdate) -> String {
    let mut parts = Vec::new();
    match &update.title {
        Patch::Set(title) => parts.push(format!("title: {:?}", one_line(title, KEPT))),
        Patch::Clear => parts.push("title cleared".to_owned()),
        Patch::Unchanged => {}
    }
    match &update.updated_at {
        Patch::Set(at) => parts.push(format!("last activity {}", one_line(at, 40))),
        Patch::Clear => parts.push("last activity cleared".to_owned()),
        Patch::Unchanged => {}
    }
    if parts.is_empty() {
        return "session info: nothing this version shows changed (--json has it)".to_owned();
    }
    format!("session {}", parts.join(", "))
}

/// A `config_option_update`: `config options (N):` and one `  NAME (ID): VALUE` line each.
pub fn config_options(update: &ConfigOptionUpdate) -> String {
    let options = &update.config_options;
    if options.is_empty() {
        return "config options: none".to_owned();
    }
    let mut text = format!("config options ({}):", options.len());
    for option in options.iter().take(OPTIONS_SHOWN) {
        text.push_str(&format!(
            "\n  {} ({}): {}",
            one_line(&option.name, 80),
            one_line(option.id.as_str(), 80),
            option_value(&option.kind)
        ));
    }
    if options.len() > OPTIONS_SHOWN {
        text.push_str(&format!(
            "\n  ... and {} more (--json shows them all)",
            options.len() - OPTIONS_SHOWN
        ));
    }
    text
}

/// An option's current value: `true`/`false`, or the chosen value's name with its id in
/// brackets when they differ.
fn option_value(kind: &SessionConfigOptionKind) -> String {
    match kind {
        SessionConfigOptionKind::Boolean(boolean) => boolean.current_value.to_string(),
        SessionConfigOptionKind::Select(select) => {
            let current = select.current_value.as_str();
            let values: Vec<&SessionConfigSelectOption> = match &select.options {
                SessionConfigSelectOptions::Ungrouped(values) => values.iter().collect(),
                SessionConfigSelectOptions::Grouped(groups) => {
                    groups.iter().flat_map(|g| g.options.iter()).collect()
                }
                _ => Vec::new(),
            };
            match values.iter().find(|v| v.value.as_str() == current) {
                Some(value) if value.name != current => {
                    format!("{} [{}]", one_line(&value.name, 80), one_line(current, 80))
                }
                _ => one_line(current, 80),
            }
        }
        _ => "(a kind this version does not know)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The type a function takes, from its JSON.
    macro_rules! decode {
        ($($json:tt)+) => {
            serde_json::from_value(json!($($json)+)).unwrap()
        };
    }

    #[test]
    fn notices_by_severity() {
        let shown: Vec<String> = [
            json!({"severity": "info", "title": "Indexed 120 files"}),
            json!({"severity": "warning", "title": "Rate limited",
                "description": "Retrying in 5 s.\nThe provider asked to slow down."}),
            json!({"severity": "error", "title": "Provider unreachable"}),
            json!({"severity": "_custom", "title": "Something of ours"}),
        ]
        .into_iter()
        .map(|n| {
            let (loudness, text) = notice(&serde_json::from_value(n).unwrap());
            format!("{loudness:?}: {text}")
        })
        .collect();
        insta::assert_snapshot!(shown.join("\n"));
    }

    #[test]
    fn a_long_description_is_bounded() {
        let description = "line\n".repeat(1000) + &"z".repeat(1 << 20);
        let (_, text) = notice(&decode!({"severity": "info", "title": "t",
            "description": description}));
        assert_eq!(text.lines().count(), 1 + DESCRIPTION_LINES + 1);
        assert!(text.len() < 1000, "{}", text.len());
    }

    #[test]
    fn usage_session_info_and_config_options() {
        let lines = [
            usage(&decode!({"used": 12000, "size": 200000})),
            usage(&decode!({"used": 5, "size": 0,
                "cost": {"amount": 0.42, "currency": "USD"}})),
            session_info(&decode!({"title": "Fix the build",
                "updatedAt": "2026-11-28T15:00:00Z"})),
            session_info(&decode!({"title": null})),
            session_info(&decode!({"_meta": {"x": 1}})),
            config_options(&decode!({"configOptions": [
                {"id": "model", "name": "Model", "type": "select", "category": "model",
                 "currentValue": "sonnet", "options": [
                    {"value": "opus", "name": "Claude Opus"},
                    {"value": "sonnet", "name": "Claude Sonnet"}]},
                {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": true},
                {"id": "effort", "name": "Effort", "type": "select", "currentValue": "high",
                 "options": [{"group": "g", "name": "Levels", "options": [
                    {"value": "high", "name": "high"}]}]},
            ]})),
            config_options(&decode!({"configOptions": []})),
        ];
        insta::assert_snapshot!(lines.join("\n"));
    }
}
