//! The pipe loop (`pipe_loop::block_on`) over real pipes and threads: wake-ups from other
//! threads while it sleeps in `read` on a quiet pipe, bytes in order through its parked buffer,
//! end of input, stray signals, and the `epoll_wait` fallback (signal blocked, or turned off);
//! the buffered reader (`BufPipeReader`) that takes the parked buffer whole.
#![cfg(target_os = "linux")]

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::mpsc;
use std::time::Duration;

use acp_host::pipe_loop::{BUFFER_BYTES, PipeReader, PipeWriter, block_on, pipes};
use futures_lite::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, future};
use proptest::prelude::*;

/// A pipe: (read end, write end), both blocking.
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned by nothing else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

#[path = "common/loops.rs"]
mod loops;
use loops::{jittered_wake_ups, read_to_end_answering, read_to_end_by, watchdog};

/// Blocks `SIGURG` (the loop's wake-up signal) in the calling thread, whose loops then wait in
/// `epoll_wait` instead of in `read`.
fn block_the_wake_up_signal_in_this_thread() {
    // SAFETY: blocks SIGURG in this thread's mask, a set we build.
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGURG);
        libc::pthread_sigmask(libc::SIG_BLOCK, &mask, std::ptr::null_mut());
    }
}

/// The loop reads a pipe nobody writes to, while another thread sends `rounds` messages on a
/// channel: each must wake the loop out of its sleep. The thread waits for each message's
/// acknowledgement before the next, after spinning a varying while, so that the wake-ups land
/// before, during and after the loop's entry into `read`.
fn wake_rounds(rounds: usize) {
    let (quiet_read, _quiet_write) = pipe();
    let (_unused_read, out_write) = pipe();
    let (pipes, mut reader, _writer) = pipes(quiet_read, out_write).unwrap();
    let (receiver, ack, waker) = jittered_wake_ups(rounds);
    let received = block_on(&pipes, async {
        let mut buf = [0u8; 16];
        for round in 0..rounds {
            let got = future::or(async { Some(receiver.recv().await.unwrap()) }, async {
                let n = reader.read(&mut buf).await.unwrap();
                panic!("the quiet pipe gave {n} bytes");
            })
            .await;
            assert_eq!(got, Some(round));
            ack.send(round).unwrap();
        }
        rounds
    })
    .unwrap();
    assert_eq!(received, rounds);
    waker.join().unwrap();
}

#[test]
fn another_threads_wake_up_reaches_a_loop_sleeping_on_a_quiet_pipe() {
    watchdog(120, "wake-ups");
    // After a wake-up by signal the loop waits in `epoll_wait` for 64 sleeps: 10,000 rounds
    // interrupt a sleep in `read` about 150 times.
    wake_rounds(10_000);
}

#[test]
fn a_thread_that_blocks_the_signal_waits_in_epoll_and_is_woken_all_the_same() {
    watchdog(120, "blocked signal");
    std::thread::spawn(|| {
        block_the_wake_up_signal_in_this_thread();
        wake_rounds(500);
    })
    .join()
    .unwrap();
}

/// Runs this test binary again, with `ACP_PIPE_LOOP_SIGNAL=off`, on the wake-up test alone.
#[test]
fn with_the_signal_turned_off_the_loop_waits_in_epoll_and_is_woken_all_the_same() {
    if std::env::var_os("ACP_PIPE_LOOP_SIGNAL").is_some() {
        return;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "another_threads_wake_up_reaches_a_loop_sleeping_on_a_quiet_pipe",
            "--test-threads=1",
        ])
        .env("ACP_PIPE_LOOP_SIGNAL", "off")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
}

/// Writes `chunks` to `write`, yielding between them so that the reader often sleeps first,
/// then closes it.
fn write_chunks(write: OwnedFd, chunks: Vec<Vec<u8>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut file = std::fs::File::from(write);
        for chunk in chunks {
            std::io::Write::write_all(&mut file, &chunk).unwrap();
            std::thread::yield_now();
        }
    })
}

