//! `acp-conductor`: runs a proxy chain as one agent, or one of the built-in proxies.
//!
//! ```text
//! acp-conductor agent PROXY... AGENT      the chain, served on stdin/stdout (each a command line)
//! acp-conductor pass-through              a proxy that forwards everything
//! acp-conductor trace-proxy FILE          a proxy that records its hop to FILE (acp-test .jsonl)
//! acp-conductor policy-proxy [--allow KIND]... [--reject KIND]...
//!                                         a proxy that answers permission requests by tool kind
//! ```

#![forbid(unsafe_code)]

use std::process::ExitCode;

use acp_conductor::command_line;
use acp_conductor::policy::Policy;
use acp_conductor::trace::TraceWriter;
use acp_jsonrpc::ConnectionOptions;
use acp_runtime::conductor::{Component, Conductor};
use acp_runtime::proxy::{self, Proxy};

const USAGE: &str = "usage:
  acp-conductor agent PROXY... AGENT      run the chain on stdin/stdout (each one command line)
  acp-conductor pass-through              a proxy that forwards everything
  acp-conductor trace-proxy FILE          a proxy that records its hop to FILE (acp-test .jsonl)
  acp-conductor policy-proxy [--allow KIND]... [--reject KIND]...
                                          a proxy that answers permission requests by tool kind";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("acp-conductor: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let Some((command, rest)) = args.split_first() else {
        return Err(USAGE.to_owned());
    };
    match command.as_str() {
        "agent" => {
            if rest.is_empty() {
                return Err(format!(
                    "`agent` needs at least the agent's command\n{USAGE}"
                ));
            }
            // Fork the supervisor while this process is small; it kills the chain if the
            // conductor dies, however it dies.
            if let Err(error) = acp_runtime::process::start_supervisor() {
                eprintln!(
                    "acp-conductor: no process supervisor ({error}); components may outlive a killed conductor"
                );
            }
            let components = rest
                .iter()
                .map(|line| {
                    Ok(Component::command(
                        line.clone(),
                        command_line::command(line)?,
                    ))
                })
                .collect::<Result<Vec<_>, String>>()?;
            Conductor::new(components)
                .serve_stdio()
                .map_err(|error| error.to_string())
        }
        "pass-through" => serve(Proxy::pass_through(), ConnectionOptions::default()),
        "trace-proxy" => {
            let [path] = rest else {
                return Err(format!(
                    "`trace-proxy` takes the transcript's path\n{USAGE}"
                ));
            };
            let file = std::fs::File::create(path)
                .map_err(|error| format!("cannot create `{path}`: {error}"))?;
            let trace = TraceWriter::new(std::io::BufWriter::new(file));
            serve(
                Proxy::pass_through(),
                ConnectionOptions::default().with_observer(trace),
            )
        }
        "policy-proxy" => {
            let mut policy = Policy::default();
            let mut rest = rest.iter();
            while let Some(flag) = rest.next() {
                let kind = rest
                    .next()
                    .ok_or_else(|| format!("`{flag}` needs a tool kind"))
                    .and_then(|kind| Policy::kind(kind))?;
                match flag.as_str() {
                    "--allow" => policy.allow.insert(kind),
                    "--reject" => policy.reject.insert(kind),
                    other => return Err(format!("unknown option `{other}`\n{USAGE}")),
                };
            }
            serve(policy.proxy(), ConnectionOptions::default())
        }
        "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n{USAGE}")),
    }
}

fn serve(proxy: Proxy, options: ConnectionOptions) -> Result<(), String> {
    let (reader, writer) = acp_runtime::stdio::stdio().map_err(|error| error.to_string())?;
    let (_cx, driver) = proxy::serve(proxy, reader, writer, options);
    smol::block_on(driver).map_err(|error| error.to_string())
}
