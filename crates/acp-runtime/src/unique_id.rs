//! Ids unique within this process, for what this side names itself: session ids
//! (`agent::new_session_id`), v2 message ids and v2 idempotency keys.

use std::sync::atomic::{AtomicU64, Ordering};

/// `<prefix>_<counter>_<random>`: one counter for every kind of id, and the clock's
/// nanoseconds mixed with the process id, so that two processes rarely meet.
pub(crate) fn unique_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
        ^ std::process::id();
    format!("{prefix}_{n}_{nonce:08x}")
}
