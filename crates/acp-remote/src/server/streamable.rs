//! The server's Streamable HTTP connections, the RFD's other transport: the client `POST`s
//! each message, and reads the server's messages as Server-Sent Events on long-lived `GET`
//! streams, one for the connection and one per session. This folder keeps a connection's
//! state (`stream.rs`: one SSE stream and its replay window; `carried.rs`: what a durable
//! WebSocket carries); the requests that drive it are `server/exchange/streamable.rs`.
//!
//! One logical connection ([`HttpConn`]) lives from the `initialize` POST to a `DELETE` (or
//! the idle timeout, or shutdown), across any number of TCP connections. The runtime sees it
//! as lines, like a WebSocket: [`HttpReader`] yields the POSTed messages, [`HttpWriter`] routes
//! each line it is given to the right stream's queue (see [`HttpConn::route_outgoing`]).

pub(crate) mod carried;
pub(crate) mod stream;

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};

use crate::lines::{LineSink, LineWriter, to_line};
use crate::proto::streamable::{Peek, session_of};
use crate::proto::ws::Activity;
use crate::queue::{ByteQueue, Inbound, QueueReader, Unpushed};
use crate::server::streamable::carried::Carried;
use crate::share::{Ceiling, Kind, Share};
use acp_jsonrpc::BudgetListener;
use acp_jsonrpc::Latch;
use stream::{Replay, SseStream};

/// Most session streams one connection keeps; messages of further sessions go to the
/// connection's stream (nothing is lost, they are just not separated).
const MAX_SESSION_STREAMS: usize = 64;

/// Most ids remembered for routing answers; beyond, answers go to the connection's stream.
const MAX_ROUTES: usize = 4096;

/// How many ids of accepted messages (the client's requests, and its answers to the agent's)
/// a connection remembers, so that a POST retried after a network error is not handed to the
/// agent twice; the oldest is forgotten first.
pub(crate) const MAX_SEEN_IDS: usize = 4096;

/// The longest request id a running turn is remembered by, as sent, for the turn state after a
/// resumption (longer: the turn is not reported), so that 4096 turns stay near 2 MiB.
const MAX_TURN_ID_LEN: usize = 256;

/// The longest session id an answer's route keeps (longer: the answer goes to the
/// connection's stream), so that 4096 routes stay near 1 MiB whatever the client sends.
const MAX_ROUTED_SESSION_LEN: usize = 256;

/// A request id as a connection remembers it: a keyed hash of its JSON text (8 bytes, however
/// long the id), with a tag for the side whose id it is. The key is the process's own, so a
/// client cannot make two ids collide on purpose.
type IdKey = u64;

fn id_key(tag: u8, text: &str) -> IdKey {
    use std::hash::{BuildHasher, Hasher};
    static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    let mut hasher = KEYS
        .get_or_init(std::collections::hash_map::RandomState::new)
        .build_hasher();
    hasher.write_u8(tag);
    hasher.write(text.trim().as_bytes());
    hasher.finish()
}

/// The tags of [`id_key`]: the client's requests, its answers to the agent's requests, and
/// the agent's requests.
const CLIENT_REQUEST: u8 = b'r';
const CLIENT_ANSWER: u8 = b'a';
const AGENT_REQUEST: u8 = b'q';

/// Where a message for the client goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    /// The answer to `initialize`: the body of the POST that sent it.
    Initial,
    Connection,
    Session(String),
}

/// One Streamable HTTP connection, shared by its POST, GET and DELETE handlers and by the
/// runtime's reader and writer.
#[derive(Debug)]
pub(crate) struct HttpConn {
    pub(crate) id: String,
    /// The `Authorization` header of the `initialize` POST: later requests must carry the same,
    /// so that a connection id alone reaches nothing.
    authorization: Option<String>,
    inbound: ByteQueue,
    initial: Arc<ByteQueue>,
    connection_stream: Arc<SseStream>,
    budget: Share,
    replay: Arc<Replay>,
    routes: Mutex<Routes>,
    pub(crate) activity: Arc<Activity>,
    /// Set by `DELETE`: the connection's task ends.
    pub(crate) ended: Latch,
    /// Carried by WebSockets (the durable transport, src/server/exchange/ws_durable.rs) rather than by HTTP
    /// requests: every message goes to the connection's stream, the `initialize` answer too,
    /// advertising the retention.
    pub(crate) carried: Option<Carried>,
}

