//! The protocol's rules, each written once, for both sides of a connection.
//!
//! A rule looks at what one side is about to send (or has just received) and at what the
//! other side advertised, and returns a [`Breach`] when it is broken. The caller decides what
//! a breach becomes, and only that differs between the sides:
//!
//! - before sending, [`Breach::refused`]: a typed [`Error`] for the application, and nothing
//!   goes on the wire (a client that would call `session/load` on an agent that does not
//!   advertise it, an agent that would stream a `notice` the client cannot show);
//! - on receipt, [`Breach::answer`]: the JSON-RPC error the peer gets (`-32601` for a method
//!   the receiving side does not offer, `-32602` for anything else);
//! - on receipt of a notification, which cannot be answered, the breach is reported to the
//!   connection's observer and the message is still delivered: lenient in what we accept.
//!
//! | rule | agent checks (incoming) | client checks (outgoing) |
//! |---|---|---|
//! | [`supported_version`], [`negotiate`], [`repeated_initialize`]; the router's [`select`] (`version.rs`) | `initialize` | `initialize` answer |
//! | [`agent_method`]: method → agent capability | every request | every request |
//! | [`client_method`]: method → client capability | (outgoing) every request | every request (incoming) |
//! | [`absolute_cwd`], [`mcp_servers`], [`system_prompt`] | `session/new`, `load`, `resume` (and `fork`) | the same |
//! | [`session_room`] | `session/new`, `load`, `resume`, `fork` | — |
//! | [`tool_call_sizes`] | — | (incoming) `tool_call`, `tool_call_update` updates |
//! | [`prompt_content`] | `session/prompt` | `session/prompt` |
//! | [`mode`], [`config_value`] | `set_mode`, `set_config_option` | the same |
//! | `model` (feature `unstable-models`) | `set_model` | the same |
//! | [`session_update`] (notices, compaction, `plan_update`/`plan_removed`, subagents, session messages, `session` tool call content), [`offered_config_options`] | (outgoing) updates, session answers | (incoming) reported |
//! | [`extension_method`] | (outgoing) `_` methods | `_` methods |
//! | [`unknown_session`], [`decode_error`] | answers | answers |
//! | schema 1.20's unstable items | see [`unstable`] | |
//!
//! A message that quotes the peer's input (a path, an id, a name) quotes an
//! [`excerpt`] of it: an error must not echo megabytes back.

use std::path::Path;

use acp_jsonrpc::{ErrorCode, ResponseError, excerpt};
use acp_types::*;

use crate::error::{Error, codes};

#[cfg(feature = "unstable-proxy-chains")]
mod proxy;
mod setup;
pub(crate) mod unstable;
mod version;

pub(crate) use setup::SessionSetup;

#[cfg(feature = "unstable-proxy-chains")]
pub(crate) use proxy::*;

pub use version::SUPPORTED_PROTOCOL_VERSIONS;
pub(crate) use version::*;

/// The longest `cwd` or additional directory a session accepts, in bytes: the platform's
/// `PATH_MAX` (4096 on Linux, 1024 on macOS), past which no system call takes the path anyway.
#[cfg(unix)]
pub const MAX_PATH_BYTES: usize = libc::PATH_MAX as usize;
/// The longest `cwd` or additional directory a session accepts, in bytes: Windows' long-path
/// limit of 32,767 UTF-16 units.
#[cfg(not(unix))]
pub const MAX_PATH_BYTES: usize = 32_767;

/// The most additional directories a session accepts.
pub const MAX_ADDITIONAL_DIRECTORIES: usize = 64;

/// The longest tool call id a client accepts, in bytes. Real ids are tens of bytes; the
/// client keeps each id it sees (see [`Session::tool_call`](crate::client::Session::tool_call)).
pub const MAX_TOOL_CALL_ID_BYTES: usize = 1024;

/// The longest tool call title a client accepts, in bytes: a title is one line for the user
/// (often the command being run), and an application keeps it for the life of the call.
pub const MAX_TOOL_CALL_TITLE_BYTES: usize = 64 * 1024;

