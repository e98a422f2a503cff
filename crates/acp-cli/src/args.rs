//! The command line: clap's derive on [`Args`], plus the checks between options that clap's
//! attributes do not express.

use std::path::PathBuf;

use clap::{ArgGroup, CommandFactory, Parser, Subcommand, ValueEnum, error::ErrorKind};

/// How a permission request is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Yes,
    Ask,
    Reject,
}

/// `--system-prompt-mode`: how the client's system prompt combines with the agent's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SystemPromptMode {
    /// Add to the agent's own system prompt
    #[default]
    Append,
    /// Replace it (the agent must advertise the override mode)
    Override,
}

const USAGE: &str = "\
acp [OPTIONS] [-- AGENT_COMMAND [ARGS...]]
       acp [OPTIONS] --agent ID [--registry FILE|URL] [--refresh]
       acp [OPTIONS] -- URL
       acp [OPTIONS] --proxy PROXY_COMMAND... [-- AGENT_COMMAND [ARGS...]]
       acp agents [--registry FILE|URL] [--refresh]
       acp completions SHELL
       acp trace view FILE... [-o OUT.html]";

const ABOUT: &str = "\
acp: drive an Agent Client Protocol agent from the command line, the way an editor would.

Without an agent command, acp runs its bundled demo agent (no language model needed); it
reads notes.txt and writes summary.txt, so without --cwd it works in a scratch directory
(holding a sample notes.txt, removed at the end) instead of the current directory.
Without --prompt, prompts are read from stdin, one line per turn, until end of input.
An agent command that is one ws://, wss://, http:// or https:// URL connects to a remote
agent (served by acp-bridge serve, or any ACP server) instead of starting a process: over
WebSocket for ws:// and wss://, over Streamable HTTP for http:// and https://. The agent's
file and terminal calls are then served on this machine, in --cwd.
--agent ID runs an agent of the ACP agent registry (`acp agents` lists them): a binary is
downloaded, checked and unpacked into the cache once per version, a package runs through
npx or uvx.";

