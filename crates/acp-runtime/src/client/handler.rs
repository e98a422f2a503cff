//! What a client implements ([`Client`]), and ready-made permission policies.

use std::future::Future;

use acp_types::*;
use serde_json::value::RawValue;

use crate::error::{Error, Result};

/// What a client implements: the requests an agent makes. Only
/// [`request_permission`](Client::request_permission) is required; `fs/*` and `terminal/*`
/// come ready-made through [`ClientOptions`](super::ClientOptions).
pub trait Client: Send + Sync + 'static {
    /// Asks the user for permission. If the turn is cancelled meanwhile, the runtime answers
    /// `cancelled` for you and drops this future.
    fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> impl Future<Output = Result<RequestPermissionResponse>> + Send;

    /// Serves `fs/read_text_file` when no file system host is configured.
    fn read_text_file(
        &self,
        request: ReadTextFileRequest,
    ) -> impl Future<Output = Result<ReadTextFileResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("fs/read_text_file")) }
    }

    /// Serves `fs/write_text_file` when no file system host is configured.
    fn write_text_file(
        &self,
        request: WriteTextFileRequest,
    ) -> impl Future<Output = Result<WriteTextFileResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("fs/write_text_file")) }
    }

    /// Serves `elicitation/create`.
    fn create_elicitation(
        &self,
        request: CreateElicitationRequest,
    ) -> impl Future<Output = Result<CreateElicitationResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("elicitation/create")) }
    }

    /// Serves `terminal/create` when no terminal host is configured: advertise `terminal`
    /// with [`ClientOptions::with_capabilities`](super::ClientOptions::with_capabilities) and implement the five `terminal/*` methods
    /// (for a client with its own terminals, or a fake one in tests).
    fn create_terminal(
        &self,
        request: CreateTerminalRequest,
    ) -> impl Future<Output = Result<CreateTerminalResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/create")) }
    }

    /// Serves `terminal/output` when no terminal host is configured.
    fn terminal_output(
        &self,
        request: TerminalOutputRequest,
    ) -> impl Future<Output = Result<TerminalOutputResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/output")) }
    }

    /// Serves `terminal/wait_for_exit` when no terminal host is configured.
    fn wait_for_terminal_exit(
        &self,
        request: WaitForTerminalExitRequest,
    ) -> impl Future<Output = Result<WaitForTerminalExitResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/wait_for_exit")) }
    }

    /// Serves `terminal/kill` when no terminal host is configured.
    fn kill_terminal(
        &self,
        request: KillTerminalRequest,
    ) -> impl Future<Output = Result<KillTerminalResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/kill")) }
    }

    /// Serves `terminal/release` when no terminal host is configured.
    fn release_terminal(
        &self,
        request: ReleaseTerminalRequest,
    ) -> impl Future<Output = Result<ReleaseTerminalResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("terminal/release")) }
    }

    /// Sees every `session/update`, in order, before it reaches its [`Session`](super::Session). Must not wait
    /// for the agent.
    fn session_update(
        &self,
        notification: &SessionNotification,
    ) -> impl Future<Output = ()> + Send {
        let _ = notification;
        async {}
    }

    /// Learns that an elicitation the agent started (in url mode, say) is complete. Like every
    /// notification handler, it must not wait for the agent.
    fn elicitation_complete(
        &self,
        notification: CompleteElicitationNotification,
    ) -> impl Future<Output = ()> + Send {
        let _ = notification;
        async {}
    }

    /// Learns the agent's authentication state changed (feature `unstable-auth-status`).
    #[cfg(feature = "unstable-auth-status")]
    fn auth_status_update(
        &self,
        notification: AuthStatusUpdateNotification,
    ) -> impl Future<Output = ()> + Send {
        let _ = notification;
        async {}
    }

    /// Serves `mcp/message`: an MCP request from the agent to an MCP server this client
    /// declared with the ACP transport (feature `unstable-mcp-over-acp`).
    #[cfg(feature = "unstable-mcp-over-acp")]
    fn mcp_message(
        &self,
        request: MessageMcpRequest,
    ) -> impl Future<Output = Result<MessageMcpResponse>> + Send {
        let _ = request;
        async { Err(Error::method_not_found("mcp/message")) }
    }

    /// Answers an extension request from the agent.
    fn ext_method(
        &self,
        call: ExtensionCall,
    ) -> impl Future<Output = Result<Box<RawValue>>> + Send {
        async move { Err(Error::method_not_found(&call.method)) }
    }

    /// Handles an extension notification from the agent.
    fn ext_notification(&self, call: ExtensionCall) -> impl Future<Output = ()> + Send {
        let _ = call;
        async {}
    }
}