/// A broken rule. See the module docs for what each side makes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Breach {
    /// A method the receiving side does not offer: it did not advertise `capability`.
    UnadvertisedMethod {
        method: String,
        capability: &'static str,
    },
    /// A use of a method (a kind of content, a transport, an update) that needs `capability`,
    /// which the receiving side did not advertise.
    UnadvertisedUse {
        what: String,
        capability: &'static str,
    },
    /// A use the sending side may only make when it advertised `capability` itself (a
    /// client setting a boolean config option).
    SenderDidNotAdvertise {
        what: String,
        capability: &'static str,
    },
    /// Breaks a rule whatever was advertised.
    Invalid(String),
}

impl Breach {
    fn unadvertised_use(what: impl Into<String>, capability: &'static str) -> Self {
        Breach::UnadvertisedUse {
            what: what.into(),
            capability,
        }
    }

    /// What the application gets when it is about to break the rule; nothing was sent.
    pub(crate) fn refused(self) -> Error {
        match self {
            Breach::UnadvertisedMethod { method, capability } => {
                Error::NotAdvertised { method, capability }
            }
            Breach::UnadvertisedUse { what, capability } => Error::NotAdvertised {
                method: what,
                capability,
            },
            Breach::SenderDidNotAdvertise { what, capability } => Error::Invalid(format!(
                "{what} needs this side's own `{capability}` capability, which it does not advertise"
            )),
            Breach::Invalid(message) => Error::Invalid(message),
        }
    }

    /// What the peer gets when its request breaks the rule. `receiver` names the answering
    /// side ("agent" or "client").
    pub(crate) fn answer(self, receiver: &str) -> Error {
        match self {
            Breach::UnadvertisedMethod { method, capability } => Error::Rpc(
                ResponseError::method_not_found(&method).with_data(&serde_json::json!({
                    "method": excerpt(&method),
                    "reason": format!("this {receiver} does not advertise `{capability}`"),
                })),
            ),
            Breach::UnadvertisedUse { what, capability } => Error::invalid_params(format!(
                "{what} needs `{capability}`, which this {receiver} does not advertise"
            )),
            Breach::SenderDidNotAdvertise { what, capability } => Error::invalid_params(format!(
                "{what} needs `{capability}`, which the sender did not advertise"
            )),
            Breach::Invalid(message) => Error::invalid_params(message),
        }
    }
}

impl std::fmt::Display for Breach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Breach::UnadvertisedMethod { method, capability }
            | Breach::UnadvertisedUse {
                what: method,
                capability,
            }
            | Breach::SenderDidNotAdvertise {
                what: method,
                capability,
            } => write!(f, "{method} needs `{capability}`, which was not advertised"),
            Breach::Invalid(message) => f.write_str(message),
        }
    }
}

type Rule = std::result::Result<(), Breach>;

/// A client accepts only an answered version it speaks.
pub(crate) fn supported_version(offered: ProtocolVersion) -> Result<(), Error> {
    if SUPPORTED_PROTOCOL_VERSIONS.contains(&offered.0) {
        Ok(())
    } else {
        Err(Error::UnsupportedProtocolVersion {
            offered: offered.0,
            supported: SUPPORTED_PROTOCOL_VERSIONS,
        })
    }
}

/// The capability an agent must advertise for a client to call `method`.
pub(crate) fn agent_method(method: &str, caps: &AgentCapabilities) -> Rule {
    let sessions = &caps.session_capabilities;
    let missing = match method {
        "session/load" if !caps.load_session => "loadSession",
        "session/list" if sessions.list.is_none() => "sessionCapabilities.list",
        "session/resume" if sessions.resume.is_none() => "sessionCapabilities.resume",
        "session/close" if sessions.close.is_none() => "sessionCapabilities.close",
        "session/delete" if sessions.delete.is_none() => "sessionCapabilities.delete",
        "logout" if caps.auth.logout.is_none() => "auth.logout",
        #[cfg(feature = "unstable-session-fork")]
        "session/fork" if sessions.fork.is_none() => "sessionCapabilities.fork",
        #[cfg(feature = "unstable-session-archive")]
        "session/archive" | "session/unarchive" if sessions.archive.is_none() => {
            "sessionCapabilities.archive"
        }
        #[cfg(feature = "unstable-session-status")]
        "session/status" if sessions.status.is_none() => "sessionCapabilities.status",
        #[cfg(feature = "unstable-session-title")]
        "session/set_title" if sessions.title.is_none() => "sessionCapabilities.title",
        #[cfg(feature = "unstable-providers")]
        "providers/list" | "providers/set" | "providers/disable" if caps.providers.is_none() => {
            "providers"
        }
        #[cfg(feature = "unstable-auth-status")]
        "auth/status" if caps.auth.status.is_none() => "auth.status",
        #[cfg(feature = "unstable-mcp-over-acp")]
        "mcp/message" if !caps.mcp_capabilities.acp => "mcpCapabilities.acp",
        #[cfg(feature = "unstable-session-options")]
        "session/options" if sessions.options.is_none() => "sessionCapabilities.options",
        _ => return Ok(()),
    };
    Err(Breach::UnadvertisedMethod {
        method: method.to_owned(),
        capability: missing,
    })
}

