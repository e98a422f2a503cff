//! The connection end to end: calls both ways, ordering, concurrency,
//! cancellation, timeouts, back-pressure, batching and shutdown.

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
    Connection, ConnectionOptions, Handler, IncomingNotification, IncomingRequest, LineEvent,
    LineReader, LocalHandler, Problem, RequestError, Responder, ResponseError,
};
use common::{Recorder, TestHandler, connect, run, stays_pending};
use futures_lite::AsyncWrite;
use serde_json::value::RawValue;
use smol::Timer;

type DriverTask = smol::Task<Result<(), acp_jsonrpc::ConnectionError>>;

fn connected_pair<A: Handler, B: Handler>(
    a: A,
    b: B,
    options: ConnectionOptions,
) -> (
    acp_jsonrpc::ConnectionHandle,
    acp_jsonrpc::ConnectionHandle,
    DriverTask,
    DriverTask,
) {
    let (a_end, b_end) = memory::pair(memory::DEFAULT_PIPE_CAPACITY);
    let (a_handle, a_driver) = Connection::new(a_end.reader, a_end.writer, a, options.clone());
    let (b_handle, b_driver) = Connection::new(b_end.reader, b_end.writer, b, options);
    (
        a_handle,
        b_handle,
        smol::spawn(a_driver),
        smol::spawn(b_driver),
    )
}

