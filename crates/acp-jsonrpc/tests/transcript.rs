//! The transcript format's writer and reader agree: whatever one line writes, the reader gives
//! back (direction, message text, time, a peer's non-JSON line), and a written line stays one
//! line within its byte bound.

use acp_jsonrpc::transcript::{
    Direction, Entry, LINE_OVERHEAD_BYTES, LineMessage, read_line, write_line,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![
        Just(Direction::ClientToAgent),
        Just(Direction::AgentToClient)
    ]
}

/// JSON-RPC-shaped messages with arbitrary strings and numbers in them.
fn message() -> impl Strategy<Value = Value> {
    (any::<i64>(), ".*", ".*", any::<bool>()).prop_map(|(id, method, text, response)| {
        if response {
            json!({"id": id, "result": {"text": text}, "jsonrpc": "2.0"})
        } else {
            json!({"method": method, "jsonrpc": "2.0", "id": id, "params": {"text": text}})
        }
    })
}

proptest! {
    #[test]
    fn a_written_message_reads_back(
        dir in direction(),
        msg in message(),
        time_us in proptest::option::of(any::<u64>()),
    ) {
        let text = msg.to_string();
        let line = write_line(dir, LineMessage::Json(&text), time_us);
        prop_assert!(line.ends_with('\n'));
        prop_assert_eq!(line.matches('\n').count(), 1);
        prop_assert!(line.len() <= text.len() + LINE_OVERHEAD_BYTES);
        let read = read_line(&line).unwrap();
        prop_assert_eq!(read.dir, dir);
        let msg = read.msg.unwrap();
        prop_assert_eq!(msg.get(), text.as_str());
        prop_assert_eq!(read.time_us, time_us);
        prop_assert!(read.raw.is_none());
    }

    #[test]
    fn an_entry_reads_back_as_itself(dir in direction(), msg in message()) {
        let entry = Entry::new(dir, msg);
        prop_assert_eq!(Entry::parse_line(&entry.to_line()).unwrap(), entry);
    }

    #[test]
    fn a_line_that_is_not_json_reads_back_as_raw(dir in direction(), wire in ".*") {
        let message = LineMessage::of_wire(wire.as_bytes());
        let is_json = serde_json::from_str::<Value>(&wire).is_ok();
        prop_assert_eq!(matches!(message, LineMessage::Json(_)), is_json);
        let line = write_line(dir, message, None);
        prop_assert_eq!(line.matches('\n').count(), 1);
        let read = read_line(&line).unwrap();
        match read.msg {
            Some(msg) => prop_assert_eq!(msg.get(), wire.trim()),
            None => prop_assert_eq!(read.raw.as_deref(), Some(wire.as_str())),
        }
    }
}

#[test]
fn a_line_without_a_known_direction_or_message_is_refused() {
    assert!(read_line(r#"{"dir":"sideways","msg":{}}"#).is_err());
    assert!(read_line("not json").is_err());
    let error = Entry::parse_line(r#"{"dir":"client->agent","raw":"x"}"#).unwrap_err();
    assert!(error.to_string().contains("missing field `msg`"), "{error}");
}
