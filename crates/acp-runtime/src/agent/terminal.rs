//! Client terminals from the agent's side: [`Terminal`], created with
//! [`SessionClient::create_terminal`](super::SessionClient::create_terminal).

use acp_types::*;

use super::session::SessionClient;
use crate::error::Result;

impl SessionClient {
    /// Starts `command` in a client terminal (needs the client's `terminal` capability). The
    /// returned handle releases the terminal when dropped.
    pub async fn create_terminal(
        &self,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Terminal> {
        let mut request = CreateTerminalRequest::new(self.id.clone(), command);
        request.args = Some(args.into_iter().map(Into::into).collect());
        self.create_terminal_with(request).await
    }

    /// Starts a terminal from a full request (env, cwd, output limit).
    pub async fn create_terminal_with(&self, request: CreateTerminalRequest) -> Result<Terminal> {
        let response = self.client.request(&request).await?;
        Ok(Terminal {
            id: response.terminal_id,
            session: self.clone(),
            released: false,
        })
    }
}

/// A terminal running on the client, created with [`SessionClient::create_terminal`].
///
/// **Drop:** a terminal that was not [`release`](Terminal::release)d is released in the
/// background when dropped (the client kills its process and frees its output), so that
/// abandoned terminals do not pile up on the client.
pub struct Terminal {
    id: TerminalId,
    session: SessionClient,
    released: bool,
}

/// What a command printed and how it ended, from [`Terminal::run_with_timeout`].
#[derive(Clone, Debug, PartialEq)]
pub struct CommandResult {
    /// The output the client kept (see `truncated`).
    pub output: String,
    /// Whether the client dropped the beginning of the output to honour the byte limit.
    pub truncated: bool,
    /// How the command ended.
    pub exit_status: Option<TerminalExitStatus>,
    /// Whether the deadline passed and the command was killed.
    pub timed_out: bool,
}

impl Terminal {
    /// The terminal's id.
    pub fn id(&self) -> &TerminalId {
        &self.id
    }

    /// Tool call content that shows this terminal's live output in the client.
    ///
    /// ```
    /// use acp_runtime::prelude::*;
    ///
    /// fn show(terminal: &acp_runtime::agent::Terminal) -> ToolCall {
    ///     ToolCall::new("call_1", "Running tests").add_content(terminal.tool_call_content())
    /// }
    /// ```
    pub fn tool_call_content(&self) -> ToolCallContent {
        ToolCallContent::Terminal(EmbeddedTerminal::new(self.id.clone()))
    }

    /// The output so far, and the exit status once exited. Bound to the session's running
    /// turn, like [`SessionClient::request`].
    pub async fn output(&self) -> Result<TerminalOutputResponse> {
        let request = TerminalOutputRequest::new(self.session.id.clone(), self.id.clone());
        self.session.request(&request).await
    }

    /// Waits for the command to exit. Bound to the session's running turn: when the turn is
    /// cancelled first it fails at once (see [`SessionClient::request`]); the command keeps
    /// running until killed or released.
    pub async fn wait_for_exit(&self) -> Result<WaitForTerminalExitResponse> {
        let request = WaitForTerminalExitRequest::new(self.session.id.clone(), self.id.clone());
        self.session.request(&request).await
    }

    /// Kills the command; the terminal stays valid for `output` and `wait_for_exit`. Goes out
    /// even after the turn was cancelled: it is how a cancelled turn cleans up.
    pub async fn kill(&self) -> Result<()> {
        let request = KillTerminalRequest::new(self.session.id.clone(), self.id.clone());
        self.session.client.request(&request).await?;
        Ok(())
    }

    /// Kills the command if it still runs and frees the terminal on the client (also after
    /// the turn was cancelled).
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        let request = ReleaseTerminalRequest::new(self.session.id.clone(), self.id.clone());
        self.session.client.request(&request).await?;
        Ok(())
    }

    /// The spec's "run with a timeout" recipe: wait for the exit, or kill the command at the
    /// deadline; then collect the output.
    pub async fn run_with_timeout(&self, timeout: std::time::Duration) -> Result<CommandResult> {
        let exited = futures_lite::future::or(async { Some(self.wait_for_exit().await) }, async {
            smol::Timer::after(timeout).await;
            None
        })
        .await;
        let timed_out = match exited {
            Some(result) => {
                result?;
                false
            }
            None => {
                self.kill().await?;
                self.wait_for_exit().await?;
                true
            }
        };
        let output = self.output().await?;
        Ok(CommandResult {
            output: output.output,
            truncated: output.truncated,
            exit_status: output.exit_status,
            timed_out,
        })
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let request = ReleaseTerminalRequest::new(self.session.id.clone(), self.id.clone());
        let client = self.session.client.clone();
        smol::spawn(async move {
            let _ = client.request(&request).await;
        })
        .detach();
    }
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("id", &self.id)
            .field("session", &self.session.id)
            .finish()
    }
}
