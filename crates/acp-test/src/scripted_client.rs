//! A client that answers from a script and records everything: for testing agents.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_runtime::client::{Client, ClientOptions};
use acp_runtime::{Error, Result, codes};
use acp_types::*;
use serde_json::Value;
use serde_json::value::RawValue;

/// How the [`ScriptedClient`] answers one `session/request_permission`.
#[derive(Clone)]
pub enum PermissionAnswer {
    /// Picks the first `allow_once` option, else the first `allow_always`; `cancelled` when
    /// there is neither.
    Allow,
    /// Picks the first `reject_once` option, else the first `reject_always`; `cancelled` when
    /// there is neither.
    Reject,
    /// Picks the first option of this kind; `cancelled` when there is none.
    Kind(PermissionOptionKind),
    /// Picks the option with this id (even if the agent did not offer it).
    Option(PermissionOptionId),
    /// Answers `cancelled`.
    Cancelled,
    /// Never answers, like a user who has not decided yet: the request stays pending until the
    /// turn is cancelled, when the runtime answers `cancelled`.
    Pending,
    /// Answers what the closure returns.
    With(Arc<dyn Fn(&RequestPermissionRequest) -> RequestPermissionOutcome + Send + Sync>),
}

impl PermissionAnswer {
    /// [`PermissionAnswer::With`] from a closure.
    pub fn with(
        answer: impl Fn(&RequestPermissionRequest) -> RequestPermissionOutcome + Send + Sync + 'static,
    ) -> PermissionAnswer {
        PermissionAnswer::With(Arc::new(answer))
    }

    /// The outcome for `request`, or `None` for [`Pending`](Self::Pending).
    fn outcome(&self, request: &RequestPermissionRequest) -> Option<RequestPermissionOutcome> {
        let first_of = |kinds: &[PermissionOptionKind]| {
            kinds
                .iter()
                .find_map(|kind| request.options.iter().find(|o| o.kind == *kind))
                .map_or(RequestPermissionOutcome::Cancelled, |o| {
                    RequestPermissionOutcome::selected(o.option_id.clone())
                })
        };
        Some(match self {
            PermissionAnswer::Allow => first_of(&[
                PermissionOptionKind::AllowOnce,
                PermissionOptionKind::AllowAlways,
            ]),
            PermissionAnswer::Reject => first_of(&[
                PermissionOptionKind::RejectOnce,
                PermissionOptionKind::RejectAlways,
            ]),
            PermissionAnswer::Kind(kind) => first_of(std::slice::from_ref(kind)),
            PermissionAnswer::Option(id) => RequestPermissionOutcome::selected(id.clone()),
            PermissionAnswer::Cancelled => RequestPermissionOutcome::Cancelled,
            PermissionAnswer::Pending => return None,
            PermissionAnswer::With(answer) => answer(request),
        })
    }
}

impl fmt::Debug for PermissionAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PermissionAnswer::Allow => f.write_str("Allow"),
            PermissionAnswer::Reject => f.write_str("Reject"),
            PermissionAnswer::Kind(kind) => f.debug_tuple("Kind").field(kind).finish(),
            PermissionAnswer::Option(id) => f.debug_tuple("Option").field(id).finish(),
            PermissionAnswer::Cancelled => f.write_str("Cancelled"),
            PermissionAnswer::Pending => f.write_str("Pending"),
            PermissionAnswer::With(_) => f.write_str("With(..)"),
        }
    }
}

/// What a fake terminal command prints and how it ends, for [`ScriptedClient::command`].
/// Nothing is run: `terminal/create` answers at once with a terminal that already holds the
/// output.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeCommand {
    output: String,
    exit_code: Option<u32>,
    signal: Option<String>,
    hangs: bool,
}

impl FakeCommand {
    /// A command that printed `output` and exited with code 0.
    pub fn new(output: impl Into<String>) -> FakeCommand {
        FakeCommand {
            output: output.into(),
            exit_code: Some(0),
            signal: None,
            hangs: false,
        }
    }

    /// Sets the exit code.
    pub fn exit_code(mut self, code: u32) -> FakeCommand {
        self.exit_code = Some(code);
        self.signal = None;
        self
    }

    /// Ends by a signal (`"SIGTERM"`) instead of an exit code.
    pub fn signal(mut self, signal: impl Into<String>) -> FakeCommand {
        self.exit_code = None;
        self.signal = Some(signal.into());
        self
    }