const AFTER_HELP: &str = "\
Output (default): message text as it streams, thoughts dimmed, tool calls with their kind,
title and status changes, diffs as unified diffs, the output of embedded terminals once
their command exits or the tool call ends (also after the agent released them), plans as
checklists (item plans by id, markdown plans as their text), subagents with their title
and state (running, idle, requires action), and each subagent's own updates on lines that
start with its title, indented by its depth (`  [Explore] ...`), messages between
sessions, the agent's slash commands as a short list, notices, the context window's usage,
the session's title and config options in plain words, and with the `unstable` feature
prompt suggestions, cursors and the turn's token usage; updates that do not decode (with
their size) and unknown updates are printed cut to one line; updates for session ids nobody
opened or announced (under their id), dropped updates (with their count) and subagents not
followed (past 64 running) are printed: never hidden. Connection and session notes go to
stderr; an error answer with its message and, on lines of their own, its data.
With --json: each update is {\"sessionId\":ID,\"update\":UPDATE} (the SessionUpdate JSON,
whatever its kind; a subagent's also has \"parentSessionId\"); an error in the update
stream is {\"error\":{\"kind\":...,\"message\":...}} (with its \"bytes\" and the raw
\"update\", or beyond 4 KiB its first 200 characters as \"updateStart\", when it does not
decode); each turn ends with {\"stopReason\":REASON} (and \"usage\" when the agent reported
it). --options --json prints the session/options answer as one line.

Ctrl-C: the first cancels the running turn (it ends `cancelled`), also at the --ask prompt;
with --prompt that ends the run (130), with prompts from stdin the next line is the next
prompt. The second during the same turn (or one while no turn runs) shuts the agent down
and quits.

Exit status:
  0    every turn ended (end_turn, max_tokens, max_turn_requests, refusal, or a stop reason
       this version does not know; the reason is printed)
  1    another local error (an unreadable --cwd, an unadvertised --mode, --model or --config...)
  2    usage error
  3    authentication required: the agent's auth methods are listed (use --auth METHOD)
  4    the agent refused a request with a JSON-RPC error
  5    the agent could not be started, crashed or closed the connection; for a URL, the
       server could not be reached or refused the connection (its HTTP status is printed,
       e.g. 401 for a missing or wrong token); for --agent, the registry could not be read
       or the agent not installed (an unknown ID is a usage error)
  6    the agent does not advertise what was asked: --system-prompt (or its override
       mode) or --options; nothing was sent for it
  130  cancelled by Ctrl-C";

/// `acp`'s options (see `acp --help`).
#[derive(Debug, Default, Parser)]
#[command(
    name = "acp",
    version,
    about = ABOUT,
    override_usage = USAGE,
    after_help = AFTER_HELP,
    args_override_self = true,
    args_conflicts_with_subcommands = true,
    group = ArgGroup::new("policy").args(["yes", "ask", "reject"]),
)]
pub struct Args {
    /// Send TEXT as one prompt turn; repeat for several turns, in order
    #[arg(short, long = "prompt", value_name = "TEXT")]
    pub prompts: Vec<String>,
    /// The session's working directory (default: the current directory; for the demo agent, a
    /// scratch directory)
    #[arg(short = 'C', long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Grant every permission request (the least lasting option: once)
    #[arg(short, long)]
    yes: bool,
    /// Ask before each tool call: shows it (diffs included) on stderr and reads the choice from
    /// stdin (Ctrl-C there cancels the turn)
    #[arg(long)]
    ask: bool,
    /// Reject every permission request (default: --ask when stdin is a terminal, else --reject)
    #[arg(long)]
    reject: bool,
    /// Authenticate with this advertised method before opening the session
    #[arg(long, value_name = "METHOD")]
    pub auth: Option<String>,
    /// Switch the session to this mode before the first turn
    #[arg(long, value_name = "ID")]
    pub mode: Option<String>,
    /// Pick this model: the value ID of the agent's model selector (its config option of
    /// category `model`)
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Set a session config option (true/false for boolean options); repeatable
    #[arg(long, value_name = "ID=VAL", value_parser = config_setting)]
    pub config: Vec<(String, String)>,
    /// Load this stored session instead of creating one
    #[arg(long, value_name = "SESSION")]
    pub load: Option<String>,
    /// Send TEXT (or the content of FILE; `@@` for a leading `@`) as the session's system prompt
    /// on session/new or session/load; the agent must advertise
    /// sessionCapabilities.systemPrompt. Read later, so that a usage error comes before any
    /// file error
    #[arg(long, value_name = "TEXT|@FILE")]
    pub system_prompt: Option<String>,
    /// Add to the agent's own system prompt (default), or replace it (the agent must advertise
    /// the override mode)
    #[arg(
        long,
        value_name = "append|override",
        value_enum,
        requires = "system_prompt"
    )]
    pub system_prompt_mode: Option<SystemPromptMode>,
    /// Print the modes and config options the agent offers for --cwd (session/options, which
    /// opens no session) and exit; needs acp built with the `unstable` feature and the agent's
    /// sessionCapabilities.options
    #[arg(long, conflicts_with_all = ["prompts", "load", "mode", "model", "config", "system_prompt"])]
    pub options: bool,
    /// Run a proxy chain (unstable; needs acp built with the `unstable` feature): acp conducts
    /// the proxies, in the order given, in front of the agent, as `acp-conductor agent` would.
    /// COMMAND is one command line (words split as a shell would, quotes kept, nothing
    /// expanded); repeatable. Not with a URL
    #[arg(long = "proxy", value_name = "COMMAND")]
    pub proxies: Vec<String>,
    /// The protocol version to speak: 1, 2 (a published draft; needs acp built with the
    /// `unstable-protocol-v2` feature) or auto (2 first, then 1 on a fresh start of the agent
    /// when it answers 1).
    #[arg(long, value_name = "1|2|auto", default_value = "1", value_parser = ["1", "2", "auto"])]
    pub protocol: String,
    /// Print every update as one JSON line on stdout (see below)
    #[arg(long)]
    pub json: bool,
    /// With a URL: send `Authorization: Bearer TOKEN` (default: the environment variable
    /// ACP_TOKEN; prefer it, since a command line is visible to every user of the machine)
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// With a wss:// or https:// URL: trust only the certificate authority in this PEM file
    /// (default: the Mozilla roots)
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// With a URL: ask for the durable transport (upstream's open proposal): a dropped
    /// WebSocket or cut SSE stream resumes exactly, and one the server refuses to resume is
    /// taken up on a new connection with `session/resume`
    #[arg(long)]
    pub durable_transport: bool,
    /// Write the wire transcript to FILE, one JSON line per message:
    /// {"dir":"client->agent"|"agent->client","msg":MESSAGE,"time_us":MICROS}; `acp trace view
    /// FILE` draws it
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// `--agent ID`, `--registry`, `--refresh`: an agent of the ACP agent registry.
    #[command(flatten)]
    pub registry: acp_registry::cli::RegistryArgs,
    /// Serve a live sequence diagram of the traffic while the session runs, on 127.0.0.1 at a
    /// random port, with a random token in the URL (printed on stderr); it ends with the session
    #[arg(long)]
    pub trace_view: bool,
    /// The agent's program and arguments, or one URL; empty for the bundled demo agent
    #[arg(last = true, value_name = "AGENT_COMMAND", conflicts_with = "agent_id")]
    pub agent: Vec<String>,
    /// `acp completions SHELL`, instead of a run.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What `acp` does instead of running an agent.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the completion script of SHELL, e.g. `acp completions bash >
    /// ~/.local/share/bash-completion/completions/acp`
    Completions {
        /// The shell to complete for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// List the agents of the ACP agent registry: id, name, version and how each is
    /// distributed (`acp --agent ID` runs one)
    Agents {
        /// Where the registry comes from.
        #[command(flatten)]
        options: acp_registry::cli::RegistryOptions,
    },
    /// Transcripts (`--trace` files, acp-test and trace-proxy transcripts)
    #[command(subcommand)]
    Trace(TraceCommand),
}