/// The capability a client must advertise for an agent to call `method`. `elicitation` is
/// the mode of an `elicitation/create` request (`form`, `url`, or another).
pub(crate) fn client_method(
    method: &str,
    elicitation: Option<&CreateElicitationRequestKind>,
    caps: &ClientCapabilities,
) -> Rule {
    let missing = match method {
        "fs/read_text_file" if !caps.fs.read_text_file => "fs.readTextFile",
        "fs/write_text_file" if !caps.fs.write_text_file => "fs.writeTextFile",
        m if m.starts_with("terminal/") && !caps.terminal => "terminal",
        "elicitation/create" => {
            let Some(advertised) = &caps.elicitation else {
                return Err(Breach::UnadvertisedMethod {
                    method: method.to_owned(),
                    capability: "elicitation",
                });
            };
            return match elicitation {
                Some(CreateElicitationRequestKind::Form(_)) if advertised.form.is_none() => Err(
                    Breach::unadvertised_use("an elicitation in form mode", "elicitation.form"),
                ),
                Some(CreateElicitationRequestKind::Url(_)) if advertised.url.is_none() => Err(
                    Breach::unadvertised_use("an elicitation in url mode", "elicitation.url"),
                ),
                _ => Ok(()),
            };
        }
        _ => return Ok(()),
    };
    Err(Breach::UnadvertisedMethod {
        method: method.to_owned(),
        capability: missing,
    })
}

/// `cwd` (and each additional directory) must be absolute, and no longer than
/// [`MAX_PATH_BYTES`]; at most [`MAX_ADDITIONAL_DIRECTORIES`] additional directories.
pub(crate) fn absolute_cwd(cwd: &str, additional: &[impl AsRef<str>]) -> Rule {
    if additional.len() > MAX_ADDITIONAL_DIRECTORIES {
        return Err(Breach::Invalid(format!(
            "at most {MAX_ADDITIONAL_DIRECTORIES} additionalDirectories are accepted, got {}",
            additional.len()
        )));
    }
    let paths = std::iter::once(("cwd", cwd)).chain(
        additional
            .iter()
            .map(|d| ("additionalDirectories", d.as_ref())),
    );
    for (what, path) in paths {
        if path.len() > MAX_PATH_BYTES {
            return Err(Breach::Invalid(format!(
                "{what} is {} bytes long, beyond the platform's limit of {MAX_PATH_BYTES}: `{}`",
                path.len(),
                excerpt(path)
            )));
        }
        if !Path::new(path).is_absolute() {
            return Err(Breach::Invalid(format!(
                "{what} must be an absolute path, got `{}`",
                excerpt(path)
            )));
        }
    }
    Ok(())
}

/// An agent's connection keeps at most `max` sessions, which together keep at most `budget`
/// bytes (directories, MCP servers): a request that would open one more (`new_bytes` more) is
/// refused (`-32602`) before it reaches the agent. `open` and `kept` count the sessions being
/// opened too.
pub(crate) fn session_room(
    (open, max): (usize, usize),
    (kept, new_bytes, budget): (usize, usize, usize),
) -> Rule {
    if open >= max {
        return Err(Breach::Invalid(format!(
            "this connection has {open} sessions, the most it keeps ({max}); close one first"
        )));
    }
    if kept != 0 && kept.saturating_add(new_bytes) > budget {
        return Err(Breach::Invalid(format!(
            "this connection's sessions keep {kept} bytes (directories, MCP servers); one more of {new_bytes} bytes would pass its budget of {budget}; close one first"
        )));
    }
    Ok(())
}

