//! What a Streamable HTTP connection remembers per request and message stays small, whatever
//! the client's ids and session ids.

use super::*;

#[test]
fn what_a_connection_remembers_per_request_is_small_whatever_its_ids() {
    let limits = StreamLimits {
        budget: 1 << 20,
        replay_bytes: 1 << 20,
        replay_events: 16,
        replay_age: std::time::Duration::from_secs(60),
        cursors: false,
    };
    let conn = HttpConn::new(
        "c".into(),
        None,
        1 << 20,
        limits,
        &Ceiling::new(32 << 20, 4),
        None,
    );
    let (id, session) = ("a".repeat(64 << 10), "s".repeat(64 << 10));
    let prompt = format!(
        r#"{{"jsonrpc":"2.0","id":"{id}","method":"session/prompt","params":{{"sessionId":"{session}","prompt":[]}}}}"#
    );
    let peek: Peek<'_> = serde_json::from_str(&prompt).unwrap();
    assert_eq!(conn.accept_incoming(&peek, None), Ok(Incoming::New));
    // A retry is recognised however long its id: what is kept is its hash.
    assert_eq!(conn.accept_incoming(&peek, None), Ok(Incoming::Retried));
    let routes = lock(&conn.routes);
    assert_eq!(routes.seen.order.len(), 1);
    // A session id longer than any agent's is not kept: the answer goes to the
    // connection's stream.
    assert!(matches!(
        routes.answers.values().collect::<Vec<_>>()[..],
        [Route::Connection]
    ));
}

#[test]
fn a_message_refused_for_want_of_room_is_new_when_sent_again() {
    let limits = StreamLimits {
        budget: 1 << 20,
        replay_bytes: 1 << 20,
        replay_events: 16,
        replay_age: std::time::Duration::from_secs(60),
        cursors: false,
    };
    // 8 MiB: its general part (7 MiB) taken by another holder.
    let ceiling = Ceiling::new(8 << 20, 1);
    let greedy = Share::new(16 << 20, &ceiling, Kind::SseQueues);
    assert_eq!(greedy.try_take(7 << 20), Ok(()));
    let conn = HttpConn::new("c".into(), None, 4 << 20, limits, &ceiling, None);
    let request = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"x/big","params":"{}"}}"#,
        "a".repeat(1 << 20)
    );
    let peek: Peek<'_> = serde_json::from_str(&request).unwrap();
    assert_eq!(conn.accept_incoming(&peek, None), Ok(Incoming::New));
    let pushed = smol::block_on(conn.push_incoming(request.as_bytes()));
    assert_eq!(pushed, Err(OVER_SHARE));
    conn.withdraw_incoming(&peek);
    greedy.give_back(7 << 20);
    // Sent again: new, and queued for the agent this time.
    assert_eq!(conn.accept_incoming(&peek, None), Ok(Incoming::New));
    assert_eq!(
        smol::block_on(conn.push_incoming(request.as_bytes())),
        Ok(())
    );
}
