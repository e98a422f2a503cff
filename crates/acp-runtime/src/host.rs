//! Protocol-independent engines for the methods a client serves to its agent.
//!
//! - [`TerminalHost`] runs commands for `terminal/create`, `terminal/output`,
//!   `terminal/wait_for_exit`, `terminal/kill` and `terminal/release` (Unix only).
//! - [`FsHost`] serves `fs/read_text_file` and `fs/write_text_file` within a session's
//!   [`FsRoots`], optionally through an editor's [`FsHook`]; reads return at most
//!   [`DEFAULT_MAX_READ_BYTES`] of text unless configured otherwise.
//! - [`OutputBuffer`] is the bounded, UTF-8-safe output store behind every terminal.
//!
//! A terminal's command reports how it ended with [`crate::process::ExitStatus`], the same
//! type as an agent process; commands are supervised like agents (process groups, exit
//! observed without reaping, killed when this process dies).
//!
//! These types use plain Rust values; mapping them to and from the protocol's messages
//! and error codes is left to the connection layer. A session is identified here by any
//! string key, normally the ACP session id.

mod fs;
#[cfg(unix)]
mod output_budget;
mod output_buffer;
#[cfg(unix)]
mod terminal;

pub use fs::{DEFAULT_MAX_READ_BYTES, FsError, FsHook, FsHost, FsRoots};
#[cfg(unix)]
pub use output_budget::DEFAULT_OUTPUT_BUDGET;
pub use output_buffer::OutputBuffer;
#[cfg(unix)]
pub use terminal::{
    CreateTerminal, DEFAULT_OUTPUT_CEILING, TerminalError, TerminalHost, TerminalOutput,
    TerminalScope,
};
