//! The proxy-side version router (features `unstable-protocol-v2` and `unstable-proxy-chains`),
//! over real pipes with the test as the conductor: each rule of `router::proxy_router` with
//! the exact lines exchanged (insta). The v1 side answers `session/new` with session
//! `from-v1`, the v2 side with `from-v2`, so the lines show which side has the connection. A
//! proptest checks the rules before `proxy/initialize` for any lines and versions.
#![cfg(all(feature = "unstable-protocol-v2", feature = "unstable-proxy-chains"))]

use std::io::{BufRead, BufReader, Write};
use std::thread::JoinHandle;

use acp_runtime::acp_types::v2 as wire;
use acp_runtime::prelude::*;
use acp_runtime::proxy::{Proxy, ProxyContext};
use acp_runtime::router::{ProxyRouter, proxy_router};
use proptest::prelude::*;
use serde_json::Value;
use smol::Unblock;

fn v1_proxy() -> Proxy {
    Proxy::builder()
        .on_client_request(|_: ProxyContext, _: NewSessionRequest| async {
            Ok(NewSessionResponse::new("from-v1"))
        })
        .build()
}

fn v2_proxy() -> Proxy {
    Proxy::builder()
        .on_client_request(|_: ProxyContext, _: wire::NewSessionRequest| async {
            Ok(wire::NewSessionResponse::new("from-v2"))
        })
        .build()
}

/// The conductor's end of a proxy served by a router in a thread.
struct ConductorEnd {
    to_proxy: std::io::PipeWriter,
    from_proxy: BufReader<std::io::PipeReader>,
    served: JoinHandle<()>,
    /// Every line exchanged, `→` to the proxy and `←` from it, without `jsonrpc`.
    log: Vec<String>,
}

fn serve(router: ProxyRouter) -> ConductorEnd {
    let (proxy_in, to_proxy) = std::io::pipe().unwrap();
    let (from_proxy, proxy_out) = std::io::pipe().unwrap();
    let served = std::thread::spawn(move || {
        let reader = futures_lite::io::BufReader::new(Unblock::new(proxy_in));
        smol::block_on(router.serve(reader, Unblock::new(proxy_out))).unwrap();
    });
    ConductorEnd {
        to_proxy,
        from_proxy: BufReader::new(from_proxy),
        served,
        log: Vec::new(),
    }
}

fn compact(line: &str) -> String {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(mut msg)) => {
            msg.remove("jsonrpc");
            Value::Object(msg).to_string()
        }
        _ => line.trim().to_owned(),
    }
}

impl ConductorEnd {
    fn send(&mut self, line: &str) {
        writeln!(self.to_proxy, "{line}").unwrap();
        self.log.push(format!("→ {}", compact(line)));
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.from_proxy.read_line(&mut line).unwrap();
        self.log.push(format!("← {}", compact(&line)));
        serde_json::from_str(&line).unwrap()
    }

    /// Reads the proxy's `initialize` to its successor and answers it with `answer`.
    fn answer_initialize(&mut self, answer: &str) {
        let request = self.read();
        assert_eq!(request["method"], "proxy/successor");
        assert_eq!(request["params"]["method"], "initialize");
        let id = request["id"].to_string();
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{answer}}}"#
        ));
    }

    /// Closes the proxy's input, waits for it to end, and gives the log.
    fn close(self) -> String {
        drop(self.to_proxy);
        self.served.join().unwrap();
        self.log.join("\n")
    }
}

fn proxy_initialize(id: u32, version: u32) -> String {
    if version >= 2 {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"proxy/initialize","params":{{"protocolVersion":{version},"info":{{"name":"ed","version":"1"}},"capabilities":{{"auth":{{"terminal":{{}}}}}}}}}}"#
        )
    } else {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"proxy/initialize","params":{{"protocolVersion":{version},"clientCapabilities":{{}},"clientInfo":{{"name":"ed","version":"1"}}}}}}"#
        )
    }
}

