//! Problems in a line or a few: an error answer with its `data` (agents put the useful part
//! there: codex names the unreachable provider in `data.message`, qwen says why in
//! `data.details`), and an update that does not decode, cut to one line with its size. What
//! an agent sends is shown bounded here, whatever its size: one of these per update must not
//! print a megabyte.

use acp_runtime::Error;

/// Characters kept of each line shown (a message, a member of `data`, a raw update).
pub const LINE_KEPT: usize = 200;
/// Members of an object `data` shown, one line each.
const DATA_MEMBERS: usize = 4;
/// A rejected update up to this size goes whole into `--json`'s error line; a larger one as
/// its first line only.
pub const RAW_KEPT: usize = 4096;

/// `text` on one line: control characters (line breaks, escape sequences) as spaces, cut to
/// `max` characters followed by `… (N bytes)`.
pub fn one_line(text: &str, max: usize) -> String {
    let mut line = cut(text, max);
    if line.ends_with('…') {
        line.push_str(&format!(" ({} bytes)", text.len()));
    }
    line
}

/// [`one_line`] without the size: `…` where it was cut.
fn cut(text: &str, max: usize) -> String {
    let mut line = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == max {
            line.push('…');
            return line;
        }
        line.push(if c.is_control() { ' ' } else { c });
    }
    line
}

/// An error as acp prints it: its text, and for an error answer its `data` on lines of their
/// own (`  data: ...`, or `  data.KEY: ...` per member of an object).
pub fn error_text(error: &Error) -> String {
    let Error::Rpc(answer) = error else {
        return error.to_string();
    };
    let mut text = format!(
        "{} (code {})",
        one_line(&answer.message, LINE_KEPT),
        answer.code
    );
    if let Some(data) = &answer.data {
        for line in data_lines(data.get()) {
            text.push_str("\n  ");
            text.push_str(&line);
        }
    }
    text
}

/// The lines that show an error's `data` (raw JSON).
fn data_lines(raw: &str) -> Vec<String> {
    let value = match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(value) => value,
        Err(_) => return vec![format!("data: {}", one_line(raw, LINE_KEPT))],
    };
    match value {
        serde_json::Value::Object(members) if !members.is_empty() => {
            let mut lines: Vec<String> = members
                .iter()
                .take(DATA_MEMBERS)
                .map(|(key, value)| {
                    format!(
                        "data.{}: {}",
                        one_line(key, LINE_KEPT / 4),
                        value_line(value)
                    )
                })
                .collect();
            if members.len() > DATA_MEMBERS {
                lines.push(format!(
                    "data: ... and {} more members",
                    members.len() - DATA_MEMBERS
                ));
            }
            lines
        }
        value => vec![format!("data: {}", value_line(&value))],
    }
}

/// A JSON value on one line: a string as its text, anything else as compact JSON.
fn value_line(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => one_line(text, LINE_KEPT),
        other => one_line(&other.to_string(), LINE_KEPT),
    }
}

/// An update that does not decode: why, its size, and the start of its JSON, on one line.
pub fn rejected_update(update: &str, error: &str) -> String {
    format!(
        "[invalid update] {} ({} bytes): {}",
        one_line(error, LINE_KEPT),
        update.len(),
        cut(update, LINE_KEPT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_jsonrpc::ResponseError;

    fn answer(data: &str) -> Error {
        let mut error = ResponseError::new((-32603).into(), "Internal error");
        error.data = Some(serde_json::value::RawValue::from_string(data.to_owned()).unwrap());
        Error::Rpc(error)
    }

    #[test]
    fn data_members_and_strings_get_lines_of_their_own() {
        insta::assert_snapshot!(error_text(&answer(
            r#"{"message":"stream disconnected: provider unreachable","status":503}"#
        )));
        insta::assert_snapshot!(error_text(&answer(r#""Request was aborted.""#)));
        insta::assert_snapshot!(error_text(&answer(
            r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}"#
        )));
    }

    #[test]
    fn a_long_data_is_cut_to_a_line() {
        let long = format!(r#"{{"details":"{}\nsecond line"}}"#, "x".repeat(100_000));
        let text = error_text(&answer(&long));
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.len() < 400, "{}", text.len());
        assert!(text.ends_with("(100012 bytes)"), "{text}");
    }

    #[test]
    fn one_line_replaces_control_characters_and_cuts_at_characters() {
        assert_eq!(one_line("a\nb\x1b[2mc", 20), "a b [2mc");
        assert_eq!(one_line("ééé", 2), "éé… (6 bytes)");
    }

    #[test]
    fn a_rejected_megabyte_is_one_short_line() {
        let raw = format!(
            r#"{{"sessionUpdate":"tool_call","title":"{}"}}"#,
            "y".repeat(1 << 20)
        );
        let line = rejected_update(&raw, "invalid type: string, expected a number");
        assert_eq!(line.lines().count(), 1);
        assert!(line.len() < 500, "{}", line.len());
        assert!(line.contains(&format!("({} bytes)", raw.len())), "{line}");
    }
}
