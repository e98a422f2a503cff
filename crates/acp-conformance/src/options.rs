//! What to check and how: the command line, parsed by hand.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The default prompt text of every prompt turn.
pub const DEFAULT_PROMPT: &str = "Say hello.";

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The agent command: program first, then its arguments.
    pub command: Vec<OsString>,
    /// Extra environment variables for the agent.
    pub env: Vec<(OsString, OsString)>,
    /// The agent's working directory (default: inherited).
    pub agent_cwd: Option<PathBuf>,
    /// The text of every prompt turn.
    pub prompt: String,
    /// An auth method id to `authenticate` with after every `initialize`.
    pub auth: Option<String>,
    /// How long one request may take (default 10 s).
    pub timeout: Duration,
    /// How long one prompt turn may take (default 60 s).
    pub turn_timeout: Duration,
    /// How long to keep listening for late or unexpected messages after a step (default
    /// 500 ms).
    pub grace: Duration,
    /// Run only the checks whose id starts with one of these (all when empty).
    pub only: Vec<String>,
    /// Leave out the checks whose id starts with one of these.
    pub skip: Vec<String>,
    /// Print every line exchanged with the agent, and its stderr, to our stderr.
    pub trace: bool,
    /// The longest line read from the agent (default
    /// [`DEFAULT_MAX_LINE_BYTES`](crate::limits::DEFAULT_MAX_LINE_BYTES), 8 MiB); longer ones
    /// are skipped and count as output that is not JSON-RPC.
    pub max_line_bytes: usize,
    /// How long the whole run may take (default
    /// [`DEFAULT_RUN_TIMEOUT`](crate::limits::DEFAULT_RUN_TIMEOUT), 30 minutes): every wait
    /// ends by then, and the checks not started are reported inconclusive.
    pub run_timeout: Duration,
}

impl Options {
    /// Defaults for running `command`.
    pub fn new(command: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        Options {
            command: command.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            agent_cwd: None,
            prompt: DEFAULT_PROMPT.to_owned(),
            auth: None,
            timeout: Duration::from_secs(10),
            turn_timeout: Duration::from_secs(60),
            grace: Duration::from_millis(500),
            only: Vec::new(),
            skip: Vec::new(),
            trace: false,
            max_line_bytes: crate::limits::DEFAULT_MAX_LINE_BYTES,
            run_timeout: crate::limits::DEFAULT_RUN_TIMEOUT,
        }
    }

    /// Whether check `id` is selected by `only` and `skip`.
    pub fn selects(&self, id: &str) -> bool {
        let matches = |prefix: &String| id == prefix || id.starts_with(&format!("{prefix}."));
        (self.only.is_empty() || self.only.iter().any(matches)) && !self.skip.iter().any(matches)
    }
}

/// When to colour the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    /// When stdout is a terminal.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// What the command line asks for.
#[derive(Clone, Debug)]
pub enum Cli {
    /// Check an agent.
    Run {
        /// The run's options.
        options: Box<Options>,
        /// Where to write the JSON report (`-` for stdout, which then gets no table).
        json: Option<PathBuf>,
        /// A pinned verdict file to compare with; the exit status then reflects differences.
        expect: Option<PathBuf>,
        /// When to colour.
        color: ColorChoice,
        /// Print the checker's peak resident set size to stderr at the end (Linux).
        report_peak_rss: bool,
    },
    /// List the checks.
    List,
    /// Print the usage text.
    Help,
    /// Print the version.
    Version,
}

/// The usage text.
pub const USAGE: &str = "\
acp-conformance: checks an ACP agent against the Agent Client Protocol's rules

USAGE:
    acp-conformance [OPTIONS] [--] AGENT [AGENT-ARGS...]

The agent command is run directly (no shell), once per group of checks, with the
checker acting as the client over its stdin and stdout.

