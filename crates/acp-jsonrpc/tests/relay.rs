//! Requests relayed with no task (`Handler::relay_request`, `ConnectionHandle::try_relay_request`):
//! a router between a client peer and a server peer, both raw, relays every request the client
//! sends; what the server answers comes back from the server connection's driver.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use acp_jsonrpc::{
    ConnectionHandle, ConnectionOptions, ForwardedResult, Handler, IncomingRequest, RawRequest,
    RelayHooks, RequestError, Responder, ResponseError,
};
use common::RawPeer;

/// What the hooks saw: the answers handed to `finish` (`Ok` with the result's length, or the
/// error), and how many relays ended.
#[derive(Default)]
struct Seen {
    finished: Mutex<Vec<Result<usize, String>>>,
    ended: AtomicUsize,
}

struct Hooks(Arc<Seen>);

impl RelayHooks for Hooks {
    fn finish(&self, mut responder: Responder, answer: Result<ForwardedResult, RequestError>) {
        let seen = answer.as_ref().map(ForwardedResult::len);
        self.0
            .finished
            .lock()
            .unwrap()
            .push(seen.map_err(ToString::to_string));
        match answer {
            Ok(result) => smol::spawn(async move {
                responder.reserve(result.len()).await;
                responder.respond_forwarded(&result);
            })
            .detach(),
            Err(error) => responder.respond_error(ResponseError::internal_error(error)),
        }
    }

    fn ended(&self) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
    }
}

/// Relays every request to `next`, wrapped in `outer` when its method starts with `wrap:`;
/// the method `task` is declined and answered by `request` (so that order can be checked).
struct Relayer {
    next: Arc<OnceLock<ConnectionHandle>>,
    hooks: Arc<dyn RelayHooks>,
}

impl Handler for Relayer {
    async fn request(&self, request: IncomingRequest, responder: Responder) {
        responder.respond_ok(&format!("task {}", request.method()));
    }

    const FORWARDS: bool = true;

    fn takes_unread(&self, _: &RawRequest<'_>) -> bool {
        true
    }

    fn relay_request(
        &self,
        request: &RawRequest<'_>,
        responder: Responder,
    ) -> Result<(), Responder> {
        let next = self.next.get().expect("the next hop");
        match request.method() {
            "task" => Err(responder),
            method => match method.strip_prefix("wrap:") {
                Some(inner) => next.try_relay_request_wrapped(
                    "outer",
                    inner,
                    request.params(),
                    responder,
                    &self.hooks,
                ),
                None => next.try_relay_request(method, request.params(), responder, &self.hooks),
            },
        }
    }
}

/// The client peer, the server peer and what the hooks saw; the connections' tasks.
struct Router {
    /// The router's connection to the client.
    to_client: ConnectionHandle,
    client: RawPeer,
    server: RawPeer,
    seen: Arc<Seen>,
    _tasks: Vec<smol::Task<Result<(), acp_jsonrpc::ConnectionError>>>,
}

fn router(client_options: ConnectionOptions) -> Router {
    let seen = Arc::new(Seen::default());
    let next = Arc::new(OnceLock::new());
    let relayer = Relayer {
        next: next.clone(),
        hooks: Arc::new(Hooks(seen.clone())),
    };
    let (to_client, client, client_task) = common::connect(relayer, client_options);
    let (server_handle, server, server_task) = common::connect((), Default::default());
    next.set(server_handle).expect("set once");
    Router {
        to_client,
        client,
        server,
        seen,
        _tasks: vec![client_task, server_task],
    }
}

impl Router {
    /// Sends `line` from the client; the id the server got it under and the line it got, with
    /// that id put back to `N` (its params may not be JSON).
    async fn relay(&mut self, line: &str) -> (i64, String) {
        self.client.send(line).await;
        let relayed = self.server.recv().await.expect("the relayed request");
        let start = relayed.find(r#""id":"#).expect("an id") + r#""id":"#.len();
        let digits = relayed[start..].find(',').expect("a member after the id");
        let id = relayed[start..start + digits]
            .parse()
            .expect("an integer id");
        let line = relayed.replacen(&format!("\"id\":{id},"), "\"id\":N,", 1);
        (id, line)
    }

    /// The server gets `$/cancel_request` for its request `id`.
    async fn server_gets_cancel_for(&mut self, id: i64) {
        let cancel = self.server.recv_json().await;
        assert_eq!(cancel["method"], "$/cancel_request", "{cancel}");
        assert_eq!(cancel["params"]["requestId"], id, "{cancel}");
    }

    /// How many relays ended.
    fn ended(&self) -> usize {
        self.seen.ended.load(Ordering::SeqCst)
    }
}

/// A request and its answer go through unread and byte for byte: the params (malformed ones
/// too: the server answers for them), and the result or error under the client's id. Nothing
/// is left to the hooks, and each relay ends once.
#[test]
fn relayed_requests_and_their_answers_go_through_byte_for_byte() {
    common::run(async {
        let mut router = router(Default::default());
        let (id, line) = router
            .relay(r#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":tru,"b":"\u00e9"}}"#)
            .await;
        assert_eq!(
            line,
            r#"{"jsonrpc":"2.0","id":N,"method":"m","params":{"a":tru,"b":"\u00e9"}}"#
        );
        router
            .server
            .send(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"x":[1, 2.50],"y":"\n"}}}}"#
            ))
            .await;
        assert_eq!(
            router.client.recv().await.expect("the answer"),
            r#"{"jsonrpc":"2.0","id":7,"result":{"x":[1, 2.50],"y":"\n"}}"#
        );

        // Wrapped, and answered with an error, which goes back as it came.
        let (id, line) = router
            .relay(r#"{"jsonrpc":"2.0","id":8,"method":"wrap:inner","params":[1]}"#)
            .await;
        assert_eq!(
            line,
            r#"{"jsonrpc":"2.0","id":N,"method":"outer","params":{"method":"inner","params":[1]}}"#
        );
        router
            .server
            .send(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32001,"message":"no"}}}}"#
            ))
            .await;
        let answer = router.client.recv_json().await;
        assert_eq!(answer["id"], 8, "{answer}");
        assert_eq!(answer["error"]["code"], -32001, "{answer}");
        assert_eq!(answer["error"]["message"], "no", "{answer}");

        // Declined: handled by a task, as usual.
        router
            .client
            .send(r#"{"jsonrpc":"2.0","id":9,"method":"task","params":{}}"#)
            .await;
        let answer = router.client.recv_json().await;
        assert_eq!(answer["result"], "task task", "{answer}");

        assert!(router.seen.finished.lock().unwrap().is_empty());
        assert_eq!(router.ended(), 2);
    });
}

