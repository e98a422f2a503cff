//! Resource limits: requests beyond the in-flight limit are answered with an
//! error while reading goes on, and responses are bounded in bytes (the
//! reader pauses while the peer does not read them, and reservers wait for
//! room).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_jsonrpc::{
    ByteBudget, ConnectionHandle, ConnectionOptions, Handler, IncomingNotification,
    IncomingRequest, Problem, Responder, ResponseError,
};
use common::{RawPeer, Recorder, TestHandler, connect, run};
use futures_lite::AsyncWriteExt;
use proptest::prelude::*;
use serde_json::Value;
use smol::Timer;

/// Polls `condition` every millisecond until it holds (the test's own
/// timeout catches a condition that never does).
async fn eventually(mut condition: impl FnMut() -> bool) {
    while !condition() {
        Timer::after(Duration::from_millis(1)).await;
    }
}

fn request(id: impl std::fmt::Display, method: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#)
}

fn cancel(id: impl std::fmt::Display) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"$/cancel_request","params":{{"requestId":{id}}}}}"#)
}

async fn send_lines(peer: &mut RawPeer, lines: impl IntoIterator<Item = String>) {
    let mut text = String::new();
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    peer.send_bytes(text.as_bytes()).await;
}

fn is_too_many(response: &Value, limit: usize) -> bool {
    response["error"]
        == serde_json::json!({
            "code": -32603,
            "message": "too many requests in flight",
            "data": {"maxInFlightRequests": limit},
        })
}

/// 300 requests that never finish, then more traffic: the 257th to 300th are
/// refused at once, and responses, notifications and cancellations still get
/// through; cancelling frees slots for new requests.
#[test]
fn requests_beyond_the_in_flight_limit_are_refused_and_reading_goes_on() {
    run(async {
        let recorder = Recorder::default();
        let handler = TestHandler::default();
        let options = ConnectionOptions::default().with_observer(recorder.clone());
        let (handle, mut peer, _driver) = connect(handler.clone(), options);
        let mut answered: BTreeMap<i64, Value> = BTreeMap::new();
        let mut record = |response: Value| {
            let id = response["id"].as_i64().expect("an integer id");
            assert!(
                answered.insert(id, response).is_none(),
                "{id} answered twice"
            );
        };

        send_lines(&mut peer, (1..=300).map(|id| request(id, "forever"))).await;
        for id in 257..=300 {
            let response = peer.recv_json().await;
            assert_eq!(response["id"], id, "{response}");
            assert!(is_too_many(&response, 256), "{response}");
            record(response);
        }

        // A response to our own request is still read.
        let call = handle.request::<String, _>("question", &());
        let answer = async {
            let asked = peer.recv_json().await;
            assert_eq!(asked["method"], "question");
            let id = &asked["id"];
            peer.send(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":"answer"}}"#
            ))
            .await;
        };
        let (result, ()) = smol::future::zip(call, answer).await;
        assert_eq!(result.unwrap(), "answer");

        // So is a notification, handled before the request after it.
        send_lines(
            &mut peer,
            [
                r#"{"jsonrpc":"2.0","method":"note","params":"seen"}"#.to_owned(),
                request(400, "ping"),
            ],
        )
        .await;
        let response = peer.recv_json().await;
        assert!(is_too_many(&response, 256), "{response}");
        record(response);
        assert_eq!(handler.log(), [r#"note "seen""#]);

        // And cancellations, which free slots.
        send_lines(&mut peer, (1..=10).map(cancel)).await;
        for id in 1..=10 {
            let response = peer.recv_json().await;
            assert_eq!(response["id"], id, "{response}");
            assert_eq!(response["error"]["code"], -32800, "{response}");
            record(response);
        }
        send_lines(&mut peer, [request(401, "ping")]).await;
        let response = peer.recv_json().await;
        assert_eq!(response["result"], "pong", "{response}");
        record(response);

        // Nothing else was answered.
        assert!(peer.replies_to(b"").await.is_empty());
        let expected: Vec<i64> = (1..=10).chain(257..=300).chain([400, 401]).collect();
        assert_eq!(answered.keys().copied().collect::<Vec<_>>(), expected);

        let refused: Vec<_> = recorder
            .problems()
            .into_iter()
            .filter_map(|problem| match problem {
                Problem::TooManyRequests { id, limit } => Some((id, limit)),
                _ => None,
            })
            .collect();
        let expected: Vec<_> = (257..=300)
            .chain([400])
            .map(|id| (id.into(), 256))
            .collect();
        assert_eq!(refused, expected);
        handle.close();
    });
}

/// The refusal does not wait for a slot: a ping behind two slow requests at a
/// limit of two is answered first.
#[test]
fn a_request_at_the_limit_is_refused_at_once() {
    run(async {
        let options = ConnectionOptions::default().with_max_in_flight_requests(2);
        let (_handle, mut peer, _driver) = connect(TestHandler::default(), options);
        send_lines(
            &mut peer,
            [request(1, "sleep"), request(2, "sleep"), request(3, "ping")],
        )
        .await;
        let first = peer.recv_json().await;
        assert_eq!(first["id"], 3);
        let error: ResponseError = serde_json::from_value(first["error"].clone()).unwrap();
        assert!(error.is_too_many_requests());
        assert_eq!(error, ResponseError::too_many_requests(2));
        let mut ids = [
            peer.recv_json().await["id"].as_i64(),
            peer.recv_json().await["id"].as_i64(),
        ];
        ids.sort();
        assert_eq!(ids, [Some(1), Some(2)]);
        // Both finished: there is room again.
        send_lines(&mut peer, [request(4, "ping")]).await;
        assert_eq!(peer.recv_json().await["result"], "pong");
    });
}

fn padded(id: usize, method: &str, padding: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"_meta":{{"pad":"{}"}}}}}}"#,
        "x".repeat(padding)
    )
}

