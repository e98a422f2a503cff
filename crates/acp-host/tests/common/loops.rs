//! What the pipe loops' suites share (tests/pipe_loop.rs and tests/pipe_set.rs,
//! `#[path]`-included): a watchdog that turns a lost wake-up into a failure, a thread that wakes
//! a loop round by round, and a reader that answers each read until end of input.
#![allow(dead_code)]

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Aborts the test process if `seconds` pass first: a lost wake-up is a hang, and a hang must
/// fail the run instead of stalling it.
pub fn watchdog(seconds: u64, what: &'static str) {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(seconds));
        eprintln!("{what}: still running after {seconds} s (a lost wake-up?)");
        std::process::abort();
    });
}

/// A thread that sends the numbers `0..rounds` on a channel, each after the previous one was
/// acknowledged and after spinning a varying while, so that the wake-ups land before, during
/// and after the loop's entry into its sleep. Gives the channel's receiving end, the sender of
/// acknowledgements and the thread.
pub fn jittered_wake_ups(
    rounds: usize,
) -> (
    async_channel::Receiver<usize>,
    mpsc::Sender<usize>,
    JoinHandle<()>,
) {
    let (sender, receiver) = async_channel::bounded::<usize>(1);
    let (ack, acks) = mpsc::channel::<usize>();
    let thread = std::thread::spawn(move || {
        for round in 0..rounds {
            for _ in 0..(round % 13) * 50 {
                std::hint::spin_loop();
            }
            if round % 5 == 0 {
                std::thread::yield_now();
            }
            sender.send_blocking(round).unwrap();
            assert_eq!(acks.recv().unwrap(), round);
        }
    });
    (receiver, ack, thread)
}

/// Reads `reader` to its end, writing a line to `writer` after each read (as a peer that
/// answers what it reads would); everything read.
pub async fn read_to_end_answering(
    reader: &mut (impl AsyncRead + Unpin),
    writer: &mut (impl AsyncWrite + Unpin),
) -> Vec<u8> {
    let mut buf = [0u8; 4096];
    let mut all = Vec::new();
    loop {
        match reader.read(&mut buf).await.unwrap() {
            0 => return all,
            n => all.extend_from_slice(&buf[..n]),
        }
        writer.write_all(b"ack\n").await.unwrap();
    }
}

/// Reads `reader` to its end, `buffer` bytes at a time at most; everything read.
pub async fn read_to_end_by(reader: &mut (impl AsyncRead + Unpin), buffer: usize) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = vec![0u8; buffer];
    loop {
        match reader.read(&mut buf).await.unwrap() {
            0 => return all,
            n => all.extend_from_slice(&buf[..n]),
        }
    }
}
