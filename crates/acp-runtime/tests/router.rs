//! The agent-side version router (feature `unstable-protocol-v2`), over real pipes: each rule
//! of `acp_runtime::router` with the exact lines answered (insta), a v1 agent and a v2 agent
//! that shows the `initialize` that reached it.
#![cfg(feature = "unstable-protocol-v2")]

mod common;

use acp_runtime::acp_jsonrpc::{LineEvent, LineReader};
use acp_runtime::acp_types::v2 as wire;
use acp_runtime::agent::v2;
use acp_runtime::prelude::*;
use common::pipes::PipePeer;
use common::versions::{V1Agent, V2Agent};
use futures_lite::future;
use futures_lite::io::BufReader;
use smol::Unblock;

/// A v1 agent that shows the capabilities the client advertised, as it decoded them, in its
/// answer's `agentInfo.title`.
struct ShowsCapabilities;

impl Agent for ShowsCapabilities {
    async fn initialize(
        &self,
        request: InitializeRequest,
        _: &ClientHandle,
    ) -> Result<InitializeResponse> {
        let seen = serde_json::to_string(&request.client_capabilities).unwrap();
        Ok(InitializeResponse::new(ProtocolVersion::LATEST)
            .with_agent_info(Implementation::new("caps", "1").with_title(seen)))
    }
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &ClientHandle,
    ) -> Result<NewSessionResponse> {
        Ok(NewSessionResponse::new("s1"))
    }
    async fn prompt(&self, _: PromptRequest, _: Turn) -> Result<PromptResponse> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// A v2 agent that names the client it met in its answer's `info`, and shows the request as it
/// decoded it in `info.title`.
#[derive(Default)]
struct V2Echo;

impl v2::Agent for V2Echo {
    async fn initialize(
        &self,
        request: wire::InitializeRequest,
        _: &v2::Client,
    ) -> Result<wire::InitializeResponse> {
        let seen = serde_json::to_string(&request).unwrap();
        let info = wire::Implementation::new(format!("v2 met {}", request.info.name), "1.0");
        Ok(wire::InitializeResponse::new(
            wire::ProtocolVersion::V2,
            info.with_title(seen),
        ))
    }
    async fn new_session(
        &self,
        _: wire::NewSessionRequest,
        _: &v2::Client,
    ) -> Result<wire::NewSessionResponse> {
        Ok(wire::NewSessionResponse::new("s1"))
    }
    async fn prompt(
        &self,
        _: wire::PromptRequest,
        _: v2::Turn,
    ) -> Result<wire::IdleStateUpdateKind> {
        Ok(wire::IdleStateUpdateKind::EndTurn)
    }
}

/// Sends `lines` to a router over real pipes, closes its input, and gives back every line it
/// wrote, in order, until it closed its output.
fn exchange<V1, V2>(router: acp_runtime::router::Router<V1, V2>, lines: &[&str]) -> String
where
    V1: acp_runtime::router::ServesVersion<1>,
    V2: acp_runtime::router::ServesVersion<2>,
{
    let (agent_in, mut client_out) = std::io::pipe().unwrap();
    let (mut client_in, agent_out) = std::io::pipe().unwrap();
    let served = std::thread::spawn(move || {
        let reader = BufReader::new(Unblock::new(agent_in));
        let writer = Unblock::new(agent_out);
        future::block_on(router.serve(reader, writer))
    });
    for line in lines {
        use std::io::Write;
        writeln!(client_out, "{line}").unwrap();
    }
    drop(client_out);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut client_in, &mut out).unwrap();
    served.join().unwrap().unwrap();
    without_feature_only_capabilities(out)
}

/// The output with what only some builds write taken out, so that one snapshot serves them
/// all: the v1 MCP-over-ACP capability, which a v1 agent's answer carries as `"acp":false`
/// beside `http` and `sse` when the v1 types have it (with `unstable-proxy-chains`, or a
/// schema in which it became stable).
fn without_feature_only_capabilities(out: String) -> String {
    out.replace(r#""sse":false,"acp":false}"#, r#""sse":false}"#)
}

/// The same through the typed lines of a `LineReader`, for a check that wants them one by one.
fn lines(output: &str) -> Vec<String> {
    future::block_on(async {
        let mut reader = LineReader::new(output.as_bytes());
        let mut all = Vec::new();
        while let Some(LineEvent::Line(line)) = reader.read_line().await.unwrap() {
            all.push(String::from_utf8(line.to_vec()).unwrap());
        }
        all
    })
}

const INIT_V1: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"ed","version":"1"}}}"#;
const INIT_V2: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ed","version":"1"},"capabilities":{"auth":{"terminal":{}}}}}"#;

