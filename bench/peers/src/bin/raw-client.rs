//! Raw baseline bench client: blocking pipes, 64 KiB buffers, typed serde structs,
//! no protocol library.
//!
//! Single-threaded: after each request it reads the agent's output until the
//! matching response arrives, counting `agent_message_chunk` updates and
//! answering `fs/read_text_file` requests on the way. Output is flushed only
//! when the next read could block.

use std::io::{self, Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use acp_bench::raw::{self, Conn, Incoming};
use acp_bench::rusage::{self, Role};
use acp_bench::{ClientArgs, FS_CONTENT, SESSION_CWD, SHUTDOWN_GRACE, ms_since, result_line};

const IMPL: &str = "raw";

fn main() {
    let started = Instant::now();
    let args = ClientArgs::from_env();
    match run(&args, started) {
        Ok(ok) => {
            println!("{}", ok.line);
            rusage::report_or_warn(Role::Client, IMPL, started);
            if !ok.agent_ok {
                eprintln!("raw-client: agent exited with {}", ok.agent_status);
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("raw-client: {e}");
            std::process::exit(1);
        }
    }
}

struct Outcome {
    line: String,
    agent_ok: bool,
    agent_status: std::process::ExitStatus,
}

/// Counters the client keeps while it waits for responses.
#[derive(Default)]
struct Counts {
    updates: u64,
    rpcs: u64,
}

fn run(args: &ClientArgs, started: Instant) -> io::Result<Outcome> {
    let mut child = Command::new(&args.agent_program)
        .args(&args.agent_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let input = child.stdout.take().expect("piped stdout");
    let output = child.stdin.take().expect("piped stdin");
    let mut conn = Conn::new(input, output);
    let mut counts = Counts::default();

    raw::send(
        &mut conn.writer,
        &raw::OutRequest {
            jsonrpc: "2.0",
            id: 0,
            method: "initialize",
            params: raw::InitializeParams {
                protocol_version: 1,
                client_capabilities: raw::ClientCapabilities {
                    fs: raw::FsCapabilities {
                        read_text_file: true,
                        write_text_file: false,
                    },
                    terminal: false,
                },
            },
        },
    )?;
    response(&mut conn, 0, &mut counts, |result| {
        let r: raw::InitializeResultIn = raw::parse_raw(result)?;
        if r.protocol_version != 1 {
            return Err(raw::invalid("agent chose another protocol version"));
        }
        Ok(())
    })?;

    raw::send(
        &mut conn.writer,
        &raw::OutRequest {
            jsonrpc: "2.0",
            id: 1,
            method: "session/new",
            params: raw::NewSessionParams {
                cwd: SESSION_CWD,
                mcp_servers: [],
            },
        },
    )?;
    let session_id = response(&mut conn, 1, &mut counts, |result| {
        let r: raw::NewSessionResultIn = raw::parse_raw(result)?;
        Ok(r.session_id.into_owned())
    })?;

    let tp = Instant::now();
    raw::send(
        &mut conn.writer,
        &raw::OutRequest {
            jsonrpc: "2.0",
            id: 2,
            method: "session/prompt",
            params: raw::PromptParams {
                session_id: &session_id,
                prompt: [raw::OutTextBlock {
                    kind: "text",
                    text: &args.prompt,
                }],
            },
        },
    )?;
    response(&mut conn, 2, &mut counts, |result| {
        let r: raw::PromptResult = raw::parse_raw(result)?;
        if r.stop_reason != "end_turn" {
            return Err(raw::invalid(format!("stop reason {}", r.stop_reason)));
        }
        Ok(())
    })?;
    // Updates are read in wire order, and the agent sends all of them before the
    // prompt response, so every update has been counted here.
    let prompt_ms = ms_since(tp);
    let total_ms = ms_since(started);

    // Close the agent's stdin (and our end of its stdout), then wait for it.
    let Conn { reader, writer, .. } = conn;
    drop(writer.into_inner().map_err(|e| e.into_error())?);
    drop(reader);
    let status = acp_bench::wait_with_grace(&mut child, SHUTDOWN_GRACE)?;

    Ok(Outcome {
        line: result_line(
            IMPL,
            &args.prompt,
            counts.updates,
            counts.rpcs,
            prompt_ms,
            total_ms,
        ),
        agent_ok: status.success(),
        agent_status: status,
    })
}

/// Reads until the response with id `want` arrives and returns what `on_result`
/// makes of its `result`. Requests and notifications received meanwhile are
/// handled and counted.
fn response<R: Read, W: Write, T>(
    conn: &mut Conn<R, W>,
    want: u64,
    counts: &mut Counts,
    on_result: impl FnOnce(&serde_json::value::RawValue) -> io::Result<T>,
) -> io::Result<T> {
    loop {
        if !conn.read_line()? {
            return Err(raw::invalid("agent closed its stdout"));
        }
        let msg: Incoming = raw::parse(&conn.line)?;
        let w = &mut conn.writer;
        match (msg.id, msg.method.as_deref()) {
            (None, Some("session/update")) => {
                let p: raw::SessionUpdateParamsIn =
                    raw::parse_raw(msg.params.ok_or_else(|| raw::invalid("missing params"))?)?;
                if p.update.session_update == "agent_message_chunk" {
                    let content = p
                        .update
                        .content
                        .ok_or_else(|| raw::invalid("chunk without content"))?;
                    let _block: raw::ContentBlock = raw::parse_raw(content)?;
                    counts.updates += 1;
                }
            }
            (None, Some(_)) => {}
            (Some(id), Some("fs/read_text_file")) => {
                let _p: raw::ReadTextFileParamsIn =
                    raw::parse_raw(msg.params.ok_or_else(|| raw::invalid("missing params"))?)?;
                raw::send_result(
                    w,
                    id,
                    raw::ReadTextFileResult {
                        content: FS_CONTENT.into(),
                    },
                )?;
                counts.rpcs += 1;
            }
            (Some(id), Some(_)) => {
                raw::send_error(w, id, raw::METHOD_NOT_FOUND, "Method not found")?
            }
            (Some(id), None) => {
                let id: u64 = raw::parse_raw(id)?;
                if id != want {
                    return Err(raw::invalid(format!("unexpected response id {id}")));
                }
                return match (msg.result, msg.error) {
                    (Some(result), _) => on_result(result),
                    (None, Some(e)) => Err(raw::invalid(format!("error response: {}", e.get()))),
                    (None, None) => Err(raw::invalid("response without result")),
                };
            }
            (None, None) => return Err(raw::invalid("message without id and method")),
        }
    }
}
