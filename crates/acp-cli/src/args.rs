//! The command line, parsed by hand.

use std::path::PathBuf;

pub const USAGE: &str = "\
acp: drive an Agent Client Protocol agent from the command line, the way an editor would.

Usage: acp [OPTIONS] [-- AGENT_COMMAND [ARGS...]]
       acp [OPTIONS] -- URL
       acp [OPTIONS] --proxy PROXY_COMMAND... [-- AGENT_COMMAND [ARGS...]]

Without an agent command, acp runs its bundled demo agent (no language model needed); it
reads notes.txt and writes summary.txt, so without --cwd it works in a scratch directory
(holding a sample notes.txt, removed at the end) instead of the current directory.
Without --prompt, prompts are read from stdin, one line per turn, until end of input.
An agent command that is one ws://, wss://, http:// or https:// URL connects to a remote
agent (served by acp-bridge serve, or any ACP server) instead of starting a process: over
WebSocket for ws:// and wss://, over Streamable HTTP for http:// and https://. The agent's
file and terminal calls are then served on this machine, in --cwd.

Options:
  -p, --prompt TEXT    Send TEXT as one prompt turn; repeat for several turns, in order
  -C, --cwd DIR        The session's working directory (default: the current directory;
                       for the demo agent, a scratch directory)
  -y, --yes            Grant every permission request (the least lasting option: once)
      --ask            Ask before each tool call: shows it (diffs included) on stderr and
                       reads the choice from stdin
      --reject         Reject every permission request
                       (default: --ask when stdin is a terminal, else --reject)
      --auth METHOD    Authenticate with this advertised method before opening the session
      --mode ID        Switch the session to this mode before the first turn
      --model ID       Pick this model: the value ID of the agent's model selector (its
                       config option of category `model`)
      --config ID=VAL  Set a session config option (true/false for boolean options);
                       repeatable
      --load SESSION   Load this stored session instead of creating one
      --system-prompt TEXT|@FILE
                       Send TEXT (or the content of FILE; `@@` for a leading `@`) as
                       the session's system prompt on session/new or session/load; the
                       agent must advertise sessionCapabilities.systemPrompt
      --system-prompt-mode append|override
                       Add to the agent's own system prompt (default), or replace it
                       (the agent must advertise the override mode)
      --options        Print the modes and config options the agent offers for --cwd
                       (session/options, which opens no session) and exit; needs acp
                       built with the `unstable` feature and the agent's
                       sessionCapabilities.options
      --proxy COMMAND  Run a proxy chain (unstable; needs acp built with the `unstable`
                       feature): acp conducts the proxies, in the order given, in
                       front of the agent, as `acp-conductor agent` would. COMMAND is
                       one command line (words split as a shell would, quotes kept,
                       nothing expanded); repeatable. Not with a URL
      --json           Print every update as one JSON line on stdout (see below)
      --token TOKEN    With a URL: send `Authorization: Bearer TOKEN` (default: the
                       environment variable ACP_TOKEN; prefer it, since a command line is
                       visible to every user of the machine)
      --ca FILE        With a wss:// or https:// URL: trust only the certificate authority
                       in this PEM file (default: the Mozilla roots)
      --trace FILE     Write the wire transcript to FILE, one JSON line per message:
                       {\"dir\":\"client->agent\"|\"agent->client\",\"msg\":MESSAGE}
  -h, --help           Print this help
  -V, --version        Print the version

Output (default): message text as it streams, thoughts dimmed, tool calls with their kind,
title and status changes, diffs as unified diffs, the output of embedded terminals once
their command exits or the tool call ends (also after the agent released them), plans as
checklists (item plans by id, markdown plans as their text), subagents with their title
and state (running, idle, requires action), messages between sessions, the agent's slash
commands as a short list, and with the `unstable` feature prompt suggestions, cursors and
the turn's token usage; updates that do not decode, unknown updates and dropped updates
are printed, never hidden. Connection and session notes go to stderr.
With --json: each update is its SessionUpdate JSON, whatever its kind; an error in the
update stream is {\"error\":{\"kind\":...,\"message\":...}} (with the raw \"update\" when it
does not decode); each turn ends with {\"stopReason\":REASON} (and \"usage\" when the agent
reported it). --options --json prints the session/options answer as one line.

Ctrl-C: the first cancels the running turn (it ends `cancelled`); the second (or one while
no turn runs) shuts the agent down and quits.

Exit status:
  0    every turn ended (end_turn, max_tokens, max_turn_requests, refusal, or a stop reason
       this version does not know; the reason is printed)
  1    another local error (an unreadable --cwd, an unadvertised --mode, --model or --config...)
  2    usage error
  3    authentication required: the agent's auth methods are listed (use --auth METHOD)
  4    the agent refused a request with a JSON-RPC error
  5    the agent could not be started, crashed or closed the connection; for a URL, the
       server could not be reached or refused the connection (its HTTP status is printed,
       e.g. 401 for a missing or wrong token)
  6    the agent does not advertise what was asked: --system-prompt (or its override
       mode) or --options; nothing was sent for it
  130  cancelled by Ctrl-C
";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Yes,
    Ask,
    Reject,
}