#[derive(Debug, Default)]
struct Routes {
    sessions: HashMap<String, Arc<SseStream>>,
    /// Our answers to the client's requests: where each goes, by request id.
    answers: HashMap<IdKey, Route>,
    /// The agent's requests to the client: the session their answers must name.
    client_answers: HashMap<IdKey, Route>,
    /// The ids of the messages accepted lately: a POST carrying one again is a retry.
    seen: SeenIds,
    /// The turns running: `session/prompt` requests not answered yet, by request id, with
    /// their session (for the turn state sent after a resumption).
    turns: HashMap<String, String>,
    /// A carried connection's `initialize` request, whose answer advertises the retention.
    initialize: Option<String>,
}

/// A bounded set of ids, the oldest forgotten first.
#[derive(Debug, Default)]
struct SeenIds {
    ids: HashSet<IdKey>,
    order: VecDeque<IdKey>,
}

impl SeenIds {
    /// Remembers `key`; `false` if it was remembered already.
    fn insert(&mut self, key: IdKey) -> bool {
        if !self.ids.insert(key) {
            return false;
        }
        if self.order.len() >= MAX_SEEN_IDS
            && let Some(oldest) = self.order.pop_front()
        {
            self.ids.remove(&oldest);
        }
        self.order.push_back(key);
        true
    }

    /// Forgets `key`, if remembered.
    fn forget(&mut self, key: IdKey) {
        if self.ids.remove(&key) {
            self.order.retain(|k| *k != key);
        }
    }
}

/// What became of a POSTed message that passed the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Incoming {
    /// For the agent.
    New,
    /// A message with the id of one accepted before (a retried POST): not for the agent again.
    Retried,
}

/// The bounds of a connection's streams, from the server's options.
#[derive(Debug, Clone)]
pub(crate) struct StreamLimits {
    pub(crate) budget: usize,
    pub(crate) replay_bytes: usize,
    pub(crate) replay_events: usize,
    pub(crate) replay_age: std::time::Duration,
    /// The client asked for cursors in `_meta` (the durable transport, allowed by the server).
    pub(crate) cursors: bool,
}

impl StreamLimits {
    /// The server's stream budget and replay window, for a connection with or without cursors.
    pub(crate) fn of(options: &crate::server::options::ServerOptions, cursors: bool) -> Self {
        StreamLimits {
            budget: options.stream_budget,
            replay_bytes: options.replay_bytes,
            replay_events: options.replay_events,
            replay_age: options.replay_age,
            cursors,
        }
    }
}

/// Counts a `session/prompt` request in `session` as a running turn (until its answer).
fn note_turn(routes: &mut Routes, peek: &Peek<'_>, session: Option<String>) {
    if peek.method.as_deref() != Some("session/prompt") {
        return;
    }
    if let (Some(key), Some(session)) = (peek.id_key(), session)
        && key.len() <= MAX_TURN_ID_LEN
        && session.len() <= MAX_ROUTED_SESSION_LEN
        && routes.turns.len() < MAX_ROUTES
    {
        routes.turns.insert(key, session);
    }
}

