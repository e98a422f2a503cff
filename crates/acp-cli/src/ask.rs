//! `--ask`: the permission prompt. It shows what the tool call would do (its kind, locations
//! and content, diffs as unified diffs) and its options on stderr, then takes the choice
//! from stdin through [`crate::input`]. Nothing is locked while it waits: the Ctrl-C watcher
//! prints on stderr meanwhile, and when the runtime answers the request `cancelled` (Ctrl-C
//! cancelled the turn) the prompt is dropped and leaves no read behind.

use acp_runtime::client::Client;
use acp_types::*;

use crate::{diff, input};

/// Asks the person at the terminal before each tool call.
pub struct Ask;

impl Client for Ask {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> acp_runtime::Result<RequestPermissionResponse> {
        eprint!("{}", question(&request));
        let count = request.options.len();
        if count == 0 {
            eprintln!("(no options to choose from: answered `cancelled`)");
            return Ok(RequestPermissionResponse::new(
                RequestPermissionOutcome::Cancelled,
            ));
        }
        loop {
            let Some(line) = input::line().await else {
                // End of input: nobody is there to answer.
                eprintln!();
                return Ok(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Cancelled,
                ));
            };
            let chosen = line
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| request.options.get(n.wrapping_sub(1)));
            match chosen {
                Some(option) => {
                    return Ok(RequestPermissionResponse::new(
                        RequestPermissionOutcome::selected(option.option_id.clone()),
                    ));
                }
                None => eprint!("not one of the options; choose 1-{count}: "),
            }
        }
    }
}

/// The tool call, its options and the question, as printed before the answer is read.
pub fn question(request: &RequestPermissionRequest) -> String {
    let call = &request.tool_call;
    let mut shown = String::new();
    if let Some(kind) = &call.kind {
        shown.push_str(&format!("\n  kind: {kind}"));
    }
    for location in call.locations.iter().flatten() {
        shown.push_str(&format!("\n  at: {}", location.path));
    }
    for content in call.content.iter().flatten() {
        match content {
            ToolCallContent::Diff(d) => {
                for line in diff::unified(&d.path, d.old_text.as_deref(), &d.new_text).lines() {
                    shown.push_str(&format!("\n    {line}"));
                }
            }
            ToolCallContent::Content(c) => match c.content.as_text() {
                Some(text) => shown.push_str(&format!("\n    {text}")),
                None => shown.push_str("\n    [non-text content]"),
            },
            ToolCallContent::Terminal(t) => {
                shown.push_str(&format!("\n    [terminal {}]", t.terminal_id));
            }
            ToolCallContent::Session(s) => {
                shown.push_str(&format!("\n    [session {}]", s.session_id));
            }
            ToolCallContent::Unknown(raw) => shown.push_str(&format!("\n    {raw}")),
            other => shown.push_str(&format!("\n    {other:?}")),
        }
    }
    let mut text = String::new();
    if !shown.is_empty() {
        text.push_str(&format!(
            "\nThe agent wants to run {}:{shown}",
            call.tool_call_id
        ));
    }
    let title = call
        .title
        .clone()
        .unwrap_or_else(|| call.tool_call_id.to_string());
    text.push_str(&format!("\nPermission requested: {title}\n"));
    for (i, option) in request.options.iter().enumerate() {
        text.push_str(&format!("  {}) {} [{}]\n", i + 1, option.name, option.kind));
    }
    text.push_str(&format!("choose 1-{}: ", request.options.len()));
    text
}
