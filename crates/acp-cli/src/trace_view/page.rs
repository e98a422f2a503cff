//! The viewer's page: one self-contained HTML file (its CSS and JavaScript inline, nothing
//! fetched), with the rows embedded as JSON in a `<script type="application/json">` block
//! (gzip-compressed and base64-encoded when large).

use std::fmt::Write as _;

use serde::Serialize;

use super::model::Row;

const TEMPLATE: &str = include_str!("viewer.html");
const STYLE: &str = include_str!("viewer.css");
const SCRIPT: &str = include_str!("viewer.js");

/// What the page shows besides the rows.
#[derive(Debug, Serialize)]
pub struct Header {
    /// The page's title: the transcript's file name, or what runs live.
    pub title: String,
    /// The lanes, left to right: the client, the proxies, the agent.
    pub lanes: Vec<String>,
    /// Notes for the reader (an order that is not by time, for example).
    pub notes: Vec<String>,
    /// For the live view: the URL of the event stream that sends the rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<String>,
}

/// The page, with `rows` embedded.
pub fn render(header: &Header, rows: &[Row]) -> String {
    let mut data = String::with_capacity(rows.len() * 256 + 256);
    let header_json = serde_json::to_string(header).expect("a header serializes");
    // `{...header, "rows": [...]}`: the header's object, reopened.
    data.push_str(&header_json[..header_json.len() - 1]);
    data.push_str(",\"rows\":[");
    for (index, row) in rows.iter().enumerate() {
        if index > 0 {
            data.push(',');
        }
        let _ = write!(data, "{}", RowJson(row));
    }
    data.push_str("]}");
    if data.len() > COMPRESS_OVER {
        assemble("gzip-base64", &base64(&gzip(data.as_bytes())))
    } else {
        assemble("json", &script_safe(&data))
    }
}

/// Data larger than this is embedded gzip-compressed and base64-encoded: Chromium reads a
/// page at tens of megabytes a second, and JSON compresses about tenfold.
pub const COMPRESS_OVER: usize = 1 << 20;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;
    let mut encoder = GzEncoder::new(Vec::with_capacity(bytes.len() / 8), Compression::fast());
    encoder
        .write_all(bytes)
        .and_then(|()| encoder.finish())
        .expect("writing to memory does not fail")
}

/// Standard base64 with padding, as the browser's `atob` reads it.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (k, &b)| n | (b as u32) << (16 - 8 * k));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One row as JSON text.
pub struct RowJson<'a>(pub &'a Row);

impl std::fmt::Display for RowJson<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self.0).map_err(|_| std::fmt::Error)?)
    }
}

fn assemble(encoding: &str, data: &str) -> String {
    let mut page = String::with_capacity(TEMPLATE.len() + STYLE.len() + SCRIPT.len() + data.len());
    let mut rest = TEMPLATE;
    for (marker, content) in [
        ("/*STYLE*/", STYLE),
        ("/*ENCODING*/", encoding),
        ("/*DATA*/", data),
        ("/*SCRIPT*/", SCRIPT),
    ] {
        let (before, after) = rest
            .split_once(marker)
            .expect("viewer.html holds each marker once, in order");
        page.push_str(before);
        page.push_str(content);
        rest = after;
    }
    page.push_str(rest);
    page
}

/// JSON text that can sit inside a `<script>` element: every `<` is written `\u003c`, so
/// that no `</script>` or `<!--` in a message can end the element or change how it is
/// parsed. A `<` of JSON text is always inside a string, where `\u003c` means the same.
pub fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}
