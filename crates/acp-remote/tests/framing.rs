//! Frames and lines, as properties: whatever the sizes of the messages (around the WebSocket
//! length encodings' boundaries too) and however the bytes are split into writes and reads,
//! one line is one text frame and one text frame is one line.
#![cfg(unix)]

use acp_remote::async_tungstenite::WebSocketStream;
use acp_remote::async_tungstenite::tungstenite::Message;
use acp_remote::async_tungstenite::tungstenite::protocol::Role;
use futures_lite::{AsyncReadExt, AsyncWriteExt, StreamExt, future};
use proptest::prelude::*;
use smol::net::unix::UnixStream;

/// Two ends of a WebSocket over a socket pair: a client and a server.
async fn pair() -> (WebSocketStream<UnixStream>, WebSocketStream<UnixStream>) {
    let (a, b) = UnixStream::pair().unwrap();
    let client = WebSocketStream::from_raw_socket(a, Role::Client, None).await;
    let server = WebSocketStream::from_raw_socket(b, Role::Server, None).await;
    (client, server)
}

/// A message's length: small, at the 7-bit/16-bit/64-bit length encodings' edges, or large.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![
        0usize..300,
        Just(125),
        Just(126),
        Just(127),
        Just(65_535),
        Just(65_536),
        Just(65_537),
        1_000usize..100_000,
    ]
}

/// A message without raw line breaks: text drawn from a few characters, multi-byte included.
fn message() -> impl Strategy<Value = String> {
    (length(), any::<u64>()).prop_map(|(len, seed)| {
        let alphabet = ['a', '{', '"', ' ', '\t', 'é', '字', '\\', '😀'];
        let mut state = seed | 1;
        let mut text = String::with_capacity(len);
        while text.len() < len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push(alphabet[(state % alphabet.len() as u64) as usize]);
        }
        text
    })
}

fn is_blank(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_whitespace())
}

/// Splits `bytes` at the given cut points (taken modulo its length).
fn chunks(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| if bytes.is_empty() { 0 } else { c % bytes.len() })
        .collect();
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| bytes[w[0]..w[1]].to_vec())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Lines written in arbitrary pieces arrive as exactly one text frame each, in order;
    /// blank lines are not sent.
    #[test]
    fn each_line_written_is_one_frame(
        messages in proptest::collection::vec(message(), 0..12),
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        smol::block_on(async {
            let (client, mut server) = pair().await;
            let (_reader, mut writer) = acp_remote::split(client);
            let mut bytes = Vec::new();
            for m in &messages {
                bytes.extend_from_slice(m.as_bytes());
                bytes.push(b'\n');
            }
            let write = async {
                for chunk in chunks(&bytes, &cuts) {
                    writer.write_all(&chunk).await.unwrap();
                }
                writer.close().await.unwrap();
            };
            let read = async {
                let mut frames = Vec::new();
                while let Some(Ok(message)) = server.next().await {
                    match message {
                        Message::Text(text) => frames.push(text.to_string()),
                        Message::Close(_) => break,
                        _ => {}
                    }
                }
                frames
            };
            let ((), frames) = future::zip(write, read).await;
            let expected: Vec<&String> = messages.iter().filter(|m| !is_blank(m)).collect();
            prop_assert_eq!(frames.len(), expected.len());
            for (frame, want) in frames.iter().zip(expected) {
                prop_assert!(frame == want, "a frame of {} bytes differs", frame.len());
            }
            Ok(())
        })?;
    }

    /// Text frames (raw line breaks included) read in arbitrary amounts come out as exactly
    /// one line each, their line breaks turned into tabs; blank and binary frames are skipped.
    #[test]
    fn each_frame_read_is_one_line(
        messages in proptest::collection::vec((message(), any::<bool>(), any::<bool>()), 0..12),
        read_sizes in proptest::collection::vec(1usize..70_000, 1..8),
    ) {
        smol::block_on(async {
            let (mut client, server) = pair().await;
            let (mut reader, _writer) = acp_remote::split(server);
            // Some frames get a raw newline or carriage return in the middle, and a binary
            // frame before them.
            let frames: Vec<String> = messages
                .iter()
                .map(|(m, newline, _)| {
                    let mut m = m.clone();
                    if *newline {
                        let mid = (0..=m.len() / 2).rev().find(|&i| m.is_char_boundary(i)).unwrap_or(0);
                        m.insert_str(mid, "\r\n");
                    }
                    m
                })
                .collect();
            let send = async {
                for (frame, (_, _, binary)) in frames.iter().zip(&messages) {
                    if *binary {
                        client.send(Message::binary(frame.clone().into_bytes())).await.unwrap();
                    }
                    client.send(Message::text(frame.clone())).await.unwrap();
                }
                client.close(None).await.unwrap();
            };
            let read = async {
                let mut out = Vec::new();
                let mut buf = vec![0u8; 70_000];
                for size in read_sizes.iter().cycle() {
                    let n = reader.read(&mut buf[..*size]).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    out.extend_from_slice(&buf[..n]);
                }
                out
            };
            let ((), out) = future::zip(send, read).await;
            let mut expected = Vec::new();
            for frame in frames.iter().filter(|f| !is_blank(f)) {
                expected.extend(frame.bytes().map(|b| if b == b'\n' || b == b'\r' { b'\t' } else { b }));
                expected.push(b'\n');
            }
            prop_assert!(out == expected, "{} bytes read, {} expected", out.len(), expected.len());
            Ok(())
        })?;
    }
}
