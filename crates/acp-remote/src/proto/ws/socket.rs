//! The socket under a WebSocket of ours, with the two bounds the WebSocket library cannot keep
//! by itself:
//!
//! - **Reading pauses while writing is blocked.** Every ping read queues a pong; a peer that
//!   sends pings and reads nothing would otherwise make us queue pongs for ever. While a write
//!   to the socket would block (the peer is not reading), nothing more is read, which is the
//!   workspace's rule: reading pauses only where the peer stops taking what we send.
//! - **Unfinished messages are bounded across connections.** The bytes read since the last
//!   message handed over (an unfinished frame, the fragments of a message, or a finished
//!   message until the runtime asks for the next) are what a peer makes us hold. Each connection
//!   holds up to [`FREE_HELD`] of its own; beyond that it draws on the server's memory
//!   ceiling ([`HeldPool`]), at most its message limit, and a read that finds the ceiling
//!   spent fails, which closes that connection with 1009.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures_io::{AsyncRead, AsyncWrite};

use crate::net::NetStream;
use crate::proto::ws::pieces::Repiece;
use crate::share::{Ceiling, Kind};

/// The socket under our own WebSockets (server and client).
pub(crate) type WsStream = WsSocket<NetStream>;

/// What one connection may hold of a message without drawing on the server's ceiling: a
/// small buffer's worth.
pub(crate) const FREE_HELD: usize = 64 * 1024;

/// What all of a server's WebSocket connections hold of their messages beyond [`FREE_HELD`]
/// each, drawn from the server's memory ceiling; one connection draws at most `share` (its
/// message limit).
#[derive(Debug)]
pub(crate) struct HeldPool {
    ceiling: Arc<Ceiling>,
    share: usize,
}

impl HeldPool {
    pub(crate) fn new(ceiling: Arc<Ceiling>, share: usize) -> Arc<HeldPool> {
        Arc::new(HeldPool { ceiling, share })
    }

    /// Takes `bytes` for a connection that then draws `holder_after` (the share rule:
    /// src/share.rs).
    fn try_take(&self, bytes: usize, holder_after: usize) -> bool {
        self.ceiling
            .try_take(Kind::WebSocketMessages, bytes, holder_after)
    }

    fn give_back(&self, bytes: usize) {
        self.ceiling.give_back(Kind::WebSocketMessages, bytes);
    }

    /// Bytes drawn from the ceiling now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.ceiling.held(Kind::WebSocketMessages)
    }
}

/// What the reading half tells the socket: a message is complete, the bytes read so far are
/// no longer held.
#[derive(Debug)]
pub(crate) struct Held {
    state: Mutex<HeldState>,
    pool: Option<Arc<HeldPool>>,
}

#[derive(Debug, Default)]
struct HeldState {
    /// Bytes read since the last complete message.
    read: usize,
    /// Of those, drawn from the pool.
    charged: usize,
}

