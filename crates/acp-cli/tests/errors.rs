//! What `acp` prints when the agent answers with an error or sends updates it cannot show as
//! they are: the error's data on lines of its own (never glued to the agent's text), and
//! undecodable or unknown updates cut to one line, against agents scripted in `sh`.

mod common;

use common::sh::run_sh_agent;
use common::{succeeded, text};

#[test]
fn a_json_rpc_error_exits_4() {
    let out = run_sh_agent(
        &[],
        r#"*'"method":"session/new"'*) reply '{"sessionId":"s1"}' ;;
    *'"method":"session/prompt"'*) fail -32602 "no such model" ;;"#,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("no such model"), "{stderr}");
}

/// An error answer's `data` is shown on lines of its own, and the error never continues the
/// agent's last line of text.
#[test]
fn an_error_answer_shows_its_data_on_a_line_of_its_own() {
    let out = run_sh_agent(
        &[],
        r#"*'"method":"session/new"'*) reply '{"sessionId":"s1"}' ;;
    *'"method":"session/prompt"'*)
      update '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Let me check"}}'
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"Internal error","data":{"message":"stream disconnected: provider api.example.com unreachable"}}}\n' "$id" ;;"#,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stdout.ends_with("Let me check\n"), "{stdout:?}");
    assert!(
        stderr.contains(
            "acp: session/prompt: Internal error (code -32603)\n  data.message: stream disconnected: provider api.example.com unreachable\n"
        ),
        "{stderr}"
    );
}

/// A rejected (undecodable) update of a megabyte is one short line, with its size; in
/// `--json` too.
#[test]
fn a_rejected_megabyte_update_is_printed_cut_to_a_line() {
    let on = r#"*'"method":"session/new"'*) reply '{"sessionId":"s1"}' ;;
    *'"method":"session/prompt"'*)
      big=$(head -c 1048576 /dev/zero | tr '\0' y)
      update '{"sessionUpdate":"tool_call","toolCallId":"t1","title":7,"padding":"'"$big"'"}'
      update '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"still here"}}'
      reply '{"stopReason":"end_turn"}' ;;"#;
    let out = run_sh_agent(&[], on);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.len() < 1000, "{} bytes: {stdout:.500}", stdout.len());
    let line = stdout
        .lines()
        .find(|l| l.starts_with("[invalid update]"))
        .unwrap();
    assert!(line.contains("(1048646 bytes): {"), "{line}");
    assert!(stdout.contains("still here"), "{stdout}");

    let out = run_sh_agent(&["--json"], on);
    let stdout = text(&out.stdout);
    assert!(stdout.len() < 1500, "{} bytes: {stdout:.500}", stdout.len());
    let error: serde_json::Value = stdout
        .lines()
        .find_map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .ok()?
                .get("error")
                .cloned()
        })
        .unwrap();
    assert_eq!(error["kind"], "invalid_update");
    assert_eq!(error["bytes"], 1048646);
    assert!(error.get("update").is_none(), "{error}");
    assert!(
        error["updateStart"]
            .as_str()
            .unwrap()
            .starts_with(r#"{"sessionUpdate":"tool_call""#)
    );
}

#[test]
fn unknown_and_invalid_updates_are_shown() {
    let on = r#"*'"method":"session/new"'*) reply '{"sessionId":"s1"}' ;;
    *'"method":"session/prompt"'*)
      update '{"sessionUpdate":"brand_new_kind","x":1}'
      update '{"sessionUpdate":"tool_call","toolCallId":"t1","title":7}'
      update '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"still here"}}'
      reply '{"stopReason":"end_turn"}' ;;"#;
    let out = run_sh_agent(&[], on);
    let stdout = succeeded(&out);
    assert!(stdout.contains("brand_new_kind"), "{stdout}");
    assert!(stdout.contains("[invalid update]"), "{stdout}");
    assert!(stdout.contains(r#""title":7"#), "{stdout}");
    assert!(stdout.contains("still here"), "{stdout}");

    let out = run_sh_agent(&["--json"], on);
    let stdout = text(&out.stdout);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let error = lines
        .iter()
        .find_map(|v| v.get("error"))
        .unwrap_or_else(|| panic!("no error line: {stdout}"));
    assert_eq!(error["kind"], "invalid_update");
    assert_eq!(error["update"]["title"], 7);
}