/// Reads everything until end of input through the loop, `buffer` bytes at a time.
fn read_all_through_the_loop(read: OwnedFd, buffer: usize) -> Vec<u8> {
    let (_unused_read, out_write) = pipe();
    let (pipes, mut reader, _writer) = pipes(read, out_write).unwrap();
    block_on(&pipes, read_to_end_by(&mut reader, buffer)).unwrap()
}

/// Chunks of the given sizes whose bytes count up by `stride` (wrapping), and all of them in
/// one: a stream in which a byte out of place or lost shows.
fn counting_chunks(sizes: &[usize], stride: u8) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut next = 0u8;
    let chunks: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&size| {
            (0..size)
                .map(|_| {
                    next = next.wrapping_add(stride);
                    next
                })
                .collect()
        })
        .collect();
    let all = chunks.concat();
    (chunks, all)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever the writer's chunks and the reader's buffer, the reader gets every byte in
    /// order (some through the loop's parked buffer, read while it slept), then end of input.
    #[test]
    fn every_byte_arrives_in_order_then_end_of_input(
        sizes in prop::collection::vec(1usize..100_000, 1..12),
        buffer in 1usize..70_000,
    ) {
        let (chunks, expected) = counting_chunks(&sizes, 7);
        let (read, write) = pipe();
        let writer = write_chunks(write, chunks);
        let got = read_all_through_the_loop(read, buffer);
        writer.join().unwrap();
        prop_assert_eq!(got.len(), expected.len());
        prop_assert!(got == expected);
    }
}

/// Reads everything until end of input through the loop's buffered reader: by `fill_buf` and
/// `consume` of at most `step` bytes when `step` is odd, by `read` into a `step`-byte buffer
/// otherwise (a buffer of at least [`BUFFER_BYTES`] bypasses the reader's own).
fn read_all_buffered(read: OwnedFd, step: usize) -> Vec<u8> {
    let (_unused_read, out_write) = pipe();
    let (pipes, reader, _writer) = pipes(read, out_write).unwrap();
    let mut reader = reader.buffered();
    block_on(&pipes, async {
        let mut all = Vec::new();
        let mut buf = vec![0u8; step];
        loop {
            if step % 2 == 1 {
                let held = reader.fill_buf().await.unwrap();
                if held.is_empty() {
                    return all;
                }
                let n = held.len().min(step);
                all.extend_from_slice(&held[..n]);
                AsyncBufReadExt::consume(&mut reader, n);
            } else {
                match reader.read(&mut buf).await.unwrap() {
                    0 => return all,
                    n => all.extend_from_slice(&buf[..n]),
                }
            }
        }
    })
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Through the buffered reader, which takes the loop's parked buffer in exchange for its
    /// own: every byte in order, whatever the chunks and however it is read, then end of input.
    #[test]
    fn the_buffered_reader_gets_every_byte_in_order_then_end_of_input(
        sizes in prop::collection::vec(1usize..100_000, 1..12),
        step in prop_oneof![1usize..2_000, 60_000usize..70_000, Just(BUFFER_BYTES)],
    ) {
        let (chunks, expected) = counting_chunks(&sizes, 11);
        let (read, write) = pipe();
        let writer = write_chunks(write, chunks);
        let got = read_all_buffered(read, step);
        writer.join().unwrap();
        prop_assert_eq!(got.len(), expected.len());
        prop_assert!(got == expected);
    }
}

