//! The stdio transport: clean stdout, valid messages, exit on end of input.

use super::Ctx;
use crate::client::Caps;
use crate::limits::bytes;
use crate::report::Verdict;
use crate::wire::{Capped, ConnLog};

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

/// Gathers one kind of problem from every connection's log: the evidence lines (each
/// connection's first ones, and a count of the rest), how many problems there were in all,
/// their bytes, and the number of connections.
fn gather(ctx: &Ctx<'_>, pick: fn(&ConnLog) -> &Capped) -> (Vec<String>, usize, u64, usize) {
    let logs = ctx.logs();
    let mut lines = Vec::new();
    let (mut total, mut size) = (0, 0);
    for log in logs.iter() {
        let capped = pick(log);
        total += capped.total;
        size += capped.bytes;
        lines.extend(capped.evidence().map(|l| format!("[{}] {l}", log.label)));
    }
    (lines, total, size, logs.len())
}

pub(super) fn stdout_clean(ctx: &mut Ctx<'_>) -> Verdict {
    let (mut lines, total, size, connections) = gather(ctx, |log| &log.garbage);
    if total == 0 {
        return Verdict::Pass;
    }
    let floods: Vec<String> = ctx
        .logs()
        .iter()
        .filter_map(|log| log.flood.as_ref().map(|f| format!("[{}] {f}", log.label)))
        .collect();
    let mut reason = format!(
        "{total} line(s) on stdout ({}) were not JSON-RPC messages (over {connections} connections)",
        bytes(size)
    );
    if !floods.is_empty() {
        reason.push_str(&format!(
            "; the agent flooded its stdout on {} connection(s), and the checker ended it there",
            floods.len()
        ));
        lines.splice(0..0, floods);
    }
    Verdict::fail(reason, lines)
}

pub(super) fn no_elicitation(ctx: &mut Ctx<'_>) -> Verdict {
    let (mut lines, total, _, connections) = gather(ctx, |log| &log.elicitations);
    if total == 0 {
        return Verdict::Pass;
    }
    lines.insert(
        0,
        "(no `initialize` of the checker advertised clientCapabilities.elicitation)".to_owned(),
    );
    Verdict::fail(
        format!(
            "the agent sent {total} elicitation request(s) to a client that did not advertise elicitation (over {connections} connections)"
        ),
        lines,
    )
}

pub(super) fn no_plan_or_subagent_updates(ctx: &mut Ctx<'_>) -> Verdict {
    let (mut lines, total, _, connections) = gather(ctx, |log| &log.ungated);
    if total == 0 {
        return Verdict::Pass;
    }
    lines.insert(
        0,
        "(no `initialize` of the checker advertised clientCapabilities.plan or subagents)"
            .to_owned(),
    );
    Verdict::fail(
        format!(
            "the agent sent {total} update(s) that need a client capability the checker did not advertise (over {connections} connections)"
        ),
        lines,
    )
}

pub(super) fn agent_messages(ctx: &mut Ctx<'_>) -> Verdict {
    let (lines, total, _, connections) = gather(ctx, |log| &log.invalid);
    if total == 0 {
        return Verdict::Pass;
    }
    Verdict::fail(
        format!(
            "{total} message(s) from the agent break the schema or a protocol rule (over {connections} connections)"
        ),
        lines,
    )
}
