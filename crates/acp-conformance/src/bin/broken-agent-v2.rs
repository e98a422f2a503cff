//! A protocol v2 agent on raw stdio with one selectable misbehaviour, for the conformance
//! checker's v2 tests: `broken-agent-v2 --bug NAME`. Without `--bug` it keeps v2's rules
//! (every `v2.*` check passes); each bug breaks one, so that every v2 check can be seen
//! failing (tests/v2.rs). `--list` lists the bugs.
//!
//! Hand-written JSON over `stdin.lines()`, single-threaded, no protocol library in the way: a
//! library would not let it misbehave. It serves v2 only (version 1 is `-32022`). A turn: the
//! `{messageId}` answer, `running`, the `user_message` echo, a thought, a tool call `pending`,
//! then a permission request (`requires_action`); once answered, `running`, the tool call
//! upserted to `completed`, a display terminal whose output `✓ done` is split inside the `✓`
//! between two chunks, the reply, and `idle` `end_turn` (or, cancelled meanwhile, the tool
//! call `failed` and `idle` `cancelled`). Sessions keep that history for `session/resume` with
//! `replayFrom`.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::io::{BufRead, Write};

use serde_json::{Value, json};

/// Every misbehaviour, with what it breaks.
const BUGS: &[(&str, &str)] = &[
    (
        "v1-shapes",
        "answers `initialize` with v1's `agentInfo`/`agentCapabilities`",
    ),
    (
        "echo-version",
        "answers a version 999 `initialize` with 999",
    ),
    ("above-request", "answers a version 1 `initialize` with 2"),
    (
        "unsupported-without-data",
        "refuses version 1 with -32022 but no data",
    ),
    ("null-id-served", "serves a request whose id is `null`"),
    (
        "no-session-list",
        "advertises `capabilities.session`, answers `session/list` -32601",
    ),
    ("no-echo", "never echoes the user message"),
    ("no-running", "goes `idle` without reporting `running`"),
    (
        "cancel-ignored",
        "ends a turn cancelled during its permission request `end_turn`",
    ),
    (
        "retry-runs-again",
        "ignores `idempotencyKey`: a retry runs a new turn",
    ),
    (
        "status-null",
        "sends `status: null` on a completed tool call, meaning `unchanged`",
    ),
    (
        "terminal-lossy",
        "replaces the split `✓` by U+FFFD on both sides of the chunk boundary",
    ),
    (
        "terminal-base64-split",
        "splits one base64 text between two chunks",
    ),
    (
        "replay-after-answer",
        "answers `session/resume` before replaying",
    ),
    (
        "replay-new-ids",
        "replays the user message under a new messageId",
    ),
    (
        "replay-without-cursor",
        "replays the history on every `session/resume`",
    ),
    (
        "resume-no-state",
        "sends no `state_update` on `session/resume`",
    ),
    ("duplicate-response", "answers `session/new` twice"),
    (
        "bad-update",
        "sends a message chunk without its `messageId`",
    ),
    ("stdout-log", "writes a log line on stdout"),
];

struct Session {
    cwd: String,
    /// Every update sent for the session but `state_update`, for replay.
    history: Vec<Value>,
    /// idempotencyKey → the messageId it was accepted with.
    keys: HashMap<String, String>,
}

/// A turn waiting for the answer to its permission request.
struct Waiting {
    /// The request's id.
    request: String,
    session: String,
    /// Whether `session/cancel` came meanwhile.
    cancelled: bool,
    /// The turn's updates after the permission.
    rest: Vec<Value>,
}

struct Agent {
    bug: String,
    sessions: HashMap<String, Session>,
    next_session: u64,
    next_message: u64,
    next_request: u64,
    waiting: Option<Waiting>,
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

fn update(session: &str, update: Value) {
    send(&json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": { "sessionId": session, "update": update },
    }));
}

