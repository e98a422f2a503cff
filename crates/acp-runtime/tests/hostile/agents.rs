//! The hostile agents: each one a plain blocking program that speaks raw JSON lines on stdin
//! and stdout, run as `hostile agent <case>` over real pipes.

use std::io::{BufRead, BufReader, Write};

use serde_json::{Value, json};

/// A raw agent: reads requests and writes lines, with no runtime in between.
pub struct Wire {
    input: BufReader<std::io::Stdin>,
    output: std::io::BufWriter<std::io::Stdout>,
}

impl Wire {
    pub fn new() -> Wire {
        Wire {
            input: BufReader::new(std::io::stdin()),
            output: std::io::BufWriter::with_capacity(1 << 20, std::io::stdout()),
        }
    }

    /// The next message; exits quietly at end of input.
    pub fn recv(&mut self) -> Value {
        let mut line = String::new();
        if self.input.read_line(&mut line).unwrap_or(0) == 0 {
            std::process::exit(0);
        }
        serde_json::from_str(&line).expect("the client sends JSON")
    }

    /// Reads until a request for `method`; returns its id and params.
    pub fn expect(&mut self, method: &str) -> (Value, Value) {
        loop {
            let message = self.recv();
            if message["method"] == method && message.get("id").is_some() {
                return (message["id"].clone(), message["params"].clone());
            }
        }
    }

    pub fn send(&mut self, message: Value) {
        serde_json::to_writer(&mut self.output, &message).unwrap();
        self.output.write_all(b"\n").unwrap();
    }

    pub fn flush(&mut self) {
        let _ = self.output.flush();
    }

    pub fn reply(&mut self, id: Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
        self.flush();
    }

