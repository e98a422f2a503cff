//! Small agents scripted in `sh` that print JSON-RPC lines, and `acp` run against them.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::{ACP, run, scratch};

/// Runs `acp ARGS` with stdin closed, to the end.
pub fn acp(args: &[&str]) -> Output {
    run(Command::new(ACP).args(args).stdin(Stdio::null()))
}

/// `dir` as a `--cwd` argument.
pub fn cwd_arg(dir: &Path) -> String {
    dir.to_str().unwrap().to_owned()
}

/// An agent in `sh`: answers `initialize` (advertising one auth method), then runs `on` for
/// the other methods: shell `case` arms over the incoming line, with `$id` the request id.
/// `reply RESULT` answers the current request.
pub fn sh_agent(on: &str) -> String {
    sh_agent_with("{}", on)
}

/// Like [`sh_agent`], advertising these `agentCapabilities`.
pub fn sh_agent_with(capabilities: &str, on: &str) -> String {
    format!(
        r#"
options='[{{"id":"fast","name":"Fast","type":"boolean","currentValue":false}},{{"id":"model","name":"Model","type":"select","category":"model","currentValue":"a","options":[{{"value":"a","name":"A"}},{{"value":"b","name":"B"}}]}}]'
reply() {{ printf '{{"jsonrpc":"2.0","id":%s,"result":%s}}\n' "$id" "$1"; }}
fail() {{ printf '{{"jsonrpc":"2.0","id":%s,"error":{{"code":%s,"message":"%s"}}}}\n' "$id" "$1" "$2"; }}
update() {{ printf '{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":%s}}}}\n' "$1"; }}
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{{"jsonrpc":"2.0","id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      reply '{{"protocolVersion":1,"agentCapabilities":{capabilities},"authMethods":[{{"id":"token-login","name":"Token login","description":"paste a token"}}]}}' ;;
    {on}
  esac
done
"#
    )
}

pub fn run_sh_agent(extra: &[&str], on: &str) -> Output {
    run_script(extra, &sh_agent(on))
}

pub fn run_script(extra: &[&str], script: &str) -> Output {
    let dir = scratch("sh");
    let mut args = vec!["--yes", "--prompt", "hi", "--cwd"];
    let cwd = cwd_arg(&dir);
    args.push(&cwd);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    acp(&args)
}
