//! Snapshot and replay tests for [Agent Client Protocol](https://agentclientprotocol.com)
//! agents and clients: pin what an implementation puts on the wire, and review it in a pull
//! request.
//!
//! The kit has five parts, each usable alone:
//!
//! - **Connected pairs** ([`connect`], [`connect_scripted`], [`spawn_agent`]): an agent and
//!   this runtime's client joined by an in-memory pipe, or connected to any agent command,
//!   with every message recorded. The test drives the client through [`Pair::agent`].
//! - **Scripted peers**: [`ScriptedClient`] answers permission requests, file reads and
//!   writes and terminal commands from a script, without a disk or processes, and records
//!   every call (to test agents). [`ScriptedAgent`] plays scripted prompt turns: message
//!   chunks, thoughts, tool calls, plans, permission requests, file and terminal calls,
//!   cancellation (to test clients).
//! - **Transcripts** ([`Transcript`], [`Recorder`]): every message in both directions, in
//!   order, as JSON Lines (`{"dir": "client->agent", "msg": {...}}`), and a [`Normalizer`]
//!   that replaces what varies between runs (request, session, terminal and tool call ids,
//!   temporary paths, timestamps, versions) by placeholders that keep references consistent,
//!   plus your own redaction hooks.
//! - **Snapshots**: [`assert_transcript!`] pins a transcript with [insta](https://insta.rs),
//!   one message per line, direction first; the snapshot file is named after the calling test.
//! - **Replay** ([`Replay`]): a recorded `.jsonl` transcript played back against an
//!   implementation: the kit plays one side and checks every message of the other, failing
//!   with a unified diff. The `acp-test-agent` binary does the same for client processes in
//!   any language.
//!
//! # Snapshot-testing an agent
//!
//! ```
//! use acp_runtime::prelude::*;
//! use acp_test::{ScriptedClient, TempDir};
//!
//! /// The agent under test: reads the file it is asked about and answers with its size.
//! struct Counter;
//!
//! impl Agent for Counter {
//!     async fn new_session(&self, _: NewSessionRequest, _: &ClientHandle) -> Result<NewSessionResponse> {
//!         Ok(NewSessionResponse::new(agent::new_session_id()))
//!     }
//!
//!     async fn prompt(&self, request: PromptRequest, turn: Turn) -> Result<PromptResponse> {
//!         let path = request.prompt[0].as_text().unwrap_or_default().to_owned();
//!         let content = turn.read_text_file(path).await?;
//!         turn.message(format!("{} lines", content.lines().count())).await?;
//!         Ok(StopReason::EndTurn.into())
//!     }
//! }
//!
//! smol::block_on(async {
//!     let dir = TempDir::new();
//!     let client = ScriptedClient::new().file(dir.join("notes.txt"), "one\ntwo\n");
//!     let pair = acp_test::connect_scripted(Counter, &client).with_temp_dir(&dir);
//!
//!     pair.agent().initialize().await.unwrap();
//!     let session = pair.agent().new_session(dir.path()).await.unwrap();
//!     let turn = session.prompt(vec![dir.join("notes.txt").into()]).await.unwrap();
//!     assert_eq!(turn.end().await.unwrap().stop_reason, StopReason::EndTurn);
//!
//!     let transcript = pair.finish().await;
//!     acp_test::assert_transcript!(transcript, @r#"
//!     client → agent  {"jsonrpc":"2.0","id":"<id:1>","method":"initialize","params":{"clientCapabilities":{"auth":{"terminal":false},"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"clientInfo":{"name":"acp-test","version":"<version>"},"protocolVersion":1}}
//!     agent → client  {"jsonrpc":"2.0","id":"<id:1>","result":{"agentCapabilities":{"auth":{},"loadSession":false,"mcpCapabilities":{"http":false,"sse":false},"promptCapabilities":{"audio":false,"embeddedContext":false,"image":false},"sessionCapabilities":{}},"authMethods":[],"protocolVersion":1}}
//!     client → agent  {"jsonrpc":"2.0","id":"<id:2>","method":"session/new","params":{"cwd":"<tmp>","mcpServers":[]}}
//!     agent → client  {"jsonrpc":"2.0","id":"<id:2>","result":{"sessionId":"<session:1>"}}
//!     client → agent  {"jsonrpc":"2.0","id":"<id:3>","method":"session/prompt","params":{"prompt":[{"text":"<tmp>/notes.txt","type":"text"}],"sessionId":"<session:1>"}}
//!     agent → client  {"jsonrpc":"2.0","id":"<id:1>","method":"fs/read_text_file","params":{"path":"<tmp>/notes.txt","sessionId":"<session:1>"}}
//!     client → agent  {"jsonrpc":"2.0","id":"<id:1>","result":{"content":"one\ntwo\n"}}
//!     agent → client  {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"<session:1>","update":{"content":{"text":"2 lines","type":"text"},"sessionUpdate":"agent_message_chunk"}}}
//!     agent → client  {"jsonrpc":"2.0","id":"<id:3>","result":{"stopReason":"end_turn"}}
//!     "#);
//! });
//! ```
//!
//! The guide, [`guide`] (`docs/testing.md`), shows the other directions: testing a client
//! against a [`ScriptedAgent`], replaying fixtures, and snapshotting an agent process.
//!
//! # Placeholders
//!
//! Request ids become `<id:N>` (numbered separately for each direction: a response carries the
//! placeholder of the request it answers), session ids `<session:N>`, terminal ids
//! `<terminal:N>`, tool call ids `<tool-call:N>`, each numbered by first appearance; the
//! directories you name become `<tmp>` (or your placeholder); date-times `<timestamp>`;
//! `clientInfo`/`agentInfo` versions `<version>`. See [`Normalizer`].

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod normalize;
mod pair;
mod replay;
mod scripted_agent;
mod scripted_client;
mod subagent_step;
mod transcript;
#[cfg(feature = "unstable-protocol-v2")]
pub mod v2;
mod wait;

