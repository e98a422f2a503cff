//! The client connector (feature `unstable-protocol-v2`) over real pipes, against our version
//! router serving a v1 agent, a v2 agent or both, and a scripted agent refusing v2 with
//! `-32022`: which version each protocol choice ends on and how many connections it opened.
#![cfg(feature = "unstable-protocol-v2")]

mod common;

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use acp_runtime::acp_types::v2 as wire;
use acp_runtime::client::connector::{self, Connected, Protocol};
use acp_runtime::prelude::*;
use acp_runtime::router::router;
use common::pipes::{AsyncPipeReader, AsyncPipeWriter};
use common::versions::{V1Agent, V2Agent};
use futures_lite::future;
use futures_lite::io::BufReader;
use smol::Unblock;

struct Quiet;
impl acp_runtime::client::v2::Client for Quiet {}

type Reader = AsyncPipeReader;
type Writer = AsyncPipeWriter;

/// Opens a connection to an agent that `serve` runs on a thread, counting the connections.
fn open(serve: fn(Reader, Writer), opened: &Mutex<usize>) -> Result<(Reader, Writer, ())> {
    *opened.lock().unwrap() += 1;
    let (agent_in, client_out) = std::io::pipe().unwrap();
    let (client_in, agent_out) = std::io::pipe().unwrap();
    std::thread::spawn(move || {
        serve(
            BufReader::new(Unblock::new(agent_in)),
            Unblock::new(agent_out),
        )
    });
    Ok((
        BufReader::new(Unblock::new(client_in)),
        Unblock::new(client_out),
        (),
    ))
}

fn v1_only(reader: Reader, writer: Writer) {
    let _ = future::block_on(router().with_v1(V1Agent).serve(reader, writer));
}

fn v2_only(reader: Reader, writer: Writer) {
    let _ = future::block_on(router().with_v2(V2Agent).serve(reader, writer));
}

fn both(reader: Reader, writer: Writer) {
    let _ = future::block_on(
        router()
            .with_v1(V1Agent)
            .with_v2(V2Agent)
            .serve(reader, writer),
    );
}

fn connect(
    protocol: Protocol,
    mut open: impl FnMut() -> Result<(Reader, Writer, ())>,
) -> Result<Connected<()>> {
    future::block_on(connector::connect_with_protocol(
        protocol,
        AutoAllow,
        Quiet,
        || std::future::ready(open()),
        ClientOptions::default().with_info("tester", "1"),
    ))
}

fn end(connected: Connected<()>) {
    match connected {
        Connected::V1 { agent, driver, .. } => {
            agent.close();
            let _ = future::block_on(driver);
        }
        Connected::V2 { agent, driver, .. } => {
            agent.close();
            let _ = future::block_on(driver);
        }
    }
}

#[test]
fn auto_on_a_v1_agent_falls_back_on_a_fresh_connection() {
    let opened = Mutex::new(0);
    let connected = connect(Protocol::Auto, || open(v1_only, &opened)).unwrap();
    let Connected::V1 { ref init, .. } = connected else {
        panic!("expected v1, got {connected:?}");
    };
    // The v2 probe's connection, then the v1 one; the v1 agent met our v1 client.
    assert_eq!(*opened.lock().unwrap(), 2);
    assert_eq!(init.agent_info.as_ref().unwrap().name, "v1 met tester");
    end(connected);
}

#[test]
fn auto_on_a_routed_agent_stays_on_v2_with_one_connection() {
    let opened = Mutex::new(0);
    let connected = connect(Protocol::Auto, || open(both, &opened)).unwrap();
    assert_eq!(*opened.lock().unwrap(), 1);
    let Connected::V2 {
        agent,
        init,
        driver,
        ..
    } = connected
    else {
        panic!("expected v2, got {connected:?}");
    };
    assert_eq!(init.protocol_version, wire::ProtocolVersion::V2);
    // The driver the connector returns must run for anything after `initialize` to happen.
    let driver = smol::spawn(driver);
    let turn = future::block_on(async {
        let session = agent.new_session(wire::NewSessionRequest::new("/")).await?;
        let turn = agent
            .prompt(wire::PromptRequest::new(
                session.session_id,
                vec![wire::ContentBlock::from("hi")],
            ))
            .await?;
        turn.finished().await
    });
    assert!(matches!(turn, Ok(wire::IdleStateUpdateKind::EndTurn)));
    agent.close();
    let _ = future::block_on(driver);
}

#[test]
fn v1_on_a_routed_agent_opens_one_v1_connection() {
    let opened = Mutex::new(0);
    let connected = connect(Protocol::V1, || open(both, &opened)).unwrap();
    assert_eq!(*opened.lock().unwrap(), 1);
    assert!(matches!(connected, Connected::V1 { .. }));
    end(connected);
}

#[test]
fn v2_only_refuses_a_v1_agent_without_a_second_connection() {
    let opened = Mutex::new(0);
    let error = connect(Protocol::V2, || open(v1_only, &opened)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the agent speaks protocol version 1, this client speaks [2]"
    );
    assert_eq!(*opened.lock().unwrap(), 1);
}

#[test]
fn auto_on_a_v2_only_agent_is_v2() {
    let opened = Mutex::new(0);
    let connected = connect(Protocol::Auto, || open(v2_only, &opened)).unwrap();
    assert!(matches!(connected, Connected::V2 { .. }));
    end(connected);
}

#[test]
fn v1_on_a_v2_only_agent_is_its_32022() {
    let opened = Mutex::new(0);
    let error = connect(Protocol::V1, || open(v2_only, &opened)).unwrap_err();
    let Error::Rpc(error) = error else {
        panic!("expected the agent's error, got {error:?}");
    };
    assert_eq!(error.code.0, wire::UNSUPPORTED_PROTOCOL_VERSION);
}

/// An agent that refuses v2 with `-32022` listing 1, and answers a v1 `initialize`; every
/// line each connection carried is kept.
fn refuses_2(transcript: Arc<Mutex<Vec<String>>>) -> Result<(Reader, Writer, ())> {
    let (agent_in, client_out) = std::io::pipe().unwrap();
    let (client_in, mut agent_out) = std::io::pipe().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(agent_in).lines() {
            let line = line.unwrap();
            transcript.lock().unwrap().push(format!("> {line}"));
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            let id = &message["id"];
            let answer = match message["params"]["protocolVersion"].as_u64() {
                Some(2) => serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32022, "message": "Unsupported protocol version",
                    "data": {"requested": 2, "supported": [1]}}}),
                Some(_) => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}}),
                None => continue,
            };
            transcript.lock().unwrap().push(format!("< {answer}"));
            writeln!(agent_out, "{answer}").unwrap();
        }
    });
    Ok((
        BufReader::new(Unblock::new(client_in)),
        Unblock::new(client_out),
        (),
    ))
}

#[test]
fn auto_falls_back_on_32022_listing_1_and_the_lines_show_both_connections() {
    let transcripts: Mutex<Vec<Arc<Mutex<Vec<String>>>>> = Mutex::default();
    let connected = connect(Protocol::Auto, || {
        let transcript = Arc::<Mutex<Vec<String>>>::default();
        transcripts.lock().unwrap().push(transcript.clone());
        refuses_2(transcript)
    })
    .unwrap();
    assert!(matches!(connected, Connected::V1 { .. }));
    end(connected);
    let lines: Vec<String> = transcripts
        .lock()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(n, t)| format!("connection {n}\n{}", t.lock().unwrap().join("\n")))
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}