    pub fn request(&mut self, id: &str, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    pub fn update(&mut self, session: &str, text: &str) {
        self.send(json!({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": session,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        }}));
    }

    /// Answers `initialize` and the first `session/new` with `session`; returns the session's
    /// working directory.
    pub fn start(&mut self, session: &str) -> String {
        let (id, _) = self.expect("initialize");
        self.reply(
            id,
            json!({"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}),
        );
        let (id, params) = self.expect("session/new");
        self.reply(id, json!({"sessionId": session}));
        params["cwd"].as_str().unwrap_or_default().to_owned()
    }
}

pub fn run(case: &str) {
    let mut wire = Wire::new();
    match case {
        "many-updates" => many_updates(&mut wire),
        "undrained-session" => undrained_session(&mut wire),
        "in-flight-limit" => in_flight_limit(&mut wire),
        "deaf" => deaf(&mut wire),
        "unopened-flood" => unopened_flood(&mut wire),
        "slow-session" => slow_session(&mut wire),
        "deaf-reads" => deaf_reads(&mut wire),
        "tool-call-flood" => tool_call_flood(&mut wire),
        "in-flight-bytes" => in_flight_bytes(&mut wire),
        "subagent-flood" => subagent_flood(&mut wire),
        other => panic!("no hostile agent `{other}`"),
    }
}

/// Streams 1000 chunks in one turn.
fn many_updates(wire: &mut Wire) {
    wire.start("s");
    let (id, _) = wire.expect("session/prompt");
    for i in 0..1000 {
        wire.update("s", &format!("chunk {i}"));
    }
    wire.reply(id, json!({"stopReason": "end_turn"}));
    wire.recv();
}

/// Streams 1000 updates to session A, then opens session B.
fn undrained_session(wire: &mut Wire) {
    wire.start("A");
    for i in 0..1000 {
        wire.update("A", &format!("{i}"));
    }
    let (id, _) = wire.expect("session/new");
    wire.reply(id, json!({"sessionId": "B"}));
    wire.recv();
}

/// Opens session `s`, takes its prompt and creates a terminal running a long `sleep`; returns
/// the prompt's request id and the terminal's id.
fn sleeping_terminal_in_a_turn(wire: &mut Wire) -> (Value, Value) {
    wire.start("s");
    let (prompt, _) = wire.expect("session/prompt");
    wire.request(
        "create",
        "terminal/create",
        json!({"sessionId": "s", "command": "sleep", "args": ["1000"]}),
    );
    wire.flush();
    let created = wire.recv();
    (prompt, created["result"]["terminalId"].clone())
}

/// Fills the client's in-flight limit with `terminal/wait_for_exit` calls on a sleeping
/// command, then asks for `terminal/kill`: it must be answered (refused while the limit is
/// full), a cancelled wait frees a slot, and the kill then goes through and ends every wait.
/// Reports what it saw as the turn's one message.
fn in_flight_limit(wire: &mut Wire) {
    const WAITS: usize = 300;
    let (prompt, terminal) = sleeping_terminal_in_a_turn(wire);
    let target = json!({"sessionId": "s", "terminalId": terminal});
    for i in 0..WAITS {
        wire.request(&format!("w{i}"), "terminal/wait_for_exit", target.clone());
    }
    wire.request("kill1", "terminal/kill", target.clone());
    wire.flush();
    let (mut refused, mut exited, mut cancelled, mut other) = (0, 0, 0, 0);
    let mut kill1 = String::new();
    let mut kill2 = String::new();
    let mut answered = 0;
    while answered < WAITS + 2 {
        let message = wire.recv();
        let id = message["id"].as_str().unwrap_or_default().to_owned();
        let code = message["error"]["code"].as_i64();
        answered += 1;
        if id == "kill1" {
            kill1 = code.map_or("ok".into(), |c| c.to_string());
            // Free one slot, then ask again.
            wire.send(json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "w0"}}));
            wire.request("kill2", "terminal/kill", target.clone());
            wire.flush();
        } else if id == "kill2" {
            kill2 = code.map_or("ok".into(), |c| c.to_string());
        } else if code == Some(-32603) {
            refused += 1;
        } else if code == Some(-32800) {
            cancelled += 1;
        } else if message.get("result").is_some() {
            exited += 1;
        } else {
            other += 1;
        }
    }
    let report = format!(
        "refused:{refused} kill1:{kill1} cancelled:{cancelled} kill2:{kill2} exited:{exited} other:{other}"
    );
    wire.update("s", &report);
    wire.reply(prompt, json!({"stopReason": "end_turn"}));
    wire.recv();
}

/// Answers the start, then never reads its stdin again, and ignores SIGTERM.
fn deaf(wire: &mut Wire) {
    wire.start("s");
    // SAFETY: setting a signal's disposition to "ignore" has no preconditions.
    unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// Before answering `session/new`, floods updates for 20 session ids (one of them the id it
/// then answers with): 24 of 32 KiB each, then 4 of 16 MiB.
fn unopened_flood(wire: &mut Wire) {
    let (id, _) = wire.expect("initialize");
    wire.reply(
        id,
        json!({"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}),
    );
    let (id, _) = wire.expect("session/new");
    let small = "x".repeat(32 << 10);
    for _ in 0..24 {
        for session in 0..20 {
            wire.update(&format!("made-up-{session}"), &small);
        }
    }
    let large = "y".repeat(16 << 20);
    for session in 0..4 {
        wire.update(&format!("made-up-{session}"), &large);
    }
    wire.reply(id, json!({"sessionId": "made-up-0"}));
    wire.recv();
}

/// Streams 48 updates of 1 MiB in a turn whose client does not read, then answers a second
/// `session/new`, so that the client knows every update was routed.
fn slow_session(wire: &mut Wire) {
    wire.start("s");
    let (prompt, _) = wire.expect("session/prompt");
    let text = "z".repeat(1 << 20);
    for _ in 0..48 {
        wire.update("s", &text);
    }
    wire.flush();
    let (id, _) = wire.expect("session/new");
    wire.reply(id, json!({"sessionId": "t"}));
    wire.reply(prompt, json!({"stopReason": "end_turn"}));
    wire.recv();
}

/// Asks for `big.txt` in its session's directory 32 times at once, then never reads again.
fn deaf_reads(wire: &mut Wire) {
    let cwd = wire.start("s");
    let path = format!("{cwd}/big.txt");
    for i in 0..32 {
        wire.request(
            &format!("r{i}"),
            "fs/read_text_file",
            json!({"sessionId": "s", "path": path}),
        );
    }
    wire.update("s", "sent");
    wire.flush();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

fn tool_call(wire: &mut Wire, id: &str, status: &str) {
    wire.send(json!({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s",
        "update": {"sessionUpdate": "tool_call", "toolCallId": id, "title": "t", "status": status}
    }}));
}

/// In one turn, 200 tool calls with ids of 1 MiB, 20,000 finished ones with ids of 1000
/// bytes, then one unfinished call `last`.
fn tool_call_flood(wire: &mut Wire) {
    wire.start("s");
    let (prompt, _) = wire.expect("session/prompt");
    let long = "i".repeat(1 << 20);
    for n in 0..200 {
        tool_call(wire, &format!("{long}{n}"), "completed");
    }
    for n in 0..20_000 {
        tool_call(wire, &format!("{n:0>1000}"), "completed");
    }
    tool_call(wire, "last", "in_progress");
    wire.reply(prompt, json!({"stopReason": "end_turn"}));
    wire.recv();
}

/// Ten `terminal/wait_for_exit` calls each carrying 8 MiB of `_meta`, on a sleeping command,
/// then a `terminal/kill`: the client (with an in-flight budget of 16 MiB) refuses the waits
/// that do not fit at once, still takes the small kill, and the wait it took ends with the
/// command. Reports what it saw as the turn's one message.
fn in_flight_bytes(wire: &mut Wire) {
    const WAITS: usize = 10;
    let (prompt, terminal) = sleeping_terminal_in_a_turn(wire);
    let pad = "m".repeat(8 << 20);
    for i in 0..WAITS {
        wire.request(
            &format!("w{i}"),
            "terminal/wait_for_exit",
            json!({"sessionId": "s", "terminalId": terminal, "_meta": {"pad": pad}}),
        );
    }
    wire.flush();
    let (mut refused, mut exited, mut other) = (0, 0, 0);
    let mut kill = String::new();
    let mut answered = 0;
    while answered < WAITS + 1 {
        let message = wire.recv();
        answered += 1;
        let id = message["id"].as_str().unwrap_or_default().to_owned();
        let error = &message["error"];
        if id == "kill" {
            kill = error["code"]
                .as_i64()
                .map_or("ok".into(), |c| c.to_string());
        } else if error["message"] == "the requests in flight hold too many bytes" {
            refused += 1;
            if refused == WAITS - 1 {
                // Every refusal came at once: now end the command.
                wire.request(
                    "kill",
                    "terminal/kill",
                    json!({"sessionId": "s", "terminalId": terminal}),
                );
                wire.flush();
            }
        } else if message.get("result").is_some() {
            exited += 1;
        } else {
            other += 1;
        }
    }
    let report = format!("refused:{refused} kill:{kill} exited:{exited} other:{other}");
    wire.update("s", &report);
    wire.reply(prompt, json!({"stopReason": "end_turn"}));
    wire.recv();
}

/// Announces 80 subagents in a turn and sends 1 MiB under each one's own session id.
fn subagent_flood(wire: &mut Wire) {
    wire.start("s");
    let (id, _) = wire.expect("session/prompt");
    let text = "c".repeat(1 << 20);
    for n in 0..80 {
        let child = format!("child-{n}");
        wire.send(
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "s",
                "update": {"sessionUpdate": "subagent_update", "sessionId": child,
                    "title": format!("Task {n}"), "state": {"state": "running"}}
            }}),
        );
        wire.update(&child, &text);
    }
    wire.reply(id, json!({"stopReason": "end_turn"}));
    wire.recv();
}