/// Requests that wait (`forever`), each carrying 100 KiB, against a budget of 256 KiB: the
/// third is refused at once with the byte error, what is held stays within the budget, a
/// small ping still gets through, and a cancellation gives the bytes back.
#[test]
fn requests_beyond_the_in_flight_byte_budget_are_refused_and_reading_goes_on() {
    run(async {
        let recorder = Recorder::default();
        let options = ConnectionOptions::default()
            .with_in_flight_budget(256 * 1024)
            .with_observer(recorder.clone());
        let (handle, mut peer, _driver) = connect(TestHandler::default(), options);
        let big = 100 * 1024;
        send_lines(&mut peer, (1..=10).map(|id| padded(id, "forever", big))).await;
        let mut refused = Vec::new();
        for _ in 0..8 {
            let answer = peer.recv_json().await;
            let error: ResponseError = serde_json::from_value(answer["error"].clone()).unwrap();
            assert!(error.is_too_many_request_bytes(), "{answer}");
            assert_eq!(answer["error"]["data"]["maxInFlightBytes"], 256 * 1024);
            assert_eq!(answer["error"]["data"]["scope"], "connection");
            refused.push(answer["id"].as_i64().unwrap());
        }
        assert_eq!(refused, (3..=10).collect::<Vec<_>>());
        let held = handle.in_flight_request_bytes();
        assert!(
            held > 2 * big && held <= handle.in_flight_budget(),
            "{held}"
        );
        // Reading went on: a small request still fits, and is answered.
        send_lines(&mut peer, [request(11, "ping")]).await;
        assert_eq!(peer.recv_json().await["result"], "pong");
        // Cancelling one gives its bytes back.
        send_lines(&mut peer, [cancel(1)]).await;
        assert_eq!(peer.recv_json().await["error"]["code"], -32800);
        eventually(|| handle.in_flight_request_bytes() < 2 * big).await;
        send_lines(&mut peer, [padded(12, "forever", big)]).await;
        eventually(|| handle.in_flight_request_bytes() > 2 * big).await;
        let problems = recorder.problems();
        let exceeded = problems
            .iter()
            .filter(|p| matches!(p, Problem::InFlightBudgetExceeded { .. }))
            .count();
        assert_eq!(exceeded, 8);
        handle.close();
    });
}

