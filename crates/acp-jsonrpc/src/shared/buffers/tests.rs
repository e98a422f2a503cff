//! What a connection keeps of its outgoing buffers once a burst is written: buffers grow for
//! a large message or a run of small ones and are given back when the driver sleeps with the
//! queue dry.

use futures_lite::{AsyncBufReadExt, StreamExt};

use super::*;
use crate::{Connection, ConnectionOptions, memory};

/// The pool's buffers: how many, and their capacity in all.
fn pooled(shared: &Shared) -> (usize, usize) {
    let buffers = lock(&shared.buffers);
    (buffers.len(), buffers.iter().map(Vec::capacity).sum())
}

/// After `round`, once the driver slept: the pool holds no more than an idle connection's.
fn assert_idle_pool(shared: &Shared, round: usize) {
    let (count, capacity) = pooled(shared);
    assert!(
        capacity <= IDLE_POOLED_BUFFERS * IDLE_BUFFER_MAX_CAPACITY,
        "round {round}: {count} buffers of {capacity} bytes pooled"
    );
}

#[test]
fn an_idle_connection_keeps_only_small_buffers() {
    let shared = Shared::new(1024, (1 << 20, None), (1 << 20, None), None);
    for capacity in [64, 256, 1024, 4096, 8192, 65536, 200_000, 256, 512, 128] {
        shared.recycle(Vec::with_capacity(capacity));
    }
    let mut writers = Vec::with_capacity(64 * 1024);
    shared.release_idle(&mut writers);
    assert_eq!(writers.capacity(), 0);
    let (count, capacity) = pooled(&shared);
    assert!(count <= IDLE_POOLED_BUFFERS, "{count} buffers kept");
    assert!(capacity <= IDLE_POOLED_BUFFERS * IDLE_BUFFER_MAX_CAPACITY);
    assert!(
        lock(&shared.buffers)
            .iter()
            .all(|b| b.capacity() <= IDLE_BUFFER_MAX_CAPACITY)
    );

    // A small writer's buffer stays where it is: the next burst reuses it.
    let mut small = Vec::with_capacity(IDLE_BUFFER_MAX_CAPACITY);
    shared.release_idle(&mut small);
    assert_eq!(small.capacity(), IDLE_BUFFER_MAX_CAPACITY);
}

/// A 100 KiB notification grows a buffer that the pool would keep while the connection is
/// busy (up to 256 KiB); once it is written and the queue is dry, it is given back, and the
/// next large message still goes out whole. One thread: the driver's poll that writes the
/// line's last bytes has finished by the time the line is read.
#[test]
fn a_large_message_s_buffer_is_given_back_once_written() {
    let executor = smol::LocalExecutor::new();
    smol::block_on(executor.run(async {
        let (ours, theirs) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        let (handle, driver) =
            Connection::new(ours.reader, ours.writer, (), ConnectionOptions::default());
        let _driver = executor.spawn(driver);
        let mut lines = theirs.reader.lines();
        for round in 0..2 {
            let params = "x".repeat(100 * 1024);
            handle.notify("update", &params).await.unwrap();
            let line = lines.next().await.unwrap().unwrap();
            assert!(
                line.len() > 100 * 1024,
                "round {round}: {} bytes",
                line.len()
            );
            futures_lite::future::yield_now().await;
            assert_idle_pool(&handle.shared, round);
        }
    }));
}

/// A forwarded line that starts a chunk reserves a chunk's worth of room (64 KiB) though it
/// is short: once it is written and the driver sleeps, that buffer is given back all the same,
/// so a connection that forwards now and then keeps an idle connection's buffers.
#[test]
fn a_reserved_chunk_is_given_back_after_a_short_burst() {
    let executor = smol::LocalExecutor::new();
    smol::block_on(executor.run(async {
        let (ours, theirs) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
        let (handle, driver) =
            Connection::new(ours.reader, ours.writer, (), ConnectionOptions::default());
        let _driver = executor.spawn(driver);
        let mut lines = theirs.reader.lines();
        let params = serde_json::value::RawValue::from_string(r#"{"n":1}"#.to_owned()).unwrap();
        for round in 0..3 {
            assert!(handle.try_notify_raw("tick", Some((&*params).into())));
            let line = lines.next().await.unwrap().unwrap();
            assert!(line.contains("tick"), "round {round}: {line}");
            futures_lite::future::yield_now().await;
            assert_idle_pool(&handle.shared, round);
        }
    }));
}
