//! How the conductor learns that its client is gone: the end of the client's input. The
//! JSON-RPC connection alone would keep serving what is in flight after its input ended
//! (a peer may stop sending and still read answers), but a conductor's client that closed
//! its end of the pipe has gone, and the chain must not run on for nobody.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{AsyncBufRead, AsyncRead};

use acp_jsonrpc::Latch;

/// The client's reader, setting `ended` once it reports the end of its input (or fails).
pub(crate) struct WatchedInput<R> {
    reader: R,
    ended: Latch,
}

impl<R> WatchedInput<R> {
    pub(crate) fn new(reader: R, ended: Latch) -> Self {
        WatchedInput { reader, ended }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for WatchedInput<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let read = Pin::new(&mut this.reader).poll_read(cx, buf);
        match &read {
            Poll::Ready(Ok(0)) if !buf.is_empty() => this.ended.set(),
            Poll::Ready(Err(error)) if error.kind() != io::ErrorKind::Interrupted => {
                this.ended.set();
            }
            _ => {}
        }
        read
    }
}

impl<R: AsyncBufRead + Unpin> AsyncBufRead for WatchedInput<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        let filled = Pin::new(&mut this.reader).poll_fill_buf(cx);
        match &filled {
            Poll::Ready(Ok([])) => this.ended.set(),
            Poll::Ready(Err(error)) if error.kind() != io::ErrorKind::Interrupted => {
                this.ended.set();
            }
            _ => {}
        }
        filled
    }

    fn consume(self: Pin<&mut Self>, amount: usize) {
        Pin::new(&mut self.get_mut().reader).consume(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::AsyncBufReadExt;

    #[test]
    fn the_end_of_input_sets_the_latch_and_data_does_not() {
        smol::block_on(async {
            let ended = Latch::new();
            let mut input = WatchedInput::new(&b"line\n"[..], ended.clone());
            let mut line = String::new();
            input.read_line(&mut line).await.unwrap();
            assert_eq!(line, "line\n");
            assert!(!ended.is_set());
            line.clear();
            assert_eq!(input.read_line(&mut line).await.unwrap(), 0);
            assert!(ended.is_set());
        });
    }
}
