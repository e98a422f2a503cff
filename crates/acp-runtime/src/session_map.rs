//! [`SessionMap`]: maps keyed by session id with a fast hash, for the client's update routes
//! and the agent's sessions.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use acp_types::SessionId;

/// A map keyed by session ids, hashed with [`SessionIdHasher`].
pub(crate) type SessionMap<V> = HashMap<SessionId, V, BuildHasherDefault<SessionIdHasher>>;

/// An FxHash-style multiply-rotate hash, a word at a time. Session ids are looked up on hot
/// paths: the client routes every update by its session id, the agent finds the session's
/// running turn for every call it makes to the client, and SipHash cost ~190 instructions per
/// lookup, more than the rest of it. Flooding does not apply, since every map keyed by it is
/// bounded in entries: the client's `known` holds the sessions this client opened (so as many
/// entries as the application chose) and at most
/// [`ClientOptions::with_max_subagents`](crate::client::ClientOptions::with_max_subagents)
/// subagents the agent named, `unfollowed` as many more, and `early` at most
/// `UNOPENED_SESSION_LIMIT`; the agent's sessions are capped per connection
/// ([`DEFAULT_MAX_SESSIONS`](crate::agent::DEFAULT_MAX_SESSIONS) by default). Colliding keys among so few entries cost
/// nothing worth attacking.
#[derive(Default)]
pub(crate) struct SessionIdHasher(u64);

impl SessionIdHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for SessionIdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut tail = [0u8; 8];
            tail[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(tail));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}
