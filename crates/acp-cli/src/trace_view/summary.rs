//! The one short line the viewer shows on a message's arrow: what a person scanning the
//! conversation needs (the prompt's text, the file read, the tool call's title and status, the
//! stop reason, the error), never the whole payload.

use serde_json::Value;

/// The longest summary, in characters; the full message is one click away.
const MAX_CHARS: usize = 160;

/// `text` on one line, at most [`MAX_CHARS`] characters.
pub fn clip(text: &str) -> String {
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == MAX_CHARS {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// A request's or notification's summary, from its method and params.
pub fn of_call(method: &str, params: &Value) -> String {
    let text = match method {
        "initialize" => params
            .get("protocolVersion")
            .map(|v| format!("protocol {v}"))
            .unwrap_or_default(),
        "session/new" | "session/load" => str_at(params, "/cwd")
            .map(|cwd| format!("cwd {cwd}"))
            .unwrap_or_default(),
        "session/prompt" => prompt_text(params.get("prompt")),
        "session/update" => of_update(params.get("update").unwrap_or(&Value::Null)),
        "session/request_permission" => {
            let title = str_at(params, "/toolCall/title")
                .or_else(|| str_at(params, "/toolCall/toolCallId"))
                .unwrap_or_default();
            let options: Vec<&str> = params
                .get("options")
                .and_then(Value::as_array)
                .map(|options| {
                    options
                        .iter()
                        .filter_map(|o| o.get("kind").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            format!("{title} [{}]", options.join(", "))
        }
        "fs/read_text_file" | "fs/write_text_file" => {
            str_at(params, "/path").unwrap_or_default().to_owned()
        }
        "terminal/create" => {
            let command = str_at(params, "/command").unwrap_or_default();
            let args: Vec<&str> = params
                .get("args")
                .and_then(Value::as_array)
                .map(|args| args.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            [command]
                .into_iter()
                .chain(args)
                .collect::<Vec<_>>()
                .join(" ")
        }
        "session/set_mode" => str_at(params, "/modeId").unwrap_or_default().to_owned(),
        "session/set_config_option" => format!(
            "{} = {}",
            str_at(params, "/configId").unwrap_or_default(),
            params.get("value").unwrap_or(&Value::Null)
        ),
        "$/cancel_request" => params
            .get("requestId")
            .map(|id| format!("request {id}"))
            .unwrap_or_default(),
        _ => terminal_id(params).unwrap_or_default(),
    };
    clip(&text)
}

fn terminal_id(params: &Value) -> Option<String> {
    str_at(params, "/terminalId").map(|id| format!("terminal {id}"))
}

fn prompt_text(prompt: Option<&Value>) -> String {
    let Some(blocks) = prompt.and_then(Value::as_array) else {
        return String::new();
    };
    blocks
        .iter()
        .map(|block| match str_at(block, "/type") {
            Some("text") => format!("“{}”", str_at(block, "/text").unwrap_or_default()),
            Some("resource_link") => format!("@{}", str_at(block, "/uri").unwrap_or_default()),
            Some(other) => format!("[{other}]"),
            None => "[?]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a `session/update` says, without its tag.
fn of_update(update: &Value) -> String {
    let tag = str_at(update, "/sessionUpdate").unwrap_or("?");
    match tag {
        "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk" => {
            match str_at(update, "/content/type") {
                Some("text") => str_at(update, "/content/text")
                    .unwrap_or_default()
                    .to_owned(),
                Some(other) => format!("[{other}]"),
                None => String::new(),
            }
        }
        "tool_call" | "tool_call_update" => {
            let mut parts = Vec::new();
            for pointer in ["/title", "/kind", "/status"] {
                if let Some(text) = str_at(update, pointer) {
                    parts.push(text.to_owned());
                }
            }
            if parts.is_empty() || tag == "tool_call_update" {
                parts.insert(
                    0,
                    str_at(update, "/toolCallId").unwrap_or_default().to_owned(),
                );
            }
            parts.join(" · ")
        }
        "plan" | "plan_update" => {
            // `plan` lists its entries; 1.20's `plan_update` holds a plan (of items or markdown).
            let plan = update.get("plan").unwrap_or(update);
            match plan.get("entries").and_then(Value::as_array) {
                Some(entries) => {
                    let done = entries
                        .iter()
                        .filter(|e| str_at(e, "/status") == Some("completed"))
                        .count();
                    format!("{done}/{} done", entries.len())
                }
                None => str_at(plan, "/type").unwrap_or_default().to_owned(),
            }
        }
        "subagent_update" => {
            let mut parts = Vec::new();
            for pointer in ["/title", "/state/state", "/state/stopReason", "/sessionId"] {
                if let Some(text) = str_at(update, pointer) {
                    parts.push(text.to_owned());
                }
            }
            parts.join(" · ")
        }
        "current_mode_update" => str_at(update, "/currentModeId")
            .unwrap_or_default()
            .to_owned(),
        "available_commands_update" => {
            let count = update
                .get("availableCommands")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            format!("{count} commands")
        }
        _ => String::new(),
    }
}

/// A result's summary, knowing the method of the request it answers when it was seen.
pub fn of_result(method: Option<&str>, result: &Value) -> String {
    let text = match method {
        Some("initialize") => {
            let name = str_at(result, "/agentInfo/name").unwrap_or("agent");
            let version = result.get("protocolVersion").unwrap_or(&Value::Null);
            format!("{name}, protocol {version}")
        }
        Some("session/new") => str_at(result, "/sessionId").unwrap_or_default().to_owned(),
        Some("session/prompt") => str_at(result, "/stopReason").unwrap_or_default().to_owned(),
        Some("session/request_permission") => match str_at(result, "/outcome/outcome") {
            Some("selected") => format!(
                "selected {}",
                str_at(result, "/outcome/optionId").unwrap_or_default()
            ),
            Some(other) => other.to_owned(),
            None => String::new(),
        },
        Some("fs/read_text_file") => {
            let content = str_at(result, "/content").unwrap_or_default();
            format!("{} lines", content.lines().count())
        }
        Some("terminal/create") => str_at(result, "/terminalId").unwrap_or_default().to_owned(),
        Some("terminal/wait_for_exit") => match result.get("exitCode") {
            Some(code) if !code.is_null() => format!("exit {code}"),
            _ => str_at(result, "/signal")
                .map(|s| format!("signal {s}"))
                .unwrap_or_default(),
        },
        Some("terminal/output") => str_at(result, "/output").unwrap_or_default().to_owned(),
        _ => String::new(),
    };
    if text.is_empty() {
        match result {
            Value::Null => "null".to_owned(),
            Value::Object(map) if map.is_empty() => "{}".to_owned(),
            _ => "ok".to_owned(),
        }
    } else {
        clip(&text)
    }
}

/// An error's summary: `-32602 Invalid params: ...`.
pub fn of_error(error: &Value) -> String {
    let code = error.get("code").unwrap_or(&Value::Null);
    let message = str_at(error, "/message").unwrap_or_default();
    clip(&format!("error {code} {message}"))
}