/// The client's `$/cancel_request` answers the relayed request `-32800` and cancels the
/// server's under its own id; the server's late answer goes nowhere.
#[test]
fn a_cancelled_relay_is_answered_and_cancelled_on_the_next_hop() {
    common::run(async {
        let mut router = router(Default::default());
        let (id, _) = router
            .relay(r#"{"jsonrpc":"2.0","id":1,"method":"slow","params":{}}"#)
            .await;
        router
            .client
            .send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}"#)
            .await;
        let answer = router.client.recv_json().await;
        assert_eq!(
            (&answer["id"], &answer["error"]["code"]),
            (&1.into(), &(-32800).into()),
            "{answer}"
        );
        router.server_gets_cancel_for(id).await;
        // Answered late: dropped (reported as unknown), and the next relay is unaffected.
        router
            .server
            .send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"late"}}"#))
            .await;
        let (id, _) = router
            .relay(r#"{"jsonrpc":"2.0","id":2,"method":"m","params":null}"#)
            .await;
        router
            .server
            .send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"next"}}"#))
            .await;
        let answer = router.client.recv_json().await;
        assert_eq!(
            (&answer["id"], &answer["result"]),
            (&2.into(), &"next".into())
        );
        assert_eq!(router.ended(), 2);
    });
}

/// The next hop's connection ends with a relay under way: the hooks finish it with why, once.
#[test]
fn a_relay_whose_next_hop_closes_is_finished_by_the_hooks() {
    common::run(async {
        let mut router = router(Default::default());
        router
            .relay(r#"{"jsonrpc":"2.0","id":3,"method":"m","params":{}}"#)
            .await;
        router.server.close();
        let answer = router.client.recv_json().await;
        assert_eq!(
            (&answer["id"], &answer["error"]["code"]),
            (&3.into(), &(-32603).into()),
            "{answer}"
        );
        let finished = router.seen.finished.lock().unwrap().clone();
        assert_eq!(finished.len(), 1, "{finished:?}");
        assert!(finished[0].is_err(), "{finished:?}");
        assert_eq!(router.ended(), 1);
    });
}

/// An answer the client's reply budget has no room for now goes to the hooks, which wait for
/// room; both answers reach the client, in the order they were answered.
#[test]
fn an_answer_with_no_room_in_the_reply_budget_is_finished_by_the_hooks() {
    common::run(async {
        let mut router = router(ConnectionOptions::default().with_reply_budget(1024));
        let (first, _) = router
            .relay(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#)
            .await;
        let (second, _) = router
            .relay(r#"{"jsonrpc":"2.0","id":2,"method":"m","params":{}}"#)
            .await;
        // Larger than the client's pipe: most of it stays queued until the client reads.
        let big = "x".repeat(200 * 1024);
        router
            .server
            .send(&format!(
                r#"{{"jsonrpc":"2.0","id":{first},"result":"{big}"}}"#
            ))
            .await;
        router
            .server
            .send(&format!(
                r#"{{"jsonrpc":"2.0","id":{second},"result":"small"}}"#
            ))
            .await;
        // Wait until the second answer reached the hooks, then read both.
        while router.seen.finished.lock().unwrap().is_empty() {
            smol::Timer::after(std::time::Duration::from_millis(5)).await;
        }
        let answer = router.client.recv_json().await;
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["result"].as_str().map(str::len), Some(big.len()));
        let answer = router.client.recv_json().await;
        assert_eq!(
            (&answer["id"], &answer["result"]),
            (&2.into(), &"small".into())
        );
        let finished = router.seen.finished.lock().unwrap().clone();
        assert_eq!(finished, vec![Ok("\"small\"".len())]);
        assert_eq!(router.ended(), 2);
    });
}

/// The router closes its connection to the client (which left) with a relay under way: the
/// request is cancelled on the next hop, as a forwarding task dropped with its connection
/// cancels its own.
#[test]
fn a_relay_whose_caller_leaves_is_cancelled_on_the_next_hop() {
    common::run(async {
        let mut router = router(Default::default());
        let (id, _) = router
            .relay(r#"{"jsonrpc":"2.0","id":4,"method":"m","params":{}}"#)
            .await;
        router.to_client.close();
        router.server_gets_cancel_for(id).await;
        assert_eq!(router.ended(), 1);
    });
}