impl Held {
    pub(crate) fn new(pool: Option<Arc<HeldPool>>) -> Arc<Held> {
        Arc::new(Held {
            state: Mutex::default(),
            pool,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HeldState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A message was handed over (a text message once the runtime asks for the next, a
    /// binary one or a close when read): what was held is released. Control frames do not count:
    /// they may come between the fragments of a message.
    pub(crate) fn message_done(&self) {
        let mut state = self.lock();
        state.read = 0;
        let charged = std::mem::take(&mut state.charged);
        drop(state);
        if let Some(pool) = &self.pool {
            pool.give_back(charged);
        }
    }

    /// `bytes` more were read; `false` when the pool cannot cover them.
    fn add(&self, bytes: usize) -> bool {
        let mut state = self.lock();
        state.read = state.read.saturating_add(bytes);
        let Some(pool) = &self.pool else {
            return true;
        };
        let need = state.read.saturating_sub(FREE_HELD);
        if need > state.charged {
            if need > pool.share || !pool.try_take(need - state.charged, need) {
                return false;
            }
            state.charged = need;
        }
        true
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.message_done();
    }
}

/// The error of a read the pool could not cover.
pub(crate) fn pool_spent() -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        "unfinished WebSocket messages exceed the server's budget",
    )
}

/// A socket under a WebSocket: reads pause while a write is blocked, and the bytes read count
/// against [`Held`].
#[derive(Debug)]
pub(crate) struct WsSocket<S> {
    /// Read through the re-slicer, so that the WebSocket library never holds a large frame
    /// buffer (src/proto/ws/pieces.rs); written directly.
    inner: Repiece<S>,
    /// Whether reads go through the re-slicer (the server's sockets) or straight to the
    /// socket (the `Connector`'s: there the re-slicer made about one connection in twenty
    /// stall under load, a cause not yet found; a client trusts its server more).
    repiece: bool,
    held: Arc<Held>,
    write_blocked: bool,
    /// The reader paused by a blocked write, woken when a write goes through.
    paused_reader: Option<Waker>,
}

impl<S> WsSocket<S> {
    pub(crate) fn new(inner: S, held: Arc<Held>, repiece: bool) -> Self {
        WsSocket {
            inner: Repiece::new(inner),
            repiece,
            held,
            write_blocked: false,
            paused_reader: None,
        }
    }

    pub(crate) fn get_mut(&mut self) -> &mut S {
        self.inner.get_mut()
    }

    fn wrote(&mut self) {
        self.write_blocked = false;
        if let Some(reader) = self.paused_reader.take() {
            reader.wake();
        }
    }

    fn written<T>(&mut self, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match &poll {
            Poll::Pending => self.write_blocked = true,
            Poll::Ready(_) => self.wrote(),
        }
        poll
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WsSocket<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // What was read already is handed on whatever the writes do (as the WebSocket
        // library's own buffer is): only reading more from the socket pauses, and a frame
        // already here could be the one that lets the writes go on.
        if this.write_blocked && !this.inner.has_buffered() {
            // Woken by the write that unblocks (or by the socket becoming writable, through
            // the waker the blocked write registered).
            this.paused_reader = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = if this.repiece {
            std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?
        } else {
            std::task::ready!(Pin::new(this.inner.get_mut()).poll_read(cx, buf))?
        };
        if !this.held.add(n) {
            return Poll::Ready(Err(pool_spent()));
        }
        Poll::Ready(Ok(n))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WsSocket<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(this.inner.get_mut()).poll_write(cx, buf);
        this.written(poll)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(this.inner.get_mut()).poll_flush(cx);
        this.written(poll)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(this.inner.get_mut()).poll_close(cx);
        this.written(poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_covers_what_each_connection_holds_beyond_its_own_share() {
        // 4 MiB: the last 512 KiB kept for holders drawing at most a sixth of it.
        let ceiling = Ceiling::new(4 << 20, 1);
        let pool = HeldPool::new(ceiling.clone(), 2 << 20);
        let a = Held::new(Some(pool.clone()));
        let b = Held::new(Some(pool.clone()));
        let small = Held::new(Some(pool.clone()));
        assert!(a.add(FREE_HELD));
        assert_eq!(pool.used(), 0);
        assert!(a.add(2 << 20));
        assert_eq!(pool.used(), 2 << 20);
        assert!(b.add(FREE_HELD + (3 << 19)));
        // The general part is spent: refused to a connection drawing much...
        assert!(!b.add(1));
        // ...not to one drawing little.
        assert!(small.add(FREE_HELD + (64 << 10)));
        small.message_done();
        a.message_done();
        assert_eq!(pool.used(), 3 << 19);
        assert!(b.add(1));
        // Beyond its share: refused, whatever the ceiling has left.
        assert!(!b.add(2 << 20));
        drop(b);
        assert_eq!((pool.used(), ceiling.budget().used()), (0, 0));
    }
}
