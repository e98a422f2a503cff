//! End-to-end tests of the `acp` binary: against the bundled demo agent, and against small
//! agents scripted in `sh` that print JSON-RPC lines.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

mod common;

use common::sh::{acp, cwd_arg, run_script, run_sh_agent, sh_agent, sh_agent_with};
use common::{ACP, finish, finish_with, interrupt, scratch, start_turn, succeeded, text};

#[test]
fn demo_agent_turn_streams_text_tool_calls_and_a_diff() {
    let dir = scratch("demo");
    let out = acp(&[
        "--yes",
        "--prompt",
        "Summarize my notes",
        "--cwd",
        &cwd_arg(&dir),
    ]);
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("Done. notes.txt has 3 lines, and I wrote summary.txt."),
        "{stdout}"
    );
    assert!(
        stdout.contains("tool call write_summary (edit): Write summary.txt"),
        "{stdout}"
    );
    assert!(stdout.contains("[terminal "), "{stdout}");
    // The terminal's output, shown when its tool call completes though the agent released it
    // first (the spec's SHOULD: keep showing an embedded terminal's output after release).
    assert!(stdout.contains(": exit code 0]"), "{stdout}");
    assert!(stdout.contains("    | notes.txt"), "{stdout}");
    assert!(stdout.contains("[x] Read notes.txt"), "{stdout}");
    assert!(stdout.contains("--- /dev/null"), "{stdout}");
    assert!(
        stdout.contains("+3 lines of notes; the user asked \"Summarize my notes\""),
        "{stdout}"
    );
    assert!(stdout.contains("[turn ended: end_turn]"), "{stdout}");
    assert!(dir.join("summary.txt").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_output_is_one_json_value_per_line() {
    let dir = scratch("json");
    let trace = dir.join("wire.jsonl");
    let out = acp(&[
        "--yes",
        "--json",
        "-p",
        "one",
        "-p",
        "two",
        "--cwd",
        &cwd_arg(&dir),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let stdout = succeeded(&out);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let ends: Vec<_> = lines.iter().filter_map(|v| v.get("stopReason")).collect();
    assert_eq!(ends, ["end_turn", "end_turn"], "{stdout}");
    assert!(
        lines
            .iter()
            .any(|v| v["update"]["sessionUpdate"] == "tool_call"
                && v["update"]["toolCallId"] == "write_summary"),
        "{stdout}"
    );
    // The trace: every line is a message with its direction.
    let wire = std::fs::read_to_string(&trace).unwrap();
    let records: Vec<serde_json::Value> = wire
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["dir"], "client->agent");
    assert_eq!(records[0]["msg"]["method"], "initialize");
    assert!(
        records
            .iter()
            .any(|r| r["dir"] == "agent->client"
                && r["msg"]["method"] == "session/request_permission")
    );
    // ...in the test kit's transcript format: it loads as one, message for message.
    let replay = acp_test::Replay::load(&trace).unwrap();
    assert_eq!(replay.transcript().len(), records.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reject_takes_the_rejection_path() {
    let dir = scratch("reject");
    let out = acp(&[
        "--reject",
        "--prompt",
        "Summarize my notes",
        "--cwd",
        &cwd_arg(&dir),
    ]);
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("write_summary -> status: failed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("and I did not write summary.txt."),
        "{stdout}"
    );
    assert!(!dir.join("summary.txt").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prompts_from_stdin_one_turn_per_line() {
    let dir = scratch("stdin");
    let mut child = Command::new(ACP)
        .args(["--json", "--reject", "--cwd", &cwd_arg(&dir)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"first\n\nsecond\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = succeeded(&out);
    // One turn-end line per prompt (a subagent's idle state carries a `stopReason` too).
    let turn_ends = stdout
        .lines()
        .filter(|line| line.starts_with(r#"{"stopReason""#))
        .count();
    assert_eq!(turn_ends, 2, "{stdout}");
    assert!(
        stdout.contains(r#"The user asked: \"second\"."#),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn auth_required_lists_the_methods_and_exits_3() {
    let out = run_sh_agent(
        &[],
        r#"*'"method":"session/new"'*) fail -32000 "Authentication required" ;;"#,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("token-login  Token login (paste a token)"),
        "{stderr}"
    );
    assert!(stderr.contains("--auth"), "{stderr}");
}

#[test]
fn auth_flag_authenticates_before_the_session() {
    let out = run_sh_agent(
        &["--auth", "token-login"],
        r#"*'"method":"authenticate"'*) reply '{}'; authed=1 ;;
    *'"method":"session/new"'*) if [ -n "$authed" ]; then reply '{"sessionId":"s1"}'; else fail -32000 "Authentication required"; fi ;;
    *'"method":"session/prompt"'*) reply '{"stopReason":"end_turn"}' ;;"#,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("authenticated with token-login"),
        "{stderr}"
    );
}

#[test]
fn a_crashing_agent_exits_5_with_its_status_and_stderr() {
    let out = acp(&[
        "--yes",
        "-p",
        "hi",
        "--",
        "sh",
        "-c",
        "echo boom >&2; exit 3",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("exit code 3"), "{stderr}");
    assert!(stderr.contains("boom"), "{stderr}");
}

#[test]
fn a_missing_agent_program_exits_5() {
    let out = acp(&["--yes", "-p", "hi", "--", "/nonexistent/acp-test-agent"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--bogus"][..],
        &["--prompt"],
        &["an-agent"],
        &["--yes", "--reject"],
        &["--config", "x"],
    ] {
        let out = acp(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        // clap's error format: the message, the usage, and where to read more.
        assert!(
            text(&out.stderr).contains("try '--help'"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn help_and_version() {
    let out = acp(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for needle in [
        "--prompt",
        "--json",
        "--trace",
        "--system-prompt",
        "--options",
        "Exit status",
        "130",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
    let out = acp(&["--version"]);
    assert_eq!(
        text(&out.stdout).trim(),
        format!("acp {}", env!("CARGO_PKG_VERSION"))
    );
}

/// A slow agent: the prompt streams one chunk and waits; `session/cancel` ends it
/// `cancelled` unless `ignore_cancel`.
fn slow_agent(ignore_cancel: bool) -> String {
    let on_cancel = if ignore_cancel {
        ":"
    } else {
        r#"printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"cancelled"}}\n' "$prompt""#
    };
    sh_agent(&format!(
        r#"*'"method":"session/new"'*) reply '{{"sessionId":"s1"}}' ;;
    *'"method":"session/prompt"'*) prompt=$id; update '{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"working"}}}}' ;;
    *'"method":"session/cancel"'*) {on_cancel} ;;"#
    ))
}

/// Starts acp on the slow agent and waits until the turn has started (its chunk is out).
fn start_slow(ignore_cancel: bool) -> (Child, BufReader<std::process::ChildStdout>) {
    let script = slow_agent(ignore_cancel);
    start_turn(
        Command::new(ACP)
            .args(["--yes", "--json", "-p", "hi", "-p", "never sent", "--"])
            .args(["sh", "-c", &script]),
    )
}

#[test]
fn ctrl_c_cancels_the_turn_and_exits_130() {
    let (child, stdout) = start_slow(false);
    interrupt(&child);
    let (code, rest, stderr) = finish(child, stdout);
    assert_eq!(code, Some(130), "{rest}\n{stderr}");
    assert!(rest.contains(r#"{"stopReason":"cancelled"}"#), "{rest}");
    assert!(stderr.contains("cancelling the turn"), "{stderr}");
}

#[test]
fn a_second_ctrl_c_quits_when_the_agent_ignores_the_cancel() {
    let (child, stdout) = start_slow(true);
    interrupt(&child);
    let mut child = child;
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("cancelling the turn") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "stderr closed");
    }
    interrupt(&child);
    let (code, _, stderr) = finish_with(child, stdout, stderr);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("shutting the agent down"), "{stderr}");
}

#[test]
fn ask_shows_the_diff_and_takes_the_answer_from_stdin() {
    let dir = scratch("ask");
    let mut child = Command::new(ACP)
        .args(["--ask", "-p", "Summarize my notes", "--cwd", &cwd_arg(&dir)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    // Option 2 is the demo agent's "Reject".
    child.stdin.take().unwrap().write_all(b"2\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("The agent wants to run write_summary"),
        "{stderr}"
    );
    assert!(stderr.contains("+3 lines of notes"), "{stderr}");
    assert!(stderr.contains("2) Reject"), "{stderr}");
    assert!(
        stdout.contains("and I did not write summary.txt."),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const MODES_AND_OPTIONS: &str = r#"*'"method":"session/new"'*) reply '{"sessionId":"s1","modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]},"configOptions":'"$options"'}' ;;
    *'"method":"session/set_mode"'*) reply '{}' ;;
    *'"method":"session/set_config_option"'*) reply '{"configOptions":'"$options"'}' ;;
    *'"method":"session/prompt"'*) reply '{"stopReason":"max_tokens"}' ;;"#;

#[test]
fn mode_and_config_options_are_set_before_the_turn() {
    let dir = scratch("mode");
    let trace = dir.join("wire.jsonl");
    let trace_arg = trace.to_str().unwrap();
    let extra = [
        "--mode",
        "code",
        "--config",
        "fast=true",
        "--config",
        "model=b",
        "--trace",
        trace_arg,
    ];
    let out = run_sh_agent(&extra, MODES_AND_OPTIONS);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("[turn ended: max_tokens]"), "{stdout}");
    let sent: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["dir"] == "client->agent")
        .map(|r| r["msg"].clone())
        .collect();
    let methods: Vec<&str> = sent.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "session/new",
            "session/set_mode",
            "session/set_config_option",
            "session/set_config_option",
            "session/prompt"
        ]
    );
    assert_eq!(sent[2]["params"]["modeId"], "code");
    assert_eq!(sent[3]["params"]["type"], "boolean");
    assert_eq!(sent[3]["params"]["value"], true);
    assert_eq!(sent[4]["params"]["value"], "b");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--model` sets the agent's model selector: the config option of category `model`.
#[test]
fn model_sets_the_config_option_of_category_model() {
    let dir = scratch("model");
    let trace = dir.join("wire.jsonl");
    let out = run_sh_agent(
        &["--model", "b", "--trace", trace.to_str().unwrap()],
        MODES_AND_OPTIONS,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let set: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["msg"]["method"] == "session/set_config_option")
        .map(|r| r["msg"]["params"].clone())
        .collect();
    assert_eq!(set.len(), 1, "{set:?}");
    assert_eq!(set[0]["configId"], "model");
    assert_eq!(set[0]["value"], "b");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn model_without_a_model_selector_exits_1() {
    let out = run_sh_agent(
        &["--model", "b"],
        r#"*'"method":"session/new"'*) reply '{"sessionId":"s1"}' ;;
    *'"method":"session/prompt"'*) reply '{"stopReason":"end_turn"}' ;;"#,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no model selector"));
}

#[test]
fn an_unadvertised_mode_exits_1_and_a_non_boolean_value_exits_2() {
    let out = run_sh_agent(&["--mode", "yolo"], MODES_AND_OPTIONS);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("yolo"));
    let out = run_sh_agent(&["--config", "fast=maybe"], MODES_AND_OPTIONS);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn load_shows_the_replayed_history() {
    let script = sh_agent_with(
        r#"{"loadSession":true}"#,
        r#"*'"method":"session/load"'*)
      update '{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"earlier question"}}'
      update '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"earlier answer"}}'
      reply '{}' ;;
    *'"method":"session/prompt"'*) reply '{"stopReason":"end_turn"}' ;;"#,
    );
    let out = run_script(&["--load", "s1"], &script);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("user: earlier question"), "{stdout}");
    assert!(stdout.contains("earlier answer"), "{stdout}");
    assert!(stderr.contains("session s1 loaded"), "{stderr}");
}

#[test]
fn the_demo_without_cwd_works_in_a_scratch_directory() {
    let here = scratch("here");
    std::fs::remove_file(here.join("notes.txt")).unwrap();
    let out = Command::new(ACP)
        .args(["--yes", "-p", "Summarize my notes"])
        .current_dir(&here)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("notes.txt has 3 lines, and I wrote summary.txt."),
        "{stdout}"
    );
    assert!(stderr.contains("scratch directory"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(&here).unwrap().count(),
        0,
        "wrote into the current directory"
    );
    let _ = std::fs::remove_dir_all(&here);
}

/// The demo agent whose client goes away mid-turn (its stdout closed, so its next write meets
/// a broken pipe) exits 0 and prints nothing, as when the client closes its stdin.
#[test]
fn the_demo_agent_exits_quietly_when_its_client_goes_away() {
    use std::io::Write;
    let mut child = Command::new(ACP)
        .arg("--serve-demo-agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for request in [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#,
    ] {
        writeln!(stdin, "{request}").unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        assert!(line.contains("result"), "{line}");
    }
    let session: serde_json::Value = serde_json::from_str(&line).unwrap();
    let session = session["result"]["sessionId"].as_str().unwrap().to_owned();
    // The client dies: its end of the agent's stdout closes before the turn's first update.
    drop(stdout);
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"hi"}}]}}}}"#
    )
    .unwrap();
    let status = common::wait_at_most(&mut child);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
    drop(stdin);
}

/// The methods acp sent, in order, from a `--trace` file.
fn sent_methods(trace: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["dir"] == "client->agent" && r["msg"]["method"].is_string())
        .map(|r| r["msg"].clone())
        .collect()
}

fn method_names(sent: &[serde_json::Value]) -> Vec<&str> {
    sent.iter().filter_map(|m| m["method"].as_str()).collect()
}

const OPENS_SESSIONS: &str = r#"*'"method":"session/new"'*) reply '{"sessionId":"s1"}' ;;
    *'"method":"session/load"'*) reply '{}' ;;
    *'"method":"session/prompt"'*) reply '{"stopReason":"end_turn"}' ;;"#;

/// Runs acp with `extra` against an agent advertising `capabilities`; the outcome and what
/// acp sent.
fn with_capabilities(capabilities: &str, extra: &[&str]) -> (Output, Vec<serde_json::Value>) {
    let dir = scratch("caps");
    let trace = dir.join("wire.jsonl");
    let mut args = vec!["--trace", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = run_script(&args, &sh_agent_with(capabilities, OPENS_SESSIONS));
    let sent = sent_methods(&trace);
    let _ = std::fs::remove_dir_all(&dir);
    (out, sent)
}

#[test]
fn a_system_prompt_the_agent_did_not_advertise_exits_6_before_any_session() {
    let (out, sent) = with_capabilities("{}", &["--system-prompt", "Be terse."]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(
        stderr.contains("does not advertise sessionCapabilities.systemPrompt"),
        "{stderr}"
    );
    assert_eq!(method_names(&sent), ["initialize"]);

    // Append only: the override mode is refused the same way.
    let append_only = r#"{"sessionCapabilities":{"systemPrompt":{}}}"#;
    let extra = ["--system-prompt", "x", "--system-prompt-mode", "override"];
    let (out, sent) = with_capabilities(append_only, &extra);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(stderr.contains("append mode only"), "{stderr}");
    assert_eq!(method_names(&sent), ["initialize"]);
}

#[test]
fn the_system_prompt_goes_on_session_new_and_session_load() {
    let dir = scratch("prompt-file");
    let file = dir.join("prompt.md");
    std::fs::write(&file, "You review Rust.\nBe terse.\n").unwrap();
    let at_file = format!("@{}", file.display());
    let both =
        r#"{"loadSession":true,"sessionCapabilities":{"systemPrompt":{"mode":{"override":{}}}}}"#;
    let extra = [
        "--system-prompt",
        &at_file,
        "--system-prompt-mode",
        "override",
    ];
    let (out, sent) = with_capabilities(both, &extra);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(sent[1]["method"], "session/new");
    assert_eq!(
        sent[1]["params"]["systemPrompt"],
        serde_json::json!({"mode": "override", "content": [{"type": "text", "text": "You review Rust.\nBe terse.\n"}]})
    );

    let extra = ["--system-prompt", "Be terse.", "--load", "s1"];
    let (out, sent) = with_capabilities(both, &extra);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(sent[1]["method"], "session/load");
    assert_eq!(
        sent[1]["params"]["systemPrompt"],
        serde_json::json!({"mode": "append", "content": [{"type": "text", "text": "Be terse."}]})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unreadable_system_prompt_file_exits_1() {
    let out = acp(&["--system-prompt", "@/nonexistent/acp-prompt.md", "-p", "hi"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/nonexistent/acp-prompt.md"), "{stderr}");
}

#[cfg(not(feature = "unstable"))]
#[test]
fn options_needs_the_unstable_feature() {
    let out = acp(&["--options"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`unstable` feature"), "{stderr}");
}

#[cfg(not(feature = "unstable-protocol-v2"))]
#[test]
fn protocol_2_needs_the_protocol_v2_feature() {
    let out = acp(&["--protocol", "2"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`unstable-protocol-v2` feature"),
        "{stderr}"
    );
}

#[cfg(feature = "unstable")]
mod session_options {
    use super::*;

    const OPTIONS: &str = r#"*'"method":"session/options"'*) reply '{"modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask","description":"Asks before editing"},{"id":"code","name":"Code"}]},"configOptions":'"$options"'}' ;;"#;

    fn options(capabilities: &str, extra: &[&str]) -> (Output, Vec<serde_json::Value>) {
        let dir = scratch("options");
        let trace = dir.join("wire.jsonl");
        let mut args = vec!["--options", "--cwd", dir.to_str().unwrap()];
        args.extend(["--trace", trace.to_str().unwrap()]);
        args.extend_from_slice(extra);
        args.extend(["--", "sh", "-c"]);
        let script = sh_agent_with(capabilities, OPTIONS);
        args.push(&script);
        let out = acp(&args);
        let sent = sent_methods(&trace);
        let _ = std::fs::remove_dir_all(&dir);
        (out, sent)
    }

    #[test]
    fn options_lists_modes_and_config_options_without_opening_a_session() {
        let advertised = r#"{"sessionCapabilities":{"options":{}}}"#;
        let (out, sent) = options(advertised, &[]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert_eq!(method_names(&sent), ["initialize", "session/options"]);
        assert!(sent[1]["params"]["cwd"].is_string(), "{:?}", sent[1]);
        assert_eq!(
            stdout,
            "\
modes (--mode ID):
  * ask  Ask - Asks before editing
    code  Code
config options (--config ID=VALUE):
  fast  Fast
    true/false (now false)
  model  Model [model]
    * a  A
      b  B
"
        );

        let (out, _) = options(advertised, &["--json"]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        let answer: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(answer["modes"]["currentModeId"], "ask");
        assert_eq!(answer["configOptions"][1]["id"], "model");
    }

    #[test]
    fn options_the_agent_did_not_advertise_exits_6_unsent() {
        let (out, sent) = options("{}", &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(6), "{stderr}");
        assert!(stderr.contains("sessionCapabilities.options"), "{stderr}");
        assert_eq!(method_names(&sent), ["initialize"]);
    }
}
