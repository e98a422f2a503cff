//! The viewer's rows for the spec's main flows, and the page that carries them: the data's
//! shape pinned, a message that says `</script>` kept inside its string.

use super::model::Row;
use super::record::{self, Payload, Record};
use super::{Header, lane_names, render, rows};
use acp_jsonrpc::transcript::Direction;
use serde_json::value::RawValue;

/// One line per row: what the page draws, without the payload.
fn outline(rows: &[Row]) -> String {
    let mut out = String::new();
    for row in rows {
        let mut line = format!("{:>2} {}→{} {:?}", row.i, row.from, row.to, row.kind);
        for (name, value) in [
            ("method", row.method.clone()),
            ("update", row.update.clone()),
            ("id", row.id.clone()),
            ("session", row.session.clone()),
            ("turn", row.turn.map(|t| t.to_string())),
            ("answers", row.answers.map(|t| t.to_string())),
            ("fold", row.fold.map(|t| t.to_string())),
            ("error", row.error.clone()),
            ("cancel", row.cancel.then(|| "yes".to_owned())),
        ] {
            if let Some(value) = value {
                line.push_str(&format!(" {name}={value}"));
            }
        }
        line.push_str(&format!(" | {}\n", row.summary));
        out.push_str(&line);
    }
    out
}

fn fixture_rows(name: &str) -> Vec<Row> {
    let path = format!(
        "{}/../../fixtures/transcripts/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    rows(record::parse(&text, 0).records)
}

#[test]
fn fixture_flows() {
    for name in [
        "tool_call_permission",
        "cancel_pending_permission",
        "errors",
        "prompt_chunks",
    ] {
        insta::assert_snapshot!(name, outline(&fixture_rows(name)));
    }
}

fn json(text: &str) -> Payload {
    Payload::Json(RawValue::from_string(text.to_owned()).unwrap())
}

/// A short timed transcript: a turn with two chunks and a failed file read.
fn small() -> Vec<Record> {
    let at =
        |ms: u64, dir, text: &str| Record::on_hop(0, dir, Some(1_000_000 + ms * 1000), json(text));
    vec![
        at(
            0,
            Direction::ClientToAgent,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi </script><script>alert(1)</script> <!--"}]}}"#,
        ),
        at(
            2,
            Direction::AgentToClient,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hel"}}}}"#,
        ),
        at(
            3,
            Direction::AgentToClient,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lo"}}}}"#,
        ),
        at(
            5,
            Direction::AgentToClient,
            r#"{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/x"}}"#,
        ),
        at(
            6,
            Direction::ClientToAgent,
            r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32002,"message":"Resource not found"}}"#,
        ),
        at(
            9,
            Direction::ClientToAgent,
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
        ),
        at(
            10,
            Direction::AgentToClient,
            r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}"#,
        ),
        Record::on_hop(
            0,
            Direction::AgentToClient,
            None,
            Payload::NotJson("panic: </script>".to_owned()),
        ),
    ]
}

/// The JSON the page embeds (between its data markers), unescaped by a JSON parser.
fn embedded(page: &str) -> serde_json::Value {
    let marker = r#"id="trace-data" data-encoding="json">"#;
    let start = page.find(marker).unwrap() + marker.len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

#[test]
fn data_shape() {
    let header = Header {
        title: "small.jsonl".to_owned(),
        lanes: lane_names(1),
        notes: Vec::new(),
        events: None,
    };
    let page = render(&header, &rows(small()));
    insta::assert_json_snapshot!(embedded(&page));
}

#[test]
fn script_end_in_a_message_stays_in_its_string() {
    let header = Header {
        title: "</script><b>title".to_owned(),
        lanes: lane_names(2),
        notes: vec!["<!-- note".to_owned()],
        events: None,
    };
    let page = render(&header, &rows(small()));
    // Only the template's own elements end: the data block and the script.
    assert_eq!(page.matches("</script").count(), 2, "{page}");
    assert!(!page.contains("<!--  note") && !page.contains("<!-- note"));
    assert!(!page.contains("alert(1)</script>"));
    let data = embedded(&page);
    assert_eq!(data["title"], "</script><b>title");
    assert_eq!(
        data["rows"][0]["msg"]["params"]["prompt"][0]["text"],
        "hi </script><script>alert(1)</script> <!--"
    );
    assert_eq!(data["rows"][7]["msg"], "panic: </script>");
}

#[test]
fn the_assets_cannot_end_their_elements() {
    for asset in [include_str!("viewer.js"), include_str!("viewer.css")] {
        assert!(!asset.contains("</script") && !asset.contains("</style"));
    }
}

#[test]
fn base64_as_atob_reads_it() {
    use super::page::base64;
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foobar\xff"), "Zm9vYmFy/w==");
}

fn unbase64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let value = |c: u8| ALPHABET.iter().position(|&a| a == c).unwrap() as u32;
    let mut out = Vec::new();
    for quad in text.as_bytes().chunks(4) {
        let digits: Vec<u32> = quad
            .iter()
            .filter(|&&c| c != b'=')
            .map(|&c| value(c))
            .collect();
        let n = digits
            .iter()
            .enumerate()
            .fold(0, |n, (k, d)| n | d << (18 - 6 * k));
        out.extend((0..digits.len() - 1).map(|k| (n >> (16 - 8 * k)) as u8));
    }
    out
}

#[test]
fn a_large_transcript_is_embedded_compressed() {
    use std::io::Read;
    let mut records = Vec::new();
    while records.len() < 20_000 {
        records.extend(small());
    }
    let header = Header {
        title: "large".to_owned(),
        lanes: lane_names(1),
        notes: Vec::new(),
        events: None,
    };
    let page = render(&header, &rows(records));
    let marker = r#"data-encoding="gzip-base64">"#;
    let start = page.find(marker).expect("compressed") + marker.len();
    let end = start + page[start..].find("</script>").unwrap();
    assert_eq!(page.matches("</script").count(), 2);
    let mut json = String::new();
    flate2::read::GzDecoder::new(&unbase64(&page[start..end])[..])
        .read_to_string(&mut json)
        .unwrap();
    let data: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(data["rows"].as_array().unwrap().len(), 20_000);
    assert_eq!(
        data["rows"][0]["msg"]["params"]["prompt"][0]["text"],
        "hi </script><script>alert(1)</script> <!--"
    );
}