#[test]
fn requests_and_notifications_both_ways() {
    run(async {
        let a_handler = TestHandler::default();
        let b_handler = TestHandler::default();
        let (a, b, a_driver, b_driver) = connected_pair(
            a_handler.clone(),
            b_handler.clone(),
            ConnectionOptions::default(),
        );

        let sum: i64 = a
            .request("add", &serde_json::json!({"a": 2, "b": 40}))
            .await
            .unwrap();
        assert_eq!(sum, 42);
        let pong: String = b.request("ping", &()).await.unwrap();
        assert_eq!(pong, "pong");

        let params = RawValue::from_string(r#"{"keep":  "spacing"}"#.to_owned()).unwrap();
        let echoed = a.request_raw("echo", Some(&params)).await.unwrap();
        assert_eq!(echoed.get(), r#"{"keep":  "spacing"}"#);

        match a.request::<i64, _>("fail", &()).await {
            Err(RequestError::Response(error)) => assert_eq!(error.message, "it failed"),
            other => panic!("{other:?}"),
        }
        match a.request::<i64, _>("ping", &()).await {
            Err(RequestError::Decode(_)) => {}
            other => panic!("{other:?}"),
        }

        a.notify("note", &[1, 2]).await.unwrap();
        a.notify_raw("note", None).await.unwrap();
        // The ping after the notifications returns only once they are handled.
        let _: String = a.request("ping", &()).await.unwrap();
        assert_eq!(b_handler.log(), ["note [1,2]", "note -"]);

        a.close();
        a_driver.await.unwrap();
        b_driver.await.unwrap();
    });
}

#[test]
fn request_ids_are_echoed_exactly() {
    run(async {
        let (_handle, mut peer, _driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        for id in [
            "1",
            "\"1\"",
            "null",
            "0",
            "-0",
            "-42",
            "9223372036854775807",
            "9223372036854775808",
            "18446744073709551615",
            "123456789012345678901234567890",
            "1.5",
            "2e3",
            "\"\"",
            "\"with \\\"quotes\\\" and \\u00e9\"",
        ] {
            let replies = peer
                .replies_to(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).as_bytes())
                .await;
            assert_eq!(
                replies,
                [format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":"pong"}}"#,
                    canonical_string(id)
                )]
            );
        }
    });
}

/// Strings may be re-escaped (serde_json writes `é` rather than `\u00e9`);
/// everything else comes back byte for byte.
fn canonical_string(id: &str) -> String {
    if id.starts_with('"') {
        serde_json::to_string(&serde_json::from_str::<String>(id).unwrap()).unwrap()
    } else {
        id.to_owned()
    }
}

#[test]
fn outgoing_ids_are_integers_per_connection() {
    run(async {
        let (handle, mut peer, _driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        for expected in 0..3 {
            let call = smol::spawn(handle.request::<String, _>("x", &()));
            let request = peer.recv_json().await;
            assert_eq!(request["id"], expected);
            peer.send(&format!(
                r#"{{"jsonrpc":"2.0","id":{expected},"result":"ok"}}"#
            ))
            .await;
            assert_eq!(call.await.unwrap(), "ok");
        }
    });
}

/// A peer that sends a notification and then the response to our request
/// in one write: the slow notification handler must finish before the
/// request returns.
#[test]
fn notification_is_handled_before_a_later_response_is_delivered() {
    run(async {
        let handler = TestHandler::default();
        let (handle, mut peer, _driver) = connect(handler.clone(), ConnectionOptions::default());
        let log = handler.log.clone();
        let call = async {
            let result: String = handle.request("session/prompt", &()).await.unwrap();
            log.lock()
                .unwrap()
                .push(format!("prompt returned {result}"));
        };
        let peer_side = async {
            let request = peer.recv_json().await;
            assert_eq!(request["method"], "session/prompt");
            let id = &request["id"];
            peer.send_bytes(
                format!(
                    "{}\n{}\n",
                    r#"{"jsonrpc":"2.0","method":"slow_note"}"#,
                    format_args!(r#"{{"jsonrpc":"2.0","id":{id},"result":"done"}}"#)
                )
                .as_bytes(),
            )
            .await;
        };
        smol::future::zip(call, peer_side).await;
        assert_eq!(handler.log(), ["slow_note done", "prompt returned done"]);
    });
}

#[test]
fn notifications_are_handled_one_at_a_time_in_order() {
    run(async {
        let handler = TestHandler::default();
        let (_handle, mut peer, _driver) = connect(handler.clone(), ConnectionOptions::default());
        let mut burst = String::new();
        for i in 0..50 {
            if i % 10 == 0 {
                burst.push_str(r#"{"jsonrpc":"2.0","method":"slow_note"}"#);
                burst.push('\n');
            }
            burst.push_str(&format!(
                r#"{{"jsonrpc":"2.0","method":"note","params":{i}}}"#
            ));
            burst.push('\n');
        }
        peer.replies_to(burst.trim_end().as_bytes()).await;
        let mut expected = Vec::new();
        for i in 0..50 {
            if i % 10 == 0 {
                expected.push("slow_note done".to_owned());
            }
            expected.push(format!("note {i}"));
        }
        assert_eq!(handler.log(), expected);
    });
}

/// Two requests whose handlers each wait for the other: only possible if
/// requests really run concurrently.
struct Rendezvous {
    first: async_channel::Sender<()>,
    first_done: async_channel::Receiver<()>,
    second: async_channel::Sender<()>,
    second_done: async_channel::Receiver<()>,
}

impl Handler for Rendezvous {
    async fn request(&self, request: IncomingRequest, responder: Responder) {
        match request.method() {
            "first" => {
                self.first.send(()).await.unwrap();
                self.second_done.recv().await.unwrap();
                responder.respond_ok("first");
            }
            "second" => {
                self.second.send(()).await.unwrap();
                self.first_done.recv().await.unwrap();
                responder.respond_ok("second");
            }
            _ => responder.respond_error(request.method_not_found()),
        }
    }
}

#[test]
fn incoming_requests_run_concurrently() {
    run(async {
        let (first, first_done) = async_channel::bounded(1);
        let (second, second_done) = async_channel::bounded(1);
        let handler = Rendezvous {
            first,
            first_done,
            second,
            second_done,
        };
        let (a, _b, _a_driver, _b_driver) = connected_pair(
            TestHandler::default(),
            handler,
            ConnectionOptions::default(),
        );
        let (x, y) = smol::future::zip(
            a.request::<String, _>("first", &()),
            a.request::<String, _>("second", &()),
        )
        .await;
        assert_eq!(
            (x.unwrap(), y.unwrap()),
            ("first".to_owned(), "second".to_owned())
        );
    });
}

/// Calls the peer back from inside a request handler.
struct CallsBack;

impl Handler for CallsBack {
    async fn request(&self, request: IncomingRequest, responder: Responder) {
        let inner = request
            .connection()
            .request::<i64, _>("add", &serde_json::json!({"a": 1, "b": 2}));
        responder.respond(inner.await.map_err(ResponseError::internal_error));
    }
}

#[test]
fn handlers_can_call_the_peer() {
    run(async {
        let (a, _b, _a_driver, _b_driver) = connected_pair(
            TestHandler::default(),
            CallsBack,
            ConnectionOptions::default(),
        );
        let result: i64 = a.request("outer", &()).await.unwrap();
        assert_eq!(result, 3);
    });
}

#[test]
fn panicking_handlers_do_not_kill_the_connection() {
    run(async {
        let recorder = Recorder::default();
        let options = ConnectionOptions::default().with_observer(recorder.clone());
        let (a, _b, _a_driver, _b_driver) =
            connected_pair(TestHandler::default(), TestHandler::default(), options);
        for _ in 0..3 {
            match a.request::<(), _>("panic", &()).await {
                Err(RequestError::Response(error)) => assert_eq!(error.code.0, -32603),
                other => panic!("{other:?}"),
            }
            a.notify("panic_note", &()).await.unwrap();
        }
        let pong: String = a.request("ping", &()).await.unwrap();
        assert_eq!(pong, "pong");
        let panics = recorder
            .problems()
            .iter()
            .filter(|p| {
                matches!(
                    p,
                    Problem::RequestHandlerPanicked { .. }
                        | Problem::NotificationHandlerPanicked { .. }
                )
            })
            .count();
        assert_eq!(panics, 6);
        // The notification's method is named, and each handler future that
        // panicked was dropped before the next notification reused its box.
        let notes = recorder
            .problems()
            .iter()
            .filter(|p| matches!(p, Problem::NotificationHandlerPanicked { method, .. } if method == "panic_note"))
            .count();
        assert_eq!(notes, 3);
    });
}

#[test]
fn dropping_a_request_future_sends_cancel_request() {
    run(async {
        let (handle, mut peer, _driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        let mut call = Box::pin(handle.request::<String, _>("slow/thing", &()));
        assert!(stays_pending(&mut call, Duration::from_millis(20)).await);
        let request = peer.recv_json().await;
        assert_eq!(request["method"], "slow/thing");
        drop(call);
        assert_eq!(
            peer.recv().await.unwrap(),
            format!(
                r#"{{"jsonrpc":"2.0","method":"$/cancel_request","params":{{"requestId":{}}}}}"#,
                request["id"]
            )
        );
        // A late answer to the cancelled request is reported, not fatal.
        let replies = peer
            .replies_to(
                format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":"late"}}"#,
                    request["id"]
                )
                .as_bytes(),
            )
            .await;
        assert!(replies.is_empty());
    });
}

#[test]
fn a_request_future_dropped_before_sending_sends_nothing() {
    run(async {
        let (handle, mut peer, _driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        drop(handle.request::<String, _>("never/polled", &()));
        handle.notify("after", &()).await.unwrap();
        assert_eq!(
            peer.recv().await.unwrap(),
            r#"{"jsonrpc":"2.0","method":"after"}"#
        );
    });
}

#[test]
fn timeout_helper_times_out_and_cancels() {
    run(async {
        let (handle, mut peer, _driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        let call = handle.request::<String, _>("slow/thing", &());
        let id = call.id().clone();
        let result = call
            .with_timeout(Timer::after(Duration::from_millis(50)))
            .await;
        assert!(matches!(result, Err(RequestError::TimedOut)), "{result:?}");
        assert_eq!(peer.recv_json().await["method"], "slow/thing");
        assert_eq!(
            peer.recv().await.unwrap(),
            format!(
                r#"{{"jsonrpc":"2.0","method":"$/cancel_request","params":{{"requestId":{id}}}}}"#
            )
        );

        // A request answered in time is not affected by its timer.
        let call = smol::spawn(
            handle
                .request::<String, _>("quick", &())
                .with_timeout(Timer::after(Duration::from_secs(5))),
        );
        let request = peer.recv_json().await;
        peer.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":"fast"}}"#,
            request["id"]
        ))
        .await;
        assert_eq!(call.await.unwrap(), "fast");
    });
}

#[test]
fn malformed_response_fails_the_waiting_request() {
    run(async {
        let (handle, mut peer, _driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        let call = smol::spawn(handle.request::<String, _>("x", &()));
        let id = peer.recv_json().await["id"].clone();
        peer.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":1,"error":{{"code":1,"message":"m"}}}}"#
        ))
        .await;
        assert!(matches!(
            call.await,
            Err(RequestError::MalformedResponse(_))
        ));
    });
}

#[test]
fn close_fails_pending_requests_and_ends_the_driver() {
    run(async {
        let (handle, mut peer, driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        let call = smol::spawn(handle.request::<String, _>("never/answered", &()));
        assert_eq!(peer.recv_json().await["method"], "never/answered");
        handle.notify("queued/before/close", &()).await.unwrap();
        handle.close();
        assert!(handle.is_closed());
        assert!(matches!(call.await, Err(RequestError::ConnectionClosed)));
        assert!(matches!(
            handle.notify("after/close", &()).await,
            Err(RequestError::ConnectionClosed)
        ));
        assert!(matches!(
            handle.request::<(), _>("after/close", &()).await,
            Err(RequestError::ConnectionClosed)
        ));
        driver.await.unwrap();
        // What was queued before close() is still written; then end of output.
        assert_eq!(peer.recv_json().await["method"], "queued/before/close");
        assert_eq!(peer.recv().await, None);
    });
}

#[test]
fn peer_eof_fails_pending_requests_and_ends_the_driver() {
    run(async {
        let (handle, mut peer, driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        let call = smol::spawn(handle.request::<String, _>("never/answered", &()));
        assert_eq!(peer.recv_json().await["method"], "never/answered");
        peer.close();
        assert!(matches!(call.await, Err(RequestError::ConnectionClosed)));
        driver.await.unwrap();
        assert_eq!(peer.recv().await, None);
        assert!(matches!(
            handle.request::<(), _>("after/eof", &()).await,
            Err(RequestError::ConnectionClosed)
        ));
    });
}

#[test]
fn after_peer_eof_running_handlers_finish_and_are_answered() {
    run(async {
        let (_handle, mut peer, driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"sleep"}"#)
            .await;
        peer.close();
        assert_eq!(
            peer.recv().await.unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"result":"slept"}"#
        );
        assert_eq!(peer.recv().await, None);
        driver.await.unwrap();
    });
}

#[test]
fn dropping_the_driver_fails_everything_at_once() {
    run(async {
        let (handle, mut peer, driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        let call = smol::spawn(handle.request::<String, _>("never/answered", &()));
        assert_eq!(peer.recv_json().await["method"], "never/answered");
        peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"forever"}"#)
            .await;
        Timer::after(Duration::from_millis(20)).await;
        drop(driver.cancel().await);
        assert!(matches!(call.await, Err(RequestError::ConnectionClosed)));
        assert!(handle.is_closed());
        assert!(matches!(
            handle.notify("x", &()).await,
            Err(RequestError::ConnectionClosed)
        ));
        // The in-flight handler was dropped without a response being written.
        assert_eq!(peer.recv().await, None);
    });
}

#[test]
fn dropping_every_handle_keeps_serving_the_peer() {
    run(async {
        let (handle, mut peer, _driver) =
            connect(TestHandler::default(), ConnectionOptions::default());
        drop(handle);
        assert!(peer.replies_to(b"").await.is_empty());
    });
}

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
