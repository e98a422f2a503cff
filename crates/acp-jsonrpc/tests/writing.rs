//! The connection's output and where it runs: back-pressure on the outgoing queue, batched
//! writes, the observer, single-threaded handlers on local executors, `Send` drivers,
//! pipelining and large messages. (Calls, ordering, cancellation and shutdown are in
//! `connection.rs`.)

mod common;

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use acp_jsonrpc::memory::{self, PipeWriter};
use acp_jsonrpc::{
    Connection, ConnectionOptions, IncomingNotification, IncomingRequest, LineEvent, LineReader,
    LocalHandler, Responder,
};
use common::{Recorder, TestHandler, connect, connected_pair, run, stays_pending};
use futures_lite::AsyncWrite;
use serde_json::value::RawValue;
use smol::Timer;

/// A peer that never reads: senders wait instead of memory growing.
#[test]
fn back_pressure_bounds_the_outgoing_queue() {
    run(async {
        const CAPACITY: usize = 8;
        let (ours, theirs) = memory::pair(256);
        let options = ConnectionOptions::default().with_outgoing_capacity(CAPACITY);
        let (handle, driver) = Connection::new(ours.reader, ours.writer, (), options);
        let _driver = smol::spawn(driver);
        let params = "x".repeat(100);

        let mut sent = 0;
        let blocked = loop {
            let mut notify = Box::pin(handle.notify("update", &params));
            if stays_pending(&mut notify, Duration::from_millis(50)).await {
                break notify;
            }
            assert!(handle.queued() <= CAPACITY);
            sent += 1;
            assert!(sent < 100, "notify never blocked");
        };
        // The queue is full; the rest sits in the writer's one batch and the
        // 256-byte pipe (two of these lines). The driver runs on another
        // thread, so while it drains the queue into its batch the sender may
        // refill it: the batch can hold somewhat more than CAPACITY, but it is
        // bounded all the same.
        assert_eq!(handle.queued(), CAPACITY);
        assert!(sent <= 4 * CAPACITY + 2, "{sent} sent before blocking");

        // More senders wait too; the queue does not grow.
        let mut more: Vec<_> = (0..50)
            .map(|_| Box::pin(handle.notify("update", &params)))
            .collect();
        for notify in &mut more {
            assert!(stays_pending(notify, Duration::from_millis(1)).await);
        }
        assert_eq!(handle.queued(), CAPACITY);
        drop(more);

        // Once the peer reads, the blocked sender goes through, in order.
        let mut reader = LineReader::new(theirs.reader);
        let drain = async {
            for _ in 0..=sent {
                assert!(matches!(
                    reader.read_line().await.unwrap(),
                    Some(LineEvent::Line(_))
                ));
            }
        };
        let (result, ()) = smol::future::zip(blocked, drain).await;
        result.unwrap();
    });
}

/// Counts writes and flushes on the way to a pipe.
struct CountingWriter {
    inner: PipeWriter,
    writes: Arc<AtomicUsize>,
    flushes: Arc<AtomicUsize>,
}

impl AsyncWrite for CountingWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_close(cx)
    }
}