/// Allows every tool call, with the least privilege that allows it: `allow_once` if offered,
/// else `allow_always`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AutoAllow;

/// Rejects every tool call: `reject_once` if offered, else `reject_always`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AutoReject;

/// Asks on the terminal: prints the tool call and its options to stderr and reads the choice
/// from stdin.
///
/// The read runs on a blocking thread. When the turn is cancelled the runtime answers the
/// request `cancelled` without waiting for it, but that thread still takes the next line typed:
/// an application that also reads prompts from stdin should read all of stdin in one place
/// and implement [`Client::request_permission`] on it (`acp`'s `--ask` does).
#[derive(Clone, Copy, Debug, Default)]
pub struct Interactive;

/// The option of the wanted kind with the least lasting effect: "once" before "always", whatever
/// order the agent lists them in. Some agents list "always" first and then refuse it (gemini-cli
/// in an untrusted folder: "Cannot enable privileged approval modes"); a policy that answers for
/// the user must not grant more than the one call anyway.
fn pick(request: &RequestPermissionRequest, allow: bool) -> RequestPermissionResponse {
    let preference = |kind: &PermissionOptionKind| match kind {
        PermissionOptionKind::AllowOnce if allow => Some(0),
        PermissionOptionKind::AllowAlways if allow => Some(1),
        PermissionOptionKind::RejectOnce if !allow => Some(0),
        PermissionOptionKind::RejectAlways if !allow => Some(1),
        _ => None,
    };
    let chosen = request
        .options
        .iter()
        .filter_map(|option| Some((preference(&option.kind)?, option)))
        .min_by_key(|(rank, _)| *rank)
        .map(|(_, option)| option);
    let outcome = match chosen {
        Some(option) => RequestPermissionOutcome::selected(option.option_id.clone()),
        // No option of the wanted kind: not answering for the user is the safe choice.
        None => RequestPermissionOutcome::Cancelled,
    };
    RequestPermissionResponse::new(outcome)
}

impl Client for AutoAllow {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        Ok(pick(&request, true))
    }
}

impl Client for AutoReject {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        Ok(pick(&request, false))
    }
}

impl Client for Interactive {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        smol::unblock(move || {
            use std::io::{BufRead, Write};
            let title = request
                .tool_call
                .title
                .clone()
                .unwrap_or_else(|| request.tool_call.tool_call_id.to_string());
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "\nPermission requested: {title}");
            for (i, option) in request.options.iter().enumerate() {
                let _ = writeln!(err, "  {}) {} [{}]", i + 1, option.name, option.kind);
            }
            let _ = write!(err, "choose 1-{}: ", request.options.len());
            let _ = err.flush();
            // Not held while the answer is awaited: whatever else prints on stderr meanwhile
            // (a Ctrl-C handler saying it cancels the turn) must not wait for a typed line.
            drop(err);
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| Error::Internal(e.to_string()))?;
            let outcome = line
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| request.options.get(n.wrapping_sub(1)))
                .map_or(RequestPermissionOutcome::Cancelled, |o| {
                    RequestPermissionOutcome::selected(o.option_id.clone())
                });
            Ok(RequestPermissionResponse::new(outcome))
        })
        .await
    }
}