/// Two connections drawing from one shared budget: what one holds, the other cannot take.
#[test]
fn a_shared_budget_bounds_connections_together() {
    run(async {
        let everyone = ByteBudget::new(150 * 1024);
        let options =
            || ConnectionOptions::default().with_shared_in_flight_budget(everyone.clone());
        let (first, mut a, _da) = connect(TestHandler::default(), options());
        let (second, mut b, _db) = connect(TestHandler::default(), options());
        send_lines(&mut a, [padded(1, "forever", 100 * 1024)]).await;
        eventually(|| everyone.used() > 100 * 1024).await;
        send_lines(&mut b, [padded(1, "forever", 100 * 1024)]).await;
        let answer = b.recv_json().await;
        assert_eq!(answer["error"]["data"]["scope"], "shared", "{answer}");
        assert_eq!(second.in_flight_request_bytes(), 0);
        send_lines(&mut a, [cancel(1)]).await;
        assert_eq!(a.recv_json().await["error"]["code"], -32800);
        eventually(|| everyone.used() == 0).await;
        send_lines(&mut b, [padded(2, "forever", 100 * 1024)]).await;
        eventually(|| second.in_flight_request_bytes() > 100 * 1024).await;
        first.close();
        second.close();
    });
}

/// Answers with large results, counting what it did.
#[derive(Clone, Default)]
struct Large {
    /// Handlers that got their reservation.
    granted: Arc<AtomicUsize>,
    /// `ping`s handled.
    pings: Arc<AtomicUsize>,
    /// Answers sent without a reservation.
    unreserved: Arc<AtomicUsize>,
    /// The most reply bytes seen queued, right after queueing an answer.
    max_queued: Arc<AtomicUsize>,
}

/// An upper bound of the JSON-RPC envelope around a result.
const ENVELOPE: usize = 100;

impl Large {
    fn answer(&self, connection: &ConnectionHandle, responder: Responder, size: usize) {
        responder.respond_ok(&"x".repeat(size));
        self.max_queued
            .fetch_max(connection.queued_reply_bytes(), Ordering::SeqCst);
    }
}

impl Handler for Large {
    async fn request(&self, request: IncomingRequest, mut responder: Responder) {
        let size: usize = request.params().unwrap_or(0);
        match request.method() {
            "reserved" => {
                responder.reserve(size + ENVELOPE).await;
                self.granted.fetch_add(1, Ordering::SeqCst);
                self.answer(request.connection(), responder, size);
            }
            "unreserved" => {
                self.answer(request.connection(), responder, size);
                self.unreserved.fetch_add(1, Ordering::SeqCst);
            }
            "yield" => {
                for _ in 0..size % 4 {
                    futures_lite::future::yield_now().await;
                }
                responder.respond_ok("yielded");
            }
            "forever" => {
                let _keep = responder;
                std::future::pending::<()>().await;
            }
            "hold_room" => {
                responder.reserve(size).await;
                self.granted.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<()>().await;
            }
            "ping" => {
                self.pings.fetch_add(1, Ordering::SeqCst);
                responder.respond_ok("pong");
            }
            _ => responder.respond_error(request.method_not_found()),
        }
    }

    async fn notification(&self, _: IncomingNotification) {}
}

fn sized(id: usize, method: &str, size: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{size}}}"#)
}

/// Reads `count` responses and checks that each id in `ids` was answered
/// exactly once.
async fn expect_answers(peer: &mut RawPeer, ids: impl IntoIterator<Item = usize>) {
    let mut expected: Vec<usize> = ids.into_iter().collect();
    let mut seen = Vec::new();
    for _ in 0..expected.len() {
        let response = peer.recv_json().await;
        seen.push(response["id"].as_u64().expect("an id") as usize);
    }
    seen.sort();
    expected.sort();
    assert_eq!(seen, expected);
}

