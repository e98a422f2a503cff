//! `GET /metrics` (the `metrics` feature): the server's counters in the Prometheus text format,
//! rendered by `prometheus-client` from a snapshot taken at each scrape (the counters
//! themselves are the server's own atomics, kept with or without this feature).
//!
//! Every name begins with `acp_remote_`:
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `connections` | gauge: open now | `transport` (`websocket`, `streamable_http`) |
//! | `connections_opened_total` | counter | `transport` |
//! | `sessions` | gauge: created (or loaded) on open connections | |
//! | `turns_running` | gauge: `session/prompt` requests not yet answered | |
//! | `turns_total` | counter: prompts answered | |
//! | `budget_used_bytes`, `budget_limit_bytes` | gauges | `budget` (`sse_queues`, `post_bodies`, `initialize_bodies`, `websocket_messages`, `runtime` (`serve_agent`'s requests in flight, answers waiting and sessions): what each holds of the server's memory ceiling, whose size is their limit; `memory_ceiling`: their sum; `sse_replay`: the connections' replay windows, beside the ceiling) |
//! | `refusals_total` | counter | `reason` (`max_connections`, `draining`, `sockets`, `unauthenticated`, `origin`, `not_found`, `too_large`, `bad_request`) |
//! | `draining` | gauge: 1 while draining | |

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::server::conn::{ServerCtx, lock_http};
use crate::share::Kind;

type Labels = Vec<(String, String)>;

fn label(name: &str, value: &str) -> Labels {
    vec![(name.to_owned(), value.to_owned())]
}

fn gauge(registry: &mut Registry, name: &str, help: &str, value: u64) {
    let metric = Gauge::<i64>::default();
    metric.set(i64::try_from(value).unwrap_or(i64::MAX));
    registry.register(name, help, metric);
}

/// The text of one scrape.
pub(crate) fn render(ctx: &ServerCtx) -> String {
    let snapshot = ctx.shared.ops.snapshot();
    let mut registry = Registry::with_prefix("acp_remote");

    let open = Family::<Labels, Gauge>::default();
    let opened = Family::<Labels, Counter>::default();
    for (transport, now, all) in &snapshot.connections {
        open.get_or_create(&label("transport", transport))
            .set(i64::try_from(*now).unwrap_or(i64::MAX));
        opened
            .get_or_create(&label("transport", transport))
            .inc_by(*all);
    }
    registry.register("connections", "ACP connections open now", open);
    registry.register(
        "connections_opened",
        "ACP connections opened since the server started",
        opened,
    );
    gauge(
        &mut registry,
        "sessions",
        "Sessions created or loaded on the connections open now",
        snapshot.sessions,
    );
    gauge(
        &mut registry,
        "turns_running",
        "Prompt turns (session/prompt requests) not yet answered",
        snapshot.turns_running,
    );
    let turns = Counter::<u64>::default();
    turns.inc_by(snapshot.turns_total);
    registry.register("turns", "Prompt turns answered", turns);

    let used = Family::<Labels, Gauge>::default();
    let limit = Family::<Labels, Gauge>::default();
    for (budget, now, max) in budgets(ctx) {
        used.get_or_create(&label("budget", budget))
            .set(i64::try_from(now).unwrap_or(i64::MAX));
        limit
            .get_or_create(&label("budget", budget))
            .set(i64::try_from(max).unwrap_or(i64::MAX));
    }
    registry.register(
        "budget_used_bytes",
        "Bytes held against each server-wide budget (all but sse_replay are parts of memory_ceiling)",
        used,
    );
    registry.register(
        "budget_limit_bytes",
        "The size of each budget (the memory ceiling's for its parts; sse_replay: the sum of the connections' windows)",
        limit,
    );

    let refusals = Family::<Labels, Counter>::default();
    for (reason, n) in &snapshot.refusals {
        refusals.get_or_create(&label("reason", reason)).inc_by(*n);
    }
    registry.register(
        "refusals",
        "Requests and sockets refused, by reason",
        refusals,
    );
    gauge(
        &mut registry,
        "draining",
        "1 while the server drains (its health endpoint answers 503)",
        u64::from(snapshot.draining),
    );

    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut text, &registry);
    text
}

/// The bytes held against each server-wide budget now, and the budget: (name, used, limit).
/// Everything but `sse_replay` is held of the server's memory ceiling: each kind's part
/// (with the ceiling's size as its limit), then `memory_ceiling`, their sum. `sse_replay`
/// is one window per connection, summed.
pub(crate) fn budgets(ctx: &ServerCtx) -> Vec<(&'static str, u64, u64)> {
    let shared = &ctx.shared;
    let (mut kept, mut kept_limit) = (0u64, 0u64);
    for conn in lock_http(shared).values() {
        kept += conn.replay_used() as u64;
        kept_limit += conn.replay_limit() as u64;
    }
    let ceiling = &shared.ceiling;
    let total = ceiling.budget().used();
    let limit = ceiling.budget().limit() as u64;
    let parts = [
        ("sse_queues", ceiling.held(Kind::SseQueues)),
        ("post_bodies", ceiling.held(Kind::PostBodies)),
        ("initialize_bodies", ceiling.held(Kind::InitializeBodies)),
        ("websocket_messages", ceiling.held(Kind::WebSocketMessages)),
    ];
    let named: usize = parts.iter().map(|(_, n)| n).sum();
    let mut budgets: Vec<_> = parts
        .into_iter()
        .map(|(name, used)| (name, used as u64, limit))
        .collect();
    // What the ceiling holds beside the kinds above: what the runtime holds for
    // `serve_agent`'s clients (requests in flight, answers waiting, sessions).
    budgets.push(("runtime", total.saturating_sub(named) as u64, limit));
    budgets.push(("memory_ceiling", total as u64, limit));
    budgets.push(("sse_replay", kept, kept_limit));
    budgets
}
