//! Large WebSocket data frames handed to the WebSocket library as fragments of at most
//! [`PIECE`] bytes (16 KiB), so that no buffer of its stays large after a large message.
//!
//! tungstenite reads a frame into one buffer reserved for the frame's whole length and keeps
//! that allocation for the connection's life (the frame's payload is split off it, and the
//! rest of the buffer keeps pointing into it): a peer that sent one 60 MiB frame makes the
//! connection hold 60 MiB while it idles. A fragmented message does not have that cost: each
//! fragment's payload is appended to the message being collected, which is handed over whole
//! and freed with it. So the socket under the library rewrites the frame headers it reads:
//! a data frame longer than [`PIECE`] becomes a run of frames of [`PIECE`] bytes (the first
//! with the frame's opcode, the rest continuations, the frame's FIN on the last), with the
//! same masking key (pieces are multiples of four bytes long, so the key stays aligned) and
//! the payload bytes passed through untouched. Control frames and smaller data frames pass
//! through as they are. RFC 6455 (5.4) lets intermediaries refragment in the same way; the
//! message the library delivers, and every check it makes (UTF-8, sizes, interleaved control
//! frames, masking), are unchanged.
//!
//! The server reads every WebSocket through it; the `Connector` does not yet (`proto/ws/socket.rs`
//! says why).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_io::AsyncRead;

/// The largest frame the WebSocket library is handed: larger data frames are cut to this.
/// The library's read and write buffers start smaller (`upgrade::websocket_config`) and grow
/// for a large message to about twice this at most; a multiple of four, so that a piece keeps
/// its frame's masking key aligned.
pub(crate) const PIECE: usize = 16 * 1024;

/// The longest frame header (2 bytes, 8 of extended length, 4 of masking key).
const MAX_HEADER: usize = 14;

/// Where the reader is in the frames it passes on.
#[derive(Debug, Clone, Copy)]
enum At {
    /// Reading a frame header.
    Header,
    /// Passing on payload bytes: `piece` left of the current (perhaps synthetic) frame,
    /// `rest` of the original frame after it.
    Payload {
        piece: u64,
        rest: u64,
        /// The original frame's FIN, for its last piece.
        fin: bool,
        /// The first header byte's RSV bits, and the second's mask bit with the key.
        rsv: u8,
        mask: Option<[u8; 4]>,
    },
}

/// A reader of WebSocket frames that cuts large data frames into pieces (see the module).
#[derive(Debug)]
pub(crate) struct Repiece<S> {
    inner: S,
    at: At,
    /// Header bytes read and not yet passed on (an incomplete header, or one read whole).
    header: [u8; MAX_HEADER],
    header_len: usize,
    /// Header bytes to hand out before anything else: `out[out_at..out_len]`.
    out: [u8; MAX_HEADER],
    out_at: usize,
    out_len: usize,
    /// Bytes read from the socket ahead of where the frames are: `ahead[ahead_at..ahead_len]`,
    /// so that small frames cost one read between them, not one per header and payload.
    /// Allocated only while it holds bytes (or a read into it is under way): a connection
    /// waiting for its peer keeps none.
    ahead: Option<Box<[u8]>>,
    ahead_at: usize,
    ahead_len: usize,
}

/// How much is read from the socket at once for headers and small payloads.
const AHEAD: usize = 4096;

impl<S> Repiece<S> {
    pub(crate) fn new(inner: S) -> Self {
        Repiece {
            inner,
            at: At::Header,
            header: [0; MAX_HEADER],
            header_len: 0,
            out: [0; MAX_HEADER],
            out_at: 0,
            out_len: 0,
            ahead: None,
            ahead_at: 0,
            ahead_len: 0,
        }
    }