/// A peer that does not read: handlers that reserve before answering 1 MiB
/// wait for room, so the queued answers stay within the budget, and the
/// reader, not over budget, still takes requests.
#[test]
fn reservations_keep_queued_replies_within_the_budget() {
    run(async {
        const MIB: usize = 1024 * 1024;
        const BUDGET: usize = 4 * MIB;
        const HANDLERS: usize = 16;
        let handler = Large::default();
        let options = ConnectionOptions::default().with_reply_budget(BUDGET);
        let (handle, mut peer, _driver) = connect(handler.clone(), options);
        assert_eq!(handle.reply_budget(), BUDGET);

        send_lines(
            &mut peer,
            (0..HANDLERS).map(|id| sized(id, "reserved", MIB)),
        )
        .await;
        // Three reservations fit at once; the writer holds a fourth answer
        // (the peer took 64 KiB of it).
        let fitting = BUDGET / (MIB + ENVELOPE);
        eventually(|| handler.granted.load(Ordering::SeqCst) == fitting + 1).await;
        assert!(handle.queued_reply_bytes() + handle.reserved_reply_bytes() <= BUDGET);

        // Not over budget: requests are still read and handled.
        send_lines(&mut peer, (100..110).map(|id| request(id, "ping"))).await;
        eventually(|| handler.pings.load(Ordering::SeqCst) == 10).await;
        Timer::after(Duration::from_millis(50)).await;
        assert_eq!(handler.granted.load(Ordering::SeqCst), fitting + 1);

        expect_answers(&mut peer, (0..HANDLERS).chain(100..110)).await;
        assert_eq!(handler.granted.load(Ordering::SeqCst), HANDLERS);
        let max_queued = handler.max_queued.load(Ordering::SeqCst);
        assert!(max_queued <= BUDGET, "{max_queued} bytes queued");
        assert!(peer.replies_to(b"").await.is_empty());
        assert_eq!(handle.queued_reply_bytes(), 0);
        assert_eq!(handle.reserved_reply_bytes(), 0);
    });
}

/// Answers that were not reserved for push the queue over the budget; the
/// connection then reads nothing more until the peer reads, and afterwards
/// every request gets its one answer.
#[test]
fn unread_replies_over_the_budget_pause_reading() {
    run(async {
        const KIB: usize = 1024;
        const BUDGET: usize = 1024 * KIB;
        let handler = Large::default();
        let options = ConnectionOptions::default().with_reply_budget(BUDGET);
        let (handle, mut peer, _driver) = connect(handler.clone(), options);

        // Two answers queued are over budget; the writer holds a third.
        send_lines(
            &mut peer,
            (0..3).map(|id| sized(id, "unreserved", 512 * KIB)),
        )
        .await;
        eventually(|| {
            handler.unreserved.load(Ordering::SeqCst) == 3
                && handle.queued_reply_bytes() < 3 * 512 * KIB
        })
        .await;
        let queued = handle.queued_reply_bytes();
        assert!(queued > BUDGET, "{queued}");
        // Over by less than one answer.
        assert!(queued <= BUDGET + 512 * KIB + ENVELOPE, "{queued}");

        send_lines(&mut peer, (100..300).map(|id| request(id, "ping"))).await;
        Timer::after(Duration::from_millis(100)).await;
        assert_eq!(
            handler.pings.load(Ordering::SeqCst),
            0,
            "read while over budget"
        );
        assert_eq!(handle.queued_reply_bytes(), queued);

        expect_answers(&mut peer, (0..3).chain(100..300)).await;
        assert_eq!(handler.pings.load(Ordering::SeqCst), 200);
        assert!(peer.replies_to(b"").await.is_empty());
    });
}