/// Lines back and forth between two loops, each reading through its buffered reader, as the
/// stdio pair's connections do: every answer is read out of a buffer the loop filled while it
/// slept in `read`, taken by exchange.
#[test]
fn two_buffered_loops_play_lines() {
    watchdog(120, "buffered lines");
    const ROUNDS: u64 = 3000;
    let (request_read, request_write) = pipe();
    let (answer_read, answer_write) = pipe();
    let agent = std::thread::spawn(move || {
        let (pipes, reader, mut writer) = pipes(request_read, answer_write).unwrap();
        let mut reader = reader.buffered();
        block_on(&pipes, async move {
            let mut line = String::new();
            let mut answered = 0u64;
            while reader.read_line(&mut line).await.unwrap() > 0 {
                let number: u64 = line.trim_end().parse().unwrap();
                // Longer than one read of the other side's buffer would need to be copied.
                let answer = format!("{}{}\n", "x".repeat(1000), number + 1);
                writer.write_all(answer.as_bytes()).await.unwrap();
                answered += 1;
                line.clear();
            }
            answered
        })
        .unwrap()
    });
    let (pipes, reader, mut writer) = pipes(answer_read, request_write).unwrap();
    let mut reader = reader.buffered();
    block_on(&pipes, async {
        let mut line = String::new();
        for round in 0..ROUNDS {
            writer
                .write_all(format!("{round}\n").as_bytes())
                .await
                .unwrap();
            line.clear();
            reader.read_line(&mut line).await.unwrap();
            assert_eq!(
                line.trim_start_matches('x').trim_end(),
                (round + 1).to_string()
            );
            assert_eq!(line.len(), 1000 + (round + 1).to_string().len() + 1);
        }
        writer.close().await.unwrap();
        line.clear();
        assert_eq!(reader.read_line(&mut line).await.unwrap(), 0);
    })
    .unwrap();
    assert_eq!(agent.join().unwrap(), ROUNDS);
}

/// Request and answer between two loops on two threads, as the stdio pair plays `rpc`: each
/// side writes, then sleeps in `read` for the other's answer.
#[test]
fn two_loops_play_request_and_answer() {
    watchdog(120, "request and answer");
    const ROUNDS: usize = 5000;
    let (request_read, request_write) = pipe();
    let (answer_read, answer_write) = pipe();
    let agent = std::thread::spawn(move || {
        let (pipes, reader, writer) = pipes(request_read, answer_write).unwrap();
        block_on(&pipes, answer_each(reader, writer)).unwrap()
    });
    let (pipes, mut reader, mut writer) = pipes(answer_read, request_write).unwrap();
    block_on(&pipes, async {
        let mut answer = [0u8; 8];
        for round in 0..ROUNDS as u64 {
            writer.write_all(&round.to_le_bytes()).await.unwrap();
            reader.read_exact(&mut answer).await.unwrap();
            assert_eq!(u64::from_le_bytes(answer), round + 1);
        }
        writer.close().await.unwrap();
    })
    .unwrap();
    assert_eq!(agent.join().unwrap(), ROUNDS);
}

/// Answers each 8-byte number with the next one until end of input; how many it answered.
async fn answer_each(mut reader: PipeReader, mut writer: PipeWriter) -> usize {
    let mut request = [0u8; 8];
    let mut answered = 0;
    while reader.read_exact(&mut request).await.is_ok() {
        let next = u64::from_le_bytes(request) + 1;
        writer.write_all(&next.to_le_bytes()).await.unwrap();
        answered += 1;
    }
    answered
}

/// The wake-up signal sent to the loop's thread when nobody woke it (as a late signal from a
/// waker arrives): the loop sleeps again, and no byte is lost or repeated.
#[test]
fn stray_wake_up_signals_lose_no_byte() {
    watchdog(120, "stray signals");
    let (read, write) = pipe();
    let chunks: Vec<Vec<u8>> = (0..2000u32).map(|i| i.to_le_bytes().to_vec()).collect();
    let expected = chunks.concat();
    let (thread_sender, thread_receiver) = mpsc::channel();
    let (done_sender, done_receiver) = mpsc::channel::<()>();
    let (stopped_sender, stopped_receiver) = mpsc::channel::<()>();
    let reading = std::thread::spawn(move || {
        // SAFETY: gettid takes nothing and cannot fail.
        thread_sender.send(unsafe { libc::gettid() }).unwrap();
        let got = read_all_through_the_loop(read, 4096);
        done_sender.send(()).unwrap();
        // Alive until no more signals come, so that none reaches a thread that reused its id.
        stopped_receiver.recv().unwrap();
        got
    });
    let thread = thread_receiver.recv().unwrap();
    let signaller = std::thread::spawn(move || {
        let mut sent = 0;
        while done_receiver.try_recv().is_err() {
            // SAFETY: signals a thread of this process that is alive until it sends on `done`
            // (the test's pipe loop claimed SIGURG or, turned off, SIGURG is ignored).
            unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), thread, libc::SIGURG) };
            sent += 1;
            std::thread::yield_now();
        }
        stopped_sender.send(()).unwrap();
        sent
    });
    let writer = write_chunks(write, chunks);
    writer.join().unwrap();
    let got = reading.join().unwrap();
    assert!(signaller.join().unwrap() > 0);
    assert!(got == expected);
}