    pub(crate) fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Whether bytes already read from the socket wait here (a header to hand out, or bytes
    /// read ahead): reading them needs nothing of the socket.
    pub(crate) fn has_buffered(&self) -> bool {
        self.out_at < self.out_len || self.ahead_at < self.ahead_len
    }

    /// Fills `dst` with the next bytes of the socket: those read ahead first; a large `dst`
    /// straight from the socket (large payloads are not copied twice), a small one through the
    /// read-ahead buffer.
    fn poll_take(&mut self, cx: &mut Context<'_>, dst: &mut [u8]) -> Poll<io::Result<usize>>
    where
        S: AsyncRead + Unpin,
    {
        if self.ahead_at == self.ahead_len {
            if dst.len() >= AHEAD {
                return Pin::new(&mut self.inner).poll_read(cx, dst);
            }
            let ahead = self
                .ahead
                .get_or_insert_with(|| vec![0; AHEAD].into_boxed_slice());
            let n = match Pin::new(&mut self.inner).poll_read(cx, ahead) {
                Poll::Ready(Ok(n)) if n > 0 => n,
                other => {
                    self.ahead = None;
                    return other;
                }
            };
            self.ahead_at = 0;
            self.ahead_len = n;
        }
        // Bytes are held (`ahead_at < ahead_len`) only in a buffer.
        let Some(ahead) = &self.ahead else {
            return Poll::Ready(Ok(0));
        };
        let n = (self.ahead_len - self.ahead_at).min(dst.len());
        dst[..n].copy_from_slice(&ahead[self.ahead_at..self.ahead_at + n]);
        self.ahead_at += n;
        if self.ahead_at == self.ahead_len {
            self.ahead = None;
        }
        Poll::Ready(Ok(n))
    }

    /// How long the header in `header[..header_len]` is, once enough of it is known.
    fn header_needed(&self) -> usize {
        if self.header_len < 2 {
            return 2;
        }
        let masked = self.header[1] & 0x80 != 0;
        let extended = match self.header[1] & 0x7f {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        2 + extended + if masked { 4 } else { 0 }
    }

    /// The complete header in `header`: queues what to hand out and where the payload goes.
    fn header_read(&mut self) {
        let h = &self.header[..self.header_len];
        let (first, second) = (h[0], h[1]);
        let (len, after) = match second & 0x7f {
            126 => (u64::from(u16::from_be_bytes([h[2], h[3]])), 4),
            127 => (
                u64::from_be_bytes(h[2..10].try_into().unwrap_or_default()),
                10,
            ),
            n => (u64::from(n), 2),
        };
        let mask = (second & 0x80 != 0).then(|| {
            let mut key = [0; 4];
            key.copy_from_slice(&h[after..after + 4]);
            key
        });
        let opcode = first & 0x0f;
        let control = opcode & 0x08 != 0;
        if control || len <= PIECE as u64 {
            // Passed on as it is (including headers the library will refuse).
            self.out[..self.header_len].copy_from_slice(h);
            self.out_at = 0;
            self.out_len = self.header_len;
            self.header_len = 0;
            self.at = At::Payload {
                piece: len,
                rest: 0,
                fin: first & 0x80 != 0,
                rsv: first & 0x70,
                mask,
            };
            return;
        }
        self.header_len = 0;
        self.at = At::Payload {
            piece: 0,
            rest: len,
            fin: first & 0x80 != 0,
            rsv: first & 0x70,
            mask,
        };
        self.next_piece(Some(opcode));
    }

    /// Queues the header of the next piece of a cut frame (`opcode` for the first, a
    /// continuation after it).
    fn next_piece(&mut self, opcode: Option<u8>) {
        let At::Payload {
            piece,
            rest,
            fin,
            rsv,
            mask,
        } = &mut self.at
        else {
            return;
        };
        let len = (*rest).min(PIECE as u64);
        *rest -= len;
        *piece = len;
        let last = *rest == 0;
        let mut out = [0u8; MAX_HEADER];
        out[0] = if last && *fin { 0x80 } else { 0 } | *rsv | opcode.unwrap_or(0);
        let mut n = 2;
        let mask_bit = if mask.is_some() { 0x80 } else { 0 };
        if len < 126 {
            out[1] = mask_bit | len as u8;
        } else if let Ok(len) = u16::try_from(len) {
            out[1] = mask_bit | 126;
            out[2..4].copy_from_slice(&len.to_be_bytes());
            n = 4;
        } else {
            out[1] = mask_bit | 127;
            out[2..10].copy_from_slice(&len.to_be_bytes());
            n = 10;
        }
        if let Some(key) = mask {
            out[n..n + 4].copy_from_slice(key);
            n += 4;
        }
        self.out = out;
        self.out_at = 0;
        self.out_len = n;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Repiece<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        loop {
            if this.out_at < this.out_len {
                let n = (this.out_len - this.out_at).min(buf.len());
                buf[..n].copy_from_slice(&this.out[this.out_at..this.out_at + n]);
                this.out_at += n;
                return Poll::Ready(Ok(n));
            }
            match this.at {
                At::Payload { piece: 0, rest, .. } => {
                    if rest > 0 {
                        this.next_piece(None);
                    } else {
                        this.at = At::Header;
                    }
                }
                At::Payload { piece, .. } => {
                    let want = buf.len().min(usize::try_from(piece).unwrap_or(usize::MAX));
                    let n = ready!(this.poll_take(cx, &mut buf[..want]))?;
                    if let At::Payload { piece, .. } = &mut this.at {
                        *piece -= n as u64;
                    }
                    return Poll::Ready(Ok(n));
                }
                At::Header => {
                    // The length of the header is known once its second byte is.
                    let needed = this.header_needed();
                    if this.header_len == needed {
                        this.header_read();
                        continue;
                    }
                    let mut header = this.header;
                    let n = ready!(this.poll_take(cx, &mut header[this.header_len..needed]))?;
                    this.header = header;
                    if n == 0 {
                        // The end of input: what was read of a header is handed on, for the
                        // library to see the stream end mid-frame as it would.
                        if this.header_len > 0 {
                            let len = this.header_len;
                            this.out[..len].copy_from_slice(&this.header[..len]);
                            this.out_at = 0;
                            this.out_len = len;
                            this.header_len = 0;
                            continue;
                        }
                        return Poll::Ready(Ok(0));
                    }
                    this.header_len += n;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::AsyncReadExt;

    /// A client frame: FIN, opcode, masked with `key`.
    fn frame(fin: bool, opcode: u8, payload: &[u8], key: [u8; 4]) -> Vec<u8> {
        let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
        let len = payload.len();
        if len < 126 {
            out.push(0x80 | len as u8);
        } else if len <= 0xffff {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            out.push(0x80 | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
        out.extend_from_slice(&key);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        out
    }

    /// Reads `wire` through the re-slicer with reads of `chunk` bytes.
    fn through(wire: &[u8], chunk: usize) -> Vec<u8> {
        smol::block_on(async {
            let mut reader = Repiece::new(futures_lite::io::Cursor::new(wire.to_vec()));
            let mut out = Vec::new();
            let mut buf = vec![0; chunk];
            loop {
                let n = reader.read(&mut buf).await.unwrap();
                if n == 0 {
                    return out;
                }
                out.extend_from_slice(&buf[..n]);
            }
        })
    }

    /// Decodes client frames: (fin, opcode, unmasked payload) each.
    fn frames(mut wire: &[u8]) -> Vec<(bool, u8, Vec<u8>)> {
        let mut out = Vec::new();
        while !wire.is_empty() {
            let (fin, opcode) = (wire[0] & 0x80 != 0, wire[0] & 0x0f);
            let (len, mut at) = match wire[1] & 0x7f {
                126 => (u16::from_be_bytes([wire[2], wire[3]]) as usize, 4),
                127 => (
                    u64::from_be_bytes(wire[2..10].try_into().unwrap()) as usize,
                    10,
                ),
                n => (n as usize, 2),
            };
            let key: [u8; 4] = wire[at..at + 4].try_into().unwrap();
            at += 4;
            let payload = wire[at..at + len]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ key[i % 4])
                .collect();
            out.push((fin, opcode, payload));
            wire = &wire[at + len..];
        }
        out
    }

    /// The read-ahead buffer exists while it holds bytes read from the socket and not yet
    /// passed on, and not after: a connection waiting for its peer keeps none.
    #[test]
    fn the_read_ahead_is_held_only_while_it_holds_bytes() {
        let key = [9, 8, 7, 6];
        let mut wire = frame(true, 0x1, b"one", key);
        wire.extend(frame(true, 0x1, b"two", key));
        smol::block_on(async {
            let mut reader = Repiece::new(futures_lite::io::Cursor::new(wire.clone()));
            assert!(reader.ahead.is_none());
            let mut first = [0u8; 4];
            let n = reader.read(&mut first).await.unwrap();
            assert!(reader.ahead.is_some(), "both frames were read ahead");
            let mut rest = Vec::new();
            reader.read_to_end(&mut rest).await.unwrap();
            assert!(reader.ahead.is_none());
            let mut passed = first[..n].to_vec();
            passed.extend(rest);
            assert_eq!(passed, wire);
        });
    }

    #[test]
    fn a_large_frame_becomes_pieces_and_small_frames_pass_unchanged() {
        let big: Vec<u8> = (0..PIECE * 2 + 10).map(|i| b'a' + (i % 26) as u8).collect();
        let key = [1, 2, 3, 4];
        let mut wire = frame(true, 0x1, b"small", key);
        wire.extend(frame(true, 0x1, &big, key));
        wire.extend(frame(true, 0x9, b"ping", key));
        // A fragmented message whose first fragment is large.
        wire.extend(frame(false, 0x2, &big, key));
        wire.extend(frame(true, 0x0, b"end", key));
        for chunk in [1, 7, 4096, 1 << 20] {
            let got = frames(&through(&wire, chunk));
            let summary: Vec<(bool, u8, usize)> =
                got.iter().map(|(f, o, p)| (*f, *o, p.len())).collect();
            assert_eq!(
                summary,
                [
                    (true, 1, 5),
                    (false, 1, PIECE),
                    (false, 0, PIECE),
                    (true, 0, 10),
                    (true, 9, 4),
                    (false, 2, PIECE),
                    (false, 0, PIECE),
                    (false, 0, 10),
                    (true, 0, 3),
                ],
                "reads of {chunk}"
            );
            let text: Vec<u8> = got[1..4].iter().flat_map(|(_, _, p)| p.clone()).collect();
            assert_eq!(text, big);
        }
    }
}
