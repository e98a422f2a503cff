//! What to run as the agent, and starting it.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_process::Stdio;

use super::exit::AgentProcessError;
use super::handle::{AgentProcess, Settings};
use super::stderr::{DEFAULT_STDERR_TAIL_BYTES, DEFAULT_STDERR_TAIL_LINES, StderrLineCallback};
use crate::os::group::{self, GroupStdio};

/// How long [`AgentProcess::shutdown`] waits, by default, for the agent to exit by itself
/// after its stdin was closed: 2 seconds.
///
/// Long enough for an agent to notice end-of-file, cancel its work and flush its logs;
/// short enough that an editor closing a session does not appear to hang. Agents known to
/// need longer can be given it with [`AgentCommand::shutdown_grace`].
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How long [`AgentProcess::shutdown`] waits, by default, after SIGTERM before sending
/// SIGKILL: 1 second. Configure it with [`AgentCommand::term_grace`].
pub const DEFAULT_TERM_GRACE: Duration = Duration::from_secs(1);

/// What to run as the agent, and how to supervise it.
///
/// The program is looked up in `PATH` when it contains no slash (in the `PATH` given with
/// [`env`](Self::env), if any) and executed directly, not through a shell. The agent
/// inherits this process's environment plus the [`env`](Self::env) additions.
///
/// ```
/// use std::time::Duration;
///
/// use acp_host::process::AgentCommand;
///
/// let command = AgentCommand::new("my-agent")
///     .args(["--acp", "--verbose"])
///     .env("RUST_LOG", "debug")
///     .cwd("/tmp")
///     .on_stderr_line(|line| eprintln!("[agent] {line}"))
///     .shutdown_grace(Duration::from_secs(10));
/// ```
#[derive(Clone)]
pub struct AgentCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    stderr_line: Option<StderrLineCallback>,
    stderr_tail_lines: usize,
    stderr_tail_bytes: usize,
    shutdown_grace: Duration,
    term_grace: Duration,
}

impl AgentCommand {
    /// Runs `program` with no arguments, the inherited environment and working directory,
    /// and the default limits and grace periods.
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            stderr_line: None,
            stderr_tail_lines: DEFAULT_STDERR_TAIL_LINES,
            stderr_tail_bytes: DEFAULT_STDERR_TAIL_BYTES,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            term_grace: DEFAULT_TERM_GRACE,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends several arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds or overrides one environment variable of the agent.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Runs the agent in `dir` instead of this process's working directory.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Calls `callback` with every line the agent writes to stderr, without the line break
    /// (and without a `\r` before it), invalid UTF-8 replaced by U+FFFD.
    ///
    /// The callback runs on the agent's supervisor thread, which drains stderr: while it
    /// runs, stderr is not read, so it must not block for long (hand the line to a channel
    /// or a logger). A panic in the callback is caught and the line skipped.
    pub fn on_stderr_line(mut self, callback: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.stderr_line = Some(Arc::new(callback));
        self
    }

    /// How many of the last stderr lines [`AgentProcess::stderr_tail`] keeps (default
    /// [`DEFAULT_STDERR_TAIL_LINES`]); 0 keeps none.
    pub fn stderr_tail_lines(mut self, lines: usize) -> Self {
        self.stderr_tail_lines = lines;
        self
    }

    /// How many bytes of text (line breaks not counted) the stderr tail keeps at most
    /// (default [`DEFAULT_STDERR_TAIL_BYTES`]). The oldest lines go first; a single line
    /// longer than this keeps only its end.
    pub fn stderr_tail_bytes(mut self, bytes: usize) -> Self {
        self.stderr_tail_bytes = bytes;
        self
    }

    /// How long [`AgentProcess::shutdown`] waits for the agent to exit after closing its
    /// stdin, before sending SIGTERM (default [`DEFAULT_SHUTDOWN_GRACE`]).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// How long [`AgentProcess::shutdown`] waits after SIGTERM before sending SIGKILL
    /// (default [`DEFAULT_TERM_GRACE`]).
    pub fn term_grace(mut self, grace: Duration) -> Self {
        self.term_grace = grace;
        self
    }

    /// Starts the agent in a new process group and begins draining its stderr and watching
    /// for its exit.
    ///
    /// Needs no executor of its own: the supervision runs on a thread of its own.
    pub fn spawn(&self) -> Result<AgentProcess, AgentProcessError> {
        let program = self.program.to_string_lossy().into_owned();
        if let Some(cwd) = &self.cwd
            && !cwd.is_dir()
        {
            return Err(AgentProcessError::MissingCwd(cwd.clone()));
        }

        let mut std_command = std::process::Command::new(&self.program);
        std_command
            .args(&self.args)
            .envs(self.env.iter().map(|(name, value)| (name, value)));
        if let Some(cwd) = &self.cwd {
            std_command.current_dir(cwd);
        }
        let stdio = GroupStdio {
            stdin: Stdio::piped(),
            stdout: Stdio::piped(),
            stderr: Stdio::piped(),
        };
        let spawned = group::spawn(std_command, stdio).map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                AgentProcessError::NotFound {
                    searched_path: self.searched_path(),
                    program: program.clone(),
                }
            } else {
                AgentProcessError::Spawn {
                    program: program.clone(),
                    source,
                }
            }
        })?;
        let settings = Settings {
            program: program.clone(),
            stderr_line: self.stderr_line.clone(),
            stderr_tail_lines: self.stderr_tail_lines,
            stderr_tail_bytes: self.stderr_tail_bytes,
            shutdown_grace: self.shutdown_grace,
            term_grace: self.term_grace,
        };
        AgentProcess::start(spawned, settings)
            .map_err(|source| AgentProcessError::Spawn { program, source })
    }

    /// The `PATH` that a lookup of the program went through, or `None` when the program
    /// names a path and no lookup happened.
    fn searched_path(&self) -> Option<String> {
        if self.program.as_bytes().contains(&b'/') {
            return None;
        }
        let overridden = self
            .env
            .iter()
            .rev()
            .find(|(name, _)| name == OsStr::new("PATH"))
            .map(|(_, value)| value.clone());
        let path = overridden
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        Some(path.to_string_lossy().into_owned())
    }
}

impl fmt::Debug for AgentCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env)
            .field("cwd", &self.cwd)
            .field("on_stderr_line", &self.stderr_line.as_ref().map(|_| ".."))
            .field("stderr_tail_lines", &self.stderr_tail_lines)
            .field("stderr_tail_bytes", &self.stderr_tail_bytes)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("term_grace", &self.term_grace)
            .finish()
    }
}