const V1_ANSWER: &str = r#"{"protocolVersion":1,"agentCapabilities":{}}"#;
const V2_ANSWER: &str = r#"{"protocolVersion":2,"info":{"name":"agent","version":"1"}}"#;
const NEW_SESSION: &str =
    r#"{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#;

#[test]
fn v2_goes_to_the_v2_side_unchanged() {
    let mut conductor = serve(proxy_router().with_v1(v1_proxy()).with_v2(v2_proxy()));
    conductor.send(&proxy_initialize(1, 2));
    conductor.answer_initialize(V2_ANSWER);
    conductor.read();
    conductor.send(NEW_SESSION);
    conductor.read();
    insta::assert_snapshot!(conductor.close());
}

#[test]
fn v1_goes_to_the_v1_side_unchanged() {
    let mut conductor = serve(proxy_router().with_v1(v1_proxy()).with_v2(v2_proxy()));
    conductor.send(&proxy_initialize(1, 1));
    conductor.answer_initialize(V1_ANSWER);
    conductor.read();
    conductor.send(NEW_SESSION);
    conductor.read();
    insta::assert_snapshot!(conductor.close());
}

/// A v1-only proxy in a v2 chain: the request is normalized to v1, so the successor is asked
/// for v1 and the proxy answers as v1 (what upstream's `Proxy.v1()` does).
#[test]
fn a_v1_only_router_takes_v2_as_v1() {
    let mut conductor = serve(proxy_router().with_v1(v1_proxy()));
    conductor.send(&proxy_initialize(1, 2));
    conductor.answer_initialize(V1_ANSWER);
    conductor.read();
    insta::assert_snapshot!(conductor.close());
}

#[test]
fn a_newer_version_is_served_as_2() {
    let mut conductor = serve(proxy_router().with_v1(v1_proxy()).with_v2(v2_proxy()));
    conductor.send(&proxy_initialize(1, 7));
    conductor.answer_initialize(V2_ANSWER);
    conductor.read();
    insta::assert_snapshot!(conductor.close());
}

#[test]
fn a_v2_only_router_refuses_v1_with_32022_and_stays_open() {
    let mut conductor = serve(proxy_router().with_v2(v2_proxy()));
    conductor.send(&proxy_initialize(1, 1));
    conductor.read();
    conductor.send(&proxy_initialize(2, 2));
    conductor.answer_initialize(V2_ANSWER);
    conductor.read();
    insta::assert_snapshot!(conductor.close());
}

#[test]
fn what_comes_before_proxy_initialize() {
    let mut conductor = serve(proxy_router().with_v1(v1_proxy()).with_v2(v2_proxy()));
    // Malformed: answered with id null.
    conductor.send("{not json");
    conductor.read();
    // A notification and a response: ignored.
    conductor.send(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#);
    conductor.send(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#);
    // A plain `initialize` and any other request: `-32600` with their id.
    conductor
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    conductor.read();
    conductor.send(NEW_SESSION);
    conductor.read();
    // No version number: `-32602`.
    conductor.send(
        r#"{"jsonrpc":"2.0","id":2,"method":"proxy/initialize","params":{"protocolVersion":"2"}}"#,
    );
    conductor.read();
    // The connection is still open.
    conductor.send(&proxy_initialize(3, 2));
    conductor.answer_initialize(V2_ANSWER);
    conductor.read();
    insta::assert_snapshot!(conductor.close());
}

/// A repeated `proxy/initialize` is the chosen side's, whatever version it names: the v2 proxy
/// forwards it (as any proxy forwards it) unchanged, and the connection stays v2.
#[test]
fn a_repeated_proxy_initialize_is_never_routed_again() {
    let mut conductor = serve(proxy_router().with_v1(v1_proxy()).with_v2(v2_proxy()));
    conductor.send(&proxy_initialize(1, 2));
    conductor.answer_initialize(V2_ANSWER);
    conductor.read();
    conductor.send(&proxy_initialize(2, 1));
    let forwarded = conductor.read();
    let id = forwarded["id"].to_string();
    conductor.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32600,"message":"Invalid Request","data":"`initialize` was already called"}}}}"#
    ));
    conductor.read();
    conductor.send(NEW_SESSION);
    conductor.read();
    insta::assert_snapshot!(conductor.close());
}

