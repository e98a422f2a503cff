//! What acp checks against the agent's capabilities before it sends a request for them: the
//! client system prompt (`--system-prompt`) and the session options (`--options`). An
//! unadvertised capability is refused here, before anything is sent (the runtime would
//! refuse it too, but later and less precisely for a command line).

use acp_types::*;

use crate::args::SystemPromptMode as Mode;

/// The capabilities acp advertises: boolean config options (`--config NAME=true`), notices,
/// plan operations and subagents (all rendered), and with the `unstable` feature prompt
/// suggestions (text and resource links, the `{}` form) and cursors.
pub fn client_capabilities() -> ClientCapabilities {
    let session = serde_json::json!({"configOptions": {"boolean": {}}, "notices": {}});
    #[cfg(feature = "unstable")]
    let session = {
        let mut session = session;
        session["promptSuggestions"] = serde_json::json!({});
        session["cursors"] = serde_json::json!({});
        session
    };
    let session: ClientSessionCapabilities =
        serde_json::from_value(session).expect("valid capabilities");
    ClientCapabilities::new()
        .with_session(session)
        .with_plan(PlanCapabilities::new())
        .with_subagents(SubagentCapabilities::new())
}

/// The system prompt to send, `text` in `mode`, if the agent advertised it; the reason
/// otherwise.
pub fn system_prompt(
    text: &str,
    mode: Mode,
    agent: &AgentCapabilities,
) -> Result<SystemPrompt, String> {
    let advertised = agent.session_capabilities.system_prompt.as_ref();
    let overrides = advertised
        .and_then(|a| a.mode.as_ref())
        .is_some_and(|m| m.r#override.is_some());
    check_system_prompt(mode, advertised.is_some(), overrides, "sessionCapabilities")?;
    let mode = match mode {
        Mode::Append => SystemPromptMode::Append,
        Mode::Override => SystemPromptMode::Override,
    };
    Ok(SystemPrompt::new(mode, vec![ContentBlock::from(text)]))
}

/// [`system_prompt`] for a protocol 2 agent (its capabilities are `capabilities.session`).
#[cfg(feature = "unstable-protocol-v2")]
pub fn system_prompt_v2(
    text: &str,
    mode: Mode,
    agent: &acp_types::v2::AgentCapabilities,
) -> Result<acp_types::v2::SystemPrompt, String> {
    use acp_types::v2;
    let advertised = agent
        .session
        .as_ref()
        .and_then(|s| s.system_prompt.as_ref());
    let overrides = advertised
        .and_then(|a| a.mode.as_ref())
        .is_some_and(|m| m.r#override.is_some());
    check_system_prompt(
        mode,
        advertised.is_some(),
        overrides,
        "capabilities.session",
    )?;
    let mode = match mode {
        Mode::Append => v2::SystemPromptMode::Append,
        Mode::Override => v2::SystemPromptMode::Override,
    };
    Ok(v2::SystemPrompt::new(
        mode,
        vec![v2::ContentBlock::from(text)],
    ))
}

/// `--system-prompt` (in `--system-prompt-mode`) as `build` makes it for the agent's protocol
/// version from what the agent advertised, noted on stderr; `None` without the flag. Called
/// before any session request: an agent that did not advertise the prompt (or its mode) gets
/// none (exit 6, `exit::UNADVERTISED`).
pub fn given_system_prompt<P>(
    args: &crate::args::Args,
    build: impl FnOnce(&str, Mode) -> Result<P, String>,
) -> Result<Option<P>, crate::Failure> {
    let Some(text) = &args.system_prompt else {
        return Ok(None);
    };
    let mode = args.system_prompt_mode.unwrap_or_default();
    let prompt = build(text, mode)
        .map_err(|message| crate::Failure::new(crate::exit::UNADVERTISED, message))?;
    let named = match mode {
        Mode::Append => "append",
        Mode::Override => "override",
    };
    crate::note(
        args.json,
        &format!("system prompt: {} bytes, {named}", text.len()),
    );
    Ok(Some(prompt))
}

/// The one rule for `--system-prompt`, whatever the protocol: the capability advertised, and
/// its override mode for `--system-prompt-mode override`. `at` is where the capability sits.
fn check_system_prompt(
    mode: Mode,
    advertised: bool,
    overrides: bool,
    at: &str,
) -> Result<(), String> {
    if !advertised {
        return Err(format!(
            "--system-prompt: the agent does not advertise {at}.systemPrompt (it takes no client system prompt); nothing was sent"
        ));
    }
    if mode == Mode::Override && !overrides {
        return Err(format!(
            "--system-prompt-mode override: the agent advertises the append mode only ({at}.systemPrompt.mode.override is absent); nothing was sent"
        ));
    }
    Ok(())
}

/// A `--config ID=VALUE` value as the option's kind reads it.
#[derive(Debug, PartialEq)]
pub enum ConfigValue<'a> {
    /// A boolean option's `true` or `false`.
    Boolean(bool),
    /// A select option's value id.
    Id(&'a str),
}

/// Reads `value` for the option `id`: a boolean option takes `true`/`on`/`yes`/`1` or
/// `false`/`off`/`no`/`0`; any other option takes the value id as given. The error is the
/// message for a usage error.
pub fn config_value<'a>(
    id: &str,
    value: &'a str,
    boolean: bool,
) -> Result<ConfigValue<'a>, String> {
    if !boolean {
        return Ok(ConfigValue::Id(value));
    }
    match value {
        "true" | "on" | "yes" | "1" => Ok(ConfigValue::Boolean(true)),
        "false" | "off" | "no" | "0" => Ok(ConfigValue::Boolean(false)),
        other => Err(format!(
            "--config {id}: `{other}` is not a boolean (true or false)"
        )),
    }
}

