//! The viewer's page: one self-contained HTML file (its CSS and JavaScript inline, nothing
//! fetched), with the rows embedded as JSON in a `<script type="application/json">` block.

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
    assemble(&script_safe(&data))
}

/// One row as JSON text.
pub struct RowJson<'a>(pub &'a Row);

impl std::fmt::Display for RowJson<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self.0).map_err(|_| std::fmt::Error)?)
    }
}

fn assemble(data: &str) -> String {
    let mut page = String::with_capacity(TEMPLATE.len() + STYLE.len() + SCRIPT.len() + data.len());
    let mut rest = TEMPLATE;
    for (marker, content) in [
        ("/*STYLE*/", STYLE),
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
