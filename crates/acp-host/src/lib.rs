//! What an [Agent Client Protocol](https://agentclientprotocol.com) client hosts for its agent,
//! and the operating-system layer under it: the agent's own process, the terminals the agent
//! runs commands in, and its access to files.
//!
//! An ACP client starts its agent as a child process, and the agent then asks the client to
//! read and write files (`fs/*`) and to run commands (`terminal/*`). Each of these hands a
//! peer the client's machine, so each is bounded here: a file is served only within the
//! session's roots and up to a size, a terminal keeps at most its output limit and all
//! terminals together at most one budget, and no process started here (the agent, a terminal's
//! command, or anything they start in their process group) outlives the handle that owns it,
//! nor this process, even when this process is killed.
//!
//! - [`fs`]: [`fs::FsHost`] serves `fs/read_text_file` and `fs/write_text_file` within a
//!   session's [`fs::FsRoots`], optionally through an editor's [`fs::FsHook`].
//! - [`terminal`] (Unix): [`terminal::TerminalHost`] runs commands for `terminal/create`,
//!   `terminal/output`, `terminal/wait_for_exit`, `terminal/kill` and `terminal/release`,
//!   each keeping its output in an [`terminal::OutputBuffer`].
//! - [`process`] (Unix): [`process::AgentCommand`] starts an agent, [`process::AgentProcess`]
//!   supervises it and shuts it down in steps; [`process::start_supervisor`] starts the helper
//!   process that kills what is left when this process dies.
//! - [`pipe_loop`] (Linux): runs connections over pipes on the calling thread, waiting in
//!   `read(2)` on the pipe itself or in `epoll_wait(2)` on exactly those pipes instead of in a
//!   shared reactor: [`pipe_loop::block_on`] over one pair, [`pipe_loop::PipeSet`] over any
//!   number of pairs added while it runs.
//!
//! Everything takes and returns plain Rust values (paths, strings, [`process::ExitStatus`]);
//! nothing here knows the protocol's messages. Mapping them to and from requests and error
//! codes is the connection layer's: acp-runtime's client does it, and re-exports [`fs`],
//! [`terminal`] and [`process`], so its users need not depend on this crate. Depend on it
//! directly to serve files or terminals in a client of your own, or to supervise processes
//! the same way. A session is identified here by any string key, normally the ACP session id.
//!
//! All of the workspace's `unsafe` code that talks to the operating system (process groups,
//! `pidfd`, `waitid`, `fork` of the supervisor, `openat2`, epoll, the pipe loop's signal) lives in this crate, in a few
//! private modules, each call with its `SAFETY` comment; the crates above forbid `unsafe`.
//!
//! # Example
//!
//! A client serving its agent's `fs/read_text_file` within the session's directory: a file in
//! it is read (here its second line), a path outside it is refused with an error that names it,
//! whatever the agent tries.
//!
//! ```
//! use acp_host::fs::{FsError, FsHost, FsRoots};
//!
//! let project = std::env::temp_dir().join(format!("acp-host-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&project).unwrap();
//! std::fs::write(project.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
//!
//! let roots = FsRoots::session(&project, Vec::<std::path::PathBuf>::new());
//! let host = FsHost::new();
//! smol::block_on(async {
//!     let notes = project.join("notes.txt");
//!     let line = host.read_text_file(&roots, &notes, Some(2), Some(1)).await;
//!     assert_eq!(line.unwrap(), "two\n");
//!
//!     let outside = project.join("../../etc/passwd");
//!     let refused = host.read_text_file(&roots, &outside, None, None).await;
//!     assert!(matches!(refused, Err(FsError::OutsideRoots { .. })));
//! });
//! # std::fs::remove_dir_all(&project).unwrap();
//! ```
//!
//! [`terminal::TerminalHost`] and [`process::AgentCommand`] show the other two parts.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod fs;
#[cfg(unix)]
mod os;
#[cfg(target_os = "linux")]
pub mod pipe_loop;
#[cfg(unix)]
pub mod process;
#[cfg(unix)]
pub mod terminal;

/// The README's examples, compiled as doctests so that they keep up with the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
