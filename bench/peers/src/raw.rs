//! Wire types and line I/O of the raw baseline peers (`raw-agent`, `raw-client`).
//!
//! The raw peers use no protocol library: blocking pipes with 64 KiB buffers,
//! and typed `serde` structs that borrow from the input line wherever the JSON
//! allows it. A message is decoded in two steps: the envelope ([`Incoming`])
//! keeps `params`/`result` as borrowed [`RawValue`]s, and the peer then decodes
//! the one it needs into its typed struct.

use std::borrow::Cow;
use std::io::{self, BufRead as _, BufReader, BufWriter, Read, Write};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Capacity of the read and write buffers.
pub const BUF_SIZE: usize = 64 * 1024;

/// JSON-RPC "Method not found" error code.
pub const METHOD_NOT_FOUND: i64 = -32601;

/// JSON-RPC "Internal error" code.
pub const INTERNAL_ERROR: i64 = -32603;

/// A received JSON-RPC message of any kind; members are borrowed from the line.
#[derive(Debug, Deserialize)]
pub struct Incoming<'a> {
    /// Request or response id (kept verbatim so that it can be echoed back).
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    /// Method of a request or notification.
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    /// Parameters of a request or notification.
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
    /// Result of a successful response.
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    /// Error of a failed response.
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

/// An outgoing request.
#[derive(Debug, Serialize)]
pub struct OutRequest<'a, P> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// Request id.
    pub id: u64,
    /// Method name.
    pub method: &'a str,
    /// Parameters.
    pub params: P,
}

/// An outgoing notification.
#[derive(Debug, Serialize)]
pub struct OutNotification<'a, P> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// Method name.
    pub method: &'a str,
    /// Parameters.
    pub params: P,
}

/// An outgoing successful response.
#[derive(Debug, Serialize)]
pub struct OutResult<'a, R> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// The id of the request being answered, verbatim.
    pub id: &'a RawValue,
    /// The result.
    pub result: R,
}

/// An outgoing error response.
#[derive(Debug, Serialize)]
pub struct OutError<'a> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// The id of the request being answered, verbatim.
    pub id: &'a RawValue,
    /// The error object.
    pub error: ErrorObject<'a>,
}

/// A JSON-RPC error object.
#[derive(Debug, Serialize)]
pub struct ErrorObject<'a> {
    /// Error code.
    pub code: i64,
    /// Error message.
    pub message: &'a str,
}

/// A text content block (the only kind the bench uses).
#[derive(Debug, Serialize)]
pub struct OutTextBlock<'a> {
    /// Always `"text"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The text.
    pub text: &'a str,
}

/// A received content block; `text` is present for `"type":"text"`.
#[derive(Debug, Deserialize)]
pub struct ContentBlock<'a> {
    /// Block type (`"text"`, `"image"`, ...).
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    /// Text of a text block.
    #[serde(borrow, default)]
    pub text: Option<Cow<'a, str>>,
}

// ---------------------------------------------------------------- client → agent

/// `initialize` parameters sent by the client.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Protocol version (1).
    pub protocol_version: u16,
    /// Client capabilities.
    pub client_capabilities: ClientCapabilities,
}

/// Client capabilities.
#[derive(Debug, Serialize)]
pub struct ClientCapabilities {
    /// File-system capabilities.
    pub fs: FsCapabilities,
    /// Terminal support.
    pub terminal: bool,
}

/// File-system capabilities.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FsCapabilities {
    /// `fs/read_text_file` supported.
    pub read_text_file: bool,
    /// `fs/write_text_file` supported.
    pub write_text_file: bool,
}

/// `initialize` parameters as the agent decodes them (other members are ignored).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParamsIn {
    /// Protocol version requested by the client.
    pub protocol_version: u16,
}

/// `session/new` parameters sent by the client.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionParams<'a> {
    /// Working directory.
    pub cwd: &'a str,
    /// MCP servers (none).
    pub mcp_servers: [(); 0],
}

/// `session/new` parameters as the agent decodes them.
#[derive(Debug, Deserialize)]
pub struct NewSessionParamsIn<'a> {
    /// Working directory.
    #[serde(borrow)]
    pub cwd: Cow<'a, str>,
}