/// `acp trace ...`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Write a self-contained HTML page that draws transcripts as a sequence diagram: lanes,
    /// requests joined to their answers, turns, folded chunks, filters. Several files are the
    /// hops of a proxy chain, client side first
    View {
        /// The transcript files (JSON Lines of {"dir":...,"msg":...})
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Where to write the page (default: the first FILE with the extension .html)
        #[arg(short, long, value_name = "OUT.html")]
        output: Option<PathBuf>,
    },
}

/// Writes `shell`'s completion script for `acp` to stdout. A closed stdout ends it quietly
/// (clap_complete would panic writing to it directly).
pub fn print_completions(shell: clap_complete::Shell) {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Args::command(), "acp", &mut script);
    let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
}

impl Args {
    /// Whether the bundled demo agent runs: neither an agent command nor `--agent`.
    pub fn runs_demo(&self) -> bool {
        self.agent.is_empty() && self.registry.agent_id.is_none()
    }

    /// What `--protocol 2|auto` cannot be combined with yet (`chains`: acp runs proxy chains,
    /// the `unstable` feature; without it `--proxy` is refused on its own).
    pub fn protocol_conflict(&self, chains: bool) -> Option<String> {
        let protocol = &self.protocol;
        if !chains && !self.proxies.is_empty() {
            return Some(format!(
                "--protocol {protocol} with --proxy needs acp built with the `unstable` feature too"
            ));
        }
        // `session/options` (an unstable v1 method) has no protocol 2 counterpart.
        if self.options {
            return Some(format!(
                "--options is not available with --protocol {protocol} (session/options is a protocol 1 method)"
            ));
        }
        None
    }

    /// `--yes`, `--ask` or `--reject`, if one was given (clap's group lets only one through).
    pub fn policy(&self) -> Option<Policy> {
        match (self.yes, self.ask, self.reject) {
            (true, _, _) => Some(Policy::Yes),
            (_, true, _) => Some(Policy::Ask),
            (_, _, true) => Some(Policy::Reject),
            _ => None,
        }
    }
}

/// `--config ID=VALUE`, with a non-empty id.
fn config_setting(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .filter(|(id, _)| !id.is_empty())
        .map(|(id, value)| (id.to_owned(), value.to_owned()))
        .ok_or_else(|| format!("ID=VALUE, not `{text}`"))
}

/// Parses the arguments after the program name; `Err` is clap's error, to print and exit with
/// (usage errors 2, `--help` and `--version` 0, on stdout).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, clap::Error> {
    let args: Vec<String> = args.into_iter().collect();
    let dashes = args.iter().any(|a| a == "--");
    let parsed = Args::try_parse_from(std::iter::once("acp".to_owned()).chain(args))
        .map_err(agent_without_dashes)?;
    // Everything after the first `--` is the agent command: a `--` with nothing after it is a
    // mistake, not a request for the demo agent.
    if dashes && parsed.agent.is_empty() {
        return Err(usage_error("`--` must be followed by an agent command"));
    }
    let registry = &parsed.registry;
    if registry.agent_id.is_none()
        && (registry.options.registry.is_some() || registry.options.refresh)
    {
        return Err(usage_error(
            "--registry and --refresh go with --agent ID (or `acp agents`)",
        ));
    }
    Ok(parsed)
}

/// `acp my-agent`: a word where an option or `completions` was expected is most likely an agent
/// command that misses its `--`; say so.
fn agent_without_dashes(error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue};
    let word = [ContextKind::InvalidSubcommand, ContextKind::InvalidArg]
        .into_iter()
        .find_map(|kind| match error.get(kind) {
            Some(ContextValue::String(word)) if !word.starts_with('-') => Some(word.clone()),
            _ => None,
        });
    match word {
        Some(word) => usage_error(&format!(
            "unexpected argument `{word}`: put the agent command after `--`"
        )),
        None => error,
    }
}

/// A usage error found after parsing, in clap's format (exit status 2).
pub fn usage_error(message: &str) -> clap::Error {
    Args::command().error(ErrorKind::ArgumentConflict, message)
}

