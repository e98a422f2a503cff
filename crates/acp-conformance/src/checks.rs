//! The checks, the context they share, and the runner.
//!
//! Each check is a function from the context to a [`Verdict`]. It starts agent processes of
//! its own through the context (a fresh process per check keeps checks independent), except
//! for a few scenarios that several checks judge (the first handshake, one ordinary prompt
//! turn, the notification exchange): those run once and are cached. The last checks look at
//! everything every connection saw (stray output, unsolicited responses, invalid messages).

mod caps;
mod init;
mod lifecycle;
mod list;
mod prompt;
mod rpc;
mod session;
mod system_prompt;
mod transport;
#[cfg(feature = "unstable-protocol-v2")]
mod v2;

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use serde_json::{Value, json};

use crate::client::{Caps, RpcError};
use crate::options::{Options, Protocol};
use crate::report::{AgentSummary, CheckResult, Level, Report, Verdict};
use crate::turn::{Action, Trigger, TurnResult, run_turn};
use crate::wire::{Call, Conn, ConnLog, Sink};
use list::CHECKS;

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

/// Every check of protocol version 1, in the order they run.
pub fn checks() -> Vec<CheckInfo> {
    CHECKS.iter().map(|c| c.info).collect()
}

/// Every check of `protocol`, in the order they run (none for v2 when the crate is built
/// without the feature `unstable-protocol-v2`).
pub fn checks_for(protocol: Protocol) -> Vec<CheckInfo> {
    list_for(protocol).iter().map(|c| c.info).collect()
}

/// The checks a run of `protocol` runs.
fn list_for(protocol: Protocol) -> &'static [list::Check] {
    match protocol {
        Protocol::V1 => CHECKS,
        #[cfg(feature = "unstable-protocol-v2")]
        Protocol::V2 => v2::CHECKS,
        #[cfg(not(feature = "unstable-protocol-v2"))]
        Protocol::V2 => &[],
    }
}

