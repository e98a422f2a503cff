//! `--trace FILE`: the wire transcript, one JSON line per message, in the format of acp-test's
//! `.jsonl` transcripts: `{"dir":"client->agent"|"agent->client","msg":MESSAGE}`. A line from
//! the agent that is not JSON is kept as a string: `{"dir":"agent->client","raw":"..."}`.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use acp_jsonrpc::Observer;

pub struct Trace(Mutex<File>);

impl Trace {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Trace(Mutex::new(File::create(path)?)))
    }

    fn write(&self, dir: &str, line: &[u8]) {
        let record = match std::str::from_utf8(line)
            .ok()
            .filter(|text| serde_json::from_str::<&serde_json::value::RawValue>(text).is_ok())
        {
            Some(json) => format!("{{\"dir\":\"{dir}\",\"msg\":{json}}}\n"),
            None => format!(
                "{{\"dir\":\"{dir}\",\"raw\":{}}}\n",
                serde_json::Value::from(String::from_utf8_lossy(line).into_owned())
            ),
        };
        // One write per message, so that lines never interleave.
        let _ = self.0.lock().unwrap().write_all(record.as_bytes());
    }
}

impl Observer for Trace {
    fn incoming(&self, line: &[u8]) {
        self.write("agent->client", line);
    }

    fn outgoing(&self, line: &[u8]) {
        self.write("client->agent", line);
    }
}