/// The system prompt's text: `TEXT` as is, `@FILE` read from FILE, `@@TEXT` the text `@TEXT`.
pub fn system_prompt_text(value: &str) -> Result<String, String> {
    if let Some(literal) = value.strip_prefix("@@") {
        return Ok(format!("@{literal}"));
    }
    match value.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| format!("--system-prompt @{path}: {e}"))
        }
        None => Ok(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Args, clap::Error> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn options_and_agent_command() {
        let args = p(&[
            "--prompt", "a", "-p", "b", "--cwd=/x", "--yes", "--config", "m=fast", "--json", "--",
            "agent", "--prompt", "c",
        ])
        .unwrap();
        assert_eq!(args.prompts, ["a", "b"]);
        assert_eq!(args.cwd, Some("/x".into()));
        assert_eq!(args.policy(), Some(Policy::Yes));
        assert_eq!(args.config, [("m".to_owned(), "fast".to_owned())]);
        assert!(args.json);
        assert_eq!(args.agent, ["agent", "--prompt", "c"]);
        let args = p(&["--proxy", "p1 --x", "--proxy=p2", "--", "agent"]).unwrap();
        assert_eq!(args.proxies, ["p1 --x", "p2"]);
        assert!(p(&["--proxy"]).is_err());
    }

    #[test]
    fn remote_options() {
        let args = p(&["--token=t", "--ca", "ca.pem", "--", "wss://h/acp"]).unwrap();
        assert!(!args.durable_transport);
        assert!(
            p(&["--durable-transport", "--", "ws://h/acp"])
                .unwrap()
                .durable_transport
        );
        assert_eq!(args.token.as_deref(), Some("t"));
        assert_eq!(args.ca, Some("ca.pem".into()));
        assert_eq!(args.agent, ["wss://h/acp"]);
    }

    #[test]
    fn usage_errors() {
        assert!(p(&["--prompt"]).is_err());
        assert!(p(&["--bogus"]).is_err());
        assert!(p(&["agent"]).is_err());
        assert!(p(&["--yes", "--reject"]).is_err());
        assert!(p(&["--config", "novalue"]).is_err());
        assert!(p(&["--json=1"]).is_err());
        assert!(p(&["--"]).is_err());
        assert!(p(&["--system-prompt-mode", "override"]).is_err());
        assert!(p(&["--system-prompt", "x", "--system-prompt-mode", "replace"]).is_err());
        assert!(p(&["--options", "-p", "hi"]).is_err());
        assert!(p(&["--options=1"]).is_err());
        assert!(
            p(&["--yes", "--yes", "-y"]).is_ok(),
            "repeating an option is not a conflict"
        );
    }

    #[test]
    fn the_definition_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn completions_is_a_subcommand_and_an_agent_still_needs_dashes() {
        let args = p(&["completions", "bash"]).unwrap();
        assert!(matches!(
            args.command,
            Some(Command::Completions {
                shell: clap_complete::Shell::Bash
            })
        ));
        assert!(p(&["completions", "tcsh"]).is_err());
        assert!(p(&["completions"]).is_err());
        let error = p(&["an-agent", "--acp"]).unwrap_err().to_string();
        assert!(
            error.contains("put the agent command after `--`"),
            "{error}"
        );
        assert!(p(&["--", "completions"]).unwrap().command.is_none());
    }

    #[test]
    fn registry_agents() {
        let args = p(&[
            "--agent",
            "gemini",
            "--registry",
            "r.json",
            "--refresh",
            "--yes",
        ])
        .unwrap();
        assert_eq!(args.registry.agent_id.as_deref(), Some("gemini"));
        assert_eq!(args.registry.options.registry.as_deref(), Some("r.json"));
        assert!(args.registry.options.refresh && !args.runs_demo());
        assert!(p(&["--agent", "gemini", "--", "other-agent"]).is_err());
        assert!(p(&["--registry", "r.json"]).is_err());
        assert!(p(&["--refresh"]).is_err());
        let args = p(&["agents", "--registry", "r.json"]).unwrap();
        assert!(matches!(
            args.command,
            Some(Command::Agents { options }) if options.registry.as_deref() == Some("r.json")
        ));
    }

    #[test]
    fn system_prompt_and_options() {
        let args = p(&["--system-prompt=@p.md", "--system-prompt-mode", "override"]).unwrap();
        assert_eq!(args.system_prompt.as_deref(), Some("@p.md"));
        assert_eq!(args.system_prompt_mode, Some(SystemPromptMode::Override));
        assert!(p(&["--options"]).unwrap().options);
        assert_eq!(system_prompt_text("Be terse.").unwrap(), "Be terse.");
        assert_eq!(system_prompt_text("@@me").unwrap(), "@me");
        assert!(system_prompt_text("@/nonexistent/acp-prompt").is_err());
    }
}
