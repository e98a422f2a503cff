//! Transcript lines as the viewer reads them, as messages between lanes. Two formats:
//! the transcript format's `{"dir","msg"}` records (read by `acp_jsonrpc::transcript`) (with `acp --trace`'s `time_us`, and `raw` for a line of
//! the peer that was not JSON), one file per hop; and the official conductor's `--trace`
//! events (`{"type":"request"|"response"|"notification","ts","from","to",...}`, documented in
//! the official Rust SDK's book, `md/trace-viewer.md`), whose lanes are named in the events.
//! Read leniently: a line that is no record becomes one that says so.

use acp_jsonrpc::transcript::{self, Direction};
use serde_json::Value;
use serde_json::value::RawValue;

/// One message, from one lane to another.
#[derive(Debug)]
pub struct Record {
    /// The lane that sent it.
    pub from: usize,
    /// The lane that read it.
    pub to: usize,
    /// When it was written, in microseconds (since the Unix epoch for acp-test transcripts,
    /// since capture began for the conductor's), if the transcript says.
    pub time_us: Option<u64>,
    /// What was on the wire.
    pub payload: Payload,
}

impl Record {
    /// A message of hop `hop` (between lanes `hop` and `hop + 1`).
    pub fn on_hop(hop: usize, dir: Direction, time_us: Option<u64>, payload: Payload) -> Record {
        let (from, to) = match dir {
            Direction::ClientToAgent => (hop, hop + 1),
            Direction::AgentToClient => (hop + 1, hop),
        };
        Record {
            from,
            to,
            time_us,
            payload,
        }
    }
}

/// A message, or a line that was not one.
#[derive(Debug)]
pub enum Payload {
    /// JSON as written (kept as text: the viewer shows the message as it was sent).
    Json(Box<RawValue>),
    /// A line of the peer that was not JSON (`acp --trace`'s `raw`).
    NotJson(String),
    /// A line of the file that is not a transcript record.
    NotARecord { line: usize, text: String },
}

/// A transcript file, read.
#[derive(Debug)]
pub struct Transcript {
    /// The lanes its records name, left to right (`None`: an acp-test transcript, one hop).
    pub lanes: Option<Vec<String>>,
    /// Its records, in file order.
    pub records: Vec<Record>,
}

/// Reads one transcript's text; `hop` places an acp-test transcript between lanes `hop` and
/// `hop + 1`. Blank lines and `//` comments are skipped, as acp-test's `Transcript::parse`
/// skips them. A file whose first record is a conductor event is read as the conductor's.
pub fn parse(text: &str, hop: usize) -> Transcript {
    let lines = || {
        text.lines()
            .enumerate()
            .map(|(index, line)| (index + 1, line.trim()))
            .filter(|(_, line)| !transcript::is_comment(line))
    };
    let conductor = lines()
        .next()
        .and_then(|(_, line)| serde_json::from_str::<Value>(line).ok())
        .is_some_and(|first| first.get("ts").is_some() && first.get("type").is_some());
    if conductor {
        return conductor_events(lines());
    }
    Transcript {
        lanes: None,
        records: lines()
            .map(|(line, text)| parse_line(text, line, hop))
            .collect(),
    }
}

fn not_a_record(line: usize, text: &str, from: usize, to: usize) -> Record {
    Record {
        from,
        to,
        time_us: None,
        payload: Payload::NotARecord {
            line,
            text: text.to_owned(),
        },
    }
}

fn parse_line(text: &str, line: usize, hop: usize) -> Record {
    let Ok(parsed) = transcript::read_line(text) else {
        return not_a_record(line, text, hop + 1, hop);
    };
    let dir = parsed.dir;
    let payload = match (parsed.msg, parsed.raw) {
        (Some(msg), _) => Payload::Json(msg),
        (None, Some(raw)) => Payload::NotJson(raw),
        (None, None) => return not_a_record(line, text, hop + 1, hop),
    };
    Record::on_hop(hop, dir, parsed.time_us, payload)
}