/// The sessions of every connection of a server, v1 and v2 alike, keep at most its shared
/// budget (`AgentOptions::with_shared_session_budget`): takes `take` bytes of it for a
/// connection that then holds `holder_after`, or refuses one more session of `new_bytes`
/// (`-32602`), taking nothing.
pub(crate) fn shared_session_room(
    shared: &acp_jsonrpc::ByteBudget,
    (take, holder_after): (usize, usize),
    new_bytes: usize,
) -> Rule {
    if shared.try_take_as(take, holder_after) {
        return Ok(());
    }
    Err(Breach::Invalid(format!(
        "the server's sessions keep too many bytes ({} of its {}) for one more of {new_bytes} bytes on this connection; close one first",
        shared.used(),
        shared.limit(),
    )))
}

/// A tool call's id and title are at most [`MAX_TOOL_CALL_ID_BYTES`] and
/// [`MAX_TOOL_CALL_TITLE_BYTES`] long. A client hands an update that breaks this to the
/// application as an update that does not decode, raw, with this reason, and does not track
/// its id.
pub(crate) fn tool_call_sizes(update: &SessionUpdate) -> Rule {
    let (id, title) = match update {
        SessionUpdate::ToolCall(call) => (&call.tool_call_id, Some(call.title.as_str())),
        SessionUpdate::ToolCallUpdate(update) => (&update.tool_call_id, update.title.as_deref()),
        _ => return Ok(()),
    };
    if id.0.len() > MAX_TOOL_CALL_ID_BYTES {
        return Err(Breach::Invalid(format!(
            "a tool call id of {} bytes, beyond the limit of {MAX_TOOL_CALL_ID_BYTES}: `{}`",
            id.0.len(),
            excerpt(&id.0)
        )));
    }
    match title {
        Some(title) if title.len() > MAX_TOOL_CALL_TITLE_BYTES => Err(Breach::Invalid(format!(
            "the title of tool call `{}` is {} bytes, beyond the limit of {MAX_TOOL_CALL_TITLE_BYTES}",
            excerpt(&id.0),
            title.len()
        ))),
        _ => Ok(()),
    }
}