/// `session/prompt` parameters sent by the client.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams<'a> {
    /// Session id.
    pub session_id: &'a str,
    /// Prompt content (one text block).
    pub prompt: [OutTextBlock<'a>; 1],
}

/// `session/prompt` parameters as the agent decodes them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParamsIn<'a> {
    /// Session id.
    #[serde(borrow)]
    pub session_id: Cow<'a, str>,
    /// Prompt content blocks.
    #[serde(borrow)]
    pub prompt: Vec<ContentBlock<'a>>,
}

// ---------------------------------------------------------------- agent → client

/// `initialize` result sent by the agent.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// Protocol version (1).
    pub protocol_version: u16,
    /// Agent capabilities (none).
    pub agent_capabilities: Empty,
    /// Authentication methods (none).
    pub auth_methods: [(); 0],
}

/// An empty JSON object.
#[derive(Debug, Serialize)]
pub struct Empty {}

/// `initialize` result as the client decodes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResultIn {
    /// Protocol version chosen by the agent.
    pub protocol_version: u16,
}

/// `session/new` result sent by the agent.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResult<'a> {
    /// The new session's id.
    pub session_id: &'a str,
}

/// `session/new` result as the client decodes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResultIn<'a> {
    /// The new session's id.
    #[serde(borrow)]
    pub session_id: Cow<'a, str>,
}

/// `session/prompt` result, both directions.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResult<'a> {
    /// Stop reason (`"end_turn"`).
    #[serde(borrow)]
    pub stop_reason: Cow<'a, str>,
}

/// `session/update` parameters sent by the agent (an `agent_message_chunk`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkUpdateParams<'a> {
    /// Session id.
    pub session_id: &'a str,
    /// The update.
    pub update: ChunkUpdate<'a>,
}

/// An `agent_message_chunk` update.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkUpdate<'a> {
    /// Always `"agent_message_chunk"`.
    pub session_update: &'static str,
    /// The chunk.
    pub content: OutTextBlock<'a>,
}

/// `session/update` parameters as the client decodes them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionUpdateParamsIn<'a> {
    /// Session id.
    #[serde(borrow)]
    pub session_id: Cow<'a, str>,
    /// The update.
    #[serde(borrow)]
    pub update: SessionUpdateIn<'a>,
}

/// A session update as the client decodes it. The `content` of other update
/// kinds has other shapes, so it is decoded as a [`ContentBlock`] only for
/// message chunks.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionUpdateIn<'a> {
    /// Update kind (`"agent_message_chunk"`, ...).
    #[serde(borrow)]
    pub session_update: Cow<'a, str>,
    /// Kind-specific content.
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
}

/// `fs/read_text_file` parameters sent by the agent.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileParams<'a> {
    /// Session id.
    pub session_id: &'a str,
    /// Absolute path.
    pub path: &'a str,
}

/// `fs/read_text_file` parameters as the client decodes them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileParamsIn<'a> {
    /// Session id.
    #[serde(borrow)]
    pub session_id: Cow<'a, str>,
    /// Absolute path.
    #[serde(borrow)]
    pub path: Cow<'a, str>,
    /// First line to read (1-based).
    #[serde(default)]
    pub line: Option<u32>,
    /// Maximum number of lines.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `fs/read_text_file` result, both directions.
#[derive(Debug, Serialize, Deserialize)]
pub struct ReadTextFileResult<'a> {
    /// File content.
    #[serde(borrow)]
    pub content: Cow<'a, str>,
}

// ---------------------------------------------------------------- line I/O

/// A newline-delimited JSON connection over blocking pipes.
///
/// Writes are buffered and flushed only when the next read would block (the
/// read buffer is empty), so bursts of messages share one `write` syscall.
#[derive(Debug)]
pub struct Conn<R: Read, W: Write> {
    /// Buffered input.
    pub reader: BufReader<R>,
    /// Buffered output.
    pub writer: BufWriter<W>,
    /// The last line read by [`Conn::read_line`] (including its `\n`).
    pub line: Vec<u8>,
}