/// The first `initialize` exchange (the run's protocol version, every client capability),
/// cached.
#[derive(Clone, Debug)]
pub(crate) struct Handshake {
    /// Set when the agent could not be started at all.
    pub spawn_error: Option<String>,
    pub call_evidence: Vec<String>,
    pub response: Option<Result<Value, RpcError>>,
    /// Why there is no response, when there is none.
    pub missing: String,
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
    /// When the run's time limit is reached.
    run_deadline: Instant,
    pub summary: AgentSummary,
    handshake: Option<Handshake>,
    basic: Option<Result<BasicRun, Verdict>>,
    notifications: Option<Result<rpc::NotificationRun, Verdict>>,
    /// The ordinary v2 turn, once run: its session and the turn.
    #[cfg(feature = "unstable-protocol-v2")]
    v2_ordinary: Option<Result<(String, v2::Turn), Verdict>>,
    /// The v2 resume scenario, once run.
    #[cfg(feature = "unstable-protocol-v2")]
    v2_resume: Option<Result<v2::ResumeRun, Verdict>>,
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
            run_deadline: Instant::now() + opts.run_timeout,
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
            #[cfg(feature = "unstable-protocol-v2")]
            v2_ordinary: None,
            #[cfg(feature = "unstable-protocol-v2")]
            v2_resume: None,
        })
    }

    pub fn cwd(&self) -> String {
        self.scratch.to_string_lossy().into_owned()
    }

    /// Starts a fresh agent process.
    pub fn spawn(&mut self, label: &str, caps: Caps) -> Result<Conn, Verdict> {
        let files = HashMap::from([(self.notes_path.clone(), NOTES.to_owned())]);
        Conn::spawn(
            self.opts,
            label,
            caps,
            files,
            self.sink.clone(),
            Some(self.run_deadline),
        )
        .map_err(|e| Verdict::inconclusive(format!("could not start the agent: {e}")))
    }

    /// The `initialize` params of the run's protocol, asking for `version`.
    pub fn init_params_of(&self, version: Value, caps: Caps) -> Value {
        match self.opts.protocol {
            Protocol::V1 => Self::init_params(version, caps),
            // v2 clients have no file system or terminal methods to advertise.
            Protocol::V2 => json!({
                "protocolVersion": version,
                "info": {
                    "name": "acp-conformance",
                    "title": "ACP conformance checker",
                    "version": env!("CARGO_PKG_VERSION"),
                },
                "capabilities": {},
            }),
        }
    }

    /// The version the run asks for in every ordinary `initialize`.
    fn run_version(&self) -> Value {
        match self.opts.protocol {
            Protocol::V1 => 1.into(),
            Protocol::V2 => 2.into(),
        }
    }

    /// The version-1 `initialize` params the checker sends.
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

    /// Starts an agent, initializes it with the run's protocol version (1 or 2) and `caps`,
    /// and authenticates when `--auth` was given.
    pub fn connect(&mut self, label: &str, caps: Caps) -> Result<Conn, Verdict> {
        let mut conn = self.spawn(label, caps)?;
        let call = conn.call(
            "initialize",
            self.init_params_of(self.run_version(), caps),
            self.opts.timeout,
        );
        match &call.response {
            Some(Ok(result)) if result.is_object() => {
                // A v2 run of an agent that does not speak v2 (a v1 agent answers 1) judges
                // nothing: the v2 rules are not the ones it claims to keep.
                let answered = result.get("protocolVersion");
                if self.opts.protocol == Protocol::V2 && answered != Some(&Value::from(2)) {
                    return Err(Verdict::skipped(format!(
                        "the agent answered protocolVersion {} to a version 2 `initialize`: it does not speak v2",
                        answered.map_or("(none)".to_owned(), Value::to_string)
                    )));
                }
            }
            _ => {
                return Err(Verdict::inconclusive(format!(
                    "`initialize` did not succeed: {}",
                    describe(&call.response, &conn)
                )));
            }
        }
        if let Some(method) = &self.opts.auth {
            let authenticate = match self.opts.protocol {
                Protocol::V1 => "authenticate",
                Protocol::V2 => "auth/login",
            };
            let call = conn.call(
                authenticate,
                json!({ "methodId": method }),
                self.opts.timeout,
            );
            if !matches!(call.response, Some(Ok(_))) {
                return Err(Verdict::inconclusive(format!(
                    "`{authenticate}` with `{method}` did not succeed: {}",
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

    /// A connection with one new session, or the verdict that the check cannot proceed.
    pub fn connect_with_session(
        &mut self,
        label: &str,
        caps: Caps,
    ) -> Result<(Conn, String), Verdict> {
        let mut conn = self.connect(label, caps)?;
        let session = self.open_session(&mut conn)?;
        Ok((conn, session))
    }

    /// A prompt turn whose prompt is the user's `--prompt` text.
    pub fn text_turn(
        &mut self,
        conn: &mut Conn,
        session: &str,
        trigger: Trigger,
        action: Action,
    ) -> TurnResult {
        let prompt = crate::turn::text_prompt(&self.opts.prompt);
        self.turn(conn, session, prompt, trigger, action)
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
        let spawned = Conn::spawn(
            self.opts,
            "init",
            Caps::ALL,
            files,
            self.sink.clone(),
            Some(self.run_deadline),
        );
        let h = match spawned {
            Err(error) => Handshake {
                spawn_error: Some(format!("could not start the agent: {error}")),
                call_evidence: Vec::new(),
                response: None,
                missing: "the agent could not be started".to_owned(),
                exit: Vec::new(),
            },
            Ok(mut conn) => {
                let call = conn.call(
                    "initialize",
                    self.init_params_of(self.run_version(), Caps::ALL),
                    self.opts.timeout,
                );
                Handshake {
                    spawn_error: None,
                    call_evidence: call.evidence(),
                    response: call.response.clone(),
                    missing: describe(&None, &conn),
                    exit: conn.exit_evidence(),
                }
            }
        };
        if let Some(result) = h.result() {
            // v2 renamed `agentInfo` and `agentCapabilities`.
            let (info, capabilities) = match self.opts.protocol {
                Protocol::V1 => ("agentInfo", "agentCapabilities"),
                Protocol::V2 => ("info", "capabilities"),
            };
            let s = &mut self.summary;
            s.name = result
                .pointer(&format!("/{info}/name"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            s.version = result
                .pointer(&format!("/{info}/version"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            s.protocol_version = result.get("protocolVersion").cloned();
            s.capabilities = result.get(capabilities).cloned();
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
        let mut updates: Vec<Value> = call.events.iter().filter_map(update_params).collect();
        let session = self.session_of(&call, &conn);
        let turn = session
            .as_ref()
            .ok()
            .map(|s| self.text_turn(&mut conn, s, Trigger::Never, Action::SessionCancel));
        if let Some(t) = &turn {
            updates.extend(t.before.iter().chain(&t.after).filter_map(update_params));
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

/// The inconclusive verdict when `turn` sent nothing before it ended, so the checker had no
/// moment to act (`to` says what it meant to do).
pub(crate) fn no_moment(turn: &TurnResult, to: &str) -> Option<Verdict> {
    turn.acted.is_none().then(|| {
        Verdict::inconclusive(format!(
            "the turn sent no update or request before it ended ({}), so there was no moment to {to}",
            turn.outcome()
        ))
    })
}

/// The `params` of a `session/update` notification.
fn update_params(event: &crate::wire::Event) -> Option<Value> {
    match event {
        crate::wire::Event::Notification { method, params, .. } if method == "session/update" => {
            Some(params.clone())
        }
        _ => None,
    }
}

/// Describes a response (or its absence) in a reason.
pub(crate) fn describe(response: &Option<Result<Value, RpcError>>, conn: &Conn) -> String {
    match response {
        Some(Ok(result)) => format!("result {result}"),
        Some(Err(error)) => error.to_string(),
        None if conn.ended().is_some() => {
            format!("no response: {}", conn.ended().unwrap_or_default())
        }
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
    if options.protocol == Protocol::V2 && cfg!(not(feature = "unstable-protocol-v2")) {
        return Err(
            "this acp-conformance was built without protocol v2 (feature unstable-protocol-v2)"
                .to_owned(),
        );
    }
    let mut ctx = Ctx::new(options)?;
    // The first handshake fills in the summary and tells whether the agent starts at all.
    if let Some(error) = ctx.handshake().spawn_error {
        return Err(error);
    }
    let mut report = Report::default();
    for check in list_for(options.protocol)
        .iter()
        .filter(|c| options.selects(c.info.id))
    {
        let start = Instant::now();
        let verdict = if start >= ctx.run_deadline {
            Verdict::inconclusive(format!(
                "not run: the run's time limit of {} s (--run-timeout) was reached",
                crate::wire::secs(options.run_timeout)
            ))
        } else {
            catch_unwind(AssertUnwindSafe(|| (check.run)(&mut ctx))).unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                Verdict::inconclusive(format!("the checker itself failed: {what}"))
            })
        };
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
