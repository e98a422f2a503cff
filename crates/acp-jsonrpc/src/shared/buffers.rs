//! The connection's pool of write buffers: what a busy connection keeps for reuse, what an
//! idle one is cut back to, and what is never pooled.

use super::{Shared, lock};

const POOLED_BUFFERS: usize = 64;
/// Buffers up to this size are pooled for reuse...
const POOLED_BUFFER_MAX_CAPACITY: usize = 64 * 1024;
/// ...and a few up to this size too, so that a stream of large messages
/// does not grow a fresh buffer (copying as it doubles) for every message.
const POOLED_LARGE_BUFFER_MAX_CAPACITY: usize = 256 * 1024;
const POOLED_LARGE_BUFFERS: usize = 4;
const NEW_BUFFER_CAPACITY: usize = 256;
/// What an idle connection keeps (the bounds above are a busy one's): buffers up to this
/// size, at most [`IDLE_POOLED_BUFFERS`] of them, once its driver sleeps after a burst.
pub(crate) const IDLE_BUFFER_MAX_CAPACITY: usize = 4 * 1024;
pub(super) const IDLE_POOLED_BUFFERS: usize = 4;

impl Shared {
    pub(crate) fn take_buffer(&self) -> Vec<u8> {
        lock(&self.buffers)
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(NEW_BUFFER_CAPACITY))
    }

    /// Empties the writer's buffer once it is written out. A small one stays where it is (the
    /// next chunk taken swaps it into the pool, with no extra trip through the pool's lock on
    /// the path of every write); a large one goes back now, so that a connection does not
    /// keep a large message's size until its next write.
    pub(crate) fn release_written(&self, buffer: &mut Vec<u8>) {
        if buffer.capacity() > POOLED_BUFFER_MAX_CAPACITY {
            self.recycle(std::mem::take(buffer));
        } else {
            buffer.clear();
        }
    }

    /// The driver sleeps after a burst, all written: the writer's (empty) `buffer` and the
    /// pool are cut back to what an idle connection keeps ([`IDLE_BUFFER_MAX_CAPACITY`]).
    pub(crate) fn release_idle(&self, buffer: &mut Vec<u8>) {
        debug_assert!(buffer.is_empty());
        if buffer.capacity() > IDLE_BUFFER_MAX_CAPACITY {
            *buffer = Vec::new();
        }
        let mut buffers = lock(&self.buffers);
        buffers.retain(|b| b.capacity() <= IDLE_BUFFER_MAX_CAPACITY);
        buffers.truncate(IDLE_POOLED_BUFFERS);
    }

    pub(crate) fn recycle(&self, mut buffer: Vec<u8>) {
        let large = buffer.capacity() > POOLED_BUFFER_MAX_CAPACITY;
        if buffer.capacity() > POOLED_LARGE_BUFFER_MAX_CAPACITY || buffer.capacity() == 0 {
            return;
        }
        buffer.clear();
        let mut buffers = lock(&self.buffers);
        if buffers.len() >= POOLED_BUFFERS {
            return;
        }
        if large {
            let pooled_large = buffers
                .iter()
                .filter(|b| b.capacity() > POOLED_BUFFER_MAX_CAPACITY)
                .count();
            if pooled_large >= POOLED_LARGE_BUFFERS {
                return;
            }
        }
        buffers.push(buffer);
    }
}

#[cfg(test)]
mod tests;
