//! Raw baseline bench agent: blocking pipes, 64 KiB buffers, typed serde structs,
//! no protocol library.
//!
//! Single-threaded: the agent drives the prompt turn itself, so while a turn
//! waits for `fs/read_text_file` responses it simply keeps reading its input
//! (answering anything else that arrives meanwhile). Output is flushed only
//! when the next read could block.

use std::collections::HashSet;
use std::io::{self, Read, Write};
use std::time::Instant;

use acp_bench::raw::{self, Conn, Incoming};
use acp_bench::rusage::{self, Role};
use acp_bench::{FS_PATH, SESSION_ID, Scenario};

const IMPL: &str = "raw";

fn main() {
    let started = Instant::now();
    let result = raw::stdio_files().and_then(|(input, output)| run(Conn::new(input, output)));
    match result {
        Ok(()) => rusage::report_or_warn(Role::Agent, IMPL, started),
        Err(e) => {
            eprintln!("raw-agent: {e}");
            std::process::exit(1);
        }
    }
}

/// The agent's state across the connection.
struct Agent<R: Read, W: Write> {
    conn: Conn<R, W>,
    next_id: u64,
}

fn run<R: Read, W: Write>(conn: Conn<R, W>) -> io::Result<()> {
    let mut agent = Agent { conn, next_id: 0 };
    while agent.conn.read_line()? {
        let line = std::mem::take(&mut agent.conn.line);
        let msg: Incoming = raw::parse(&line)?;
        // Notifications (e.g. session/cancel) and stray responses need no answer.
        if let (Some(id), Some(method)) = (msg.id, msg.method.as_deref()) {
            agent.request(id, method, msg.params)?;
        }
        agent.conn.line = line;
    }
    agent.conn.writer.flush()
}

impl<R: Read, W: Write> Agent<R, W> {
    /// Answers a request received outside a turn.
    fn request(
        &mut self,
        id: &serde_json::value::RawValue,
        method: &str,
        params: Option<&serde_json::value::RawValue>,
    ) -> io::Result<()> {
        let w = &mut self.conn.writer;
        match method {
            "initialize" => {
                let p: raw::InitializeParamsIn = raw::parse_raw(need(params)?)?;
                raw::send_result(
                    w,
                    id,
                    raw::InitializeResult {
                        protocol_version: p.protocol_version.min(1),
                        agent_capabilities: raw::Empty {},
                        auth_methods: [],
                    },
                )
            }
            "session/new" => {
                let _p: raw::NewSessionParamsIn = raw::parse_raw(need(params)?)?;
                raw::send_result(
                    w,
                    id,
                    raw::NewSessionResult {
                        session_id: SESSION_ID,
                    },
                )
            }
            "session/prompt" => {
                let p: raw::PromptParamsIn = raw::parse_raw(need(params)?)?;
                let text = p
                    .prompt
                    .first()
                    .and_then(|b| b.text.as_deref())
                    .unwrap_or("");
                let scenario = Scenario::parse(text);
                self.turn(&p.session_id, scenario)?;
                raw::send_result(
                    &mut self.conn.writer,
                    id,
                    raw::PromptResult {
                        stop_reason: "end_turn".into(),
                    },
                )
            }
            _ => raw::send_error(w, id, raw::METHOD_NOT_FOUND, "Method not found"),
        }
    }

    /// Runs one prompt turn.
    fn turn(&mut self, session_id: &str, scenario: Scenario) -> io::Result<()> {
        match scenario {
            Scenario::Hello => Ok(()),
            Scenario::Stream { count, .. } => {
                let text = scenario.chunk_text();
                for _ in 0..count {
                    raw::send(
                        &mut self.conn.writer,
                        &raw::OutNotification {
                            jsonrpc: "2.0",
                            method: "session/update",
                            params: raw::ChunkUpdateParams {
                                session_id,
                                update: raw::ChunkUpdate {
                                    session_update: "agent_message_chunk",
                                    content: raw::OutTextBlock {
                                        kind: "text",
                                        text: &text,
                                    },
                                },
                            },
                        },
                    )?;
                }
                Ok(())
            }
            Scenario::Rpc { count } => self.read_files(session_id, count, 1),
            Scenario::RpcPar { count, in_flight } => self.read_files(session_id, count, in_flight),
        }
    }

    /// Makes `count` `fs/read_text_file` requests with up to `in_flight` outstanding.
    fn read_files(&mut self, session_id: &str, count: u64, in_flight: u64) -> io::Result<()> {
        let mut pending = HashSet::with_capacity(in_flight as usize);
        let mut sent = 0;
        let mut done = 0;
        while done < count {
            while sent < count && (pending.len() as u64) < in_flight {
                let id = self.next_id;
                self.next_id += 1;
                raw::send(
                    &mut self.conn.writer,
                    &raw::OutRequest {
                        jsonrpc: "2.0",
                        id,
                        method: "fs/read_text_file",
                        params: raw::ReadTextFileParams {
                            session_id,
                            path: FS_PATH,
                        },
                    },
                )?;
                pending.insert(id);
                sent += 1;
            }
            let id = self.fs_response()?;
            if !pending.remove(&id) {
                return Err(raw::invalid(format!("response to unknown request id {id}")));
            }
            done += 1;
        }
        Ok(())
    }

    /// Reads until a response arrives, answering requests that come in meanwhile;
    /// decodes the response as an `fs/read_text_file` result and returns its id.
    fn fs_response(&mut self) -> io::Result<u64> {
        loop {
            if !self.conn.read_line()? {
                return Err(raw::invalid("stdin closed during a turn"));
            }
            let msg: Incoming = raw::parse(&self.conn.line)?;
            let w = &mut self.conn.writer;
            match (msg.id, msg.method) {
                (Some(id), None) => {
                    let id: u64 = raw::parse_raw(id)?;
                    let Some(result) = msg.result else {
                        let error = msg.error.map_or("", |e| e.get());
                        return Err(raw::invalid(format!("fs/read_text_file failed: {error}")));
                    };
                    let _r: raw::ReadTextFileResult = raw::parse_raw(result)?;
                    return Ok(id);
                }
                (Some(id), Some(_)) => {
                    raw::send_error(w, id, raw::INTERNAL_ERROR, "busy: a prompt turn is running")?
                }
                (None, _) => {}
            }
        }
    }
}

fn need(params: Option<&serde_json::value::RawValue>) -> io::Result<&serde_json::value::RawValue> {
    params.ok_or_else(|| raw::invalid("missing params"))
}