/// Another process sharing the read end's open file description may make it non-blocking: the
/// loop must then stop sleeping in `read` (which would return at once, a busy loop) and still
/// deliver what comes later.
#[test]
fn a_read_end_made_non_blocking_by_someone_else_costs_no_busy_loop() {
    watchdog(120, "made non-blocking");
    let (read, write) = pipe();
    let shared = read.try_clone().unwrap();
    let (chunks_sender, chunks) = mpsc::channel::<Vec<u8>>();
    let reading = std::thread::spawn(move || {
        let got = read_all_through_the_loop(read, 4096);
        // SAFETY: getrusage fills a struct we own.
        let cpu = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
            Duration::new(
                usage.ru_utime.tv_sec as u64,
                usage.ru_utime.tv_usec as u32 * 1000,
            ) + Duration::new(
                usage.ru_stime.tv_sec as u64,
                usage.ru_stime.tv_usec as u32 * 1000,
            )
        };
        (got, cpu)
    });
    let writer = std::thread::spawn(move || {
        let mut file = std::fs::File::from(write);
        while let Ok(chunk) = chunks.recv() {
            std::io::Write::write_all(&mut file, &chunk).unwrap();
        }
    });
    chunks_sender.send(b"first ".to_vec()).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: fcntl on a descriptor we own (a duplicate of the loop's read end).
    unsafe {
        let flags = libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&shared), libc::F_GETFL);
        libc::fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&shared),
            libc::F_SETFL,
            flags | libc::O_NONBLOCK,
        );
    }
    chunks_sender.send(b"second ".to_vec()).unwrap();
    // A loop that spun in `read` would burn this whole pause.
    std::thread::sleep(Duration::from_millis(400));
    chunks_sender.send(b"third".to_vec()).unwrap();
    drop(chunks_sender);
    writer.join().unwrap();
    drop(shared);
    let (got, cpu) = reading.join().unwrap();
    assert_eq!(got, b"first second third");
    assert!(
        cpu < Duration::from_millis(200),
        "the loop used {cpu:?} of CPU"
    );
}

/// The end of input reported by the same wake-up as the last data: the reader gets every byte,
/// then end of input, even though it writes after each read (a write after a short read
/// usually means the next read would find the pipe empty, but after a hang-up no edge comes).
/// In a thread that blocks the signal, so that the loop waits in `epoll_wait`.
#[test]
fn end_of_input_after_the_last_short_read_is_read_even_between_writes() {
    watchdog(60, "end of input between writes");
    std::thread::spawn(|| {
        block_the_wake_up_signal_in_this_thread();
        let (ours_read, theirs_write) = pipe();
        let (_theirs_read, ours_write) = pipe();
        let (pipes, mut reader, mut writer) = pipes(ours_read, ours_write).unwrap();
        let got = block_on(&pipes, async {
            let mut buf = [0u8; 4096];
            assert!(future::poll_once(reader.read(&mut buf)).await.is_none());
            let mut peer = std::fs::File::from(theirs_write);
            std::io::Write::write_all(&mut peer, &[9u8; 5000]).unwrap();
            drop(peer);
            read_to_end_answering(&mut reader, &mut writer).await
        })
        .unwrap();
        assert_eq!(got, vec![9u8; 5000]);
    })
    .join()
    .unwrap();
}
