//! The checks, the context they share, and the runner.
//!
//! Each check is a function from the context to a [`Verdict`]. It starts agent processes of
//! its own through the context (a fresh process per check keeps checks independent), except
//! for a few scenarios that several checks judge (the first handshake, one ordinary prompt
//! turn, the notification exchange): those run once and are cached. The last checks look at
//! everything every connection saw (stray output, unsolicited responses, invalid messages).

mod caps;
mod init;
mod prompt;
mod rpc;
mod session;
mod transport;

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use serde_json::{Value, json};

use crate::client::{Caps, RpcError};
use crate::options::Options;
use crate::report::{AgentSummary, CheckResult, Level, Report, Verdict};
use crate::turn::{Action, Trigger, TurnResult, run_turn};
use crate::wire::{Call, Conn, ConnLog, Sink};

/// What a check verifies.
#[derive(Clone, Copy, Debug)]
pub struct CheckInfo {
    /// Stable identifier, e.g. `init.version.same`.
    pub id: &'static str,
    /// MUST, SHOULD or MAY.
    pub level: Level,
    /// Page and section of the specification.
    pub spec: &'static str,
    /// The rule, paraphrased.
    pub requirement: &'static str,
}

pub(crate) struct Check {
    info: CheckInfo,
    run: fn(&mut Ctx<'_>) -> Verdict,
}

const fn check(
    id: &'static str,
    level: Level,
    spec: &'static str,
    requirement: &'static str,
    run: fn(&mut Ctx<'_>) -> Verdict,
) -> Check {
    Check {
        info: CheckInfo {
            id,
            level,
            spec,
            requirement,
        },
        run,
    }
}

use Level::{Must, Should};

/// Every check, in the order they run. The last three judge what all the others saw.
static CHECKS: &[Check] = &[
    // Initialization.
    check(
        "init.response",
        Must,
        "initialization.mdx › Initialization",
        "The agent answers `initialize` with a result naming the protocol version it chose and its capabilities.",
        init::response,
    ),
    check(
        "init.version.same",
        Must,
        "initialization.mdx › Version Negotiation",
        "Asked for a protocol version it supports (1), the agent answers with that same version.",
        init::version_same,
    ),
    check(
        "init.version.future",
        Must,
        "initialization.mdx › Version Negotiation",
        "Asked for a version it cannot support (999), the agent answers with the latest version it does support, not with the requested one and not with an error.",
        init::version_future,
    ),
    check(
        "init.capabilities",
        Must,
        "initialization.mdx › Agent Capabilities; schema.mdx › InitializeResponse",
        "The capabilities, auth methods and agent info in the `initialize` result have the shapes and types the schema gives them.",
        init::capabilities,
    ),
    check(
        "init.agent_info",
        Should,
        "initialization.mdx › Implementation Information",
        "The agent identifies itself in `agentInfo` with a name and a version.",
        init::agent_info,
    ),
    // Sessions.
    check(
        "session.new",
        Must,
        "session-setup.mdx › Creating a Session",
        "`session/new` with an absolute working directory and no MCP servers is answered with a session id.",
        session::new,
    ),
    check(
        "session.new.unique_ids",
        Must,
        "session-setup.mdx › Creating a Session; › Session ID",
        "Every `session/new` is answered with a session id of its own.",
        session::unique_ids,
    ),
    check(
        "session.new.relative_cwd",
        Should,
        "session-setup.mdx › Working Directory; overview.mdx › Argument requirements",
        "The working directory has to be absolute, so a relative one is refused with an error.",
        session::relative_cwd,
    ),
    check(
        "session.unknown_id",
        Should,
        "session-setup.mdx › Session ID; schema.mdx › ErrorCode",
        "A prompt naming a session id the agent never handed out is refused with an error (resource not found fits).",
        session::unknown_id,
    ),
    check(
        "session.load.replay",
        Must,
        "session-setup.mdx › Loading a Session",
        "An agent advertising `loadSession` replays the whole conversation as `session/update` notifications, and answers `session/load` only after the replay.",
        session::load_replay,
    ),
    check(
        "session.modes.consistent",
        Must,
        "session-modes.mdx › Initial state",
        "Advertised modes are well formed: ids are unique and `currentModeId` is one of `availableModes`.",
        session::modes_consistent,
    ),
    check(
        "session.modes.set",
        Should,
        "session-modes.mdx › Setting the current mode",
        "Switching to one of the advertised modes with `session/set_mode` succeeds.",
        session::modes_set,
    ),
    check(
        "session.modes.unknown",
        Should,
        "session-modes.mdx › From the Client",
        "Only advertised modes can be selected, so `session/set_mode` with a mode id that was not advertised is refused with an error.",
        session::modes_unknown,
    ),
    check(
        "session.config.consistent",
        Must,
        "session-config-options.mdx › ConfigOption; › Default Values and Graceful Degradation",
        "Every config option has a unique id and a current value; a select option's current value is one of its values.",
        session::config_consistent,
    ),
    check(
        "session.config.boolean_gated",
        Must,
        "session-config-options.mdx › Boolean Config Options",
        "Options of type `boolean` are only sent to clients that advertised support for them (the checker does not).",
        session::config_boolean_gated,
    ),
    check(
        "session.config.set",
        Should,
        "session-config-options.mdx › Setting a Config Option",
        "Setting a select option to another of its values succeeds, and the answer holds the complete option state with the new value.",
        session::config_set,
    ),
    // Prompt turns.
    check(
        "prompt.stop_reason",
        Must,
        "prompt-turn.mdx › Check for Completion; › Stop Reasons",
        "A prompt turn ends with a `session/prompt` result carrying one of the defined stop reasons.",
        prompt::stop_reason,
    ),
    check(
        "prompt.updates_before_response",
        Must,
        "prompt-turn.mdx › Check for Completion; › Cancellation",
        "The updates of a turn (message chunks, thoughts, tool calls, plans) are all sent before the turn's response; none follows it.",
        prompt::updates_before_response,
    ),
    check(
        "prompt.cancel",
        Must,
        "prompt-turn.mdx › Cancellation",
        "After `session/cancel`, the turn ends with stop reason `cancelled` (not an error), its last updates sent before that response.",
        prompt::cancel,
    ),
    check(
        "prompt.cancel.permission",
        Must,
        "prompt-turn.mdx › Cancellation; tool-calls.mdx › Requesting Permission",
        "Cancelled while a permission request is pending (the client then answers it `cancelled`), the turn still ends with stop reason `cancelled`.",
        prompt::cancel_permission,
    ),
    // Capabilities.
    check(
        "caps.client_methods",
        Must,
        "initialization.mdx › Capabilities; file-system.mdx › Checking Support; terminals.mdx › Checking Support",
        "Capabilities the client leaves out count as unsupported: with none advertised, the agent never calls `fs/*`, `terminal/*` or `elicitation/*`.",
        caps::client_methods,
    ),
    check(
        "caps.prompt.baseline",
        Must,
        "initialization.mdx › Prompt capabilities",
        "Every agent accepts text and resource links in prompts, whatever it advertises.",
        caps::prompt_baseline,
    ),
    check(
        "caps.prompt.image",
        Must,
        "initialization.mdx › Prompt capabilities; content.mdx › Image Content",
        "An agent advertising `promptCapabilities.image` accepts prompts that carry an image.",
        caps::prompt_image,
    ),
    check(
        "caps.prompt.audio",
        Must,
        "initialization.mdx › Prompt capabilities; content.mdx › Audio Content",
        "An agent advertising `promptCapabilities.audio` accepts prompts that carry audio.",
        caps::prompt_audio,
    ),
    check(
        "caps.prompt.embedded_context",
        Must,
        "initialization.mdx › Prompt capabilities; content.mdx › Embedded Resource",
        "An agent advertising `promptCapabilities.embeddedContext` accepts prompts that carry an embedded resource.",
        caps::prompt_embedded_context,
    ),
    // JSON-RPC.
    check(
        "rpc.method_not_found",
        Must,
        "overview.mdx › Error Handling (JSON-RPC 2.0 error codes)",
        "A request for a method that does not exist is answered with error -32601.",
        rpc::method_not_found,
    ),
    check(
        "rpc.ext_method_not_found",
        Should,
        "extensibility.mdx › Custom Requests",
        "An extension request (`_` prefix) the agent does not know is answered with the Method not found error (-32601).",
        rpc::ext_method_not_found,
    ),
    check(
        "rpc.notifications_unanswered",
        Must,
        "overview.mdx › Error Handling; extensibility.mdx › Custom Notifications",
        "Notifications never get a response, not even an error: an unknown `_` notification, an unknown notification, `session/cancel` of an idle session.",
        rpc::notifications_unanswered,
    ),
    check(
        "rpc.ext_notification_ignored",
        Should,
        "extensibility.mdx › Custom Notifications",
        "An unrecognized extension notification is ignored: the agent carries on serving requests.",
        rpc::ext_notification_ignored,
    ),
    check(
        "rpc.parse_error",
        Should,
        "overview.mdx › Error Handling (JSON-RPC 2.0 parse error)",
        "A line that is not valid JSON is answered with error -32700 and id null, and the agent keeps serving.",
        rpc::parse_error,
    ),
    check(
        "rpc.invalid_request",
        Should,
        "overview.mdx › Error Handling (JSON-RPC 2.0 invalid request)",
        "A JSON object that is not a valid request (no method) is answered with error -32600, and the agent keeps serving.",
        rpc::invalid_request,
    ),
    check(
        "rpc.invalid_params",
        Must,
        "overview.mdx › Error Handling (JSON-RPC 2.0 invalid params)",
        "A known method called with params of the wrong shape is answered with error -32602, and the agent keeps serving.",
        rpc::invalid_params,
    ),
    check(
        "rpc.stray_response",
        Should,
        "overview.mdx › Communication Model (JSON-RPC 2.0 responses)",
        "A response whose id matches no request of the agent gets no answer and does not disturb the agent.",
        rpc::stray_response,
    ),
    check(
        "rpc.cancel_request",
        Must,
        "cancellation.mdx › $/cancel_request Notification",
        "A request cancelled with `$/cancel_request` is still answered, with a result or with error -32800; the notification itself is not.",
        rpc::cancel_request,
    ),
    // Transport.
    check(
        "transport.exit_on_eof",
        Should,
        "transports.mdx › stdio",
        "The client ends the connection by closing the agent's stdin; the agent then exits.",
        transport::exit_on_eof,
    ),
    // Everything seen by every connection.
    check(
        "rpc.response_ids",
        Must,
        "overview.mdx › Communication Model (JSON-RPC 2.0 responses)",
        "Every response the agent sends carries the id of a request the client sent, and every request is answered once.",
        rpc::response_ids,
    ),
    check(
        "schema.agent_messages",
        Must,
        "schema.mdx; overview.mdx › Argument requirements",
        "Every request and notification the agent sends is a protocol method (or a `_` extension) with params that match the schema, naming sessions that exist, with absolute file paths.",
        transport::agent_messages,
    ),
    check(
        "transport.stdout_clean",
        Must,
        "transports.mdx › stdio",
        "The agent writes nothing to stdout but JSON-RPC messages, one per line, in UTF-8.",
        transport::stdout_clean,
    ),
];

/// Every check, in the order they run.
pub fn checks() -> Vec<CheckInfo> {
    CHECKS.iter().map(|c| c.info).collect()
}

/// The first `initialize` exchange (version 1, every client capability), cached.
#[derive(Clone, Debug)]
pub(crate) struct Handshake {
    /// Set when the agent could not be started at all.
    pub spawn_error: Option<String>,
    pub call_evidence: Vec<String>,
    pub response: Option<Result<Value, RpcError>>,
    pub exit: Vec<String>,
}

impl Handshake {
    /// The result, when `initialize` succeeded with an object.
    pub fn result(&self) -> Option<&Value> {
        match &self.response {
            Some(Ok(result)) if result.is_object() => Some(result),
            _ => None,
        }
    }
}

/// One ordinary prompt turn on a fresh connection with every client capability, cached.
#[derive(Clone, Debug)]
pub(crate) struct BasicRun {
    /// The `session/new` exchange.
    pub new_call: CallSummary,
    /// The session, or why there is none.
    pub session: Result<String, Verdict>,
    /// The turn, when there was a session.
    pub turn: Option<TurnResult>,
    /// Every `session/update` seen on the connection.
    pub updates: Vec<Value>,
}

/// What is kept of a [`Call`].
#[derive(Clone, Debug)]
pub(crate) struct CallSummary {
    pub response: Option<Result<Value, RpcError>>,
    pub evidence: Vec<String>,
}

impl From<&Call> for CallSummary {
    fn from(call: &Call) -> Self {
        CallSummary {
            response: call.response.clone(),
            evidence: call.evidence(),
        }
    }
}

/// The state checks share.
pub(crate) struct Ctx<'a> {
    pub opts: &'a Options,
    /// A scratch directory used as every session's `cwd`.
    pub scratch: PathBuf,
    /// `notes.txt` in the scratch directory, also served by the fake file system.
    pub notes_path: String,
    sink: Sink,
    pub summary: AgentSummary,
    handshake: Option<Handshake>,
    basic: Option<Result<BasicRun, Verdict>>,
    notifications: Option<Result<rpc::NotificationRun, Verdict>>,
}

const NOTES: &str = "buy milk\nship the release\ncall Ada\n";

impl<'a> Ctx<'a> {
    fn new(opts: &'a Options) -> Result<Self, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let scratch = std::env::temp_dir().join(format!(
            "acp-conformance-{}-{nanos:08x}",
            std::process::id()
        ));
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        // Canonical, so that the agent sees the same absolute path as the checker.
        let scratch = scratch.canonicalize().unwrap_or(scratch);
        let notes = scratch.join("notes.txt");
        std::fs::write(&notes, NOTES)
            .map_err(|e| format!("cannot write {}: {e}", notes.display()))?;
        Ok(Ctx {
            opts,
            notes_path: notes.to_string_lossy().into_owned(),
            scratch,
            sink: Rc::new(RefCell::new(Vec::new())),
            summary: AgentSummary {
                command: opts
                    .command
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
                authenticated_with: opts.auth.clone(),
                ..AgentSummary::default()
            },
            handshake: None,
            basic: None,
            notifications: None,
        })
    }

    pub fn cwd(&self) -> String {
        self.scratch.to_string_lossy().into_owned()
    }

    /// Starts a fresh agent process.
    pub fn spawn(&mut self, label: &str, caps: Caps) -> Result<Conn, Verdict> {
        let files = HashMap::from([(self.notes_path.clone(), NOTES.to_owned())]);
        Conn::spawn(self.opts, label, caps, files, self.sink.clone())
            .map_err(|e| Verdict::inconclusive(format!("could not start the agent: {e}")))
    }

    /// The `initialize` params the checker sends.
    pub fn init_params(version: Value, caps: Caps) -> Value {
        json!({
            "protocolVersion": version,
            "clientCapabilities": caps.to_json(),
            "clientInfo": {
                "name": "acp-conformance",
                "title": "ACP conformance checker",
                "version": env!("CARGO_PKG_VERSION"),
            },
        })
    }

    /// Starts an agent, initializes it with protocol version 1 and `caps`, and authenticates
    /// when `--auth` was given.
    pub fn connect(&mut self, label: &str, caps: Caps) -> Result<Conn, Verdict> {
        let mut conn = self.spawn(label, caps)?;
        let call = conn.call(
            "initialize",
            Self::init_params(1.into(), caps),
            self.opts.timeout,
        );
        match &call.response {
            Some(Ok(result)) if result.is_object() => {}
            _ => {
                return Err(Verdict::inconclusive(format!(
                    "`initialize` did not succeed: {}",
                    describe(&call.response, &conn)
                )));
            }
        }
        if let Some(method) = &self.opts.auth {
            let call = conn.call(
                "authenticate",
                json!({ "methodId": method }),
                self.opts.timeout,
            );
            if !matches!(call.response, Some(Ok(_))) {
                return Err(Verdict::inconclusive(format!(
                    "`authenticate` with `{method}` did not succeed: {}",
                    describe(&call.response, &conn)
                )));
            }
        }
        Ok(conn)
    }

    /// The verdict for a check that cannot proceed because authentication is required.
    pub fn auth_required(&mut self) -> Verdict {
        self.summary.auth_required = true;
        let methods = if self.summary.auth_methods.is_empty() {
            "it advertises none".to_owned()
        } else {
            format!("advertised: {}", self.summary.auth_methods.join(", "))
        };
        match &self.opts.auth {
            Some(m) => Verdict::inconclusive(format!(
                "the agent still requires authentication (-32000) after `authenticate` with `{m}`"
            )),
            None => Verdict::inconclusive(format!(
                "the agent requires authentication (-32000); rerun with --auth METHOD ({methods})"
            )),
        }
    }

    /// `session/new` in the scratch directory, or the verdict that the check cannot proceed.
    pub fn open_session(&mut self, conn: &mut Conn) -> Result<String, Verdict> {
        let call = self.new_session_call(conn);
        self.session_of(&call, conn)
    }

    pub fn new_session_call(&mut self, conn: &mut Conn) -> Call {
        conn.call(
            "session/new",
            json!({ "cwd": self.cwd(), "mcpServers": [] }),
            self.opts.timeout,
        )
    }

    /// The session id from a `session/new` call, or the verdict that the check cannot proceed.
    pub fn session_of(&mut self, call: &Call, conn: &Conn) -> Result<String, Verdict> {
        match &call.response {
            Some(Ok(result)) => match result.get("sessionId").and_then(Value::as_str) {
                Some(id) => Ok(id.to_owned()),
                None => Err(Verdict::inconclusive(
                    "`session/new` was answered without a sessionId",
                )),
            },
            Some(Err(e)) if e.code == Some(-32000) => Err(self.auth_required()),
            other => Err(Verdict::inconclusive(format!(
                "`session/new` did not succeed: {}",
                describe(other, conn)
            ))),
        }
    }

    /// A prompt turn.
    pub fn turn(
        &mut self,
        conn: &mut Conn,
        session: &str,
        prompt: Value,
        trigger: Trigger,
        action: Action,
    ) -> TurnResult {
        run_turn(
            conn,
            session,
            prompt,
            trigger,
            action,
            self.opts.turn_timeout,
        )
    }

    /// The first handshake, run once.
    pub fn handshake(&mut self) -> Handshake {
        if let Some(h) = &self.handshake {
            return h.clone();
        }
        let files = HashMap::new();
        let h = match Conn::spawn(self.opts, "init", Caps::ALL, files, self.sink.clone()) {
            Err(error) => Handshake {
                spawn_error: Some(format!("could not start the agent: {error}")),
                call_evidence: Vec::new(),
                response: None,
                exit: Vec::new(),
            },
            Ok(mut conn) => {
                let call = conn.call(
                    "initialize",
                    Self::init_params(1.into(), Caps::ALL),
                    self.opts.timeout,
                );
                Handshake {
                    spawn_error: None,
                    call_evidence: call.evidence(),
                    response: call.response.clone(),
                    exit: conn.exit_evidence(),
                }
            }
        };
        if let Some(result) = h.result() {
            let s = &mut self.summary;
            s.name = result
                .pointer("/agentInfo/name")
                .and_then(Value::as_str)
                .map(str::to_owned);
            s.version = result
                .pointer("/agentInfo/version")
                .and_then(Value::as_str)
                .map(str::to_owned);
            s.protocol_version = result.get("protocolVersion").cloned();
            s.capabilities = result.get("agentCapabilities").cloned();
            s.auth_methods = result
                .get("authMethods")
                .and_then(Value::as_array)
                .map(|methods| {
                    methods
                        .iter()
                        .filter_map(|m| m.get("id").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
        }
        self.handshake = Some(h.clone());
        h
    }

    /// A field of the advertised `agentCapabilities` (`Null` when absent).
    pub fn agent_cap(&mut self, pointer: &str) -> Value {
        self.handshake()
            .result()
            .and_then(|r| r.get("agentCapabilities"))
            .and_then(|c| c.pointer(pointer))
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// One ordinary turn with every capability, run once.
    pub fn basic(&mut self) -> Result<BasicRun, Verdict> {
        if let Some(b) = &self.basic {
            return b.clone();
        }
        let result = self.run_basic();
        self.basic = Some(result.clone());
        result
    }

    fn run_basic(&mut self) -> Result<BasicRun, Verdict> {
        let mut conn = self.connect("basic", Caps::ALL)?;
        let call = self.new_session_call(&mut conn);
        let mut updates: Vec<Value> = call
            .events
            .iter()
            .filter_map(|e| match e {
                crate::wire::Event::Notification { method, params, .. }
                    if method == "session/update" =>
                {
                    Some(params.clone())
                }
                _ => None,
            })
            .collect();
        let session = self.session_of(&call, &conn);
        let turn = session.as_ref().ok().map(|s| {
            let prompt = crate::turn::text_prompt(&self.opts.prompt);
            self.turn(&mut conn, s, prompt, Trigger::Never, Action::SessionCancel)
        });
        if let Some(t) = &turn {
            updates.extend(t.before.iter().chain(&t.after).filter_map(|e| match e {
                crate::wire::Event::Notification { method, params, .. }
                    if method == "session/update" =>
                {
                    Some(params.clone())
                }
                _ => None,
            }));
        }
        Ok(BasicRun {
            new_call: CallSummary::from(&call),
            session,
            turn,
            updates,
        })
    }

    /// Whether the ordinary turn completed, so that a failure of a variant can be blamed on
    /// the variant rather than on the agent's inability to run any turn.
    pub fn basic_turn_completed(&mut self) -> bool {
        self.basic()
            .ok()
            .and_then(|b| b.turn)
            .is_some_and(|t| t.completed())
    }

    /// The logs of every connection closed so far.
    pub fn logs(&self) -> std::cell::Ref<'_, Vec<ConnLog>> {
        self.sink.borrow()
    }
}

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// Describes a response (or its absence) in a reason.
pub(crate) fn describe(response: &Option<Result<Value, RpcError>>, conn: &Conn) -> String {
    match response {
        Some(Ok(result)) => format!("result {result}"),
        Some(Err(error)) => error.to_string(),
        None if conn.has_exited() || conn.eof => {
            let exit = conn.exit_evidence();
            format!(
                "no response; {}",
                exit.first()
                    .map_or("the agent's output ended", String::as_str)
            )
        }
        None => "no response in time".to_owned(),
    }
}

/// Runs the selected checks against the agent, calling `progress` after each one.
///
/// Fails (before any check) when the agent cannot be started at all.
pub fn run_with(
    options: &Options,
    mut progress: impl FnMut(&CheckResult),
) -> Result<Report, String> {
    if options.command.is_empty() {
        return Err("no agent command".to_owned());
    }
    let started = Instant::now();
    let mut ctx = Ctx::new(options)?;
    // The first handshake fills in the summary and tells whether the agent starts at all.
    if let Some(error) = ctx.handshake().spawn_error {
        return Err(error);
    }
    let mut report = Report::default();
    for check in CHECKS.iter().filter(|c| options.selects(c.info.id)) {
        let start = Instant::now();
        let verdict =
            catch_unwind(AssertUnwindSafe(|| (check.run)(&mut ctx))).unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                Verdict::inconclusive(format!("the checker itself failed: {what}"))
            });
        let result = CheckResult {
            id: check.info.id,
            level: check.info.level,
            spec: check.info.spec,
            requirement: check.info.requirement,
            verdict,
            duration: start.elapsed(),
        };
        progress(&result);
        report.results.push(result);
    }
    report.agent = ctx.summary.clone();
    report.duration = started.elapsed();
    Ok(report)
}

/// Runs the selected checks against the agent.
pub fn run(options: &Options) -> Result<Report, String> {
    run_with(options, |_| {})
}
