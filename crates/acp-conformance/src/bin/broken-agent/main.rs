//! An ACP agent on raw stdio with one selectable misbehaviour, for the conformance checker's
//! tests: `broken-agent --bug NAME`. Without `--bug` it follows the protocol (every check
//! passes); each bug breaks one rule, so that every check can be seen failing.
//!
//! With `--require-auth`, every `session/*` request is refused with `-32000` until the client
//! calls `authenticate` with the advertised method `token`.
//!
//! It is deliberately hand-written JSON over `stdin.lines()`, single-threaded, with no
//! protocol library in the way: a library would not let it misbehave.
//!
//! The hostile misbehaviours of `hostile.rs` (floods, silence, deafness) attack the checker
//! itself rather than a protocol rule.
//!
//! A turn goes: an agent message chunk; `fs/read_text_file` of `notes.txt` when the client
//! advertised reading; a tool call and `session/request_permission`; then, when allowed, a
//! last chunk and `end_turn` (or `cancelled` once the turn was cancelled).

#![forbid(unsafe_code)]

mod bugs;
mod hostile;
mod sessions;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use bugs::BUGS;

struct Session {
    cwd: String,
    history: Vec<Value>,
    /// Deleted, but still listed (`delete-keeps-listing`).
    deleted: bool,
}

struct Turn {
    prompt_id: Value,
    session: String,
    cancelled: bool,
    /// `elicit-unadvertised`: whether the turn asked the user already.
    elicited: bool,
}

enum Pending {
    Elicit,
    Read,
    Permission,
}

struct Agent {
    bug: String,
    /// `--require-auth`: sessions need `authenticate` with method `token` first.
    require_auth: bool,
    authenticated: bool,
    client_caps: Value,
    sessions: HashMap<String, Session>,
    next_session: u64,
    next_request: u64,
    pending: HashMap<String, Pending>,
    turn: Option<Turn>,
    /// `cancel-refused`: when the paused turn goes on.
    resume_at: Option<Instant>,
}

fn send(message: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{message}");
    let _ = out.flush();
}

fn reply(id: &Value, result: Value) {
    send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
}

fn error(id: &Value, code: i64, message: &str) {
    send(&json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }));
}

/// The `sessionId` of a request's `params`, or `""`.
fn session_id(params: &Value) -> &str {
    params
        .get("sessionId")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The error for a request about a session the agent does not have.
fn no_such_session(id: &Value) {
    error(id, -32002, "Resource not found: no such session");
}

/// An error object without `id`: not a valid JSON-RPC message.
fn idless_error(code: i64, message: &str) {
    send(&json!({ "jsonrpc": "2.0", "error": { "code": code, "message": message } }));
}

fn update(session: &str, update: Value) {
    send(&json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": { "sessionId": session, "update": update },
    }));
}

fn chunk(kind: &str, text: &str) -> Value {
    json!({ "sessionUpdate": kind, "content": { "type": "text", "text": text } })
}

impl Agent {
    fn bug(&self, name: &str) -> bool {
        self.bug == name
    }

    fn request(&mut self, method: &str, params: Value, pending: Pending) {
        self.next_request += 1;
        let id = format!("agent-{}", self.next_request);
        self.pending.insert(id.clone(), pending);
        send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
    }

