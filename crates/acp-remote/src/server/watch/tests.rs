//! The watch's reading of a connection's lines: where messages start and end in the pieces
//! they arrive in, and which turns and sessions it counts.

use super::*;

fn pieces_of(chunks: &[&[u8]]) -> Vec<String> {
    let mut start = true;
    let mut out = Vec::new();
    for chunk in chunks {
        pieces(chunk, &mut start, |at, end| {
            out.push(String::from_utf8_lossy(&chunk[at..end]).into_owned());
            true
        });
    }
    out
}

#[test]
fn pieces_that_begin_lines_are_offered_once() {
    assert_eq!(pieces_of(&[b"a\nb\n", b"c\n"]), ["a", "b", "c"]);
    // A message and its newline apart: offered once, before its newline.
    assert_eq!(pieces_of(&[b"a", b"\n", b"b\n"]), ["a", "b"]);
    // A line cut in two: its first piece only (which then fails to parse).
    assert_eq!(pieces_of(&[b"a\nb", b"c\nd\n"]), ["a", "b", "d"]);
}

#[test]
fn a_prompt_is_a_turn_until_answered_and_a_session_counts_on_success() {
    let ops = Arc::new(Ops::default());
    let watch = Watch::new(ops.clone());
    watch.inbound(br#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}"#);
    watch.outbound(br#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#);
    watch.inbound(br#"{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{}}"#);
    watch.inbound(br#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}"#);
    // An escaped method name goes to serde_json.
    watch.inbound(br#"{"jsonrpc":"2.0","id":4,"method":"session\/prompt","params":{}}"#);
    assert_eq!(ops.turns_running(), 3);
    watch.outbound(br#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#);
    watch.outbound(br#"{"jsonrpc":"2.0","id":"p","result":{"stopReason":"end_turn"}}"#);
    assert_eq!(ops.turns_running(), 2);
    // An escaped key is read as serde_json reads it.
    watch.outbound(br#"{"jsonrpc":"2.0","id":3,"res\u0075lt":{"stopReason":"end_turn"}}"#);
    assert_eq!(ops.turns_running(), 1);
    assert!(!may_answer(
        br#"{"jsonrpc":"2.0","method":"session/update","params":{"text":"a \"result\" of"}}"#
    ));
    drop(watch);
    assert_eq!(ops.turns_running(), 0);
}

#[test]
fn lines_to_the_client_are_not_looked_at_while_nothing_is_pending() {
    let ops = Arc::new(Ops::default());
    let watch = Watch::new(ops.clone());
    // A session answer the watch never saw asked for: nothing counted, nothing locked.
    assert_eq!(watch.pending.load(Ordering::SeqCst), 0);
    watch.outbound(br#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#);
    drop(watch);
    assert_eq!(ops.turns_running(), 0);
}

/// Reads everything of `reader` line by line, as the runtime does.
fn read_all(reader: &mut (impl AsyncBufRead + Unpin)) -> String {
    use futures_lite::AsyncReadExt;
    let mut out = String::new();
    smol::block_on(reader.read_to_string(&mut out)).unwrap();
    out
}

#[test]
fn a_prompt_during_a_drain_is_renamed_for_the_handler_and_its_answer_replaced() {
    use futures_lite::AsyncWriteExt;
    let ops = Arc::new(Ops::default());
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"session/cancel"}"#,
        "\n",
    );
    ops.start_draining();
    let (mut reader, mut writer) = watch(
        futures_lite::io::BufReader::new(input.as_bytes()),
        Vec::new(),
        ops.clone(),
    );
    let read = read_all(&mut reader);
    assert_eq!(
        read,
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"acp-remote/draining"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"session/cancel"}"#,
            "\n",
        )
    );
    assert_eq!(ops.turns_running(), 0);
    // The handler's answers, in one write: the session's passes, the renamed request's is
    // replaced.
    let answers = concat!(
        r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#,
        "\n",
    );
    smol::block_on(writer.write_all(answers.as_bytes())).unwrap();
    smol::block_on(writer.flush()).unwrap();
    let written = String::from_utf8(writer.inner.clone()).unwrap();
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines.len(), 3, "{written}");
    assert_eq!(
        lines[0],
        r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#
    );
    assert_eq!(
        lines[1],
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32050,"message":"the server is draining: no new prompt turns","data":{"reason":"draining"}}}"#
    );
    let refusal: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(refusal["error"]["code"], DRAINING_CODE);
    assert_eq!(
        lines[2],
        r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#
    );
    assert_eq!(watch_sessions(&ops), 1);
}

#[test]
fn an_id_is_matched_however_it_is_escaped_and_kept_as_a_hash() {
    let ops = Arc::new(Ops::default());
    let watch = Watch::new(ops.clone());
    watch.inbound(br#"{"jsonrpc":"2.0","id":"\u0061b","method":"session/prompt","params":{}}"#);
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":"{}","method":"session/prompt","params":{{}}}}"#,
        "x".repeat(1 << 20)
    );
    watch.inbound(long.as_bytes());
    assert_eq!(ops.turns_running(), 2);
    watch.outbound(br#"{"jsonrpc":"2.0","id":"ab","result":{"stopReason":"end_turn"}}"#);
    assert_eq!(ops.turns_running(), 1);
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":"{}","result":{{"stopReason":"end_turn"}}}}"#,
        "x".repeat(1 << 20)
    );
    watch.outbound(answer.as_bytes());
    assert_eq!(ops.turns_running(), 0);
    // Numbers are compared by their text, as the runtime echoes them.
    watch.inbound(br#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{}}"#);
    watch.outbound(br#"{"jsonrpc":"2.0","id":"7","result":{}}"#);
    assert_eq!(ops.turns_running(), 1);
    drop(watch);
}

#[test]
fn an_answer_written_in_pieces_is_seen() {
    use futures_lite::AsyncWriteExt;
    let ops = Arc::new(Ops::default());
    let (_reader, mut writer) = watch(&b""[..], Vec::new(), ops.clone());
    let watch = writer.watch.clone();
    watch.inbound(br#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}"#);
    watch.inbound(br#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}"#);
    let text = "y".repeat(200 * 1024);
    let output = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"t\":\"{text}\"}}}}\n\
         {{\"jsonrpc\":\"2.0\",\"result\":{{\"sessionId\":\"{text}\"}},\"id\":1}}\n\
         {{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"stopReason\":\"{text}\"}}}}\n"
    );
    // In pieces of 64 KiB, as the bridge copies an agent's stdout.
    smol::block_on(async {
        for piece in output.as_bytes().chunks(64 * 1024) {
            writer.write_all(piece).await.unwrap();
        }
    });
    assert_eq!(writer.inner.len(), output.len());
    assert_eq!(ops.turns_running(), 0);
    assert_eq!(ops.sessions_now(), 1);
}

fn watch_sessions(ops: &Ops) -> usize {
    ops.sessions_now()
}