/// Methods whose POST names a session (with `Acp-Session-Id`, or in `params.sessionId`).
fn is_session_scoped(method: &str) -> bool {
    method.starts_with("session/") && !matches!(method, "session/new" | "session/list")
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a POST is refused: status and text.
pub(crate) type Refusal = (u16, &'static str);

/// A POSTed message the server's memory ceiling has no room for, for this connection under
/// the share rule: refused at once, as a body that does not fit is.
pub(crate) const OVER_SHARE: Refusal = (
    413,
    "no room for this message now (this connection's share of the server's memory ceiling): send it again later",
);

impl HttpConn {
    pub(crate) fn new(
        id: String,
        authorization: Option<String>,
        inbound_budget: usize,
        limits: StreamLimits,
        ceiling: &Arc<Ceiling>,
        carried: Option<Carried>,
    ) -> Arc<HttpConn> {
        let budget = Share::new(limits.budget, ceiling, Kind::SseQueues);
        // The replay window's bytes come out of the same ceiling, best effort (an event that
        // does not fit is sent but not kept).
        let replay = Replay::new(
            limits.replay_bytes,
            limits.replay_events,
            limits.replay_age,
            limits.cursors,
            ceiling.budget().clone(),
        );
        Arc::new(HttpConn {
            id,
            authorization,
            inbound: ByteQueue::new(Share::new(inbound_budget, ceiling, Kind::PostBodies)),
            initial: Arc::new(ByteQueue::new(Share::alone(usize::MAX))),
            connection_stream: Arc::new(SseStream::new(budget.clone(), replay.clone())),
            budget,
            replay,
            routes: Mutex::default(),
            activity: Activity::new(),
            ended: Latch::default(),
            carried,
        })
    }

    /// The budget of the POSTed messages waiting for the runtime: a POST's body counts
    /// against it while it arrives.
    pub(crate) fn inbound_budget(&self) -> Share {
        self.inbound.budget().clone()
    }

    /// Whether a request carrying `authorization` may use this connection.
    pub(crate) fn authorizes(&self, authorization: Option<&str>) -> bool {
        match (&self.authorization, authorization) {
            (None, _) => true,
            (Some(ours), Some(theirs)) => {
                crate::server::http::constant_time_eq(ours.as_bytes(), theirs.as_bytes())
            }
            (Some(_), None) => false,
        }
    }

    /// The stream of a session, created on first use (at most [`MAX_SESSION_STREAMS`]).
    fn session_stream(&self, routes: &mut Routes, session: &str) -> Option<Arc<SseStream>> {
        if let Some(stream) = routes.sessions.get(session) {
            return Some(stream.clone());
        }
        if routes.sessions.len() >= MAX_SESSION_STREAMS {
            return None;
        }
        let stream = Arc::new(SseStream::new(self.budget.clone(), self.replay.clone()));
        routes.sessions.insert(session.to_owned(), stream.clone());
        Some(stream)
    }

    /// The stream a GET asks for: the connection's, or a session's (created on demand, since
    /// the RFD's own resume flow opens it before `session/load`).
    pub(crate) fn stream(&self, session: Option<&str>) -> Option<Arc<SseStream>> {
        match session {
            None => Some(self.connection_stream.clone()),
            Some(session) => self.session_stream(&mut lock(&self.routes), session),
        }
    }

    /// Keeps the replay window within its bounds (after events were sent, or before a
    /// resumption is checked against it).
    pub(crate) fn trim_replay(&self) {
        let mut streams = vec![self.connection_stream.clone()];
        streams.extend(lock(&self.routes).sessions.values().cloned());
        self.replay.trim(&streams);
    }

    /// Bytes of sent events kept for resumptions, all streams together (for the metrics).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn replay_used(&self) -> usize {
        self.replay.used()
    }

    /// Whether the client asked for the durable transport (see [`crate::proto::cursor`]).
    pub(crate) fn durable(&self) -> bool {
        self.replay.cursors()
    }

    /// The bytes the replay window keeps at most.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn replay_limit(&self) -> usize {
        self.replay.limit()
    }

    /// Checks a POSTed message against the connection's routes, and remembers where its answer
    /// goes (the RFD: session-scoped requests name their session; our TS-compatible leniency:
    /// in `Acp-Session-Id` or in `params.sessionId`, which must agree when both are given).
    pub(crate) fn accept_incoming(
        &self,
        peek: &Peek<'_>,
        header_session: Option<&str>,
    ) -> Result<Incoming, Refusal> {
        let mut routes = lock(&self.routes);
        let Some(method) = peek.method.as_deref() else {
            // An answer to one of the agent's requests. The id names the request: an answer
            // whose id is pending here is taken whatever its `Acp-Session-Id` says, or without
            // one (the Python SDK's client sends none), so that the agent's request is
            // answered rather than left waiting. Answers to ids not pending go to the agent
            // too, which reports them.
            let Some(key) = peek.id_key() else {
                return Err((400, "a JSON-RPC message without a method or an id"));
            };
            // Answers and requests have ids of their own sides.
            if !routes.seen.insert(id_key(CLIENT_ANSWER, &key)) {
                return Ok(Incoming::Retried);
            }
            routes.client_answers.remove(&id_key(AGENT_REQUEST, &key));
            return Ok(Incoming::New);
        };
        let params_session = session_of(peek.params);
        if let (Some(header), Some(params)) = (header_session, params_session.as_deref())
            && header != params
        {
            return Err((400, "mismatched Acp-Session-Id"));
        }
        let session = header_session.map(str::to_owned).or(params_session);
        if is_session_scoped(method) && session.is_none() {
            return Err((400, "missing Acp-Session-Id"));
        }
        if let Some(key) = peek.id_key()
            && !routes.seen.insert(id_key(CLIENT_REQUEST, &key))
        {
            // JSON-RPC ids are the client's to keep unique (MCP's Streamable HTTP forbids
            // reusing one within a session): the same id again is the same request, sent again
            // after a network error hid our 202. Its answer goes to its stream once.
            return Ok(Incoming::Retried);
        }
        note_turn(&mut routes, peek, session.clone());
        if let Some(key) = peek.id_key()
            && routes.answers.len() < MAX_ROUTES
        {
            // As the TS SDK: the answer to `session/load` goes to the connection's stream. So
            // does one naming a session id longer than any agent's: what a connection
            // remembers per request stays small.
            let route = match session {
                Some(session)
                    if method != "session/load" && session.len() <= MAX_ROUTED_SESSION_LEN =>
                {
                    Route::Session(session)
                }
                _ => Route::Connection,
            };
            routes.answers.insert(id_key(CLIENT_REQUEST, &key), route);
        }
        Ok(Incoming::New)
    }

    /// Forgets a message [`accept_incoming`](Self::accept_incoming) took that was then not
    /// queued for the agent (refused `413`), so that the client's retry of it is taken as
    /// new rather than answered as a duplicate and never delivered.
    pub(crate) fn withdraw_incoming(&self, peek: &Peek<'_>) {
        let Some(key) = peek.id_key() else {
            return;
        };
        let mut routes = lock(&self.routes);
        if peek.method.is_some() {
            // A prompt not queued is not running either.
            routes.turns.remove(&key);
            let key = id_key(CLIENT_REQUEST, &key);
            routes.seen.forget(key);
            routes.answers.remove(&key);
        } else {
            routes.seen.forget(id_key(CLIENT_ANSWER, &key));
        }
    }

    /// Checks a message a carrying WebSocket took: one whose id was accepted before (sent
    /// again by a client that could not know whether it arrived) is not for the agent again.
    /// Nothing else is checked: the agent answers what is wrong, as on a plain WebSocket.
    pub(crate) fn accept_carried(&self, peek: &Peek<'_>) -> Incoming {
        let mut routes = lock(&self.routes);
        if let Some(key) = peek.id_key() {
            let side = if peek.method.is_some() {
                CLIENT_REQUEST
            } else {
                CLIENT_ANSWER
            };
            if !routes.seen.insert(id_key(side, &key)) {
                return Incoming::Retried;
            }
            if peek.is_initialize() && routes.initialize.is_none() {
                routes.initialize = Some(key);
            }
        }
        let session = session_of(peek.params);
        note_turn(&mut routes, peek, session);
        Incoming::New
    }

    /// The turns running now, of `session` or of every session: the value of
    /// `_meta["acp/turnState"]` (docs/remote.md).
    pub(crate) fn turn_state(&self, session: Option<&str>) -> serde_json::Value {
        let routes = lock(&self.routes);
        let mut running: Vec<(&String, &String)> = routes
            .turns
            .iter()
            .filter(|(_, s)| session.is_none_or(|wanted| wanted == s.as_str()))
            .collect();
        running.sort();
        let turns: Vec<serde_json::Value> = running
            .into_iter()
            .map(|(id, session)| {
                serde_json::json!({
                    "sessionId": session,
                    "requestId": serde_json::from_str::<serde_json::Value>(id).unwrap_or_default(),
                    "state": "running",
                })
            })
            .collect();
        serde_json::json!({ "turns": turns })
    }

    /// A POSTed answer to a request of the agent that is refused (not JSON-RPC 2.0): the
    /// agent's request fails with the reason instead of waiting for an answer that will not
    /// come. Nothing for other messages, or ids not pending.
    pub(crate) async fn fail_pending(&self, peek: &Peek<'_>, reason: &str) {
        if peek.method.is_some() {
            return;
        }
        if let Some(key) = peek.id_key() {
            self.fail_answer(&key, reason).await;
        }
    }

    /// Whether the agent waits for answers from the client: only then is a refused body
    /// worth looking into for the id it answers.
    pub(crate) fn awaits_answers(&self) -> bool {
        !lock(&self.routes).client_answers.is_empty()
    }

    /// The agent's request `id` (raw JSON), if pending, fails with `-32603` and the reason
    /// its answer was refused; `true` if it was pending.
    pub(crate) async fn fail_answer(&self, id: &str, reason: &str) -> bool {
        let key = id.trim();
        if lock(&self.routes)
            .client_answers
            .remove(&id_key(AGENT_REQUEST, key))
            .is_none()
        {
            return false;
        }
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": serde_json::from_str::<serde_json::Value>(key).unwrap_or_default(),
            "error": {
                "code": -32603,
                "message": format!("the client's answer was refused: {reason}"),
            },
        });
        let _ = self.push_incoming(error.to_string().as_bytes()).await;
        true
    }

    /// Remembers that the answer to `initialize` with this id is the POST's body.
    pub(crate) fn expect_initial(&self, peek: &Peek<'_>) {
        if let Some(key) = peek.id_key() {
            lock(&self.routes)
                .answers
                .insert(id_key(CLIENT_REQUEST, &key), Route::Initial);
        }
    }

    /// Queues a POSTed message for the runtime (waits while its queue is full): refused 404
    /// once the connection ended, 413 when the server's memory ceiling has no room for this
    /// connection under the share rule.
    pub(crate) async fn push_incoming(&self, message: &[u8]) -> Result<(), Refusal> {
        self.activity.touch();
        match self.inbound.push(to_line(message)).await {
            Ok(()) => Ok(()),
            Err(Unpushed::Closed) => Err((404, "the connection has ended")),
            Err(Unpushed::OverShare) => Err(OVER_SHARE),
        }
    }

    /// Ends the connection because a message for one of its streams did not fit in its share
    /// of the server's memory ceiling: its agent is ended and its streams dropped, as for a
    /// `DELETE`, and its requests are answered 404 from now on (docs/remote.md).
    fn end_over_share(&self) {
        self.end_input();
        self.ended.set();
    }

    /// The answer to `initialize`, once the runtime wrote it.
    pub(crate) async fn initial_answer(&self) -> Option<Vec<u8>> {
        self.initial.pop().await
    }

    /// On a carried connection, the agent's answer to `initialize` with the retention
    /// advertised (on Streamable HTTP the POST's handler adds it); any other line unchanged.
    fn advertised(&self, line: Vec<u8>) -> Vec<u8> {
        let Some(retention) = self.carried.as_ref().map(|c| c.retention) else {
            return line;
        };
        let Some(initialize) = lock(&self.routes).initialize.clone() else {
            return line;
        };
        match serde_json::from_slice::<Peek<'_>>(&line) {
            Ok(peek) if peek.method.is_none() && peek.id_key() == Some(initialize) => {
                lock(&self.routes).initialize = None;
                crate::proto::cursor::advertise(&line, retention)
            }
            _ => line,
        }
    }

    /// The queue a line from the runtime goes to: an answer where its request said, a request
    /// or notification naming a session to that session's stream, anything else to the
    /// connection's stream.
    fn route_outgoing(&self, line: &[u8]) -> Target {
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(line) else {
            return Target::Stream(self.connection_stream.clone());
        };
        let mut routes = lock(&self.routes);
        if peek.method.is_none()
            && let Some(key) = peek.id_key()
        {
            routes.turns.remove(&key);
        }
        if self.carried.is_some() {
            if peek.method.is_some()
                && let Some(key) = peek.id_key()
            {
                routes.seen.forget(id_key(CLIENT_ANSWER, &key));
            }
            return Target::Stream(self.connection_stream.clone());
        }
        let route = if peek.method.is_none() {
            let route = peek
                .id_key()
                .and_then(|key| routes.answers.remove(&id_key(CLIENT_REQUEST, &key)))
                .unwrap_or(Route::Connection);
            // A `session/new` (or load, resume, fork) answer: its session's stream exists from
            // now on, so that a GET for it finds what is sent before it opens.
            if let Some(session) = session_of(peek.result) {
                let _ = self.session_stream(&mut routes, &session);
            }
            route
        } else {
            let route = match session_of(peek.params) {
                Some(session) => Route::Session(session),
                None => Route::Connection,
            };
            if let Some(key) = peek.id_key() {
                // JSON-RPC lets the agent use an id again once its request is answered: the
                // client's answer to this one is new, not a retry of the last.
                routes.seen.forget(id_key(CLIENT_ANSWER, &key));
                if routes.client_answers.len() < MAX_ROUTES {
                    routes
                        .client_answers
                        .insert(id_key(AGENT_REQUEST, &key), route.clone());
                }
            }
            route
        };
        match route {
            Route::Initial => Target::Initial(self.initial.clone()),
            Route::Connection => Target::Stream(self.connection_stream.clone()),
            Route::Session(session) => Target::Stream(
                self.session_stream(&mut routes, &session)
                    .unwrap_or_else(|| self.connection_stream.clone()),
            ),
        }
    }

    /// Ends every stream after what it holds: GET streams finish, the POST waiting for the
    /// `initialize` answer gets none.
    fn finish_streams(&self) {
        self.initial.close();
        self.connection_stream.pending.close();
        for stream in lock(&self.routes).sessions.values() {
            stream.pending.close();
        }
    }

    /// Ends the input (the runtime sees the end of input and finishes what it handles).
    pub(crate) fn end_input(&self) {
        self.inbound.close();
    }

    /// Drops everything: the connection is gone.
    pub(crate) fn abort(&self) {
        self.inbound.abort();
        // The `initialize` answer, if written, stays for the POST that waits for it (a
        // connection can be ended over its share right after answering it).
        self.initial.close();
        self.connection_stream.abort();
        for stream in lock(&self.routes).sessions.values() {
            stream.abort();
        }
        self.ended.set();
    }
}