    /// Printed `output` and never exits: `terminal/wait_for_exit` waits until
    /// `terminal/kill` (then the command ends by `SIGKILL`).
    pub fn hanging(output: impl Into<String>) -> FakeCommand {
        FakeCommand {
            output: output.into(),
            exit_code: None,
            signal: None,
            hangs: true,
        }
    }
}

/// One request or notification the agent sent to a [`ScriptedClient`], in arrival order.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientCall {
    /// The method.
    pub method: String,
    /// The params as JSON.
    pub params: Value,
}

struct FakeTerminal {
    session: SessionId,
    output: String,
    truncated: bool,
    exit: Option<TerminalExitStatus>,
}

#[derive(Default)]
struct Inner {
    permissions: Mutex<VecDeque<PermissionAnswer>>,
    default_permission: Mutex<Option<PermissionAnswer>>,
    files: Mutex<BTreeMap<String, String>>,
    commands: Mutex<HashMap<String, FakeCommand>>,
    terminals: Mutex<HashMap<String, FakeTerminal>>,
    next_terminal: AtomicUsize,
    calls: Mutex<Vec<ClientCall>>,
    updates: Mutex<Vec<SessionNotification>>,
}

/// A [`Client`] that answers the agent from a script, without a user, a disk or processes, and
/// records every call: the client half of an agent test.
///
/// - `session/request_permission`: the scripted [`PermissionAnswer`]s in order, then the
///   default one ([`PermissionAnswer::Allow`] unless set).
/// - `fs/read_text_file` and `fs/write_text_file`: an in-memory map from absolute path to
///   content ([`file`](Self::file)); `line` and `limit` are honoured, a missing file is
///   `-32002`, writes update the map.
/// - `terminal/*`: fake commands ([`command`](Self::command)) keyed by the command line
///   (`command` and `args` joined by spaces); an unknown command prints
///   `<command>: command not found` and exits with 127. `outputByteLimit` is honoured. Ids are
///   `term-1`, `term-2`...
/// - `session/update` and extension calls are recorded (extension requests answer `-32601`).
///
/// Clones share the script and the records: keep one to inspect what the agent did.
///
/// ```
/// use acp_test::{FakeCommand, PermissionAnswer, ScriptedClient};
///
/// let client = ScriptedClient::new()
///     .permission(PermissionAnswer::Reject) // the first request, then Allow
///     .file("/project/notes.txt", "one\ntwo\n")
///     .command("cargo test", FakeCommand::new("test result: ok\n"));
/// let options = client.options(); // advertises fs and terminal
/// assert!(options.capabilities().terminal);
/// ```
#[derive(Clone, Default)]
pub struct ScriptedClient {
    inner: Arc<Inner>,
}

impl ScriptedClient {
    /// A client that allows every tool call and has no file and no command.
    pub fn new() -> ScriptedClient {
        ScriptedClient::default()
    }

    /// Queues the answer to the next permission request not yet scripted.
    pub fn permission(self, answer: PermissionAnswer) -> ScriptedClient {
        self.inner.permissions.lock().unwrap().push_back(answer);
        self
    }

    /// The answer once the queued ones are used up (default: [`PermissionAnswer::Allow`]).
    pub fn default_permission(self, answer: PermissionAnswer) -> ScriptedClient {
        *self.inner.default_permission.lock().unwrap() = Some(answer);
        self
    }

    /// Adds a file (absolute path) to the in-memory file system.
    pub fn file(self, path: impl Into<String>, content: impl Into<String>) -> ScriptedClient {
        self.inner
            .files
            .lock()
            .unwrap()
            .insert(path.into(), content.into());
        self
    }

    /// Scripts a terminal command: `command_line` is the command and its arguments joined by
    /// spaces, e.g. `"cargo test --quiet"`.
    pub fn command(self, command_line: impl Into<String>, command: FakeCommand) -> ScriptedClient {
        self.inner
            .commands
            .lock()
            .unwrap()
            .insert(command_line.into(), command);
        self
    }

    /// Client options that advertise what this client serves (`fs.readTextFile`,
    /// `fs.writeTextFile`, `terminal`) and name it `acp-test`.
    pub fn options(&self) -> ClientOptions {
        let mut capabilities = ClientCapabilities::default();
        capabilities.fs.read_text_file = true;
        capabilities.fs.write_text_file = true;
        capabilities.terminal = true;
        ClientOptions::default()
            .with_capabilities(capabilities)
            .with_info("acp-test", env!("CARGO_PKG_VERSION"))
    }

