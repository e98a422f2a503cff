//! The protocol's rules an agent's connection enforces on what the client sends: absolute
//! paths, advertised MCP transports and prompt content, config values the session offers,
//! and version negotiation.

use acp_types::*;

use super::*;
use crate::error::{Error, Result};

/// The config option state after applying `request`'s value.
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
    }
}

pub(super) fn check_config_value(
    options: &[SessionConfigOption],
    request: &SetSessionConfigOptionRequest,
) -> Result<()> {
    let Some(option) = options.iter().find(|o| o.id == request.config_id) else {
        return Err(Error::invalid_params(format!(
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
                Err(Error::invalid_params(format!(
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
        _ => Err(Error::invalid_params(format!(
            "config option `{}` does not take a value of that type",
            option.id
        ))),
    }
}

pub(super) fn check_absolute(cwd: &str, what: &str) -> Result<()> {
    if Path::new(cwd).is_absolute() {
        Ok(())
    } else {
        Err(Error::invalid_params(format!(
            "{what} must be an absolute path, got `{cwd}`"
        )))
    }
}

pub(super) fn check_mcp_servers(servers: &[McpServer], caps: &AgentCapabilities) -> Result<()> {
    for server in servers {
        match server {
            McpServer::Http(s) if !caps.mcp_capabilities.http => {
                return Err(Error::invalid_params(format!(
                    "MCP server `{}` uses http, which this agent does not advertise (mcpCapabilities.http)",
                    s.name
                )));
            }
            McpServer::Sse(s) if !caps.mcp_capabilities.sse => {
                return Err(Error::invalid_params(format!(
                    "MCP server `{}` uses sse, which this agent does not advertise (mcpCapabilities.sse)",
                    s.name
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

pub(super) fn check_prompt_content(
    prompt: &[ContentBlock],
    caps: &PromptCapabilities,
) -> Result<()> {
    for block in prompt {
        let needed = match block {
            ContentBlock::Image(_) if !caps.image => "image",
            ContentBlock::Audio(_) if !caps.audio => "audio",
            ContentBlock::Resource(_) if !caps.embedded_context => "embeddedContext",
            _ => continue,
        };
        return Err(Error::invalid_params(format!(
            "prompt contains content this agent does not accept (promptCapabilities.{needed} is not advertised)"
        )));
    }
    Ok(())
}

/// Negotiates the version as the spec says: the client's when supported, else our latest.
pub(super) fn negotiate(requested: ProtocolVersion) -> ProtocolVersion {
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