/// The conductor's events as messages: a request or notification is rebuilt as the JSON-RPC
/// message it logs (`id`, `method`, `params`), a response as `result` or `error` by its
/// `is_error`; an MCP-over-ACP message keeps its inner method, marked `"protocol":"mcp"`.
fn conductor_events<'a>(lines: impl Iterator<Item = (usize, &'a str)>) -> Transcript {
    let mut names: Vec<String> = Vec::new();
    let mut events = Vec::new();
    for (line, text) in lines {
        let event = serde_json::from_str::<Value>(text).ok().and_then(|event| {
            let from = event.get("from")?.as_str()?.to_owned();
            let to = event.get("to")?.as_str()?.to_owned();
            for name in [&from, &to] {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
            Some((from, to, event))
        });
        events.push((line, text, event));
    }
    names.sort_by_key(|name| lane_rank(name));
    let lane = |name: &str| names.iter().position(|n| n == name).unwrap_or(0);
    let records = events
        .into_iter()
        .map(|(line, text, event)| {
            let Some((from, to, event)) = event else {
                return not_a_record(line, text, 0, 0);
            };
            let (from, to) = (lane(&from), lane(&to));
            match rebuild(&event) {
                Some(message) => Record {
                    from,
                    to,
                    time_us: event
                        .get("ts")
                        .and_then(Value::as_f64)
                        .map(|seconds| (seconds * 1e6) as u64),
                    payload: Payload::Json(message),
                },
                None => not_a_record(line, text, from, to),
            }
        })
        .collect();
    Transcript {
        lanes: Some(names),
        records,
    }
}

/// Client first, then proxies by their number, then anything else, then the agent; the
/// conductor has named them `client`/`proxy:0`/`agent` and `Client`/`Proxy(0)`/`Agent`.
fn lane_rank(name: &str) -> (u8, u64) {
    let lower = name.to_ascii_lowercase();
    let number = || {
        lower
            .chars()
            .filter(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or(0)
    };
    match lower.as_str() {
        "client" => (0, 0),
        "agent" => (3, 0),
        _ if lower.starts_with("proxy") => (1, number()),
        _ => (2, 0),
    }
}

fn rebuild(event: &Value) -> Option<Box<RawValue>> {
    let mut message = serde_json::Map::new();
    message.insert("jsonrpc".into(), "2.0".into());
    match event.get("type")?.as_str()? {
        "request" | "notification" => {
            if event.get("type")?.as_str()? == "request" {
                message.insert("id".into(), event.get("id")?.clone());
            }
            message.insert("method".into(), event.get("method")?.clone());
            if let Some(params) = event.get("params") {
                message.insert("params".into(), params.clone());
            }
            if event.get("protocol").and_then(Value::as_str) == Some("mcp") {
                message.insert("protocol".into(), "mcp".into());
            }
        }
        "response" => {
            message.insert("id".into(), event.get("id")?.clone());
            let key = if event.get("is_error")?.as_bool()? {
                "error"
            } else {
                "result"
            };
            message.insert(key.into(), event.get("payload")?.clone());
        }
        _ => return None,
    }
    RawValue::from_string(Value::Object(message).to_string()).ok()
}

/// Several hops' transcripts as one sequence: by time when every record has one (a stable
/// sort, so that messages of the same microsecond keep their file order), else hop after hop.
/// Returns whether the order is by time.
pub fn merge(hops: Vec<Vec<Record>>) -> (Vec<Record>, bool) {
    let mut all: Vec<Record> = hops.into_iter().flatten().collect();
    let timed = all.iter().all(|r| r.time_us.is_some());
    if timed {
        all.sort_by_key(|r| r.time_us);
    }
    (all, timed)
}

/// The time now, in microseconds since the Unix epoch, as `acp --trace` writes it.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_lines() {
        let text = concat!(
            "// a comment\n",
            "{\"dir\":\"client->agent\",\"msg\":{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"},\"time_us\":5}\n",
            "\n",
            "{\"dir\":\"agent->client\",\"raw\":\"log line\"}\n",
            "not json\n",
            "{\"dir\":\"sideways\",\"msg\":{}}\n",
        );
        let transcript = parse(text, 0);
        let records = transcript.records;
        assert!(transcript.lanes.is_none());
        assert_eq!(records.len(), 4);
        assert_eq!((records[0].from, records[0].to), (0, 1));
        assert_eq!(records[0].time_us, Some(5));
        assert!(matches!(&records[1].payload, Payload::NotJson(raw) if raw == "log line"));
        assert!(matches!(
            &records[2].payload,
            Payload::NotARecord { line: 5, .. }
        ));
        assert!(matches!(
            &records[3].payload,
            Payload::NotARecord { line: 6, .. }
        ));
    }

    #[test]
    fn conductor_events_become_messages_between_named_lanes() {
        let text = concat!(
            "{\"type\":\"request\",\"ts\":0.5,\"protocol\":\"acp\",\"from\":\"Client\",\"to\":\"Proxy(0)\",\"id\":1,\"method\":\"session/prompt\",\"session\":\"s\",\"params\":{\"sessionId\":\"s\"}}\n",
            "{\"type\":\"request\",\"ts\":0.6,\"protocol\":\"acp\",\"from\":\"Proxy(0)\",\"to\":\"Agent\",\"id\":\"x\",\"method\":\"session/prompt\",\"params\":{}}\n",
            "{\"type\":\"response\",\"ts\":0.7,\"from\":\"Agent\",\"to\":\"Proxy(0)\",\"id\":\"x\",\"is_error\":true,\"payload\":{\"code\":-1,\"message\":\"no\"}}\n",
            "{\"type\":\"trace\",\"ts\":0.8,\"from\":\"Agent\",\"to\":\"Client\"}\n",
        );
        let transcript = parse(text, 0);
        assert_eq!(transcript.lanes.unwrap(), ["Client", "Proxy(0)", "Agent"]);
        let r = &transcript.records;
        assert_eq!((r[0].from, r[0].to, r[0].time_us), (0, 1, Some(500_000)));
        assert_eq!((r[2].from, r[2].to), (2, 1));
        let Payload::Json(answer) = &r[2].payload else {
            panic!()
        };
        assert_eq!(
            answer.get(),
            r#"{"error":{"code":-1,"message":"no"},"id":"x","jsonrpc":"2.0"}"#
        );
        assert!(matches!(r[3].payload, Payload::NotARecord { line: 4, .. }));
    }

    #[test]
    fn merge_by_time_only_when_all_are_timed() {
        let at = |hop, t: Option<u64>| {
            Record::on_hop(
                hop,
                Direction::ClientToAgent,
                t,
                Payload::NotJson(String::new()),
            )
        };
        let (merged, timed) = merge(vec![
            vec![at(0, Some(1)), at(0, Some(5))],
            vec![at(1, Some(3))],
        ]);
        assert!(timed);
        assert_eq!(merged.iter().map(|r| r.from).collect::<Vec<_>>(), [0, 1, 0]);
        let (merged, timed) = merge(vec![vec![at(0, Some(9))], vec![at(1, None)]]);
        assert!(!timed);
        assert_eq!(merged.iter().map(|r| r.from).collect::<Vec<_>>(), [0, 1]);
    }
}