    /// Every request and notification the agent sent, in order.
    pub fn calls(&self) -> Vec<ClientCall> {
        self.inner.calls.lock().unwrap().clone()
    }

    /// The params of every call of `method`, in order.
    pub fn calls_to(&self, method: &str) -> Vec<Value> {
        self.inner
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.method == method)
            .map(|c| c.params.clone())
            .collect()
    }

    /// Every `session/update` the agent sent, in order.
    pub fn updates(&self) -> Vec<SessionNotification> {
        self.inner.updates.lock().unwrap().clone()
    }

    /// The in-memory file system now: scripted files and what the agent wrote.
    pub fn files(&self) -> BTreeMap<String, String> {
        self.inner.files.lock().unwrap().clone()
    }

    /// Waits until the agent has called `method` (request or notification) at least `count`
    /// times; panics after `timeout`.
    pub async fn wait_for_calls(&self, method: &str, count: usize, timeout: Duration) {
        let inner = self.inner.clone();
        let found = crate::wait::poll_until(timeout, || {
            let seen = inner
                .calls
                .lock()
                .unwrap()
                .iter()
                .filter(|c| c.method == method)
                .count();
            (seen >= count).then_some(())
        })
        .await;
        if found.is_none() {
            panic!(
                "the agent did not call `{method}` {count} time(s) within {timeout:?}; calls: {:?}",
                self.calls()
                    .iter()
                    .map(|c| c.method.as_str())
                    .collect::<Vec<_>>()
            );
        }
    }

    fn record(&self, method: &str, params: &impl serde::Serialize) {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.inner.calls.lock().unwrap().push(ClientCall {
            method: method.to_owned(),
            params,
        });
    }

    fn next_permission(&self) -> PermissionAnswer {
        let queued = self.inner.permissions.lock().unwrap().pop_front();
        queued.unwrap_or_else(|| {
            self.inner
                .default_permission
                .lock()
                .unwrap()
                .clone()
                .unwrap_or(PermissionAnswer::Allow)
        })
    }

    fn with_terminal<T>(
        &self,
        session: &SessionId,
        id: &TerminalId,
        f: impl FnOnce(&mut FakeTerminal) -> T,
    ) -> Result<T> {
        let mut terminals = self.inner.terminals.lock().unwrap();
        match terminals.get_mut(id.as_str()) {
            Some(terminal) if terminal.session == *session => Ok(f(terminal)),
            _ => Err(unknown_terminal(id)),
        }
    }
}

fn unknown_terminal(id: &TerminalId) -> Error {
    Error::Rpc(
        acp_jsonrpc::ResponseError::new(
            codes::RESOURCE_NOT_FOUND,
            format!("Unknown terminal `{id}`"),
        )
        .with_data(&serde_json::json!({ "terminalId": id })),
    )
}

/// The last `limit` bytes of `output`, cut at a character boundary.
fn keep_tail(output: &str, limit: u64) -> (String, bool) {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if output.len() <= limit {
        return (output.to_owned(), false);
    }
    let mut start = output.len() - limit;
    while !output.is_char_boundary(start) {
        start += 1;
    }
    (output[start..].to_owned(), true)
}

fn select_lines(content: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return content.to_owned();
    }
    let skip = line.map_or(0, |l| l.saturating_sub(1) as usize);
    let take = limit.map_or(usize::MAX, |l| l as usize);
    content
        .split_inclusive('\n')
        .skip(skip)
        .take(take)
        .collect()
}

impl Client for ScriptedClient {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse> {
        self.record(RequestPermissionRequest::METHOD, &request);
        match self.next_permission().outcome(&request) {
            Some(outcome) => Ok(RequestPermissionResponse::new(outcome)),
            None => std::future::pending().await,
        }
    }

    async fn read_text_file(&self, request: ReadTextFileRequest) -> Result<ReadTextFileResponse> {
        self.record(ReadTextFileRequest::METHOD, &request);
        let files = self.inner.files.lock().unwrap();
        match files.get(&request.path) {
            Some(content) => Ok(ReadTextFileResponse::new(select_lines(
                content,
                request.line,
                request.limit,
            ))),
            None => Err(Error::resource_not_found(
                format!("no file `{}`", request.path),
                &request.path,
            )),
        }
    }