    fn handle_line(&mut self, line: &str) {
        let message: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) if self.bug("crash-on-malformed") => std::process::exit(3),
            Err(_) if self.bug("no-parse-error") => return,
            Err(_) if self.bug("parse-error-idless") => return idless_error(-32700, "Parse error"),
            Err(_) => return error(&Value::Null, -32700, "Parse error"),
        };
        let Some(object) = message.as_object() else {
            return error(&Value::Null, -32600, "Invalid Request");
        };
        let id = object.get("id").cloned();
        let params = object.get("params").cloned().unwrap_or(Value::Null);
        match (object.get("method"), id) {
            (Some(Value::String(method)), Some(id)) => self.handle_request(&id, method, &params),
            (Some(Value::String(method)), None) => {
                if self.bug("notification-reply") {
                    error(&Value::Null, -32601, "Method not found");
                }
                if self.bug("notification-reply-idless") {
                    idless_error(-32601, "Method not found");
                }
                self.handle_notification(method, &params);
            }
            (None, Some(id)) if object.contains_key("result") || object.contains_key("error") => {
                self.handle_response(&id, object.get("result"));
            }
            (_, id) if !self.bug("invalid-request-silent") => {
                error(&id.unwrap_or(Value::Null), -32600, "Invalid Request")
            }
            _ => {}
        }
    }

    fn handle_request(&mut self, id: &Value, method: &str, params: &Value) {
        let session_method = method.starts_with("session/");
        if session_method && self.require_auth && !self.authenticated {
            return error(id, -32000, "Authentication required");
        }
        match method {
            "authenticate" => match params.get("methodId").and_then(Value::as_str) {
                Some("token") if self.require_auth => {
                    self.authenticated = true;
                    reply(id, json!({}));
                }
                _ => error(id, -32602, "Invalid params: unknown auth method"),
            },
            "initialize" => self.initialize(id, params),
            "session/new" => self.new_session(id, params),
            "session/load" => self.load_session(id, params),
            "session/prompt" => self.prompt(id, params),
            "session/set_mode" => self.set_mode(id, params),
            "session/set_config_option" => self.set_config_option(id, params),
            "session/list" => self.list_sessions(id, params),
            "session/resume" => self.resume_session(id, params),
            "session/close" => self.close_session(id, params),
            "session/delete" => self.delete_session(id, params),
            "logout" if self.bug("logout-fails") => error(id, -32601, "Method not found: logout"),
            "logout" => reply(id, json!({})),
            m if m.starts_with('_') && self.bug("ext-method-result") => reply(id, json!({})),
            _ if self.bug("wrong-unknown-code") => error(id, -32603, "Internal error"),
            _ => error(id, -32601, &format!("Method not found: {method}")),
        }
    }

    fn initialize(&mut self, id: &Value, params: &Value) {
        if self.bug("init-error") {
            return error(id, -32603, "cannot start today");
        }
        self.client_caps = params
            .get("clientCapabilities")
            .cloned()
            .unwrap_or(Value::Null);
        let requested = params
            .get("protocolVersion")
            .cloned()
            .unwrap_or(Value::Null);
        let version = if self.bug("echo-version") {
            requested
        } else if self.bug("old-version") {
            json!(0)
        } else {
            json!(1)
        };
        let mut result = json!({
            "protocolVersion": version,
            "agentCapabilities": {
                "loadSession": if self.bug("bad-caps") { json!("yes") } else { json!(true) },
                "promptCapabilities": { "image": true, "audio": true, "embeddedContext": true },
                "sessionCapabilities": {
                    "list": {}, "resume": {}, "close": {}, "delete": {}, "systemPrompt": {},
                },
                "auth": { "logout": {} },
            },
            "authMethods": if self.require_auth {
                json!([{ "id": "token", "name": "Token", "description": "A token from the environment" }])
            } else {
                json!([])
            },
            "agentInfo": { "name": "broken-agent", "version": env!("CARGO_PKG_VERSION") },
        });
        if self.bug("no-agent-info") {
            result.as_object_mut().unwrap().remove("agentInfo");
        }
        reply(id, result);
    }

    fn config_options(&self, model: &str) -> Value {
        let mut options = vec![json!({
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": if self.bug("bad-config") { "huge" } else { model },
            "options": [
                { "value": "quick", "name": "Quick" },
                { "value": "thorough", "name": "Thorough" },
            ],
        })];
        if self.bug("boolean-config") {
            options.push(
                json!({ "id": "brave", "name": "Brave", "type": "boolean", "currentValue": false }),
            );
        }
        Value::Array(options)
    }

    fn new_session(&mut self, id: &Value, params: &Value) {
        let cwd = params.get("cwd").and_then(Value::as_str);
        let servers_ok = params.get("mcpServers").is_some_and(Value::is_array);
        let cwd = match cwd {
            Some(cwd) if servers_ok => cwd.to_owned(),
            _ if self.bug("invalid-params-accepted") => "/".to_owned(),
            _ => {
                return error(
                    id,
                    -32602,
                    "Invalid params: cwd (string) and mcpServers (array)",
                );
            }
        };
        if !cwd.starts_with('/') && !self.bug("accept-relative-cwd") {
            return error(id, -32602, "Invalid params: cwd must be an absolute path");
        }
        if let Some(refusal) = self.system_prompt_refusal(params) {
            return error(id, -32602, &refusal);
        }
        if self.bug("session-new-error") {
            return error(id, -32603, "no sessions today");
        }
        self.next_session += 1;
        let session = if self.bug("same-session-id") {
            "sess-1".to_owned()
        } else {
            format!("sess-{}", self.next_session)
        };
        self.sessions.insert(
            session.clone(),
            Session {
                cwd,
                history: Vec::new(),
                deleted: false,
            },
        );
        let result = json!({
            "sessionId": session,
            "modes": {
                "currentModeId": if self.bug("bad-current-mode") { "turbo" } else { "ask" },
                "availableModes": [
                    { "id": "ask", "name": "Ask" },
                    { "id": "code", "name": "Code" },
                ],
            },
            "configOptions": self.config_options("quick"),
        });
        reply(id, result.clone());
        if self.bug("duplicate-response") {
            reply(id, result);
        }
        if self.bug("flood-notifications") && self.next_session == 1 {
            hostile::flood_updates(session);
        }
    }

    fn prompt(&mut self, id: &Value, params: &Value) {
        let (Some(session), Some(prompt)) = (
            params.get("sessionId").and_then(Value::as_str),
            params.get("prompt").and_then(Value::as_array),
        ) else {
            return error(id, -32602, "Invalid params: sessionId and prompt");
        };
        let session = session.to_owned();
        if !self.sessions.contains_key(&session) {
            if !self.bug("unknown-session-accepted") {
                return no_such_session(id);
            }
            self.sessions.insert(
                session.clone(),
                Session {
                    cwd: "/".to_owned(),
                    history: Vec::new(),
                    deleted: false,
                },
            );
        }
        if self.turn.is_some() {
            return error(id, -32600, "a turn is already running");
        }
        for block in prompt {
            let refused = match block.get("type").and_then(Value::as_str) {
                Some("resource_link") => self.bug("reject-resource-link"),
                Some("image") => self.bug("reject-images"),
                Some("audio") => self.bug("reject-audio"),
                Some("resource") => self.bug("reject-resource"),
                _ => false,
            };
            if refused {
                return error(id, -32602, "Invalid params: this content is not supported");
            }
        }
        let stored = self.sessions.get_mut(&session).expect("checked");
        for block in prompt {
            stored
                .history
                .push(json!({ "sessionUpdate": "user_message_chunk", "content": block }));
        }
        self.turn = Some(Turn {
            prompt_id: id.clone(),
            session: session.clone(),
            cancelled: false,
            elicited: false,
        });
        if self.bug("plan-update-unadvertised") && self.client_caps.get("plan").is_none() {
            let plan = json!({ "type": "markdown", "planId": "p1", "content": "1. Read notes" });
            update(
                &session,
                json!({ "sessionUpdate": "plan_update", "plan": plan }),
            );
        }
        if self.bug("bad-update") {
            update(
                &session,
                json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text" } }),
            );
        } else {
            update(
                &session,
                chunk("agent_message_chunk", "Hello from the broken agent."),
            );
        }
        if self.bug("cancel-refused") {
            self.resume_at = Some(Instant::now() + Duration::from_millis(300));
            return;
        }
        self.continue_turn();
    }

    /// After the first chunk: reads `notes.txt` when the client can serve it, then asks for
    /// permission.
    fn continue_turn(&mut self) {
        self.resume_at = None;
        let elicit = self.bug("elicit-unadvertised");
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let session = turn.session.clone();
        if elicit && !turn.elicited {
            turn.elicited = true;
            return self.request(
                "elicitation/create",
                json!({
                    "sessionId": session,
                    "mode": "form",
                    "message": "Which file should I summarize?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": { "file": { "type": "string" } },
                        "required": ["file"],
                    },
                }),
                Pending::Elicit,
            );
        }
        let cwd = self
            .sessions
            .get(&session)
            .map_or("/", |s| s.cwd.as_str())
            .to_owned();
        let can_read = self
            .client_caps
            .pointer("/fs/readTextFile")
            .is_some_and(|v| v == true);
        if can_read || self.bug("ignore-caps") {
            self.request(
                "fs/read_text_file",
                json!({ "sessionId": session, "path": format!("{cwd}/notes.txt") }),
                Pending::Read,
            );
        } else {
            self.ask_permission();
        }
    }

    fn ask_permission(&mut self) {
        let Some(turn) = &self.turn else { return };
        let session = turn.session.clone();
        update(
            &session,
            json!({ "sessionUpdate": "tool_call", "toolCallId": "call-1", "title": "Write summary.txt", "kind": "edit", "status": "pending" }),
        );
        self.request(
            "session/request_permission",
            json!({
                "sessionId": session,
                "toolCall": { "toolCallId": "call-1" },
                "options": [
                    { "optionId": "allow", "name": "Allow", "kind": "allow_once" },
                    { "optionId": "reject", "name": "Reject", "kind": "reject_once" },
                ],
            }),
            Pending::Permission,
        );
    }

    fn handle_response(&mut self, id: &Value, result: Option<&Value>) {
        let key = id.as_str().unwrap_or_default().to_owned();
        match self.pending.remove(&key) {
            Some(Pending::Elicit) => self.continue_turn(),
            Some(Pending::Read) => self.ask_permission(),
            Some(Pending::Permission) => {
                let refused = result
                    .and_then(|r| r.pointer("/outcome/outcome"))
                    .is_some_and(|o| o == "cancelled");
                self.finish_turn(refused);
            }
            None if self.bug("reply-stray-response") => {
                error(id, -32600, "Invalid Request: unexpected response")
            }
            None => {}
        }
    }

    fn finish_turn(&mut self, permission_cancelled: bool) {
        let Some(turn) = self.turn.take() else { return };
        let session = turn.session;
        if turn.cancelled || permission_cancelled {
            if self.bug("cancel-error") {
                return error(&turn.prompt_id, -32603, "operation aborted");
            }
            if !self.bug("cancel-ignored") {
                return reply(&turn.prompt_id, json!({ "stopReason": "cancelled" }));
            }
        }
        let done = chunk("agent_message_chunk", "Done.");
        update(&session, done.clone());
        if let Some(stored) = self.sessions.get_mut(&session) {
            stored.history.push(done);
        }
        let stop = if self.bug("bad-stop-reason") {
            "done"
        } else {
            "end_turn"
        };
        reply(&turn.prompt_id, json!({ "stopReason": stop }));
        if self.bug("late-update") {
            update(&session, chunk("agent_message_chunk", "One more thing."));
        }
    }

    fn set_mode(&mut self, id: &Value, params: &Value) {
        let session = session_id(params);
        if !self.sessions.contains_key(session) {
            return no_such_session(id);
        }
        if self.bug("set-mode-fails") {
            return error(id, -32603, "modes are stuck");
        }
        match params.get("modeId").and_then(Value::as_str) {
            Some("ask" | "code") => reply(id, json!({})),
            _ if self.bug("accept-unknown-mode") => reply(id, json!({})),
            _ => error(id, -32602, "Invalid params: unknown mode"),
        }
    }

    fn set_config_option(&mut self, id: &Value, params: &Value) {
        let session = session_id(params);
        if !self.sessions.contains_key(session) {
            return no_such_session(id);
        }
        if self.bug("set-config-fails") {
            return error(id, -32603, "config is stuck");
        }
        match (
            params.get("configId").and_then(Value::as_str),
            params.get("value").and_then(Value::as_str),
        ) {
            (Some("model"), Some(value @ ("quick" | "thorough"))) => {
                reply(id, json!({ "configOptions": self.config_options(value) }))
            }
            _ => error(id, -32602, "Invalid params: unknown option or value"),
        }
    }

    fn handle_notification(&mut self, method: &str, params: &Value) {
        match method {
            "session/cancel" => {
                let session = params.get("sessionId").and_then(Value::as_str);
                let refuse = self.bug("cancel-refused") && self.resume_at.is_some();
                if let Some(turn) = self.turn.as_mut()
                    && Some(turn.session.as_str()) == session
                {
                    if refuse {
                        self.resume_at = None;
                        idless_error(-32603, "this turn cannot be cancelled");
                        return self.finish_turn(false);
                    }
                    turn.cancelled = true;
                }
            }
            "$/cancel_request" => {
                let target = params.get("requestId");
                if self.turn.as_ref().map(|t| &t.prompt_id) == target {
                    let turn = self.turn.take().expect("checked");
                    self.pending.clear();
                    if !self.bug("cancel-request-unanswered") {
                        error(&turn.prompt_id, -32800, "Request cancelled");
                    }
                }
            }
            m if m.starts_with('_') && self.bug("crash-on-ext-notification") => {
                std::process::exit(4)
            }
            _ => {}
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut bug = String::new();
    let mut require_auth = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bug" => bug = args.next().unwrap_or_default(),
            "--require-auth" => require_auth = true,
            "--list" => {
                for (name, what) in BUGS.iter().chain(hostile::HOSTILE) {
                    println!("{name:<28} {what}");
                }
                return;
            }
            other => {
                eprintln!(
                    "broken-agent: unknown argument `{other}` (use --bug NAME, --require-auth or --list)"
                );
                std::process::exit(2);
            }
        }
    }
    if !bug.is_empty()
        && !BUGS
            .iter()
            .chain(hostile::HOSTILE)
            .any(|(name, _)| *name == bug)
    {
        eprintln!("broken-agent: unknown bug `{bug}` (see --list)");
        std::process::exit(2);
    }
    if hostile::run(&bug) {
        return;
    }
    if bug == "stdout-log" {
        println!("broken-agent: starting up");
    }
    let mut agent = Agent {
        bug,
        require_auth,
        authenticated: false,
        client_caps: Value::Null,
        sessions: HashMap::new(),
        next_session: 0,
        next_request: 0,
        pending: HashMap::new(),
        turn: None,
        resume_at: None,
    };
    // Lines come from a thread of their own, so that a paused turn can go on at its time.
    let (lines, incoming) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    loop {
        let next = match agent.resume_at {
            Some(at) => incoming.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => incoming
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(line) if line.trim().is_empty() => {}
            Ok(line) => agent.handle_line(&line),
            Err(mpsc::RecvTimeoutError::Timeout) => agent.continue_turn(),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if agent.bug("no-exit") {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    // A flood thread may be writing: exit between two of its writes, not inside one.
    let _stdout = std::io::stdout().lock();
    std::process::exit(0);
}