/// The runtime's input on a Streamable HTTP connection: each POSTed message, as one line.
pub(crate) type HttpReader = QueueReader<HttpConn>;

impl Inbound for HttpConn {
    fn inbound(&self) -> &ByteQueue {
        &self.inbound
    }
}

/// The runtime's output on a Streamable HTTP connection: each complete line goes to the queue
/// of the stream it belongs to (see [`HttpConn::route_outgoing`]).
pub(crate) type HttpWriter = LineWriter<StreamSink>;

pub(crate) fn http_writer(conn: Arc<HttpConn>) -> HttpWriter {
    LineWriter::new(StreamSink {
        conn,
        pending: None,
        listener: BudgetListener::default(),
        over_share: false,
    })
}

/// Where a line from the runtime goes.
#[derive(Debug)]
enum Target {
    /// The body of the `initialize` POST.
    Initial(Arc<ByteQueue>),
    Stream(Arc<SseStream>),
}

impl Target {
    fn queue(&self) -> &ByteQueue {
        match self {
            Target::Initial(queue) => queue,
            Target::Stream(stream) => &stream.pending,
        }
    }
}

/// The connection's streams as the place lines go: each to its route's queue.
#[derive(Debug)]
pub(crate) struct StreamSink {
    conn: Arc<HttpConn>,
    /// A routed line waiting for room in its stream's queue.
    pending: Option<(Target, Option<Vec<u8>>)>,
    listener: BudgetListener,
    /// A line did not fit in the connection's share of the ceiling: the connection is ended.
    over_share: bool,
}