    async fn write_text_file(
        &self,
        request: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse> {
        self.record(WriteTextFileRequest::METHOD, &request);
        self.inner
            .files
            .lock()
            .unwrap()
            .insert(request.path, request.content);
        Ok(WriteTextFileResponse::new())
    }

    async fn create_terminal(
        &self,
        request: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse> {
        self.record(CreateTerminalRequest::METHOD, &request);
        let mut line = request.command.clone();
        for arg in request.args.iter().flatten() {
            line.push(' ');
            line.push_str(arg);
        }
        let command = self
            .inner
            .commands
            .lock()
            .unwrap()
            .get(&line)
            .cloned()
            .unwrap_or_else(|| {
                FakeCommand::new(format!("{}: command not found\n", request.command)).exit_code(127)
            });
        let (output, truncated) = match request.output_byte_limit {
            Some(limit) => keep_tail(&command.output, limit),
            None => (command.output.clone(), false),
        };
        let exit = (!command.hangs).then(|| {
            let mut status = TerminalExitStatus::new();
            status.exit_code = command.exit_code;
            status.signal = command.signal.clone();
            status
        });
        let n = self.inner.next_terminal.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("term-{n}");
        self.inner.terminals.lock().unwrap().insert(
            id.clone(),
            FakeTerminal {
                session: request.session_id,
                output,
                truncated,
                exit,
            },
        );
        Ok(CreateTerminalResponse::new(id))
    }

    async fn terminal_output(
        &self,
        request: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse> {
        self.record(TerminalOutputRequest::METHOD, &request);
        self.with_terminal(&request.session_id, &request.terminal_id, |t| {
            let mut response = TerminalOutputResponse::new(t.output.clone(), t.truncated);
            response.exit_status = t.exit.clone();
            response
        })
    }

    async fn wait_for_terminal_exit(
        &self,
        request: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse> {
        self.record(WaitForTerminalExitRequest::METHOD, &request);
        loop {
            let exit = self.with_terminal(&request.session_id, &request.terminal_id, |t| {
                t.exit.clone()
            })?;
            if let Some(exit) = exit {
                let mut response = WaitForTerminalExitResponse::new();
                response.exit_code = exit.exit_code;
                response.signal = exit.signal;
                return Ok(response);
            }
            smol::Timer::after(Duration::from_millis(2)).await;
        }
    }

    async fn kill_terminal(&self, request: KillTerminalRequest) -> Result<KillTerminalResponse> {
        self.record(KillTerminalRequest::METHOD, &request);
        self.with_terminal(&request.session_id, &request.terminal_id, |t| {
            if t.exit.is_none() {
                let mut status = TerminalExitStatus::new();
                status.signal = Some("SIGKILL".to_owned());
                t.exit = Some(status);
            }
        })?;
        Ok(KillTerminalResponse::new())
    }

    async fn release_terminal(
        &self,
        request: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse> {
        self.record(ReleaseTerminalRequest::METHOD, &request);
        self.with_terminal(&request.session_id, &request.terminal_id, |_| ())?;
        self.inner
            .terminals
            .lock()
            .unwrap()
            .remove(request.terminal_id.as_str());
        Ok(ReleaseTerminalResponse::new())
    }

    async fn session_update(&self, notification: &SessionNotification) {
        self.record(SessionNotification::METHOD, notification);
        self.inner
            .updates
            .lock()
            .unwrap()
            .push(notification.clone());
    }

    async fn ext_method(&self, call: ExtensionCall) -> Result<Box<RawValue>> {
        let params: Value = call.params().unwrap_or(Value::Null);
        self.record(&call.method, &params);
        Err(Error::method_not_found(&call.method))
    }

    async fn ext_notification(&self, call: ExtensionCall) {
        let params: Value = call.params().unwrap_or(Value::Null);
        self.record(&call.method, &params);
    }
}

impl fmt::Debug for ScriptedClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedClient")
            .field(
                "queued_permissions",
                &self.inner.permissions.lock().unwrap().len(),
            )
            .field("files", &self.inner.files.lock().unwrap().len())
            .field("calls", &self.inner.calls.lock().unwrap().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_and_lines() {
        assert_eq!(keep_tail("héllo", 4), ("llo".to_owned(), true));
        assert_eq!(keep_tail("abc", 10), ("abc".to_owned(), false));
        assert_eq!(select_lines("a\nb\nc\n", Some(2), Some(1)), "b\n");
        assert_eq!(select_lines("a\nb\nc", Some(3), None), "c");
    }
}