OPTIONS:
    --prompt TEXT         text of every prompt turn (default: \"Say hello.\")
    --auth METHOD         call `authenticate` with this auth method id after `initialize`
    --timeout SECS        time limit of one request (default: 10); an agent that does
                          not answer in time is ended
    --turn-timeout SECS   time limit of one prompt turn (default: 60)
    --run-timeout SECS    time limit of the whole run (default: 1800)
    --max-line-mib MIB    longest line read from the agent (default: 8)
    --grace-ms MS         how long to watch for late messages after a step (default: 500)
    --only ID[,ID...]     run only these checks (an id or an id prefix such as `rpc`)
    --skip ID[,ID...]     leave out these checks
    --env NAME=VALUE      set an environment variable for the agent (repeatable)
    --agent-cwd DIR       run the agent in DIR (default: the current directory)
    --json FILE           also write the report as JSON to FILE (`-`: to stdout, no table)
    --expect FILE         compare the verdicts with FILE's `verdicts` object; exit 1 on any
                          difference instead of on MUST failures
    --color WHEN          auto (default: when stdout is a terminal), always, never
    --trace               print the wire traffic and the agent's stderr to stderr
    --report-peak-rss     print the checker's peak memory use to stderr at the end
    --list                list the checks and exit
    -h, --help            print this help
    -V, --version         print the version

EXIT STATUS:
    0  no MUST check failed (with --expect: the verdicts match)
    1  a MUST check failed (with --expect: a verdict differs)
    2  bad usage, or the agent could not be started
";

/// Parses the arguments (without the program name).
pub fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Cli, String> {
    let mut args = args.into_iter();
    let mut options = Options::new(Vec::<OsString>::new());
    let mut json = None;
    let mut expect = None;
    let mut color = ColorChoice::Auto;
    let mut report_peak_rss = false;
    let mut command = Vec::new();

    fn value(
        name: &str,
        inline: Option<String>,
        args: &mut impl Iterator<Item = OsString>,
    ) -> Result<String, String> {
        match inline {
            Some(v) => Ok(v),
            None => args
                .next()
                .ok_or_else(|| format!("{name} needs a value"))?
                .into_string()
                .map_err(|_| format!("the value of {name} is not valid UTF-8")),
        }
    }
    fn seconds(name: &str, text: &str) -> Result<std::time::Duration, String> {
        match text.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 => Ok(std::time::Duration::from_secs_f64(s)),
            _ => Err(format!(
                "{name} takes a positive number of seconds, not `{text}`"
            )),
        }
    }
    fn list(text: &str) -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    while let Some(arg) = args.next() {
        let Some(text) = arg.to_str() else {
            command.push(arg);
            command.extend(args.by_ref());
            break;
        };
        if text == "--" {
            command.extend(args.by_ref());
            break;
        }
        if !text.starts_with('-') || text == "-" {
            command.push(arg);
            command.extend(args.by_ref());
            break;
        }
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (text.to_owned(), None),
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(Cli::Help),
            "-V" | "--version" => return Ok(Cli::Version),
            "--list" => return Ok(Cli::List),
            "--trace" => options.trace = true,
            "--report-peak-rss" => report_peak_rss = true,
            "--run-timeout" => {
                options.run_timeout = seconds(&name, &value(&name, inline, &mut args)?)?
            }
            "--max-line-mib" => {
                let v = value(&name, inline, &mut args)?;
                options.max_line_bytes = match v.parse::<usize>() {
                    Ok(mib) if (1..=1024).contains(&mib) => mib * 1024 * 1024,
                    _ => return Err(format!("--max-line-mib takes 1 to 1024, not `{v}`")),
                };
            }
            "--prompt" => options.prompt = value(&name, inline, &mut args)?,
            "--auth" => options.auth = Some(value(&name, inline, &mut args)?),
            "--timeout" => options.timeout = seconds(&name, &value(&name, inline, &mut args)?)?,
            "--turn-timeout" => {
                options.turn_timeout = seconds(&name, &value(&name, inline, &mut args)?)?
            }
            "--grace-ms" => {
                let v = value(&name, inline, &mut args)?;
                let ms: u64 = v
                    .parse()
                    .map_err(|_| format!("--grace-ms takes milliseconds, not `{v}`"))?;
                options.grace = std::time::Duration::from_millis(ms);
            }
            "--only" => options.only.extend(list(&value(&name, inline, &mut args)?)),
            "--skip" => options.skip.extend(list(&value(&name, inline, &mut args)?)),
            "--env" => {
                let v = value(&name, inline, &mut args)?;
                let (k, val) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--env takes NAME=VALUE, not `{v}`"))?;
                options.env.push((k.into(), val.into()));
            }
            "--agent-cwd" => {
                options.agent_cwd = Some(PathBuf::from(value(&name, inline, &mut args)?))
            }
            "--json" => json = Some(PathBuf::from(value(&name, inline, &mut args)?)),
            "--expect" => expect = Some(PathBuf::from(value(&name, inline, &mut args)?)),
            "--color" | "--colour" => {
                color = match value(&name, inline, &mut args)?.as_str() {
                    "auto" => ColorChoice::Auto,
                    "always" => ColorChoice::Always,
                    "never" => ColorChoice::Never,
                    other => {
                        return Err(format!(
                            "--color takes auto, always or never, not `{other}`"
                        ));
                    }
                }
            }
            _ => return Err(format!("unknown option `{name}` (see --help)")),
        }
    }
    if command.is_empty() {
        return Err("no agent command given (see --help)".to_owned());
    }
    options.command = command;
    Ok(Cli::Run {
        options: Box::new(options),
        json,
        expect,
        color,
        report_peak_rss,
    })
}
