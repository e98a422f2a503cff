//! `--trace FILE` and `--trace-view`: what observes the wire. The file is the wire transcript,
//! one JSON line per message, in the transcript format (`acp_jsonrpc::transcript`, which
//! writes it; acp-test reads it):
//! `{"dir":"client->agent"|"agent->client","msg":MESSAGE,"time_us":MICROS}` (`time_us`:
//! microseconds since the Unix epoch, which the trace viewer uses for the time between a
//! request and its answer; acp-test ignores it). A line from the agent that is not JSON is
//! kept as a string: `{"dir":"agent->client","raw":"...","time_us":MICROS}`.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use acp_jsonrpc::transcript::{self, Direction, LineMessage};
use acp_jsonrpc::{ConnectionOptions, Observer, Problem};

use crate::args::Args;
use crate::trace_view::{self, LiveView};

pub struct Trace(Mutex<File>);

impl Trace {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Trace(Mutex::new(File::create(path)?)))
    }

    fn write(&self, dir: Direction, line: &[u8]) {
        let time_us = trace_view::record::now_us();
        let record = transcript::write_line(dir, LineMessage::of_wire(line), Some(time_us));
        // One write per message, so that lines never interleave.
        let _ = self.0.lock().unwrap().write_all(record.as_bytes());
    }
}

impl Observer for Trace {
    fn incoming(&self, line: &[u8]) {
        self.write(Direction::AgentToClient, line);
    }

    fn outgoing(&self, line: &[u8]) {
        self.write(Direction::ClientToAgent, line);
    }
}

/// Two observers, each seeing everything (`--trace` with `--trace-view`).
struct Both(Arc<dyn Observer>, Arc<dyn Observer>);

impl Observer for Both {
    fn incoming(&self, line: &[u8]) {
        self.0.incoming(line);
        self.1.incoming(line);
    }

    fn outgoing(&self, line: &[u8]) {
        self.0.outgoing(line);
        self.1.outgoing(line);
    }

    fn problem(&self, problem: &Problem) {
        self.0.problem(problem);
        self.1.problem(problem);
    }
}

/// Installs `--trace` and `--trace-view` on `connection`; the live view, if any, runs until
/// it is dropped. `Err` is the message to print.
pub fn install(
    args: &Args,
    connection: ConnectionOptions,
) -> Result<(ConnectionOptions, Option<LiveView>), String> {
    let mut observers: Vec<Arc<dyn Observer>> = Vec::new();
    if let Some(path) = &args.trace {
        let trace = Trace::create(path).map_err(|e| format!("--trace {}: {e}", path.display()))?;
        observers.push(Arc::new(trace));
    }
    let mut live = None;
    if args.trace_view {
        let title = match args.agent.as_slice() {
            [] => "acp (demo agent)".to_owned(),
            agent => format!("acp -- {}", agent.join(" ")),
        };
        let view = LiveView::start(&title).map_err(|e| format!("--trace-view: {e}"))?;
        eprintln!("acp: trace view at {}", view.url());
        observers.push(Arc::new(view.observer()));
        live = Some(view);
    }
    let connection = match (observers.pop(), observers.pop()) {
        (Some(one), None) => connection.with_shared_observer(one),
        (Some(one), Some(other)) => connection.with_observer(Both(other, one)),
        _ => connection,
    };
    Ok((connection, live))
}
