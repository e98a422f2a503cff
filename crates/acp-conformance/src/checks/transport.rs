//! The stdio transport: clean stdout, valid messages, exit on end of input.

use super::Ctx;
use crate::client::Caps;
use crate::report::Verdict;

pub(super) fn exit_on_eof(ctx: &mut Ctx<'_>) -> Verdict {
    let mut conn = match ctx.connect("transport.exit_on_eof", Caps::ALL) {
        Ok(c) => c,
        Err(v) => return v,
    };
    conn.close_stdin();
    match conn.wait_exit(ctx.opts.timeout) {
        Some(_) => Verdict::Pass,
        None => Verdict::fail(
            format!(
                "the agent was still running {} s after its stdin was closed",
                ctx.opts.timeout.as_secs_f64()
            ),
            vec!["> (stdin closed after a successful initialize)".to_owned()],
        ),
    }
}

/// Gathers one kind of problem from every connection's log.
fn gather(ctx: &Ctx<'_>, pick: fn(&crate::wire::ConnLog) -> &Vec<String>) -> (Vec<String>, usize) {
    let logs = ctx.logs();
    let lines = logs
        .iter()
        .flat_map(|log| {
            pick(log)
                .iter()
                .map(move |l| format!("[{}] {l}", log.label))
        })
        .collect();
    (lines, logs.len())
}

pub(super) fn stdout_clean(ctx: &mut Ctx<'_>) -> Verdict {
    let (lines, connections) = gather(ctx, |log| &log.garbage);
    if lines.is_empty() {
        return Verdict::Pass;
    }
    Verdict::fail(
        format!(
            "{} line(s) on stdout were not JSON-RPC messages (over {connections} connections)",
            lines.len()
        ),
        lines,
    )
}

pub(super) fn agent_messages(ctx: &mut Ctx<'_>) -> Verdict {
    let (lines, connections) = gather(ctx, |log| &log.invalid);
    if lines.is_empty() {
        return Verdict::Pass;
    }
    Verdict::fail(
        format!(
            "{} message(s) from the agent break the schema or a protocol rule (over {connections} connections)",
            lines.len()
        ),
        lines,
    )
}