pub use normalize::{Normalizer, is_timestamp};
pub use pair::{AgentSide, Pair, TempDir, connect, connect_scripted, spawn_agent};
pub use replay::{DEFAULT_TIMEOUT, Replay, ReplayError};
pub use scripted_agent::{AgentEvent, PermissionStep, ScriptedAgent, Step, TerminalStep};
pub use scripted_client::{ClientCall, FakeCommand, PermissionAnswer, ScriptedClient};
pub use subagent_step::{ChildStep, SubagentStep};
pub use transcript::{Direction, Entry, MessageKind, Recorder, Transcript, TranscriptError};

/// The insta crate the [`assert_transcript!`] macro expands to, for your own snapshot
/// assertions and settings (`acp_test::insta::assert_snapshot!(t.render_pretty())`).
pub use insta;

/// Asserts a [`Transcript`] against an [insta](https://insta.rs) snapshot, one message per
/// line ([`Transcript::render`]): `client → agent  {...}` / `agent → client  {...}`.
///
/// Expands to `insta::assert_snapshot!` in the calling test, so the snapshot is named after
/// the test function and stored in the `snapshots/` directory next to the test file; review
/// changes with `cargo insta review`. Three forms, as insta's:
///
/// - `assert_transcript!(transcript)`: a snapshot file named after the test;
/// - `assert_transcript!("name", transcript)`: a named snapshot file;
/// - `assert_transcript!(transcript, @"...")`: an inline snapshot.
///
/// Normalize first ([`Pair::finish`] does), and redact with [`Normalizer::redact`]; for pretty
/// JSON, snapshot [`Transcript::render_pretty`] with [`insta::assert_snapshot!`].
#[macro_export]
macro_rules! assert_transcript {
    ($transcript:expr, @$snapshot:literal $(,)?) => {{
        let transcript = $crate::Transcript::render(&$transcript);
        $crate::insta::assert_snapshot!(transcript, @$snapshot)
    }};
    ($name:expr, $transcript:expr $(,)?) => {{
        let transcript = $crate::Transcript::render(&$transcript);
        $crate::insta::assert_snapshot!($name, transcript)
    }};
    ($transcript:expr $(,)?) => {{
        let transcript = $crate::Transcript::render(&$transcript);
        $crate::insta::assert_snapshot!(transcript)
    }};
}

pub mod guide {
    //! The testing guide (`docs/testing.md`, linked into the package as `GUIDE.md`); its
    //! examples run as this crate's doc tests.
    #![doc = include_str!("../GUIDE.md")]
}

/// The README's example, run as a doctest so that it keeps up with the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