/// A reply budget shared by two connections (a server's): answers one peer does not read
/// take it until the next does not fit, which is queued beside it and pauses that
/// connection's reading (never the other's); once its peer reads, every request gets its
/// answer and the shared budget is given back whole.
#[test]
fn a_shared_reply_budget_pauses_only_the_connection_over_it() {
    run(async {
        const KIB: usize = 1024;
        let everyone = ByteBudget::new(1024 * KIB);
        let options = || ConnectionOptions::default().with_shared_reply_budget(everyone.clone());
        let greedy = Large::default();
        let (_first, mut a, _da) = connect(greedy.clone(), options());
        let other = Large::default();
        let (_second, mut b, _db) = connect(other.clone(), options());

        // The writer takes the first answer; the second is queued in the shared budget; the
        // third does not fit beside it and pauses reading.
        send_lines(&mut a, (0..3).map(|id| sized(id, "unreserved", 512 * KIB))).await;
        eventually(|| greedy.unreserved.load(Ordering::SeqCst) == 3).await;
        assert!(everyone.used() <= 1024 * KIB, "{}", everyone.used());
        send_lines(&mut a, (100..110).map(|id| request(id, "ping"))).await;
        Timer::after(Duration::from_millis(100)).await;
        assert_eq!(
            greedy.pings.load(Ordering::SeqCst),
            0,
            "read while over its share"
        );

        // The other connection is served meanwhile.
        send_lines(&mut b, [request(1, "ping")]).await;
        expect_answers(&mut b, [1]).await;

        expect_answers(&mut a, (0..3).chain(100..110)).await;
        assert_eq!(greedy.pings.load(Ordering::SeqCst), 10);
        eventually(|| everyone.used() == 0).await;
    });
}

/// An answer larger than the whole budget still goes out: its reservation is
/// granted once nothing else is queued or reserved.
#[test]
fn a_reservation_larger_than_the_budget_is_granted_alone() {
    run(async {
        const BUDGET: usize = 64 * 1024;
        const SIZE: usize = 256 * 1024;
        let handler = Large::default();
        let options = ConnectionOptions::default().with_reply_budget(BUDGET);
        let (handle, mut peer, _driver) = connect(handler.clone(), options);
        send_lines(&mut peer, (0..3).map(|id| sized(id, "reserved", SIZE))).await;
        // One answer in the writer, one alone in the queue, one waiting.
        eventually(|| handler.granted.load(Ordering::SeqCst) == 2).await;
        Timer::after(Duration::from_millis(50)).await;
        assert_eq!(handler.granted.load(Ordering::SeqCst), 2);
        assert!(handle.queued_reply_bytes() <= SIZE + ENVELOPE);
        expect_answers(&mut peer, 0..3).await;
    });
}

/// A reserver dropped while it waits (its request was cancelled) gives up
/// its place in line, and a dropped responder gives back its room.
#[test]
fn cancelled_reservers_give_up_their_place_and_their_room() {
    run(async {
        const BUDGET: usize = 1024 * 1024;
        let handler = Large::default();
        let options = ConnectionOptions::default().with_reply_budget(BUDGET);
        let (handle, mut peer, _driver) = connect(handler.clone(), options);

        send_lines(&mut peer, [sized(1, "hold_room", BUDGET)]).await;
        eventually(|| handle.reserved_reply_bytes() == BUDGET).await;
        // Both wait: the room is held.
        send_lines(
            &mut peer,
            [sized(2, "reserved", 1000), sized(3, "reserved", 1000)],
        )
        .await;
        Timer::after(Duration::from_millis(50)).await;
        assert_eq!(handler.granted.load(Ordering::SeqCst), 1);

        // The first in line goes away...
        send_lines(&mut peer, [cancel(2)]).await;
        let response = peer.recv_json().await;
        assert_eq!(
            (response["id"].as_i64(), &response["error"]["code"]),
            (Some(2), &(-32800).into())
        );
        // ...and the holder's responder is dropped: the second gets room.
        send_lines(&mut peer, [cancel(1)]).await;
        expect_answers(&mut peer, [1, 3]).await;
        assert_eq!(handler.granted.load(Ordering::SeqCst), 2);
        assert_eq!(handle.reserved_reply_bytes(), 0);
        assert!(peer.replies_to(b"").await.is_empty());
    });
}

#[derive(Debug, Clone)]
enum Op {
    /// A request: its method and params.
    Request(&'static str, usize),
    /// A `$/cancel_request` for the request this many requests back.
    Cancel(usize),
    /// A notification (never answered).
    Note,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Request("ping", 0)),
        3 => (0..4usize).prop_map(|n| Op::Request("yield", n)),
        2 => Just(Op::Request("forever", 0)),
        2 => (0..100_000usize).prop_map(|n| Op::Request("unreserved", n)),
        2 => (0..100_000usize).prop_map(|n| Op::Request("reserved", n)),
        2 => (0..8usize).prop_map(Op::Cancel),
        1 => Just(Op::Note),
    ]
}

