//! What acp prints about the run beside the turns, on stderr: notes about the connection, a
//! registry failure, the agent's auth methods; and whether a stream gets colour.

use std::io::IsTerminal;

use acp_runtime::client::AgentHandle;
use acp_types::AuthMethod;

use crate::{exit, registry};

/// A `--agent` or `acp agents` failure: reported, and its exit status.
pub fn registry_failure(failed: registry::Failed) -> i32 {
    eprintln!("acp: {}", failed.message);
    if failed.unknown_agent {
        exit::USAGE
    } else {
        exit::AGENT_GONE
    }
}

/// A note about the connection, on stderr (dimmed on a terminal); none with `--json`.
pub fn note(json: bool, text: &str) {
    if json {
        return;
    }
    if color(std::io::stderr()) {
        eprintln!("\x1b[2m{text}\x1b[0m");
    } else {
        eprintln!("{text}");
    }
}

/// Whether to colour what goes to this stream: a terminal, and `NO_COLOR` unset or empty.
pub fn color(stream: impl IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The agent's advertised auth methods, on stderr.
pub fn print_auth_methods(agent: &AgentHandle) {
    let methods = agent
        .agent_info()
        .map(|i| i.auth_methods)
        .unwrap_or_default();
    if methods.is_empty() {
        eprintln!("The agent requires authentication but advertised no auth methods.");
        return;
    }
    eprintln!("The agent requires authentication. Its methods (use --auth ID):");
    for method in methods {
        let line = match &method {
            AuthMethod::Agent(m) => match &m.description {
                Some(description) => format!("  {}  {} ({description})", m.id, m.name),
                None => format!("  {}  {}", m.id, m.name),
            },
            AuthMethod::Terminal(m) => {
                format!(
                    "  {}  {} (terminal method: run the agent's login command instead)",
                    m.id, m.name
                )
            }
            AuthMethod::Unknown(raw) => {
                let field = |k: &str| {
                    raw.get(k)
                        .and_then(|v| v.as_str())
                        .unwrap_or("?")
                        .to_owned()
                };
                format!(
                    "  {}  {} (type {})",
                    field("id"),
                    field("name"),
                    field("type")
                )
            }
            other => format!("  {other:?}"),
        };
        eprintln!("{line}");
    }
}
