//! The pipe loop over a set of pairs (`pipe_loop::PipeSet`) with real pipes and threads: every
//! byte in order through several pairs at once, pairs added while the loop runs and dropped
//! while their peers still write, wake-ups from other threads, timers, full pipes, and one loop
//! per set.
#![cfg(target_os = "linux")]

use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use acp_host::pipe_loop::{PipeReader, PipeSet, PipeWriter};
use futures_lite::{AsyncReadExt, AsyncWriteExt, future};
use proptest::prelude::*;

#[path = "common/loops.rs"]
mod loops;
use loops::{jittered_wake_ups, read_to_end_answering, read_to_end_by, watchdog};

/// A pair added to `set` whose other ends a thread connects, echoing everything it reads back
/// until end of input: what a child process with stdin and stdout would be.
fn echo_pair(set: &PipeSet) -> (PipeReader, PipeWriter, JoinHandle<u64>) {
    let (ours_read, theirs_write) = std::io::pipe().unwrap();
    let (theirs_read, ours_write) = std::io::pipe().unwrap();
    let echo = std::thread::spawn(move || {
        let (mut input, mut output) = (theirs_read, theirs_write);
        std::io::copy(&mut input, &mut output).unwrap()
    });
    let (reader, writer) = set
        .add(OwnedFd::from(ours_read), OwnedFd::from(ours_write))
        .unwrap();
    (reader, writer, echo)
}

/// Writes `chunks` to `writer` and closes it, while reading everything back from `reader`
/// until end of input, `buffer` bytes at a time: what came back.
async fn round_trip(
    mut reader: PipeReader,
    mut writer: PipeWriter,
    chunks: Vec<Vec<u8>>,
    buffer: usize,
) -> Vec<u8> {
    let write = async move {
        for chunk in chunks {
            writer.write_all(&chunk).await.unwrap();
            future::yield_now().await;
        }
        writer.close().await.unwrap();
    };
    let read = async move { read_to_end_by(&mut reader, buffer).await };
    future::zip(write, read).await.1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Through several pairs at once, run as tasks of an executor inside the set's loop (as a
    /// conductor runs its hops), each pair's peer gets every byte in order and echoes it back
    /// in order, then end of input.
    #[test]
    fn every_byte_comes_back_in_order_through_every_pair(
        pairs in prop::collection::vec(
            (prop::collection::vec(prop::collection::vec(any::<u8>(), 1..3000), 0..24), 1usize..5000),
            1..5,
        ),
    ) {
        watchdog(120, "several pairs");
        let set = PipeSet::new().unwrap();
        let executor = smol::LocalExecutor::new();
        let mut tasks = Vec::new();
        let mut echoes = Vec::new();
        for (chunks, buffer) in &pairs {
            let (reader, writer, echo) = echo_pair(&set);
            tasks.push(executor.spawn(round_trip(reader, writer, chunks.clone(), *buffer)));
            echoes.push(echo);
        }
        let results = set
            .block_on(executor.run(async {
                let mut results = Vec::new();
                for task in tasks {
                    results.push(task.await);
                }
                results
            }))
            .unwrap();
        for ((chunks, _), (result, echo)) in pairs.iter().zip(results.into_iter().zip(echoes)) {
            let sent = chunks.concat();
            prop_assert_eq!(echo.join().unwrap(), sent.len() as u64);
            prop_assert_eq!(result, sent);
        }
    }
}

#[test]
fn pairs_added_while_the_loop_runs_are_waited_on_as_the_first() {
    watchdog(120, "added pairs");
    let set = PipeSet::new().unwrap();
    let inner = set.clone();
    let (results, open) = set
        .block_on(async {
            let mut results = Vec::new();
            // Each pair is added from inside the loop, and the earlier ones stay open and
            // quiet meanwhile, so that the loop waits on more descriptors each round.
            let mut open = Vec::new();
            for round in 0..20u8 {
                let (mut reader, mut writer, echo) = echo_pair(&inner);
                let message = vec![round; 1000 + usize::from(round) * 997];
                writer.write_all(&message).await.unwrap();
                let mut back = vec![0u8; message.len()];
                reader.read_exact(&mut back).await.unwrap();
                results.push(back == message);
                open.push((reader, writer, echo));
            }
            (results, open)
        })
        .unwrap();
    assert_eq!(results, vec![true; 20]);
    // Every peer sees end of input once its writer is dropped (before its output closes: a
    // pipe-to-pipe `splice` would rather report the closed output).
    for (reader, writer, echo) in open {
        drop(writer);
        echo.join().unwrap();
        drop(reader);
    }
}

#[test]
fn a_pair_dropped_while_its_peer_writes_leaves_the_others_working() {
    watchdog(120, "dropped pair");
    let set = PipeSet::new().unwrap();
    // A peer that writes for ever into a pair the loop drops: its events must not reach the
    // pairs added after it, which may get the same descriptor numbers.
    let (ours_read, theirs_write) = std::io::pipe().unwrap();
    let (_theirs_read, ours_write) = std::io::pipe().unwrap();
    let chatter = std::thread::spawn(move || {
        let mut output = theirs_write;
        while std::io::Write::write_all(&mut output, b"chatter\n").is_ok() {}
    });
    let (mut reader, writer) = set
        .add(OwnedFd::from(ours_read), OwnedFd::from(ours_write))
        .unwrap();
    let mut echoes = Vec::new();
    let got = set
        .block_on(async {
            let mut first = [0u8; 8];
            reader.read_exact(&mut first).await.unwrap();
            drop((reader, writer));
            let mut all = Vec::new();
            for round in 0..10u8 {
                let (reader, writer, echo) = echo_pair(&set);
                echoes.push(echo);
                all.push(round_trip(reader, writer, vec![vec![round; 70_000]], 4096).await);
            }
            (first, all)
        })
        .unwrap();
    assert_eq!(&got.0, b"chatter\n");
    for (round, back) in got.1.into_iter().enumerate() {
        assert_eq!(back, vec![round as u8; 70_000]);
    }
    // The dropped pair's read end is closed: the chatter stops with a broken pipe.
    chatter.join().unwrap();
    for echo in echoes {
        echo.join().unwrap();
    }
}

