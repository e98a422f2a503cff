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
    let Some(advertised) = &agent.session_capabilities.system_prompt else {
        return Err(
            "--system-prompt: the agent does not advertise sessionCapabilities.systemPrompt (it takes no client system prompt); nothing was sent".into(),
        );
    };
    let overrides = advertised
        .mode
        .as_ref()
        .is_some_and(|m| m.r#override.is_some());
    if mode == Mode::Override && !overrides {
        return Err(
            "--system-prompt-mode override: the agent advertises the append mode only (sessionCapabilities.systemPrompt.mode.override is absent); nothing was sent".into(),
        );
    }
    let mode = match mode {
        Mode::Append => SystemPromptMode::Append,
        Mode::Override => SystemPromptMode::Override,
    };
    Ok(SystemPrompt::new(mode, vec![ContentBlock::from(text)]))
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
    fn acp_advertises_plans_and_subagents() {
        let caps = serde_json::to_value(client_capabilities()).unwrap();
        assert_eq!(caps["plan"], serde_json::json!({}));
        assert_eq!(caps["subagents"], serde_json::json!({}));
        assert_eq!(caps["session"]["notices"], serde_json::json!({}));
    }
}
