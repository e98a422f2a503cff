//! Transcript lines as the viewer reads them: acp-test's `{"dir","msg"}` records, with `acp
//! --trace`'s additions (`time_us`, and `raw` for a line of the peer that was not JSON), read
//! leniently: a line that is no record becomes one that says so, instead of failing the file.

use serde::Deserialize;
use serde_json::value::RawValue;

/// Which way a message travelled on its hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// From the client's side of the hop to the agent's side (`client->agent`).
    ToAgent,
    /// From the agent's side to the client's side (`agent->client`).
    ToClient,
}

/// One message of a transcript, on one hop of the lanes (hop 0: between lane 0 and lane 1).
#[derive(Debug)]
pub struct Record {
    /// The hop: which transcript file it came from, in lane order.
    pub hop: usize,
    /// Its direction on the hop.
    pub dir: Dir,
    /// When it was written, in microseconds since the Unix epoch, if the transcript says.
    pub time_us: Option<u64>,
    /// What was on the wire.
    pub payload: Payload,
}

/// A message, or a line that was not one.
#[derive(Debug)]
pub enum Payload {
    /// JSON as written (kept as text: the viewer shows the message as it was sent).
    Json(Box<RawValue>),
    /// A line of the peer that was not JSON (`acp --trace`'s `raw`).
    NotJson(String),
    /// A line of the file that is not a transcript record, and why.
    NotARecord { line: usize, text: String },
}

#[derive(Deserialize)]
struct Line {
    dir: String,
    #[serde(default)]
    msg: Option<Box<RawValue>>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    time_us: Option<u64>,
}

/// Reads one transcript's text as hop `hop`; blank lines and `//` comments are skipped, as
/// acp-test's `Transcript::parse` skips them.
pub fn parse(text: &str, hop: usize) -> Vec<Record> {
    let mut records = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        records.push(parse_line(line, index + 1, hop));
    }
    records
}

fn parse_line(text: &str, line: usize, hop: usize) -> Record {
    let not_a_record = || Record {
        hop,
        dir: Dir::ToClient,
        time_us: None,
        payload: Payload::NotARecord {
            line,
            text: text.to_owned(),
        },
    };
    let Ok(parsed) = serde_json::from_str::<Line>(text) else {
        return not_a_record();
    };
    let dir = match parsed.dir.as_str() {
        "client->agent" => Dir::ToAgent,
        "agent->client" => Dir::ToClient,
        _ => return not_a_record(),
    };
    let payload = match (parsed.msg, parsed.raw) {
        (Some(msg), _) => Payload::Json(msg),
        (None, Some(raw)) => Payload::NotJson(raw),
        (None, None) => return not_a_record(),
    };
    Record {
        hop,
        dir,
        time_us: parsed.time_us,
        payload,
    }
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
        let records = parse(text, 0);
        assert_eq!(records.len(), 4);
        assert_eq!(records[0].dir, Dir::ToAgent);
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
    fn merge_by_time_only_when_all_are_timed() {
        let at = |hop, t: Option<u64>| Record {
            hop,
            dir: Dir::ToAgent,
            time_us: t,
            payload: Payload::NotJson(String::new()),
        };
        let (merged, timed) = merge(vec![
            vec![at(0, Some(1)), at(0, Some(5))],
            vec![at(1, Some(3))],
        ]);
        assert!(timed);
        assert_eq!(merged.iter().map(|r| r.hop).collect::<Vec<_>>(), [0, 1, 0]);
        let (merged, timed) = merge(vec![vec![at(0, Some(9))], vec![at(1, None)]]);
        assert!(!timed);
        assert_eq!(merged.iter().map(|r| r.hop).collect::<Vec<_>>(), [0, 1]);
    }
}