impl StreamSink {
    /// Waits until the routed line is queued (or its queue is gone: the stream was dropped,
    /// and so is the line). A line the server's memory ceiling has no room for, for this
    /// connection under the share rule, ends the connection (never waiting on the others):
    /// the runtime's writes fail from then on.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some((target, message)) = &mut self.pending {
            let pushed = ready!(target.queue().poll_push(message, &mut self.listener, cx));
            self.pending = None;
            if let Err(Unpushed::OverShare) = pushed {
                self.over_share = true;
                self.conn.end_over_share();
                return Poll::Ready(Err(over_share()));
            }
            self.conn.activity.touch();
        }
        Poll::Ready(Ok(()))
    }
}

impl LineSink for StreamSink {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.over_share {
            return Poll::Ready(Err(over_share()));
        }
        self.poll_pending(cx)
    }

    fn start_send(&mut self, line: Vec<u8>, cx: &mut Context<'_>) -> io::Result<()> {
        let line = self.conn.advertised(line);
        let queue = self.conn.route_outgoing(&line);
        self.pending = Some((queue, Some(line)));
        // Queued now if there is room; otherwise the next write or flush waits for it.
        match self.poll_pending(cx) {
            Poll::Ready(Err(error)) => Err(error),
            _ => Ok(()),
        }
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_pending(cx)
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let pending = ready!(self.poll_pending(cx));
        self.conn.finish_streams();
        Poll::Ready(pending)
    }
}

/// The error the runtime's writes meet on a connection ended over its share.
fn over_share() -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        "the connection was ended: its streams' messages did not fit in its share of the server's memory ceiling",
    )
}

impl Drop for StreamSink {
    fn drop(&mut self) {
        // However the runtime ends, the client's GET streams end after what they hold.
        self.conn.finish_streams();
    }
}

#[cfg(test)]
mod tests;
