//! The client the checker plays: which capabilities it advertises and how it answers the
//! agent's requests. Nothing touches the real file system or runs a command: files live in a
//! map (of at most [`FILE_BYTES`]), and terminals are fakes whose command "exits" 0 at once
//! with no output.

use std::collections::HashMap;
use std::fmt;

use serde_json::{Value, json};

use crate::limits::FILE_BYTES;

/// The client capabilities advertised in `initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Caps {
    pub fs_read: bool,
    pub fs_write: bool,
    pub terminal: bool,
}

impl Caps {
    /// File reads and writes and terminals.
    pub const ALL: Caps = Caps {
        fs_read: true,
        fs_write: true,
        terminal: true,
    };
    /// Nothing: `clientCapabilities` is `{}`, so every capability is omitted.
    pub const NONE: Caps = Caps {
        fs_read: false,
        fs_write: false,
        terminal: false,
    };

    /// The `clientCapabilities` object. Omitted capabilities are left out rather than sent as
    /// `false`, which the specification says must be read as unsupported.
    pub fn to_json(self) -> Value {
        let mut caps = json!({});
        if self.fs_read || self.fs_write {
            caps["fs"] = json!({ "readTextFile": self.fs_read, "writeTextFile": self.fs_write });
        }
        if self.terminal {
            caps["terminal"] = true.into();
        }
        caps
    }
}

/// How `session/request_permission` is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Permission {
    /// Select the first `allow_once` or `allow_always` option (the first option if none).
    Allow,
    /// Answer the `cancelled` outcome, as a client must once it cancelled the turn.
    Cancelled,
}

/// A JSON-RPC error object, as received or to send.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RpcError {
    /// The code, when it is an integer.
    pub code: Option<i64>,
    /// The message, when it is a string.
    pub message: String,
    /// The error object as sent.
    pub raw: Value,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        let message = message.into();
        RpcError {
            code: Some(code),
            raw: json!({ "code": code, "message": message }),
            message,
        }
    }

    pub fn from_value(raw: Value) -> Self {
        RpcError {
            code: raw.get("code").and_then(Value::as_i64),
            message: raw
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            raw,
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "error {code} `{}`", self.message),
            None => write!(f, "error {}", self.raw),
        }
    }
}

/// The client's state on one connection.
#[derive(Debug)]
pub(crate) struct FakeClient {
    pub caps: Caps,
    pub permission: Permission,
    files: HashMap<String, String>,
    /// Bytes of content in `files`, at most [`FILE_BYTES`].
    file_bytes: usize,
    terminals: usize,
}

impl FakeClient {
    pub fn new(caps: Caps, files: HashMap<String, String>) -> Self {
        FakeClient {
            caps,
            permission: Permission::Allow,
            file_bytes: files.values().map(String::len).sum(),
            files,
            terminals: 0,
        }
    }

    /// The answer to one of the agent's requests.
    pub fn answer(&mut self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let str_param = |name: &str| params.get(name).and_then(Value::as_str);
        let not_advertised = |capability: &str| {
            RpcError::new(
                -32601,
                format!(
                    "`{method}` needs the `{capability}` client capability, which was not advertised"
                ),
            )
        };
        match method {
            "session/request_permission" => {
                let outcome = match self.permission {
                    Permission::Cancelled => json!({ "outcome": "cancelled" }),
                    Permission::Allow => {
                        let options = params
                            .get("options")
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        let kind = |o: &Value| {
                            o.get("kind")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned()
                        };
                        let chosen = options
                            .iter()
                            .find(|o| kind(o).starts_with("allow"))
                            .or(options.first());
                        match chosen.and_then(|o| o.get("optionId")) {
                            Some(id) => json!({ "outcome": "selected", "optionId": id }),
                            None => json!({ "outcome": "cancelled" }),
                        }
                    }
                };
                Ok(json!({ "outcome": outcome }))
            }
            "fs/read_text_file" => {
                if !self.caps.fs_read {
                    return Err(not_advertised("fs.readTextFile"));
                }
                let path = str_param("path").unwrap_or_default();
                let Some(content) = self.files.get(path) else {
                    return Err(RpcError::new(-32002, format!("no file `{path}`")));
                };
                let first = params
                    .get("line")
                    .and_then(Value::as_u64)
                    .unwrap_or(1)
                    .max(1);
                let limit = params.get("limit").and_then(Value::as_u64);
                let lines = content
                    .split_inclusive('\n')
                    .skip(first as usize - 1)
                    .take(limit.map_or(usize::MAX, |l| l as usize));
                Ok(json!({ "content": lines.collect::<String>() }))
            }
            "fs/write_text_file" => {
                if !self.caps.fs_write {
                    return Err(not_advertised("fs.writeTextFile"));
                }
                let path = str_param("path").unwrap_or_default().to_owned();
                let content = str_param("content").unwrap_or_default().to_owned();
                let replaced = self.files.get(&path).map_or(0, String::len);
                let after = self.file_bytes - replaced + content.len();
                if after > FILE_BYTES {
                    return Err(RpcError::new(
                        -32603,
                        format!(
                            "the conformance checker keeps at most {} of written files per connection",
                            crate::limits::bytes(FILE_BYTES as u64)
                        ),
                    ));
                }
                self.file_bytes = after;
                self.files.insert(path, content);
                Ok(json!({}))
            }
            "terminal/create" => {
                if !self.caps.terminal {
                    return Err(not_advertised("terminal"));
                }
                self.terminals += 1;
                Ok(json!({ "terminalId": format!("term_{}", self.terminals) }))
            }
            "terminal/output" if self.caps.terminal => Ok(json!({
                "output": "",
                "truncated": false,
                "exitStatus": { "exitCode": 0, "signal": null },
            })),
            "terminal/wait_for_exit" if self.caps.terminal => {
                Ok(json!({ "exitCode": 0, "signal": null }))
            }
            "terminal/kill" | "terminal/release" if self.caps.terminal => Ok(json!({})),
            m if m.starts_with("terminal/") => Err(not_advertised("terminal")),
            _ => Err(RpcError::new(-32601, format!("Method not found: {method}"))),
        }
    }
}