#[test]
fn queued_messages_are_written_in_batches_with_few_flushes() {
    run(async {
        const MESSAGES: usize = 1000;
        let (ours, theirs) = memory::pair(1 << 20);
        let writes = Arc::new(AtomicUsize::new(0));
        let flushes = Arc::new(AtomicUsize::new(0));
        let writer = CountingWriter {
            inner: ours.writer,
            writes: writes.clone(),
            flushes: flushes.clone(),
        };
        let (handle, driver) =
            Connection::new(ours.reader, writer, (), ConnectionOptions::default());
        for i in 0..MESSAGES {
            handle.notify("update", &i).await.unwrap();
        }
        handle.close();
        driver.await.unwrap();

        let mut reader = LineReader::new(theirs.reader);
        let mut count = 0;
        while let Some(LineEvent::Line(line)) = reader.read_line().await.unwrap() {
            let expected = format!(r#"{{"jsonrpc":"2.0","method":"update","params":{count}}}"#);
            assert_eq!(line, expected.as_bytes());
            count += 1;
        }
        assert_eq!(count, MESSAGES);
        let (writes, flushes) = (
            writes.load(Ordering::Relaxed),
            flushes.load(Ordering::Relaxed),
        );
        // ~50 KB of lines fit one 64 KiB batch.
        assert!(writes <= 2, "{writes} writes for {MESSAGES} messages");
        assert!(flushes <= 2, "{flushes} flushes for {MESSAGES} messages");
    });
}

#[test]
fn observer_sees_every_line_in_and_out() {
    run(async {
        let recorder = Recorder::default();
        let options = ConnectionOptions::default().with_observer(recorder.clone());
        let (handle, mut peer, _driver) = connect(TestHandler::default(), options);
        handle.notify("hello", &()).await.unwrap();
        peer.replies_to(br#"{"jsonrpc":"2.0","method":"note","params":1}"#)
            .await;
        assert_eq!(
            recorder.incoming(),
            [
                r#"{"jsonrpc":"2.0","method":"note","params":1}"#,
                r#"{"jsonrpc":"2.0","id":"sentinel","method":"ping"}"#,
            ]
        );
        assert_eq!(
            recorder.outgoing(),
            [
                r#"{"jsonrpc":"2.0","method":"hello"}"#,
                r#"{"jsonrpc":"2.0","id":"sentinel","result":"pong"}"#,
            ]
        );
    });
}

/// A handler that is not `Send`: it keeps its state in an `Rc<RefCell<…>>`.
#[derive(Clone, Default)]
struct Counter {
    count: Rc<RefCell<u32>>,
}

impl LocalHandler for Counter {
    async fn request(&self, request: IncomingRequest, responder: Responder) {
        let count = self.count.clone();
        // Holding an Rc across an await makes this future !Send.
        Timer::after(Duration::from_millis(1)).await;
        *count.borrow_mut() += 1;
        let value = *count.borrow();
        match request.method() {
            "count" => responder.respond_ok(&value),
            _ => responder.respond_error(request.method_not_found()),
        }
    }

    async fn notification(&self, notification: IncomingNotification) {
        let count = self.count.clone();
        Timer::after(Duration::from_millis(1)).await;
        if notification.method() == "bump" {
            *count.borrow_mut() += 10;
        }
    }
}

#[test]
fn single_threaded_handlers_run_with_block_on() {
    let counter = Counter::default();
    let (a_end, b_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (client, client_driver) =
        Connection::new(a_end.reader, a_end.writer, (), ConnectionOptions::default());
    let (_agent, agent_driver) = Connection::new_local(
        b_end.reader,
        b_end.writer,
        counter.clone(),
        ConnectionOptions::default(),
    );
    let calls = async {
        client.notify("bump", &()).await.unwrap();
        let first: u32 = client.request("count", &()).await.unwrap();
        let second: u32 = client.request("count", &()).await.unwrap();
        client.close();
        (first, second)
    };
    let ((client_result, agent_result), (first, second)) =
        futures_lite::future::block_on(futures_lite::future::zip(
            futures_lite::future::zip(client_driver, agent_driver),
            calls,
        ));
    client_result.unwrap();
    agent_result.unwrap();
    assert_eq!((first, second), (11, 12));
    assert_eq!(*counter.count.borrow(), 12);
}

#[test]
fn single_threaded_handlers_run_on_a_local_executor() {
    let executor = smol::LocalExecutor::new();
    let shared = Rc::new(RefCell::new(Vec::new()));
    struct Logs(Rc<RefCell<Vec<String>>>);
    impl LocalHandler for Logs {
        async fn notification(&self, notification: IncomingNotification) {
            self.0.borrow_mut().push(notification.method().to_owned());
        }
    }
    let (a_end, b_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (client, client_driver) =
        Connection::new(a_end.reader, a_end.writer, (), ConnectionOptions::default());
    let (_agent, agent_driver) = Connection::new_local(
        b_end.reader,
        b_end.writer,
        Logs(shared.clone()),
        ConnectionOptions::default(),
    );
    let agent = executor.spawn(agent_driver);
    let client_task = executor.spawn(client_driver);
    smol::block_on(executor.run(async {
        client.notify("one", &()).await.unwrap();
        client.notify("two", &()).await.unwrap();
        client.close();
        client_task.await.unwrap();
        agent.await.unwrap();
    }));
    assert_eq!(*shared.borrow(), ["one", "two"]);
}

#[test]
fn drivers_and_futures_are_send_for_send_handlers() {
    fn is_send<T: Send>(_: &T) {}
    fn is_send_sync<T: Send + Sync>(_: &T) {}
    let (end, _other) = memory::pair(16);
    let (handle, driver) = Connection::new(
        end.reader,
        end.writer,
        TestHandler::default(),
        ConnectionOptions::default(),
    );
    is_send(&driver);
    is_send_sync(&handle);
    is_send(&handle.request::<String, _>("x", &()));
    is_send(&handle.notify("x", &()));
    let recorder = Recorder::default();
    is_send_sync(&recorder);
    let _ = Mutex::new(0);
}

/// Requests written back to back (`initialize` immediately followed by
/// more) are all dispatched and answered; none is refused or dropped.
#[test]
fn pipelined_requests_are_all_answered() {
    run(async {
        let (_handle, mut peer, _driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        let mut burst = String::new();
        for id in 0..20 {
            let method = if id == 0 { "sleep" } else { "ping" };
            burst.push_str(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#
            ));
            burst.push('\n');
        }
        peer.send_bytes(burst.as_bytes()).await;
        let mut ids: Vec<i64> = Vec::new();
        for _ in 0..20 {
            ids.push(peer.recv_json().await["id"].as_i64().unwrap());
        }
        // The slow first request does not hold up the others.
        assert_eq!(ids.last(), Some(&0));
        ids.sort();
        assert_eq!(ids, (0..20).collect::<Vec<_>>());
    });
}

/// Large messages are queued as chunks of their own and small ones share a
/// chunk: whatever the mix, they reach the peer in the order they were sent.
#[test]
fn small_and_large_messages_keep_their_order() {
    run(async {
        let (handle, mut peer, _driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        let sizes = [10, 70_000, 10, 10, 200_000, 70_000, 10, 300_000, 10];
        let send = async {
            for (i, size) in sizes.iter().enumerate() {
                let params = serde_json::json!({"i": i, "pad": "x".repeat(*size)});
                handle.notify("n", &params).await.unwrap();
            }
        };
        let receive = async {
            for (i, size) in sizes.iter().enumerate() {
                let message = peer.recv_json().await;
                assert_eq!(message["params"]["i"], i);
                assert_eq!(message["params"]["pad"].as_str().unwrap().len(), *size);
            }
        };
        smol::future::zip(send, receive).await;
    });
}

/// Messages far larger than the pipe and the write batch go through intact,
/// interleaved with small ones.
#[test]
fn large_messages_round_trip() {
    run(async {
        let (a, _b, _a_driver, _b_driver) = connected_pair(
            TestHandler::default(),
            TestHandler::default(),
            ConnectionOptions::default(),
        );
        let big = "é".repeat(300_000);
        let params = RawValue::from_string(serde_json::to_string(&big).unwrap()).unwrap();
        let (echoed, pong) = smol::future::zip(
            a.request_raw("echo", Some(&params)),
            a.request::<String, _>("ping", &()),
        )
        .await;
        assert_eq!(
            serde_json::from_str::<String>(echoed.unwrap().get()).unwrap(),
            big
        );
        assert_eq!(pong.unwrap(), "pong");
    });
}
