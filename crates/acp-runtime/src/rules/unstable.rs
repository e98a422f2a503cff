//! The rules of schema 1.20's unstable items, each behind its cargo feature, kept apart from
//! the stable rule book in the parent module (same [`Breach`], same sides).
//!
//! | rule | feature | agent checks | client checks |
//! |---|---|---|---|
//! | [`session_options`] | `unstable-session-options` | `session/options` (incoming) | `session/options` (outgoing) |
//! | [`initial_config_options`] | `unstable-session-options` | — (ignores what it does not know) | `configOptions` of `session/new`, `load`, `resume`, `fork` |
//! | [`distinct_config_ids`] | `unstable-session-options` | the same, answered `-32602` | the same, refused |
//! | [`session_update`] | `unstable-session-cursors`, `unstable-prompt-suggestions` | (outgoing) refused | (incoming) reported |
//! | [`cursor_update`] | `unstable-session-cursors` | (outgoing) refused | (incoming) reported, first anchor kept |
//! | [`fork_cursor`] | `unstable-session-cursors` with `unstable-session-fork` | `session/fork` with `cursorId`, answered `-32602` | the same, refused |
//!
//! Nothing here looks at a config option's `category` (the `speed` category of feature
//! `unstable-speed-config-category` passes like any other) or at an auth account's
//! `description`: both are data for the application.

#[cfg(any(
    feature = "unstable-session-options",
    feature = "unstable-session-cursors",
    feature = "unstable-prompt-suggestions"
))]
use acp_types::*;

#[cfg(any(
    feature = "unstable-session-options",
    feature = "unstable-session-cursors",
    feature = "unstable-prompt-suggestions"
))]
use super::Breach;
use super::Rule;

/// Whether [`session_update`] has anything to check for this kind of update.
pub(crate) fn update_needs_capability(update: &acp_types::SessionUpdate) -> bool {
    match update {
        #[cfg(feature = "unstable-session-cursors")]
        SessionUpdate::CursorUpdate(_) => true,
        #[cfg(feature = "unstable-prompt-suggestions")]
        SessionUpdate::PromptSuggestionsUpdate(_) => true,
        _ => false,
    }
}

/// The unstable update kinds a client must opt into: `cursor_update` needs
/// `session.cursors`; `prompt_suggestions_update` needs `session.promptSuggestions`, and its
/// content must be what the client said it takes there and the agent takes in a prompt
/// ([`prompt_suggestions`]). `agent` is the agent's `promptCapabilities`.
pub(crate) fn session_update(
    update: &acp_types::SessionUpdate,
    client: &acp_types::ClientCapabilities,
    agent: &acp_types::PromptCapabilities,
) -> Rule {
    // Each is read by the arm of its feature only.
    let _ = (client, agent);
    match update {
        #[cfg(feature = "unstable-session-cursors")]
        SessionUpdate::CursorUpdate(_)
            if client
                .session
                .as_ref()
                .and_then(|s| s.cursors.as_ref())
                .is_none() =>
        {
            Err(Breach::unadvertised_use(
                "a `cursor_update`",
                "session.cursors",
            ))
        }
        #[cfg(feature = "unstable-prompt-suggestions")]
        SessionUpdate::PromptSuggestionsUpdate(update) => prompt_suggestions(update, client, agent),
        _ => Ok(()),
    }
}

/// `session/options` (feature `unstable-session-options`): absolute directories, and a
/// `sessionId` only to an agent that can load or resume sessions. Whether the agent offers
/// the method at all is [`agent_method`](super::agent_method)'s.
#[cfg(feature = "unstable-session-options")]
pub(crate) fn session_options(request: &SessionOptionsRequest, caps: &AgentCapabilities) -> Rule {
    let additional = request
        .additional_directories
        .as_deref()
        .unwrap_or_default();
    super::absolute_cwd(&request.cwd, additional)?;
    if request.session_id.is_some()
        && !caps.load_session
        && caps.session_capabilities.resume.is_none()
    {
        return Err(Breach::Invalid(
            "`session/options` for a stored session (`sessionId`) needs `loadSession` or \
             `sessionCapabilities.resume`, and the agent advertises neither"
                .to_owned(),
        ));
    }
    Ok(())
}

/// Initial config options on a setup request (`configOptions` of `session/new`, `load`,
/// `resume`, `fork`; feature `unstable-session-options`), as the client sends them: only to an
/// agent that advertises `sessionCapabilities.options`, booleans only from a client that
/// advertises `session.configOptions.boolean`, each id once. The agent's side checks only the
/// last ([`distinct_config_ids`]): an id or value it does not know is ignored, not refused.
#[cfg(feature = "unstable-session-options")]
pub(crate) fn initial_config_options(
    options: Option<&[InitialSessionConfigOption]>,
    agent: &AgentCapabilities,
    client: &ClientCapabilities,
) -> Rule {
    let options = options.unwrap_or_default();
    if options.is_empty() {
        return Ok(());
    }
    if agent.session_capabilities.options.is_none() {
        return Err(Breach::unadvertised_use(
            "initial config options (`configOptions`)",
            "sessionCapabilities.options",
        ));
    }
    let boolean = options
        .iter()
        .find(|o| matches!(o.kind, InitialSessionConfigOptionKind::Boolean(_)));
    if let Some(option) = boolean.filter(|_| !super::boolean_config_options(client)) {
        return Err(Breach::SenderDidNotAdvertise {
            what: format!("an initial boolean value for `{}`", option.config_id),
            capability: "session.configOptions.boolean",
        });
    }
    distinct_config_ids(Some(options))
}