/// MCP servers over http or sse need the agent's matching `mcpCapabilities`.
pub(crate) fn mcp_servers(servers: &[McpServer], caps: &AgentCapabilities) -> Rule {
    for server in servers {
        match server {
            McpServer::Http(s) if !caps.mcp_capabilities.http => {
                return Err(Breach::unadvertised_use(
                    format!("MCP server `{}` over http", excerpt(&s.name)),
                    "mcpCapabilities.http",
                ));
            }
            McpServer::Sse(s) if !caps.mcp_capabilities.sse => {
                return Err(Breach::unadvertised_use(
                    format!("MCP server `{}` over sse", excerpt(&s.name)),
                    "mcpCapabilities.sse",
                ));
            }
            #[cfg(feature = "unstable-mcp-over-acp")]
            McpServer::Acp(s) if !caps.mcp_capabilities.acp => {
                return Err(Breach::unadvertised_use(
                    format!("MCP server `{}` over acp", excerpt(&s.name)),
                    "mcpCapabilities.acp",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Images, audio and embedded resources in a prompt need the agent's `promptCapabilities`.
pub(crate) fn prompt_content(prompt: &[ContentBlock], caps: &PromptCapabilities) -> Rule {
    for block in prompt {
        let (what, capability) = match block {
            ContentBlock::Image(_) if !caps.image => ("an image", "promptCapabilities.image"),
            ContentBlock::Audio(_) if !caps.audio => ("audio", "promptCapabilities.audio"),
            ContentBlock::Resource(_) if !caps.embedded_context => {
                ("an embedded resource", "promptCapabilities.embeddedContext")
            }
            _ => continue,
        };
        return Err(Breach::unadvertised_use(
            format!("a prompt with {what}"),
            capability,
        ));
    }
    Ok(())
}

/// `session/set_mode` names a mode the session advertised.
pub(crate) fn mode(
    session: &SessionId,
    modes: Option<&SessionModeState>,
    mode: &SessionModeId,
) -> Rule {
    let Some(modes) = modes else {
        return Err(Breach::Invalid(format!(
            "session `{}` advertised no modes",
            excerpt(&session.0)
        )));
    };
    if modes.available_modes.iter().any(|m| &m.id == mode) {
        return Ok(());
    }
    Err(Breach::Invalid(format!(
        "unknown mode `{}`; the session advertised {:?}",
        excerpt(&mode.0),
        modes
            .available_modes
            .iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>()
    )))
}

/// `session/set_model` (feature `unstable-models`) names a model the session advertised in
/// its answer's `models`.
#[cfg(feature = "unstable-models")]
pub(crate) fn model(
    session: &SessionId,
    models: Option<&acp_types::models::SessionModelState>,
    model: &acp_types::models::ModelId,
) -> Rule {
    let Some(models) = models else {
        return Err(Breach::Invalid(format!(
            "session `{}` advertised no models",
            excerpt(&session.0)
        )));
    };
    if models.available_models.iter().any(|m| &m.model_id == model) {
        return Ok(());
    }
    Err(Breach::Invalid(format!(
        "unknown model `{}`; the session advertised {:?}",
        excerpt(&model.0),
        models
            .available_models
            .iter()
            .map(|m| m.model_id.as_str())
            .collect::<Vec<_>>()
    )))
}

/// `session/set_config_option` names an option the session advertised, with a value of that
/// option; a boolean value needs the client's `session.configOptions.boolean`.
pub(crate) fn config_value(
    session: &SessionId,
    options: Option<&[SessionConfigOption]>,
    request: &SetSessionConfigOptionRequest,
    client: &ClientCapabilities,
) -> Rule {
    if matches!(request.kind, SetSessionConfigOptionRequestKind::Boolean(_))
        && !boolean_config_options(client)
    {
        return Err(Breach::SenderDidNotAdvertise {
            what: format!("setting `{}` to a boolean", excerpt(&request.config_id.0)),
            capability: "session.configOptions.boolean",
        });
    }
    let Some(options) = options else {
        return Err(Breach::Invalid(format!(
            "session `{}` advertised no config options",
            excerpt(&session.0)
        )));
    };
    let Some(option) = options.iter().find(|o| o.id == request.config_id) else {
        return Err(Breach::Invalid(format!(
            "unknown config option `{}`; the session advertised {:?}",
            excerpt(&request.config_id.0),
            options.iter().map(|o| o.id.as_str()).collect::<Vec<_>>()
        )));
    };
    match (&option.kind, &request.kind) {
        (
            SessionConfigOptionKind::Select(select),
            SetSessionConfigOptionRequestKind::ValueId(v),
        ) => {
            let values = select_values(&select.options);
            if values.contains(&&v.value) {
                Ok(())
            } else {
                Err(Breach::Invalid(format!(
                    "`{}` is not a value of config option `{}`; allowed: {:?}",
                    excerpt(&v.value.0),
                    option.id,
                    values.iter().map(|v| v.as_str()).collect::<Vec<_>>()
                )))
            }
        }
        (SessionConfigOptionKind::Boolean(_), SetSessionConfigOptionRequestKind::Boolean(_)) => {
            Ok(())
        }
        _ => Err(Breach::Invalid(format!(
            "config option `{}` does not take a value of that type",
            option.id
        ))),
    }
}

/// The config option state after applying `request`'s value (as checked before it reached the agent).
pub fn apply_config_value(
    mut current: Vec<SessionConfigOption>,
    request: &SetSessionConfigOptionRequest,
) -> Vec<SessionConfigOption> {
    for option in &mut current {
        if option.id != request.config_id {
            continue;
        }
        match (&mut option.kind, &request.kind) {
            (
                SessionConfigOptionKind::Select(select),
                SetSessionConfigOptionRequestKind::ValueId(v),
            ) => {
                select.current_value = v.value.clone();
            }
            (
                SessionConfigOptionKind::Boolean(b),
                SetSessionConfigOptionRequestKind::Boolean(v),
            ) => {
                b.current_value = v.value;
            }
            _ => {}
        }
    }
    current
}

fn select_values(options: &SessionConfigSelectOptions) -> Vec<&SessionConfigValueId> {
    match options {
        SessionConfigSelectOptions::Ungrouped(options) => {
            options.iter().map(|o| &o.value).collect()
        }
        SessionConfigSelectOptions::Grouped(groups) => groups
            .iter()
            .flat_map(|g| g.options.iter().map(|o| &o.value))
            .collect(),
        _ => Vec::new(),
    }
}

fn boolean_config_options(client: &ClientCapabilities) -> bool {
    client
        .session
        .as_ref()
        .and_then(|s| s.config_options.as_ref())
        .is_some_and(|c| c.boolean.is_some())
}

/// Config options an agent offers (in a session's answer or a `config_option_update`): a
/// boolean option needs the client's `session.configOptions.boolean`.
pub(crate) fn offered_config_options(
    options: Option<&[SessionConfigOption]>,
    client: &ClientCapabilities,
) -> Rule {
    if boolean_config_options(client) {
        return Ok(());
    }
    let boolean = options
        .unwrap_or_default()
        .iter()
        .find(|o| matches!(o.kind, SessionConfigOptionKind::Boolean(_)));
    match boolean {
        None => Ok(()),
        Some(option) => Err(Breach::unadvertised_use(
            format!("the boolean config option `{}`", excerpt(&option.id.0)),
            "session.configOptions.boolean",
        )),
    }
}

/// Whether [`session_update`] has anything to check for this kind of update: the cheap test
/// that keeps the common updates (message chunks, most tool calls) off the capability lookup.
pub(crate) fn update_needs_capability(update: &SessionUpdate) -> bool {
    match update {
        SessionUpdate::Notice(_)
        | SessionUpdate::CompactionUpdate(_)
        | SessionUpdate::CompactionSummaryChunk(_)
        | SessionUpdate::ConfigOptionUpdate(_)
        | SessionUpdate::PlanUpdate(_)
        | SessionUpdate::PlanRemoved(_)
        | SessionUpdate::SubagentUpdate(_)
        | SessionUpdate::SessionMessage(_)
        | SessionUpdate::SessionMessageChunk(_) => true,
        SessionUpdate::ToolCall(call) => references_a_session(call.content.as_deref()),
        SessionUpdate::ToolCallUpdate(update) => references_a_session(update.content.as_deref()),
        _ => unstable::update_needs_capability(update),
    }
}

/// Whether tool call content embeds another session (`{"type": "session"}`), which only a
/// client that advertised `subagents` may be shown.
fn references_a_session(content: Option<&[ToolCallContent]>) -> bool {
    content
        .unwrap_or_default()
        .iter()
        .any(|c| matches!(c, ToolCallContent::Session(_)))
}

/// Update kinds a client must opt into: `notice` needs `session.notices`, the compaction
/// updates `session.compaction`, boolean config options `session.configOptions.boolean`,
/// `plan_update` and `plan_removed` need `plan` (a client without it gets the old `plan`
/// update; see `SessionClient::set_plan`), and `subagent_update`, `session_message`,
/// `session_message_chunk` and tool call content of type `session` need `subagents`.
pub(crate) fn session_update(update: &SessionUpdate, client: &ClientCapabilities) -> Rule {
    let session = client.session.as_ref();
    match update {
        SessionUpdate::Notice(_) if session.and_then(|s| s.notices.as_ref()).is_none() => Err(
            Breach::unadvertised_use("a `notice` update", "session.notices"),
        ),
        SessionUpdate::CompactionUpdate(_) | SessionUpdate::CompactionSummaryChunk(_)
            if session.and_then(|s| s.compaction.as_ref()).is_none() =>
        {
            Err(Breach::unadvertised_use(
                "a compaction update",
                "session.compaction",
            ))
        }
        SessionUpdate::ConfigOptionUpdate(update) => {
            offered_config_options(Some(&update.config_options), client)
        }
        SessionUpdate::PlanUpdate(_) if client.plan.is_none() => {
            Err(Breach::unadvertised_use("a `plan_update` update", "plan"))
        }
        SessionUpdate::PlanRemoved(_) if client.plan.is_none() => {
            Err(Breach::unadvertised_use("a `plan_removed` update", "plan"))
        }
        _ if client.subagents.is_some() => Ok(()),
        SessionUpdate::SubagentUpdate(_) => Err(Breach::unadvertised_use(
            "a `subagent_update` update",
            "subagents",
        )),
        SessionUpdate::SessionMessage(_) => Err(Breach::unadvertised_use(
            "a `session_message` update",
            "subagents",
        )),
        SessionUpdate::SessionMessageChunk(_) => Err(Breach::unadvertised_use(
            "a `session_message_chunk` update",
            "subagents",
        )),
        SessionUpdate::ToolCall(call) if references_a_session(call.content.as_deref()) => Err(
            Breach::unadvertised_use("tool call content of type `session`", "subagents"),
        ),
        SessionUpdate::ToolCallUpdate(update)
            if references_a_session(update.content.as_deref()) =>
        {
            Err(Breach::unadvertised_use(
                "tool call content of type `session`",
                "subagents",
            ))
        }
        _ => Ok(()),
    }
}

/// A client's `systemPrompt` on `session/new`, `load`, `resume` (and `fork`): the agent must
/// advertise `sessionCapabilities.systemPrompt` (which means `append`), and
/// `sessionCapabilities.systemPrompt.mode.override` for `override`; any other mode is
/// unsupported (the schema: an agent MUST return an error for a mode it does not support).
/// The content is not empty and only text (clients MUST NOT send anything else until a
/// capability allows it).
pub(crate) fn system_prompt(prompt: Option<&SystemPrompt>, caps: &AgentCapabilities) -> Rule {
    let Some(prompt) = prompt else {
        return Ok(());
    };
    let Some(advertised) = &caps.session_capabilities.system_prompt else {
        return Err(Breach::unadvertised_use(
            "a system prompt",
            "sessionCapabilities.systemPrompt",
        ));
    };
    match &prompt.mode {
        SystemPromptMode::Append => {}
        SystemPromptMode::Override => {
            if advertised
                .mode
                .as_ref()
                .and_then(|m| m.r#override.as_ref())
                .is_none()
            {
                return Err(Breach::unadvertised_use(
                    "a system prompt in `override` mode",
                    "sessionCapabilities.systemPrompt.mode.override",
                ));
            }
        }
        other => {
            return Err(Breach::Invalid(format!(
                "system prompt mode `{other}` is not supported; this agent takes `append`{}",
                if advertised
                    .mode
                    .as_ref()
                    .is_some_and(|m| m.r#override.is_some())
                {
                    " and `override`"
                } else {
                    ""
                }
            )));
        }
    }
    if prompt.content.is_empty() {
        return Err(Breach::Invalid(
            "a system prompt's content must not be empty".to_owned(),
        ));
    }
    if let Some(block) = prompt
        .content
        .iter()
        .find(|b| !matches!(b, ContentBlock::Text(_)))
    {
        return Err(Breach::Invalid(format!(
            "a system prompt carries only text content, not `{}`",
            content_type(block)
        )));
    }
    Ok(())
}

/// The `type` of a content block, for messages.
fn content_type(block: &ContentBlock) -> String {
    serde_json::to_value(block)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Extension methods and notifications are named with a leading `_`.
pub(crate) fn extension_method(method: &str) -> Rule {
    if method.starts_with('_') {
        Ok(())
    } else {
        Err(Breach::Invalid(format!(
            "extension methods start with `_`, not `{}`",
            excerpt(method)
        )))
    }
}

/// What a client may send for a subagent session (schema 1.20): its parent drives it, so
/// only `session/cancel`, and only when the parent advertised `cancel` for the child.
pub(crate) fn subagent_method(method: &str, session: &SessionId, cancel: bool) -> Rule {
    match method {
        "session/cancel" if cancel => Ok(()),
        "session/cancel" => Err(Breach::Invalid(format!(
            "session `{}` is a subagent whose parent did not advertise `cancel` for it; cancel its parent instead",
            excerpt(session.as_str())
        ))),
        _ => Err(Breach::Invalid(format!(
            "session `{}` is a subagent, driven by its parent: `{method}` is not sent for it",
            excerpt(session.as_str())
        ))),
    }
}

/// The answer to a request that names a session this side does not know.
pub(crate) fn unknown_session(id: &SessionId) -> Error {
    let id = excerpt(&id.0);
    Error::Rpc(
        ResponseError::new(codes::RESOURCE_NOT_FOUND, format!("Unknown session `{id}`"))
            .with_data(&serde_json::json!({ "sessionId": id })),
    )
}

/// The answer to a request whose method is unknown or whose params do not decode.
pub(crate) fn decode_error(error: DecodeError) -> ResponseError {
    match error {
        DecodeError::UnknownMethod(method) => ResponseError::method_not_found(&method),
        DecodeError::InvalidParams { error, .. } => ResponseError::invalid_params(error),
    }
}

/// The answer to a request that came before `initialize` could settle.
/// (The detail names the peer's method: it is cut to an [`excerpt`].)
pub(crate) fn not_initialized(detail: impl std::fmt::Display) -> ResponseError {
    ResponseError::new(ErrorCode::INVALID_REQUEST, excerpt(&detail.to_string()))
}
