//! One view over the requests that set up a session, v1's four (`session/new`, `load`,
//! `resume`, `fork`) and v2's two (`session/new`, `session/resume`), so the rules, the agents'
//! dispatch (both versions) and the client's builders read the setup fields in one place and
//! the next schema field on setup requests is a one-place change.

use serde::Serialize;

use acp_types::*;

/// What every session-setup request carries, read the same way on both sides and in both
/// protocol versions; the version's own types are the associated ones.
pub(crate) trait SessionSetup {
    /// An additional directory as the version writes it (v1 a `String`, v2 an `AbsolutePath`).
    type Directory: AsRef<str>;
    /// The version's MCP server description.
    type McpServer: Serialize;
    /// The version's system prompt.
    type SystemPrompt: Serialize;

    /// The working directory the session runs in.
    fn cwd(&self) -> &str;
    /// Further directories the session may touch besides `cwd` (absent counts as none).
    fn additional_directories(&self) -> &[Self::Directory];
    /// The MCP servers to connect (absent counts as none).
    fn mcp_servers(&self) -> &[Self::McpServer];
    /// The system prompt the client asks for, if any.
    fn system_prompt(&self) -> Option<&Self::SystemPrompt>;
    /// The config options the session starts with (v2's setup requests carry none).
    #[cfg(feature = "unstable-session-options")]
    fn config_options(&self) -> Option<&[InitialSessionConfigOption]> {
        None
    }

    /// What an agent keeps for the session beside its own entry, in bytes: the directories,
    /// the MCP servers and the system prompt as JSON. What the session budgets
    /// (`AgentOptions::with_session_budget`, the shared one) count.
    fn kept_bytes(&self) -> usize {
        let directories: usize = self
            .additional_directories()
            .iter()
            .map(|d| d.as_ref().len())
            .sum();
        self.cwd().len()
            + directories
            + encoded_len(&self.mcp_servers())
            + self.system_prompt().map_or(0, encoded_len)
    }
}

/// The size of `value` as JSON, without writing it anywhere.
fn encoded_len(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A setup request's list field read as a slice: `Vec` on some requests, `Option<Vec>` on
/// others (absent is empty).
trait AsSlice<T> {
    fn as_slice(&self) -> &[T];
}

impl<T> AsSlice<T> for Vec<T> {
    fn as_slice(&self) -> &[T] {
        self
    }
}

impl<T> AsSlice<T> for Option<Vec<T>> {
    fn as_slice(&self) -> &[T] {
        self.as_deref().unwrap_or_default()
    }
}

/// Implements [`SessionSetup`] for a setup request with the version's directory, MCP server
/// and system prompt types; `config_options` for a request that carries `configOptions`.
macro_rules! session_setup {
    ($request:ty, $directory:ty, $server:ty, $prompt:ty $(, $options:ident)?) => {
        impl SessionSetup for $request {
            type Directory = $directory;
            type McpServer = $server;
            type SystemPrompt = $prompt;
            fn cwd(&self) -> &str {
                self.cwd.as_ref()
            }
            fn additional_directories(&self) -> &[$directory] {
                AsSlice::as_slice(&self.additional_directories)
            }
            fn mcp_servers(&self) -> &[$server] {
                AsSlice::as_slice(&self.mcp_servers)
            }
            fn system_prompt(&self) -> Option<&$prompt> {
                self.system_prompt.as_ref()
            }
            $(
            #[cfg(feature = "unstable-session-options")]
            fn $options(&self) -> Option<&[InitialSessionConfigOption]> {
                self.config_options.as_deref()
            }
            )?
        }
    };
}

session_setup!(
    NewSessionRequest,
    String,
    McpServer,
    SystemPrompt,
    config_options
);
session_setup!(
    LoadSessionRequest,
    String,
    McpServer,
    SystemPrompt,
    config_options
);
session_setup!(
    ResumeSessionRequest,
    String,
    McpServer,
    SystemPrompt,
    config_options
);
#[cfg(feature = "unstable-session-fork")]
session_setup!(
    ForkSessionRequest,
    String,
    McpServer,
    SystemPrompt,
    config_options
);

#[cfg(feature = "unstable-protocol-v2")]
mod v2_setup {
    use super::{AsSlice, SessionSetup};
    use acp_types::v2::*;

    session_setup!(NewSessionRequest, AbsolutePath, McpServer, SystemPrompt);
    session_setup!(ResumeSessionRequest, AbsolutePath, McpServer, SystemPrompt);
}