/// `--system-prompt-mode`: how the client's system prompt combines with the agent's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SystemPromptMode {
    #[default]
    Append,
    Override,
}

#[derive(Debug, Default)]
pub struct Args {
    pub prompts: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub policy: Option<Policy>,
    pub auth: Option<String>,
    pub mode: Option<String>,
    /// `--model`: the value for the agent's model selector (its config option of category
    /// `model`).
    pub model: Option<String>,
    pub config: Vec<(String, String)>,
    pub load: Option<String>,
    /// `--system-prompt`: the text, or `@FILE` (read later, so that a usage error comes
    /// before any file error).
    pub system_prompt: Option<String>,
    pub system_prompt_mode: Option<SystemPromptMode>,
    /// `--proxy`: the command lines of a proxy chain in front of the agent, in order.
    pub proxies: Vec<String>,
    /// `--options`: print what `session/options` answers, open no session.
    pub options: bool,
    pub json: bool,
    pub trace: Option<PathBuf>,
    /// `--token`: the bearer token for a remote agent (`ACP_TOKEN` is read later, only when
    /// the agent is a URL).
    pub token: Option<String>,
    /// `--ca`: the only authority trusted for a `wss://` or `https://` agent.
    pub ca: Option<PathBuf>,
    pub help: bool,
    pub version: bool,
    /// Program and arguments; empty for the bundled demo agent.
    pub agent: Vec<String>,
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        // `--name=value` is accepted for every option that takes a value.
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                (name.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match inline.clone() {
                Some(value) => Ok(value),
                None => args
                    .next()
                    .ok_or_else(|| format!("{name} needs a value ({what})")),
            }
        };
        let flag = |inline: &Option<String>| -> Result<(), String> {
            match inline {
                Some(_) => Err(format!("{name} takes no value")),
                None => Ok(()),
            }
        };
        match name.as_str() {
            "--" => {
                parsed.agent = args.by_ref().collect();
                if parsed.agent.is_empty() {
                    return Err("`--` must be followed by an agent command".into());
                }
            }
            "-p" | "--prompt" => parsed.prompts.push(value("TEXT")?),
            "-C" | "--cwd" => parsed.cwd = Some(value("DIR")?.into()),
            "-y" | "--yes" | "--ask" | "--reject" => {
                flag(&inline)?;
                let policy = match name.as_str() {
                    "--ask" => Policy::Ask,
                    "--reject" => Policy::Reject,
                    _ => Policy::Yes,
                };
                if parsed.policy.is_some_and(|p| p != policy) {
                    return Err("--yes, --ask and --reject exclude each other".into());
                }
                parsed.policy = Some(policy);
            }
            "--auth" => parsed.auth = Some(value("METHOD")?),
            "--mode" => parsed.mode = Some(value("ID")?),
            "--model" => parsed.model = Some(value("ID")?),
            "--config" => {
                let setting = value("ID=VALUE")?;
                let (id, val) = setting
                    .split_once('=')
                    .filter(|(id, _)| !id.is_empty())
                    .ok_or_else(|| format!("--config needs ID=VALUE, got `{setting}`"))?;
                parsed.config.push((id.to_owned(), val.to_owned()));
            }
            "--load" => parsed.load = Some(value("SESSION_ID")?),
            "--system-prompt" => parsed.system_prompt = Some(value("TEXT or @FILE")?),
            "--system-prompt-mode" => {
                parsed.system_prompt_mode = Some(match value("append or override")?.as_str() {
                    "append" => SystemPromptMode::Append,
                    "override" => SystemPromptMode::Override,
                    other => {
                        return Err(format!(
                            "--system-prompt-mode is append or override, not `{other}`"
                        ));
                    }
                });
            }
            "--proxy" => parsed.proxies.push(value("COMMAND")?),
            "--options" => {
                flag(&inline)?;
                parsed.options = true;
            }
            "--json" => {
                flag(&inline)?;
                parsed.json = true;
            }
            "--trace" => parsed.trace = Some(value("FILE")?.into()),
            "--token" => parsed.token = Some(value("TOKEN")?),
            "--ca" => parsed.ca = Some(value("FILE")?.into()),
            "-h" | "--help" => parsed.help = true,
            "-V" | "--version" => parsed.version = true,
            other if other.starts_with('-') && other.len() > 1 => {
                return Err(format!("unknown option `{other}`"));
            }
            other => {
                return Err(format!(
                    "unexpected argument `{other}`: put the agent command after `--`"
                ));
            }
        }
    }
    if parsed.system_prompt_mode.is_some() && parsed.system_prompt.is_none() {
        return Err("--system-prompt-mode needs --system-prompt".into());
    }
    let session_options = parsed.system_prompt.is_some()
        || !parsed.prompts.is_empty()
        || parsed.load.is_some()
        || parsed.mode.is_some()
        || parsed.model.is_some()
        || !parsed.config.is_empty();
    if parsed.options && session_options {
        return Err("--options opens no session: it takes no --prompt, --load, --mode, --model, --config or --system-prompt".into());
    }
    Ok(parsed)
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

    fn p(args: &[&str]) -> Result<Args, String> {
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
        assert_eq!(args.policy, Some(Policy::Yes));
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
