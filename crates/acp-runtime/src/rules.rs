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
//! | [`supported_version`], [`negotiate`] | `initialize` | `initialize` answer |
//! | [`agent_method`]: method → agent capability | every request | every request |
//! | [`client_method`]: method → client capability | (outgoing) every request | every request (incoming) |
//! | [`absolute_cwd`], [`mcp_servers`] | `session/new`, `load`, `resume` | the same |
//! | [`prompt_content`] | `session/prompt` | `session/prompt` |
//! | [`mode`], [`config_value`] | `set_mode`, `set_config_option` | the same |
//! | `model` (feature `unstable-models`) | `set_model` | the same |
//! | [`session_update`], [`offered_config_options`] | (outgoing) updates, session answers | (incoming) reported |
//! | [`extension_method`] | (outgoing) `_` methods | `_` methods |
//! | [`unknown_session`], [`decode_error`] | answers | answers |
//! | schema 1.20's unstable items | see [`unstable`] | |

use std::path::Path;

use acp_jsonrpc::{ErrorCode, ResponseError};
use acp_types::*;

use crate::error::{Error, codes};

pub(crate) mod unstable;

/// Protocol versions this runtime speaks, oldest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[u16] = &[1];

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
                    "method": method,
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

/// The version an agent answers: the client's when this runtime speaks it, else the latest.
pub(crate) fn negotiate(requested: ProtocolVersion) -> ProtocolVersion {
    if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested.0) {
        requested
    } else {
        ProtocolVersion(
            *SUPPORTED_PROTOCOL_VERSIONS
                .last()
                .expect("at least one version"),
        )
    }
}

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

/// `cwd` (and each additional directory) must be absolute.
pub(crate) fn absolute_cwd(cwd: &str, additional: Option<&[String]>) -> Rule {
    let relative = std::iter::once(("cwd", cwd))
        .chain(
            additional
                .unwrap_or_default()
                .iter()
                .map(|d| ("additionalDirectories", d.as_str())),
        )
        .find(|(_, path)| !Path::new(path).is_absolute());
    match relative {
        None => Ok(()),
        Some((what, path)) => Err(Breach::Invalid(format!(
            "{what} must be an absolute path, got `{path}`"
        ))),
    }
}

/// MCP servers over http or sse need the agent's matching `mcpCapabilities`.
pub(crate) fn mcp_servers(servers: &[McpServer], caps: &AgentCapabilities) -> Rule {
    for server in servers {
        match server {
            McpServer::Http(s) if !caps.mcp_capabilities.http => {
                return Err(Breach::unadvertised_use(
                    format!("MCP server `{}` over http", s.name),
                    "mcpCapabilities.http",
                ));
            }
            McpServer::Sse(s) if !caps.mcp_capabilities.sse => {
                return Err(Breach::unadvertised_use(
                    format!("MCP server `{}` over sse", s.name),
                    "mcpCapabilities.sse",
                ));
            }
            #[cfg(feature = "unstable-mcp-over-acp")]
            McpServer::Acp(s) if !caps.mcp_capabilities.acp => {
                return Err(Breach::unadvertised_use(
                    format!("MCP server `{}` over acp", s.name),
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
            "session `{session}` advertised no modes"
        )));
    };
    if modes.available_modes.iter().any(|m| &m.id == mode) {
        return Ok(());
    }
    Err(Breach::Invalid(format!(
        "unknown mode `{mode}`; the session advertised {:?}",
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
            "session `{session}` advertised no models"
        )));
    };
    if models.available_models.iter().any(|m| &m.model_id == model) {
        return Ok(());
    }
    Err(Breach::Invalid(format!(
        "unknown model `{model}`; the session advertised {:?}",
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
            what: format!("setting `{}` to a boolean", request.config_id),
            capability: "session.configOptions.boolean",
        });
    }
    let Some(options) = options else {
        return Err(Breach::Invalid(format!(
            "session `{session}` advertised no config options"
        )));
    };
    let Some(option) = options.iter().find(|o| o.id == request.config_id) else {
        return Err(Breach::Invalid(format!(
            "unknown config option `{}`; the session advertised {:?}",
            request.config_id,
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
                    v.value,
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
            format!("the boolean config option `{}`", option.id),
            "session.configOptions.boolean",
        )),
    }
}

/// Whether [`session_update`] has anything to check for this kind of update: the cheap test
/// that keeps the common updates (message chunks, tool calls) off the capability lookup.
pub(crate) fn update_needs_capability(update: &SessionUpdate) -> bool {
    match update {
        SessionUpdate::Notice(_)
        | SessionUpdate::CompactionUpdate(_)
        | SessionUpdate::CompactionSummaryChunk(_)
        | SessionUpdate::ConfigOptionUpdate(_) => true,
        #[cfg(feature = "unstable-plans")]
        SessionUpdate::PlanUpdate(_) | SessionUpdate::PlanRemoved(_) => true,
        #[cfg(feature = "unstable-subagents")]
        SessionUpdate::SubagentUpdate(_)
        | SessionUpdate::SessionMessage(_)
        | SessionUpdate::SessionMessageChunk(_) => true,
        _ => unstable::update_needs_capability(update),
    }
}

/// Update kinds a client must opt into: `notice` needs `session.notices`, the compaction
/// updates `session.compaction`, boolean config options `session.configOptions.boolean`;
/// with the unstable features, plan updates need `plan`, subagent updates and session
/// messages `subagents`.
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
        #[cfg(feature = "unstable-plans")]
        SessionUpdate::PlanUpdate(_) | SessionUpdate::PlanRemoved(_) if client.plan.is_none() => {
            Err(Breach::unadvertised_use("a plan update", "plan"))
        }
        #[cfg(feature = "unstable-subagents")]
        SessionUpdate::SubagentUpdate(_)
        | SessionUpdate::SessionMessage(_)
        | SessionUpdate::SessionMessageChunk(_)
            if client.subagents.is_none() =>
        {
            Err(Breach::unadvertised_use(
                "a subagent update or session message",
                "subagents",
            ))
        }
        _ => Ok(()),
    }
}

/// Extension methods and notifications are named with a leading `_`.
pub(crate) fn extension_method(method: &str) -> Rule {
    if method.starts_with('_') {
        Ok(())
    } else {
        Err(Breach::Invalid(format!(
            "extension methods start with `_`, not `{method}`"
        )))
    }
}

/// The answer to a request that names a session this side does not know.
pub(crate) fn unknown_session(id: &SessionId) -> Error {
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
pub(crate) fn not_initialized(detail: impl std::fmt::Display) -> ResponseError {
    ResponseError::new(ErrorCode::INVALID_REQUEST, detail.to_string())
}