fn both() -> acp_runtime::router::Router<V1Agent, V2Echo> {
    acp_runtime::router::router()
        .with_v1(V1Agent)
        .with_v2(V2Echo)
}

#[test]
fn notifications_and_responses_before_initialize_are_ignored() {
    let out = exchange(
        both(),
        &[
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            INIT_V1,
        ],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn a_malformed_first_line_is_answered_with_id_null_and_the_connection_stays_open() {
    let out = exchange(
        both(),
        &[r#"{"jsonrpc":"2.0","id":1,"method":"#, r#"[1,2]"#, INIT_V1],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn another_request_first_is_refused_with_its_id_and_the_connection_stays_open() {
    let out = exchange(
        both(),
        &[
            r#"{"jsonrpc":"2.0","id":"early","method":"session/new","params":{"cwd":"/"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"two"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"initialize"}"#,
            INIT_V1,
        ],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn two_and_above_go_to_v2_rewritten_to_2() {
    let out = exchange(
        both(),
        &[
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":9,"info":{"name":"ed","version":"1"}}}"#,
        ],
    );
    insta::assert_snapshot!(out);
    assert!(out.contains(r#"\"protocolVersion\":2"#), "{out}");
    let out = exchange(both(), &[INIT_V2]);
    assert!(out.contains(r#""protocolVersion":2"#), "{out}");
    assert!(out.contains("v2 met ed"), "{out}");
}

#[test]
fn below_2_goes_to_v1_unchanged_and_answers_as_serve_does() {
    let routed = exchange(both(), &[INIT_V1]);
    let direct = {
        let (agent_in, mut client_out) = std::io::pipe().unwrap();
        let (mut client_in, agent_out) = std::io::pipe().unwrap();
        let served = std::thread::spawn(move || {
            let (_client, driver) = acp_runtime::agent::serve(
                V1Agent,
                BufReader::new(Unblock::new(agent_in)),
                Unblock::new(agent_out),
                AgentOptions::default(),
            );
            future::block_on(driver).unwrap();
        });
        use std::io::Write;
        writeln!(client_out, "{INIT_V1}").unwrap();
        drop(client_out);
        let mut out = String::new();
        std::io::Read::read_to_string(&mut client_in, &mut out).unwrap();
        served.join().unwrap();
        without_feature_only_capabilities(out)
    };
    assert_eq!(routed, direct);
    insta::assert_snapshot!(routed);
}

#[test]
fn a_v2_only_router_answers_below_2_with_32022_and_stays_open() {
    let router = acp_runtime::router::router().with_v2(V2Echo);
    let out = exchange(router, &[INIT_V1, INIT_V2]);
    insta::assert_snapshot!(out);
    let first = &lines(&out)[0];
    let error: serde_json::Value = serde_json::from_str(first).unwrap();
    let data = acp_runtime::acp_types::v2::UnsupportedProtocolVersionErrorData::from_error_data(
        error["error"].get("data"),
    )
    .unwrap();
    assert_eq!(data.requested.0, 1);
    assert_eq!(
        data.supported,
        [acp_runtime::acp_types::v2::ProtocolVersion::V2]
    );
}

#[test]
fn a_downgrade_normalizes_the_params_to_v1() {
    let router = acp_runtime::router::router().with_v1(V1Agent);
    let out = exchange(router, &[INIT_V2]);
    // The v1 agent met the client by its v2 `info`, and answers version 1.
    insta::assert_snapshot!(out);
    assert!(out.contains(r#""protocolVersion":1"#), "{out}");
    assert!(out.contains("v1 met ed"), "{out}");
    // v2's `auth.terminal: {}` is v1's `true`, and v2's baseline boolean config options are
    // advertised the v1 way.
    let router = acp_runtime::router::router().with_v1(ShowsCapabilities);
    let answer: serde_json::Value = serde_json::from_str(&exchange(router, &[INIT_V2])).unwrap();
    let seen: serde_json::Value =
        serde_json::from_str(answer["result"]["agentInfo"]["title"].as_str().unwrap()).unwrap();
    assert_eq!(seen["auth"]["terminal"], serde_json::json!(true), "{seen}");
    assert_eq!(
        seen["session"]["configOptions"]["boolean"],
        serde_json::json!({}),
        "{seen}"
    );
}

#[test]
fn a_repeated_initialize_goes_to_the_chosen_side_and_is_never_rerouted() {
    // v1 chosen: the v1 side answers the second (a v2 one) `-32600`.
    let out = exchange(
        both(),
        &[INIT_V1, &INIT_V2.replace(r#""id":1"#, r#""id":2"#)],
    );
    insta::assert_snapshot!("repeated_on_v1", out);
    // v2 chosen: the v2 side answers the second (a v1 one) `-32600` too.
    let out = exchange(
        both(),
        &[INIT_V2, &INIT_V1.replace(r#""id":1"#, r#""id":2"#)],
    );
    insta::assert_snapshot!("repeated_on_v2", out);
    assert!(lines(&out)[1].contains("-32600"), "{out}");
}

#[test]
fn the_v2_side_refuses_null_request_ids_and_v1_does_not() {
    let null_id = r#"{"jsonrpc":"2.0","id":null,"method":"session/list","params":{}}"#;
    let v2 = exchange(both(), &[INIT_V2, null_id]);
    insta::assert_snapshot!("null_id_on_v2", v2);
    let v1 = exchange(both(), &[INIT_V1, null_id]);
    assert!(
        !lines(&v1)[1].contains("-32600"),
        "v1 handles a null id: {v1}"
    );
}

#[test]
fn closing_before_initialize_ends_the_connection_quietly() {
    assert_eq!(exchange(both(), &[]), "");
    assert_eq!(exchange(both(), &[r#"{"jsonrpc":"2.0","method":"x"}"#]), "");
}

/// v1 and v2 sessions hold one shared session budget (a server's memory ceiling) together: a
/// v2 session past it is refused as a v1 one is, with the same error, and a connection that
/// ends gives its sessions' part back.
#[test]
fn v1_and_v2_sessions_share_the_session_budget_and_are_refused_alike() {
    // What one session with no servers in `/tmp` costs (its entry, `cwd`, `[]`): v1 keeps
    // 512 bytes beside them, v2 also its idempotency keys.
    const V1_SESSION: usize = 512 + 4 + 2;
    const V2_SESSION: usize = 512 + 256 * 64 + 4 + 2;
    let shared = acp_jsonrpc::ByteBudget::new(V1_SESSION + V2_SESSION);
    let options = AgentOptions::default().with_shared_session_budget(shared.clone());
    let sharing = || {
        acp_runtime::router::router()
            .with_v1(V1Agent)
            .with_v2(V2Agent)
            .with_v1_options(options.clone())
            .with_v2_options(options.clone())
    };
    let new = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"/tmp","mcpServers":[]}}}}"#
        )
    };
    let serving = |router: acp_runtime::router::Router<V1Agent, V2Agent>| {
        PipePeer::new(move |reader, writer| future::block_on(router.serve(reader, writer)).unwrap())
    };
    let mut v1 = serving(sharing());
    v1.ask(1, INIT_V1);
    assert!(v1.ask(2, &new(2))["result"].is_object());
    let mut v2 = serving(sharing());
    v2.ask(1, INIT_V2);
    assert!(v2.ask(2, &new(2))["result"].is_object());
    assert_eq!(shared.used(), V1_SESSION + V2_SESSION);
    let v2_refused = v2.ask(3, &new(3));
    let v1_refused = v1.ask(3, &new(3));
    let full = V1_SESSION + V2_SESSION;
    let refusal = |bytes: usize| {
        serde_json::json!({
            "code": -32602,
            "message": format!("the server's sessions keep too many bytes ({full} of its {full}) for one more of {bytes} bytes on this connection; close one first"),
        })
    };
    assert_eq!(v1_refused["error"], refusal(V1_SESSION), "{v1_refused}");
    assert_eq!(v2_refused["error"], refusal(V2_SESSION), "{v2_refused}");
    drop(v2);
    assert_eq!(
        shared.used(),
        V1_SESSION,
        "the ended v2 connection gave its part back"
    );
    drop(v1);
    assert_eq!(shared.used(), 0);
}