/// Whether `response` is an answer `method` may get: its own result, or a
/// refusal, or a cancellation.
fn acceptable(method: &str, response: &Value, limit: usize) -> bool {
    if is_too_many(response, limit) || response["error"]["code"] == -32800 {
        return true;
    }
    match method {
        "ping" => response["result"] == "pong",
        "yield" => response["result"] == "yielded",
        "unreserved" | "reserved" => response["result"].is_string(),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Under any in-flight limit and reply budget, with the peer reading
    /// while it sends, every request gets exactly one acceptable answer and
    /// notifications get none.
    #[test]
    fn every_request_gets_exactly_one_response_under_any_limits(
        limit in 1..5usize,
        budget in prop_oneof![Just(0usize), Just(1000), Just(64 * 1024), Just(1024 * 1024)],
        ops in prop::collection::vec(op(), 1..40),
    ) {
        run(async {
            let options = ConnectionOptions::default()
                .with_max_in_flight_requests(limit)
                .with_reply_budget(budget);
            let (handle, mut peer, _driver) = connect(Large::default(), options);
            let mut methods: Vec<&str> = Vec::new();
            let mut lines = Vec::new();
            for op in &ops {
                match *op {
                    Op::Request(method, size) => {
                        lines.push(sized(methods.len(), method, size));
                        methods.push(method);
                    }
                    Op::Cancel(back) if back < methods.len() => {
                        lines.push(cancel(methods.len() - 1 - back));
                    }
                    Op::Cancel(_) => {}
                    Op::Note => lines.push(r#"{"jsonrpc":"2.0","method":"note"}"#.to_owned()),
                }
            }
            // Let every request finish.
            for (id, method) in methods.iter().enumerate() {
                if *method == "forever" {
                    lines.push(cancel(id));
                }
            }

            let mut writer = peer.writer.take().unwrap();
            let send = async {
                for line in &lines {
                    writer.write_all(line.as_bytes()).await.unwrap();
                    writer.write_all(b"\n").await.unwrap();
                }
                writer
            };
            let receive = async {
                let mut answers: Vec<Option<Value>> = vec![None; methods.len()];
                for _ in 0..methods.len() {
                    let response = peer.recv_json().await;
                    let id = response["id"].as_u64().expect("an id") as usize;
                    let method = methods[id];
                    assert!(acceptable(method, &response, limit), "{method}: {response}");
                    assert!(answers[id].replace(response).is_none(), "{id} answered twice");
                }
            };
            let (writer, ()) = smol::future::zip(send, receive).await;
            peer.writer = Some(writer);
            assert!(peer.replies_to(b"").await.is_empty());
            assert_eq!(handle.queued_reply_bytes(), 0);
            assert_eq!(handle.reserved_reply_bytes(), 0);
            handle.close();
        });
    }
}

/// Lines of 64 KiB, all there at once: one poll of the driver reads about a mebibyte, then
/// yields, so that whoever takes what the handlers queue on the same thread (a session's
/// updates) gets a turn long before its budget fills.
#[test]
fn one_poll_reads_about_a_mebibyte() {
    struct Counts(Arc<AtomicUsize>);
    impl Handler for Counts {
        async fn request(&self, _: IncomingRequest, _: Responder) {}
        async fn notification(&self, _: IncomingNotification) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":[\"{}\"]}}\n",
        "x".repeat(64 << 10)
    );
    let input = futures_lite::io::Cursor::new(line.repeat(64).into_bytes());
    let handled = Arc::new(AtomicUsize::new(0));
    let (_handle, driver) = acp_jsonrpc::Connection::new(
        futures_lite::io::BufReader::new(input),
        futures_lite::io::sink(),
        Counts(handled.clone()),
        ConnectionOptions::default(),
    );
    let mut driver = std::pin::pin!(driver);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(driver.as_mut().poll(&mut cx).is_pending());
    let first = handled.load(Ordering::Relaxed);
    assert!(
        (16..=17).contains(&first),
        "{first} lines of 64 KiB in one poll"
    );
}