/// The spec: duplicate `configId` values in a setup request's `configOptions` fail the
/// request with `-32602` (malformed entries already fail to decode).
#[cfg(feature = "unstable-session-options")]
pub(crate) fn distinct_config_ids(options: Option<&[InitialSessionConfigOption]>) -> Rule {
    let options = options.unwrap_or_default();
    for (i, option) in options.iter().enumerate() {
        if options[..i].iter().any(|o| o.config_id == option.config_id) {
            return Err(Breach::Invalid(format!(
                "`configOptions` names `{}` twice",
                option.config_id
            )));
        }
    }
    Ok(())
}

/// A `cursor_update` against the anchor already known for its cursor (feature
/// `unstable-session-cursors`): the first update of a cursor carries `anchor`, and a later
/// one omits it or repeats it unchanged.
#[cfg(feature = "unstable-session-cursors")]
pub(crate) fn cursor_update(known: Option<&CursorAnchor>, update: &CursorUpdate) -> Rule {
    match (known, &update.anchor) {
        (None, None) => Err(Breach::Invalid(format!(
            "the first `cursor_update` of cursor `{}` must carry its `anchor`",
            update.cursor_id
        ))),
        (Some(known), Some(anchor)) if known != anchor => Err(Breach::Invalid(format!(
            "cursor `{}` cannot move: its anchor was set by its first update",
            update.cursor_id
        ))),
        _ => Ok(()),
    }
}

/// `session/fork` at a cursor (features `unstable-session-cursors` and
/// `unstable-session-fork`): the cursor must be one the agent announced on the source session
/// and that advertises `capabilities.fork` now. `forkable` is `None` for a cursor not
/// announced (on this connection), else whether it can be forked at.
#[cfg(all(
    feature = "unstable-session-cursors",
    feature = "unstable-session-fork"
))]
pub(crate) fn fork_cursor(session: &SessionId, cursor: &CursorId, forkable: Option<bool>) -> Rule {
    match forkable {
        Some(true) => Ok(()),
        Some(false) => Err(Breach::Invalid(format!(
            "cursor `{cursor}` of session `{session}` does not advertise `capabilities.fork`"
        ))),
        None => Err(Breach::Invalid(format!(
            "session `{session}` announced no cursor `{cursor}`"
        ))),
    }
}

/// A `prompt_suggestions_update` (feature `unstable-prompt-suggestions`): needs the client's
/// `session.promptSuggestions`; each suggestion has content, not only blank text, and uses
/// `text` and `resource_link` blocks, or images, audio and embedded resources when both the
/// client's `session.promptSuggestions` and the agent's own `promptCapabilities` take them.
#[cfg(feature = "unstable-prompt-suggestions")]
pub(crate) fn prompt_suggestions(
    update: &PromptSuggestionsUpdate,
    client: &ClientCapabilities,
    agent: &PromptCapabilities,
) -> Rule {
    let Some(taken) = client
        .session
        .as_ref()
        .and_then(|s| s.prompt_suggestions.as_ref())
    else {
        return Err(Breach::unadvertised_use(
            "a `prompt_suggestions_update`",
            "session.promptSuggestions",
        ));
    };
    for (i, suggestion) in update.suggestions.iter().enumerate() {
        let blank = suggestion.prompt.iter().all(|block| match block {
            ContentBlock::Text(text) => text.text.trim().is_empty(),
            _ => false,
        });
        if blank {
            return Err(Breach::Invalid(format!(
                "prompt suggestion {i} has no content but blank text"
            )));
        }
        for block in &suggestion.prompt {
            let (what, client_takes, client_capability, agent_takes, agent_capability) = match block
            {
                ContentBlock::Text(_) | ContentBlock::ResourceLink(_) => continue,
                ContentBlock::Image(_) => (
                    "an image",
                    taken.image.is_some(),
                    "session.promptSuggestions.image",
                    agent.image,
                    "promptCapabilities.image",
                ),
                ContentBlock::Audio(_) => (
                    "audio",
                    taken.audio.is_some(),
                    "session.promptSuggestions.audio",
                    agent.audio,
                    "promptCapabilities.audio",
                ),
                ContentBlock::Resource(_) => (
                    "an embedded resource",
                    taken.embedded_context.is_some(),
                    "session.promptSuggestions.embeddedContext",
                    agent.embedded_context,
                    "promptCapabilities.embeddedContext",
                ),
                _ => {
                    return Err(Breach::Invalid(format!(
                        "prompt suggestion {i} has content of a type no capability offers"
                    )));
                }
            };
            let what = format!("a prompt suggestion with {what}");
            if !client_takes {
                return Err(Breach::unadvertised_use(what, client_capability));
            }
            if !agent_takes {
                return Err(Breach::SenderDidNotAdvertise {
                    what,
                    capability: agent_capability,
                });
            }
        }
    }
    Ok(())
}
