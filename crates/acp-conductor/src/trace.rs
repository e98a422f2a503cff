//! The trace proxy: forwards everything, and writes the logical traffic of its hop (what its
//! predecessor and its successor said to each other through it) as a transcript
//! (`acp_jsonrpc::transcript`), one `{"dir", "msg"}` line per message, as it happens.
//!
//! It records the predecessor's side of the proxy's connection, where the messages are not
//! wrapped: what came from the predecessor is `client->agent`, what went to it
//! `agent->client`, answers go the reverse way of the request they answer, and
//! `proxy/initialize` is written as `initialize`. A pass-through proxy sends the same
//! messages on to its successor, wrapped; those are not written again. Ids are the ones on
//! the proxy's own connection. Placed last in a chain, it records what the agent sees, and
//! the transcript replays against the agent with acp-test after normalizing.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;

use acp_jsonrpc::Observer;
use acp_jsonrpc::transcript::{Direction, Entry};
use serde_json::{Map, Value};

/// Writes a hop's logical traffic; install it as the proxy connection's observer.
///
/// ```
/// use acp_conductor::trace::TraceWriter;
/// use acp_jsonrpc::Observer;
///
/// let trace = TraceWriter::new(Vec::new());
/// trace.incoming(br#"{"jsonrpc":"2.0","id":0,"method":"proxy/initialize","params":{"protocolVersion":1}}"#);
/// trace.outgoing(br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#);
/// let text = String::from_utf8(trace.into_inner()).unwrap();
/// assert!(text.starts_with(r#"{"dir":"client->agent","msg":{"jsonrpc":"2.0","id":0,"method":"initialize""#));
/// assert!(text.lines().nth(1).unwrap().starts_with(r#"{"dir":"agent->client""#));
/// ```
pub struct TraceWriter<W: Write + Send> {
    state: Mutex<State<W>>,
}

impl<W: Write + Send> std::fmt::Debug for TraceWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceWriter").finish_non_exhaustive()
    }
}

struct State<W> {
    out: W,
    /// Requests in flight on the proxy's connection, by who sent them (`true`: we did) and
    /// id: the direction their request travelled. Bounded by the requests in flight.
    requests: HashMap<(bool, String), Direction>,
    failed: bool,
}

impl<W: Write + Send> TraceWriter<W> {
    /// A writer of transcript lines to `out`.
    pub fn new(out: W) -> Self {
        TraceWriter {
            state: Mutex::new(State {
                out,
                requests: HashMap::new(),
                failed: false,
            }),
        }
    }

    /// The writer, with everything recorded so far.
    pub fn into_inner(self) -> W {
        self.state
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .out
    }

    fn record(&self, sent_by_us: bool, line: &[u8]) {
        let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let id = msg.get("id").map(Value::to_string);
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let dir = match method.as_deref() {
            // The same messages again, on the successor's side of a pass-through proxy.
            Some("proxy/successor") => return,
            Some(method) => {
                let dir = logical(sent_by_us, method, &mut msg);
                if let Some(id) = id {
                    state.requests.insert((sent_by_us, id), dir);
                }
                dir
            }
            None => {
                let Some(id) = id else { return };
                match state.requests.remove(&(!sent_by_us, id)) {
                    Some(dir) => dir.reverse(),
                    None => return,
                }
            }
        };
        if state.failed {
            return;
        }
        let line = Entry::new(dir, Value::Object(msg)).to_line();
        let written = state
            .out
            .write_all(line.as_bytes())
            .and_then(|()| state.out.flush());
        if let Err(error) = written {
            // The proxy goes on forwarding: a full disk must not break the chain.
            eprintln!("trace proxy: cannot write the transcript, stopped recording: {error}");
            state.failed = true;
        }
    }
}

/// The direction of a message with `method` between the proxy and its predecessor, with
/// `proxy/initialize` named as the client sent it.
fn logical(sent_by_us: bool, method: &str, msg: &mut Map<String, Value>) -> Direction {
    match method {
        "proxy/initialize" => {
            msg.insert("method".to_owned(), "initialize".into());
            Direction::ClientToAgent
        }
        _ if sent_by_us => Direction::AgentToClient,
        _ => Direction::ClientToAgent,
    }
}

impl<W: Write + Send + 'static> Observer for TraceWriter<W> {
    fn incoming(&self, line: &[u8]) {
        self.record(false, line);
    }

    fn outgoing(&self, line: &[u8]) {
        self.record(true, line);
    }
}
