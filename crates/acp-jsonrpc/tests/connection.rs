//! The connection end to end: calls both ways, ordering, concurrency,
//! cancellation, timeouts, back-pressure, batching and shutdown.

mod common;

use std::time::Duration;

use acp_jsonrpc::{
    ConnectionOptions, Handler, IncomingRequest, Problem, RequestError, Responder, ResponseError,
};
use common::{Recorder, TestHandler, connect, connected_pair, run, stays_pending};
use serde_json::value::RawValue;
use smol::Timer;

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
