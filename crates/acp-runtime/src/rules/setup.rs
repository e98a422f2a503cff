//! One view over the four requests that set up a session (`session/new`, `load`, `resume`,
//! `fork`), so the rules, the agent's dispatch and the client's builders read the setup
//! fields in one place and the next schema field on setup requests is a one-place change.

use acp_types::*;

/// What every session-setup request carries, read the same way on both sides.
pub(crate) trait SessionSetup {
    /// The working directory the session runs in.
    fn cwd(&self) -> &str;
    /// Further directories the session may touch besides `cwd`.
    fn additional_directories(&self) -> Option<&[String]>;
    /// The MCP servers to connect (absent counts as none).
    fn mcp_servers(&self) -> &[McpServer];
    /// The system prompt the client asks for, if any.
    fn system_prompt(&self) -> Option<&SystemPrompt>;
    /// The config options the session starts with.
    #[cfg(feature = "unstable-session-options")]
    fn config_options(&self) -> Option<&[InitialSessionConfigOption]>;
}

/// Implements [`SessionSetup`] for a setup request; `servers` turns its `mcp_servers` field
/// (a `Vec` on `new`/`load`, an `Option<Vec>` on `resume`/`fork`) into a slice.
macro_rules! session_setup {
    ($request:ty, |$r:ident| $servers:expr) => {
        impl SessionSetup for $request {
            fn cwd(&self) -> &str {
                &self.cwd
            }
            fn additional_directories(&self) -> Option<&[String]> {
                self.additional_directories.as_deref()
            }
            fn mcp_servers(&self) -> &[McpServer] {
                let $r = self;
                $servers
            }
            fn system_prompt(&self) -> Option<&SystemPrompt> {
                self.system_prompt.as_ref()
            }
            #[cfg(feature = "unstable-session-options")]
            fn config_options(&self) -> Option<&[InitialSessionConfigOption]> {
                self.config_options.as_deref()
            }
        }
    };
}

session_setup!(NewSessionRequest, |r| &r.mcp_servers);
session_setup!(LoadSessionRequest, |r| &r.mcp_servers);
session_setup!(ResumeSessionRequest, |r| r
    .mcp_servers
    .as_deref()
    .unwrap_or_default());
#[cfg(feature = "unstable-session-fork")]
session_setup!(ForkSessionRequest, |r| r
    .mcp_servers
    .as_deref()
    .unwrap_or_default());