impl<R: Read, W: Write> Conn<R, W> {
    /// Wraps the two pipe ends with [`BUF_SIZE`] buffers.
    pub fn new(input: R, output: W) -> Self {
        Conn {
            reader: BufReader::with_capacity(BUF_SIZE, input),
            writer: BufWriter::with_capacity(BUF_SIZE, output),
            line: Vec::with_capacity(1024),
        }
    }

    /// Reads the next non-blank line into [`Conn::line`]; `false` at EOF.
    /// Flushes pending output first if the read could block.
    pub fn read_line(&mut self) -> io::Result<bool> {
        loop {
            if self.reader.buffer().is_empty() {
                self.writer.flush()?;
            }
            self.line.clear();
            if self.reader.read_until(b'\n', &mut self.line)? == 0 {
                return Ok(false);
            }
            if !self.line.iter().all(u8::is_ascii_whitespace) {
                return Ok(true);
            }
        }
    }
}

/// Serializes `msg` as one line into `w` (buffered; not flushed).
pub fn send<W: Write, T: Serialize>(w: &mut W, msg: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *w, msg).map_err(io::Error::other)?;
    w.write_all(b"\n")
}

/// Writes a successful response to the request with id `id`.
pub fn send_result<W: Write, R: Serialize>(w: &mut W, id: &RawValue, result: R) -> io::Result<()> {
    send(
        w,
        &OutResult {
            jsonrpc: "2.0",
            id,
            result,
        },
    )
}

/// Writes an error response to the request with id `id`.
pub fn send_error<W: Write>(w: &mut W, id: &RawValue, code: i64, message: &str) -> io::Result<()> {
    send(
        w,
        &OutError {
            jsonrpc: "2.0",
            id,
            error: ErrorObject { code, message },
        },
    )
}

/// Parses `bytes` as `T`, mapping errors to [`io::ErrorKind::InvalidData`].
pub fn parse<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> io::Result<T> {
    serde_json::from_slice(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Parses the borrowed JSON `raw` as `T`.
pub fn parse_raw<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> io::Result<T> {
    serde_json::from_str(raw.get()).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// An [`io::ErrorKind::InvalidData`] error with `msg`.
pub fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Duplicates this process's stdin and stdout as [`std::fs::File`]s, bypassing
/// the standard library's own stdin buffer and stdout line buffering.
pub fn stdio_files() -> io::Result<(std::fs::File, std::fs::File)> {
    use std::os::fd::AsFd as _;
    let input = io::stdin().as_fd().try_clone_to_owned()?;
    let output = io::stdout().as_fd().try_clone_to_owned()?;
    Ok((input.into(), output.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_borrows_members() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/tmp/x"}}"#;
        let m: Incoming = parse(line).unwrap();
        assert_eq!(m.id.unwrap().get(), "7");
        assert_eq!(m.method.as_deref(), Some("fs/read_text_file"));
        let p: ReadTextFileParamsIn = parse_raw(m.params.unwrap()).unwrap();
        assert!(matches!(p.path, Cow::Borrowed("/tmp/x")));
    }

    #[test]
    fn serializes_chunk_update() {
        let mut out = Vec::new();
        send(
            &mut out,
            &OutNotification {
                jsonrpc: "2.0",
                method: "session/update",
                params: ChunkUpdateParams {
                    session_id: "s",
                    update: ChunkUpdate {
                        session_update: "agent_message_chunk",
                        content: OutTextBlock {
                            kind: "text",
                            text: "xx",
                        },
                    },
                },
            },
        )
        .unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"xx\"}}}}\n"
        );
    }

    #[test]
    fn serializes_empty_arrays_and_objects() {
        let mut out = Vec::new();
        send(
            &mut out,
            &InitializeResult {
                protocol_version: 1,
                agent_capabilities: Empty {},
                auth_methods: [],
            },
        )
        .unwrap();
        assert_eq!(
            out,
            b"{\"protocolVersion\":1,\"agentCapabilities\":{},\"authMethods\":[]}\n"
        );
    }
}
