//! `acp --agent ID` and `acp agents`: agents from the ACP agent registry (acp-registry does
//! the work; this module prints and maps its errors to exit statuses).

use acp_registry::cli::{RegistryArgs, RegistryOptions};
use acp_registry::{Error, Registry};
use acp_runtime::process::AgentCommand;

/// A registry failure, already worded for the user.
pub struct Failed {
    pub message: String,
    /// An unknown id: a usage error rather than an agent that could not be started.
    pub unknown_agent: bool,
}

impl From<Error> for Failed {
    fn from(error: Error) -> Self {
        Failed {
            unknown_agent: matches!(error, Error::UnknownAgent { .. }),
            message: error.to_string(),
        }
    }
}

/// `acp agents`: the registry as a table, for stdout.
pub fn list(options: &RegistryOptions) -> Result<String, Failed> {
    Ok(table(&options.load(report)?.registry))
}

/// `--agent ID`: the command that starts it (installing it first if it is a binary) and its
/// command line, for a note; `None` without `--agent`.
pub fn command(args: &RegistryArgs) -> Result<Option<(AgentCommand, String)>, Failed> {
    Ok(args.launch(report)?.map(|launch| {
        let line = launch.to_string();
        (AgentCommand::from(launch), line)
    }))
}

fn report(message: &str) {
    eprintln!("acp: {message}");
}

/// One line per agent: id, name, version, distributions; then the entries set aside.
fn table(registry: &Registry) -> String {
    let rows: Vec<[String; 4]> = registry
        .agents
        .iter()
        .map(|agent| {
            [
                agent.id.clone(),
                agent.name.clone(),
                agent.version.clone(),
                agent.offered().join(", "),
            ]
        })
        .collect();
    let header = ["ID", "NAME", "VERSION", "DISTRIBUTION"].map(String::from);
    let mut widths = [0; 3];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter().zip(row) {
            out += &format!("{cell:<width$}  ");
        }
        out += &row[3];
        out.push('\n');
    }
    for skipped in &registry.skipped {
        out += &format!(
            "(skipped {}: {})\n",
            skipped.id.as_deref().unwrap_or("an entry without an id"),
            skipped.reason
        );
    }
    out
}
