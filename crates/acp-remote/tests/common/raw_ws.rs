//! WebSockets opened and framed by hand, as an attacker would shape them.

use std::net::SocketAddr;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt, future};
use smol::net::TcpStream;

use super::{upgrade_request, within};

/// A WebSocket opened by hand, so that frames can be shaped as an attacker would.
pub async fn raw_websocket(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(upgrade_request("/acp", "").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = within("the 101", stream.read(&mut byte)).await.unwrap();
        assert_eq!(n, 1, "the server closed during the upgrade");
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{head:?}");
    stream
}

/// A client frame (masked with a zero key, which leaves the payload as it is).
pub fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    frame_head(fin, opcode, payload.len())
        .into_iter()
        .chain(payload.iter().copied())
        .collect()
}

/// A client frame's head announcing `len` bytes of payload.
pub fn frame_head(fin: bool, opcode: u8, len: usize) -> Vec<u8> {
    let mut out = vec![(u8::from(fin) << 7) | opcode];
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= 0xFFFF {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&[0, 0, 0, 0]);
    out
}

/// Reads server frames until a close frame; its status code (`None` if the socket ends
/// first).
pub async fn close_code(stream: &mut TcpStream) -> Option<u16> {
    let payload = until_frame(stream, 0x8).await?;
    (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]))
}

/// Reads server frames until one with `opcode`: its payload (`None` if the socket ends
/// first).
pub async fn until_frame(stream: &mut TcpStream, opcode: u8) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while buf.len() >= 2 {
            let (len, at) = match buf[1] & 0x7F {
                126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
                127 if buf.len() >= 10 => (
                    u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize,
                    10,
                ),
                126 | 127 => break,
                n => (n as usize, 2),
            };
            if buf.len() < at + len {
                break;
            }
            if buf[0] & 0x0F == opcode {
                return Some(buf[at..at + len].to_vec());
            }
            buf.drain(..at + len);
        }
        match within("a frame", stream.read(&mut chunk)).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Reads server frames until a whole data message (its fragments joined): the payload and
/// how many frames carried it (`None` if the socket ends first).
pub async fn next_message(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
) -> Option<(Vec<u8>, usize)> {
    let mut message = Vec::new();
    let mut frames = 0;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        while pending.len() >= 2 {
            let (len, at) = match pending[1] & 0x7F {
                126 if pending.len() >= 4 => {
                    (u16::from_be_bytes([pending[2], pending[3]]) as usize, 4)
                }
                127 if pending.len() >= 10 => (
                    u64::from_be_bytes(pending[2..10].try_into().unwrap()) as usize,
                    10,
                ),
                126 | 127 => break,
                n => (n as usize, 2),
            };
            if pending.len() < at + len {
                break;
            }
            let (fin, opcode) = (pending[0] & 0x80 != 0, pending[0] & 0x0F);
            if opcode < 0x8 {
                message.extend_from_slice(&pending[at..at + len]);
                frames += 1;
            }
            pending.drain(..at + len);
            if opcode < 0x8 && fin {
                return Some((message, frames));
            }
        }
        match within("a message", stream.read(&mut chunk)).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Writes `bytes`, or as much of them as the server takes before it stops reading for
/// `patience`: how much was written.
pub async fn write_until_stalled(
    stream: &mut TcpStream,
    bytes: &[u8],
    patience: Duration,
) -> usize {
    let mut written = 0;
    while written < bytes.len() {
        let end = (written + 64 * 1024).min(bytes.len());
        let write = async { Some(stream.write(&bytes[written..end]).await) };
        let stall = async {
            smol::Timer::after(patience).await;
            None
        };
        match future::or(write, stall).await {
            Some(Ok(n)) if n > 0 => written += n,
            _ => break,
        }
    }
    written
}