/// Standard base64 with padding, written out here so that this agent needs no library.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Agent {
    fn bug(&self, name: &str) -> bool {
        self.bug == name
    }

    fn message_id(&mut self) -> String {
        self.next_message += 1;
        format!("m-{}", self.next_message)
    }

    fn handle(&mut self, line: &str) {
        if self.bug("stdout-log") {
            println!("broken-agent-v2: handling a line");
        }
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            error(&Value::Null, -32700, "Parse error");
            return;
        };
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            // The answer to the waiting turn's permission request; anything else is ignored.
            if let Some(waiting) = &self.waiting
                && message.get("id").and_then(Value::as_str) == Some(waiting.request.as_str())
            {
                let outcome = message
                    .pointer("/result/outcome/outcome")
                    .and_then(Value::as_str);
                self.permission_answered(outcome);
            }
            return;
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = message.get("id") else {
            if method == "session/cancel"
                && let Some(waiting) = &mut self.waiting
                && params.get("sessionId").and_then(Value::as_str) == Some(waiting.session.as_str())
            {
                waiting.cancelled = true;
            }
            return; // other notifications (extensions): ignored
        };
        if id.is_null() && !self.bug("null-id-served") {
            error(id, -32600, "a request id must not be null");
            return;
        }
        match method {
            "initialize" => self.initialize(id, &params),
            "session/new" => self.new_session(id, &params),
            "session/list" if self.bug("no-session-list") => {
                error(id, -32601, "Method not found");
            }
            "session/list" => {
                let sessions: Vec<Value> = self
                    .sessions
                    .iter()
                    .map(|(id, s)| json!({ "sessionId": id, "cwd": s.cwd }))
                    .collect();
                reply(id, json!({ "sessions": sessions }));
            }
            "session/prompt" => self.prompt(id, &params),
            "session/resume" => self.resume(id, &params),
            "session/close" => {
                if let Some(session) = params.get("sessionId").and_then(Value::as_str) {
                    self.sessions.remove(session);
                }
                reply(id, json!({}));
            }
            _ => error(id, -32601, "Method not found"),
        }
    }

    fn initialize(&mut self, id: &Value, params: &Value) {
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_u64) else {
            error(id, -32602, "protocolVersion must be a version number");
            return;
        };
        if requested < 2 && !self.bug("above-request") {
            let mut refusal = json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": { "requested": requested, "supported": [2] },
                },
            });
            if self.bug("unsupported-without-data") {
                refusal["error"]
                    .as_object_mut()
                    .map(|error| error.remove("data"));
            }
            send(&refusal);
            return;
        }
        let version = if self.bug("echo-version") {
            requested
        } else {
            2
        };
        let info = json!({ "name": "broken-agent-v2", "version": env!("CARGO_PKG_VERSION") });
        let capabilities = json!({ "session": {} });
        if self.bug("v1-shapes") {
            reply(
                id,
                json!({ "protocolVersion": version, "agentInfo": info, "agentCapabilities": capabilities }),
            );
        } else {
            reply(
                id,
                json!({ "protocolVersion": version, "info": info, "capabilities": capabilities }),
            );
        }
    }

    fn new_session(&mut self, id: &Value, params: &Value) {
        let Some(cwd) = params
            .get("cwd")
            .and_then(Value::as_str)
            .filter(|c| c.starts_with('/'))
        else {
            error(id, -32602, "cwd must be an absolute path");
            return;
        };
        self.next_session += 1;
        let session = format!("s-{}", self.next_session);
        self.sessions.insert(
            session.clone(),
            Session {
                cwd: cwd.to_owned(),
                history: Vec::new(),
                keys: HashMap::new(),
            },
        );
        reply(id, json!({ "sessionId": session }));
        if self.bug("duplicate-response") {
            reply(id, json!({ "sessionId": session }));
        }
    }

    fn prompt(&mut self, id: &Value, params: &Value) {
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let key = params
            .get("idempotencyKey")
            .and_then(Value::as_str)
            .filter(|_| !self.bug("retry-runs-again"))
            .map(str::to_owned);
        let Some(state) = self.sessions.get(&session) else {
            error(id, -32002, "Unknown session");
            return;
        };
        if let Some(first) = key.as_ref().and_then(|k| state.keys.get(k)) {
            reply(id, json!({ "messageId": first }));
            return;
        }
        let user = self.message_id();
        let reply_id = self.message_id();
        let thought = self.message_id();
        reply(id, json!({ "messageId": user }));
        let prompt = params.get("prompt").cloned().unwrap_or(json!([]));
        let mut turn = Vec::new();
        if !self.bug("no-echo") {
            turn.push(
                json!({ "sessionUpdate": "user_message", "messageId": user, "content": prompt }),
            );
        }
        turn.push(json!({ "sessionUpdate": "agent_thought_chunk", "messageId": thought, "content": { "type": "text", "text": "Looking." } }));
        turn.push(json!({ "sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "Check", "kind": "execute", "status": "pending" }));
        // What comes after the permission request.
        let asked = turn.len();
        turn.push(json!({ "sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress" }));
        turn.push(json!({ "sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed" }));
        if self.bug("status-null") {
            turn.push(json!({ "sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": null, "rawOutput": { "exitCode": 0 } }));
        }
        turn.push(json!({ "sessionUpdate": "terminal_update", "terminalId": "term-1", "command": "check" }));
        let output = "✓ done\n".as_bytes();
        let chunks = if self.bug("terminal-lossy") {
            vec![
                base64("\u{FFFD}".as_bytes()),
                base64("\u{FFFD} done\n".as_bytes()),
            ]
        } else if self.bug("terminal-base64-split") {
            let whole = base64(output);
            vec![whole[..5].to_owned(), whole[5..].to_owned()]
        } else {
            // The split falls inside the three bytes of `✓`.
            vec![base64(&output[..2]), base64(&output[2..])]
        };
        for data in chunks {
            turn.push(json!({ "sessionUpdate": "terminal_output_chunk", "terminalId": "term-1", "data": data }));
        }
        let mut chunk = json!({ "sessionUpdate": "agent_message_chunk", "messageId": reply_id, "content": { "type": "text", "text": "Done." } });
        if self.bug("bad-update") {
            chunk.as_object_mut().map(|c| c.remove("messageId"));
        }
        turn.push(chunk);
        let rest = turn.split_off(asked);
        if let Some(key) = key {
            let state = self.sessions.get_mut(&session).expect("checked above");
            state.keys.insert(key, user.clone());
        }
        self.state(&session, "running", None);
        self.send_history(&session, turn);
        self.next_request += 1;
        let request = format!("perm-{}", self.next_request);
        send(&json!({
            "jsonrpc": "2.0",
            "id": request,
            "method": "session/request_permission",
            "params": {
                "sessionId": session,
                "title": "Run the check?",
                "options": [{ "optionId": "allow", "name": "Allow", "kind": "allow_once" }],
            },
        }));
        self.state(&session, "requires_action", None);
        self.waiting = Some(Waiting {
            request,
            session,
            cancelled: false,
            rest,
        });
    }

    /// Sends a `state_update` (`running` and `requires_action` not with `no-running`).
    fn state(&self, session: &str, state: &str, stop_reason: Option<&str>) {
        if state != "idle" && self.bug("no-running") {
            return;
        }
        let mut update_ = json!({ "sessionUpdate": "state_update", "state": state });
        if let Some(reason) = stop_reason {
            update_["stopReason"] = reason.into();
        }
        update(session, update_);
    }

    /// Sends updates of `session` and keeps them for replay.
    fn send_history(&mut self, session: &str, entries: Vec<Value>) {
        for entry in entries {
            update(session, entry.clone());
            if let Some(state) = self.sessions.get_mut(session) {
                state.history.push(entry);
            }
        }
    }

    /// The client answered the permission request of the waiting turn: the turn goes on, or
    /// ends `cancelled` when it was cancelled meanwhile or the answer says so.
    fn permission_answered(&mut self, outcome: Option<&str>) {
        let Some(waiting) = self.waiting.take() else {
            return;
        };
        let session = waiting.session;
        self.state(&session, "running", None);
        let cancelled = waiting.cancelled || outcome == Some("cancelled");
        if cancelled && !self.bug("cancel-ignored") {
            let failed = json!({ "sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed" });
            self.send_history(&session, vec![failed]);
            self.state(&session, "idle", Some("cancelled"));
        } else {
            self.send_history(&session, waiting.rest);
            self.state(&session, "idle", Some("end_turn"));
        }
    }

    fn resume(&mut self, id: &Value, params: &Value) {
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let replay = match params.get("replayFrom") {
            None | Some(Value::Null) => self.bug("replay-without-cursor"),
            Some(cursor) if cursor.get("type").and_then(Value::as_str) == Some("start") => true,
            Some(_) => {
                error(id, -32602, "unsupported replayFrom");
                return;
            }
        };
        let Some(state) = self.sessions.get(&session) else {
            error(id, -32002, "Unknown session");
            return;
        };
        let mut history = state.history.clone();
        if self.bug("replay-new-ids") {
            for entry in &mut history {
                if entry["sessionUpdate"] == "user_message" {
                    entry["messageId"] = "replayed-1".into();
                }
            }
        }
        let after_answer = self.bug("replay-after-answer");
        if after_answer {
            reply(id, json!({}));
        }
        if replay {
            for entry in history {
                update(&session, entry);
            }
            update(&session, json!({ "sessionUpdate": "replay_complete" }));
        }
        if !self.bug("resume-no-state") {
            update(
                &session,
                json!({ "sessionUpdate": "state_update", "state": "idle" }),
            );
        }
        if !after_answer {
            reply(id, json!({}));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bug = match args.as_slice() {
        [] => String::new(),
        [flag] if flag == "--list" => {
            for (name, what) in BUGS {
                println!("{name:<26} {what}");
            }
            return;
        }
        [flag, name] if flag == "--bug" && BUGS.iter().any(|(b, _)| b == name) => name.clone(),
        _ => {
            eprintln!("usage: broken-agent-v2 [--bug NAME]; bugs:");
            for (name, what) in BUGS {
                eprintln!("  {name:<26} {what}");
            }
            std::process::exit(2);
        }
    };
    let mut agent = Agent {
        bug,
        sessions: HashMap::new(),
        next_session: 0,
        next_message: 0,
        next_request: 0,
        waiting: None,
    };
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if !line.trim().is_empty() {
            agent.handle(&line);
        }
    }
}