#[test]
fn the_v2_side_refuses_null_request_ids() {
    let mut conductor = serve(proxy_router().with_v1(v1_proxy()).with_v2(v2_proxy()));
    conductor.send(&proxy_initialize(1, 2));
    conductor.answer_initialize(V2_ANSWER);
    conductor.read();
    conductor.send(&NEW_SESSION.replace(r#""id":9"#, r#""id":null"#));
    conductor.read();
    insta::assert_snapshot!(conductor.close());
}

/// A line a conductor may send before `proxy/initialize`.
#[derive(Clone, Debug)]
enum Early {
    Malformed,
    Notification,
    Response,
    /// Another request, a plain `initialize` among them.
    Request(&'static str),
    /// `proxy/initialize` with a `protocolVersion` that is not a number.
    BadVersion,
}

fn early() -> impl Strategy<Value = Early> {
    prop_oneof![
        Just(Early::Malformed),
        Just(Early::Notification),
        Just(Early::Response),
        Just(Early::Request("initialize")),
        Just(Early::Request("session/new")),
        Just(Early::BadVersion),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever comes first, each request before `proxy/initialize` is answered once, in
    /// order, under its id (a malformed line under `null`), the rest is ignored; then the
    /// `proxy/initialize` goes to the side `rules::select` picks, with the version that side
    /// speaks, or is refused with `-32022` naming the sides there are.
    #[test]
    fn lines_before_proxy_initialize_are_answered_once_then_the_version_is_routed(
        lines in proptest::collection::vec(early(), 0..8),
        requested in 0u32..5,
        sides in prop_oneof![Just((true, false)), Just((false, true)), Just((true, true))],
    ) {
        let mut router = proxy_router();
        if sides.0 {
            router = router.with_v1(v1_proxy());
        }
        if sides.1 {
            router = router.with_v2(v2_proxy());
        }
        let mut conductor = serve(router);
        let mut expected = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            let id = 100 + index;
            match line {
                Early::Malformed => {
                    conductor.send("{\"jsonrpc\":");
                    expected.push(Value::Null);
                }
                Early::Notification => conductor.send(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#),
                Early::Response => conductor.send(r#"{"jsonrpc":"2.0","id":7,"result":null}"#),
                Early::Request(method) => {
                    conductor.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"protocolVersion":1}}}}"#));
                    expected.push(id.into());
                }
                Early::BadVersion => {
                    conductor.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"proxy/initialize","params":{{}}}}"#));
                    expected.push(id.into());
                }
            }
        }
        for id in &expected {
            let answer = conductor.read();
            prop_assert_eq!(&answer["id"], id);
            prop_assert!(answer["error"]["code"].is_i64(), "{}", answer);
        }
        conductor.send(&proxy_initialize(1, requested));
        let v2 = sides.1 && requested >= 2;
        if v2 || sides.0 {
            let forwarded = conductor.read();
            prop_assert_eq!(&forwarded["method"], "proxy/successor");
            let version = match (v2, requested) {
                (true, _) => 2,
                (false, requested) if requested >= 2 => 1,
                (false, requested) => requested,
            };
            prop_assert_eq!(&forwarded["params"]["params"]["protocolVersion"], &Value::from(version));
        } else {
            let answer = conductor.read();
            prop_assert_eq!(&answer["error"]["code"], -32022);
            prop_assert_eq!(&answer["error"]["data"]["supported"], &serde_json::json!([2]));
        }
        conductor.close();
    }
}