/// Whether the agent answers `session/options`; the reason otherwise.
#[cfg(feature = "unstable")]
pub fn session_options(agent: &AgentCapabilities) -> Result<(), String> {
    match agent.session_capabilities.options {
        Some(_) => Ok(()),
        None => Err(
            "--options: the agent does not advertise sessionCapabilities.options (session/options); nothing was sent".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(system_prompt: serde_json::Value) -> AgentCapabilities {
        serde_json::from_value(
            serde_json::json!({"sessionCapabilities": {"systemPrompt": system_prompt}}),
        )
        .unwrap()
    }

    #[test]
    fn the_system_prompt_needs_the_advertised_mode() {
        let none = AgentCapabilities::new();
        assert!(system_prompt("x", Mode::Append, &none).is_err());
        let append = agent(serde_json::json!({}));
        let sent = system_prompt("Be terse.", Mode::Append, &append).unwrap();
        assert_eq!(
            serde_json::to_value(sent).unwrap(),
            serde_json::json!({"mode": "append", "content": [{"type": "text", "text": "Be terse."}]})
        );
        assert!(system_prompt("x", Mode::Override, &append).is_err());
        let both = agent(serde_json::json!({"mode": {"override": {}}}));
        assert!(system_prompt("x", Mode::Override, &both).is_ok());
    }

    #[test]
    fn a_boolean_option_takes_the_usual_spellings_and_nothing_else() {
        assert_eq!(
            config_value("fast", "on", true),
            Ok(ConfigValue::Boolean(true))
        );
        assert_eq!(
            config_value("fast", "0", true),
            Ok(ConfigValue::Boolean(false))
        );
        assert!(config_value("fast", "maybe", true).is_err());
        assert_eq!(
            config_value("model", "maybe", false),
            Ok(ConfigValue::Id("maybe"))
        );
    }

    #[test]
    fn acp_advertises_plans_and_subagents() {
        let caps = serde_json::to_value(client_capabilities()).unwrap();
        assert_eq!(caps["plan"], serde_json::json!({}));
        assert_eq!(caps["subagents"], serde_json::json!({}));
        assert_eq!(caps["session"]["notices"], serde_json::json!({}));
    }
}