#[test]
fn another_threads_wake_up_reaches_a_loop_waiting_on_quiet_pipes() {
    watchdog(120, "wake-ups");
    let set = PipeSet::new().unwrap();
    // Three pairs whose peers never write: the loop waits on them and its eventfd.
    let quiet: Vec<_> = (0..3).map(|_| echo_pair(&set)).collect();
    let rounds = 5_000;
    let (receiver, ack, waker) = jittered_wake_ups(rounds);
    let (mut readers, mut echoes) = (Vec::new(), Vec::new());
    for (reader, writer, echo) in quiet {
        readers.push(reader);
        echoes.push((writer, echo));
    }
    let received = set
        .block_on(async {
            let mut buf = [0u8; 16];
            for round in 0..rounds {
                let quiet_read = async {
                    let n = readers[round % 3].read(&mut buf).await.unwrap();
                    panic!("a quiet pipe gave {n} bytes");
                };
                let got = future::or(async { receiver.recv().await.unwrap() }, quiet_read).await;
                assert_eq!(got, round);
                ack.send(round).unwrap();
            }
            rounds
        })
        .unwrap();
    assert_eq!(received, rounds);
    waker.join().unwrap();
    for (writer, echo) in echoes {
        drop(writer);
        echo.join().unwrap();
    }
}

#[test]
fn timers_fire_inside_the_loop() {
    watchdog(60, "timers");
    let set = PipeSet::new().unwrap();
    let (mut reader, _writer, _echo) = echo_pair(&set);
    let fired = set
        .block_on(async {
            let mut buf = [0u8; 1];
            future::or(
                async {
                    smol::Timer::after(Duration::from_millis(50)).await;
                    true
                },
                async {
                    let _ = reader.read(&mut buf).await;
                    false
                },
            )
            .await
        })
        .unwrap();
    assert!(fired);
}

#[test]
fn a_writer_waits_for_a_full_pipe_and_goes_on_when_the_peer_reads() {
    watchdog(60, "full pipe");
    let set = PipeSet::new().unwrap();
    let (_ours_read, theirs_write) = std::io::pipe().unwrap();
    let (theirs_read, ours_write) = std::io::pipe().unwrap();
    let (_reader, mut writer) = set
        .add(OwnedFd::from(_ours_read), OwnedFd::from(ours_write))
        .unwrap();
    drop(theirs_write);
    // The peer starts reading only after a while: the loop's writes fill the pipe first.
    let slow = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        let mut all = Vec::new();
        std::io::Read::read_to_end(&mut { theirs_read }, &mut all).unwrap();
        all
    });
    let message: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
    set.block_on(async {
        writer.write_all(&message).await.unwrap();
        writer.close().await.unwrap();
    })
    .unwrap();
    assert_eq!(slow.join().unwrap(), message);
}

#[test]
fn a_set_runs_one_loop_at_a_time() {
    watchdog(60, "one loop");
    let set = PipeSet::new().unwrap();
    let (started, start) = mpsc::channel();
    let (release, released) = async_channel::bounded::<()>(1);
    let other = set.clone();
    let first = std::thread::spawn(move || {
        other
            .block_on(async {
                started.send(()).unwrap();
                released.recv().await.unwrap();
            })
            .unwrap();
    });
    start.recv().unwrap();
    let refused = set.block_on(async {}).unwrap_err();
    assert!(refused.to_string().contains("another thread"), "{refused}");
    release.send_blocking(()).unwrap();
    first.join().unwrap();
    // Once the first loop returned, the set runs again.
    assert_eq!(set.block_on(async { 7 }).unwrap(), 7);
}

#[test]
fn end_of_input_reported_before_the_last_short_read_is_still_read() {
    watchdog(60, "end of input");
    let set = PipeSet::new().unwrap();
    let (ours_read, theirs_write) = std::io::pipe().unwrap();
    let (_theirs_read, ours_write) = std::io::pipe().unwrap();
    let (mut reader, mut writer) = set
        .add(OwnedFd::from(ours_read), OwnedFd::from(ours_write))
        .unwrap();
    let got = set
        .block_on(async {
            let mut buf = [0u8; 4096];
            // The reader finds the pipe empty and waits; only then the peer writes a little
            // more than one read takes, and closes: the loop's one report says both (data and
            // hang-up), so the second read is short with no edge to come after it. A write on
            // the same pair after each read (the peer still reads) must not make the reader
            // wait for one either.
            assert!(future::poll_once(reader.read(&mut buf)).await.is_none());
            let mut peer = theirs_write;
            std::io::Write::write_all(&mut peer, &[9u8; 5000]).unwrap();
            drop(peer);
            read_to_end_answering(&mut reader, &mut writer).await
        })
        .unwrap();
    assert_eq!(got, vec![9u8; 5000]);
}
