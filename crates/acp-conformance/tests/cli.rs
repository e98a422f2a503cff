//! The `acp-conformance` binary: arguments, exit status, JSON report, `--expect`.

mod common;

use std::process::{Command, Output};

use common::{BROKEN, REFERENCE};

const BIN: &str = env!("CARGO_BIN_EXE_acp-conformance");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["--timeout", "4", "--turn-timeout", "4", "--grace-ms", "200"])
        .args(args)
        .output()
        .expect("acp-conformance runs")
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("acp-conformance-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn protocol_2_lists_and_runs_the_v2_checks_when_built_in() {
    let list = run(&["--protocol", "2", "--list"]);
    if cfg!(feature = "unstable-protocol-v2") {
        assert!(list.status.success());
        let text = String::from_utf8(list.stdout).unwrap();
        let v2 = acp_conformance::checks_for(acp_conformance::Protocol::V2);
        assert!(!v2.is_empty());
        for check in v2 {
            assert!(text.contains(check.id), "{} not listed", check.id);
        }
        assert!(!text.contains("init.version.same"), "{text}");
    } else {
        // A usage error, saying why.
        assert_eq!(list.status.code(), Some(2));
        let stderr = String::from_utf8(list.stderr).unwrap();
        assert!(stderr.contains("feature unstable-protocol-v2"), "{stderr}");
    }
}

#[test]
fn list_help_and_version() {
    let list = run(&["--list"]);
    assert!(list.status.success());
    let text = String::from_utf8(list.stdout).unwrap();
    for check in acp_conformance::checks() {
        assert!(text.contains(check.id), "{} not listed", check.id);
    }
    assert!(run(&["--help"]).status.success());
    let version = run(&["--version"]);
    assert!(
        String::from_utf8(version.stdout)
            .unwrap()
            .contains(env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bad_usage_and_missing_agents_exit_2() {
    assert_eq!(run(&[]).status.code(), Some(2));
    assert_eq!(run(&["--no-such-option", REFERENCE]).status.code(), Some(2));
    let missing = run(&["/nonexistent/acp-agent"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("could not start the agent"));
}

#[test]
fn a_must_failure_exits_1_and_the_json_report_says_why() {
    let dir = scratch("must");
    let json = dir.join("report.json");
    let out = run(&[
        "--only",
        "init",
        "--json",
        json.to_str().unwrap(),
        "--",
        BROKEN,
        "--bug",
        "echo-version",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("FAIL"), "{table}");
    assert!(
        !table.contains('\x1b'),
        "no colours when stdout is not a terminal"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["verdicts"]["init.version.future"], "fail");
    assert_eq!(report["verdicts"]["init.version.same"], "pass");
    assert_eq!(report["summary"]["mustFailed"], 1);
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "init.version.future")
        .unwrap();
    assert_eq!(check["level"], "MUST");
    assert!(
        check["spec"]
            .as_str()
            .unwrap()
            .contains("initialization.mdx")
    );
    assert!(
        check["evidence"]
            .to_string()
            .contains("\"protocolVersion\\\":999")
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn should_failures_do_not_fail_the_run() {
    let out = run(&[
        "--only",
        "session.new.relative_cwd",
        "--color",
        "always",
        BROKEN,
        "--bug",
        "accept-relative-cwd",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("\x1b[31mfail")
    );
}

#[test]
fn expect_compares_the_verdicts_with_a_pinned_file() {
    let dir = scratch("expect");
    let pinned = dir.join("pinned.json");
    std::fs::write(
        &pinned,
        r#"{"verdicts": {"init.response": "pass", "init.version.future": "fail"}}"#,
    )
    .unwrap();
    let args = [
        "--only",
        "init.response,init.version.future",
        "--expect",
        pinned.to_str().unwrap(),
    ];
    // A MUST failure that is pinned is what is expected: exit 0.
    let same = run(&[&args[..], &[BROKEN, "--bug", "echo-version"]].concat());
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    // The correct agent differs from the pin: exit 1, and the difference is named.
    let differs = run(&[&args[..], &[REFERENCE]].concat());
    assert_eq!(differs.status.code(), Some(1));
    let stderr = String::from_utf8(differs.stderr).unwrap();
    assert!(
        stderr.contains("init.version.future: expected fail, got pass"),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn json_to_stdout_replaces_the_table() {
    let out = run(&["--only", "init.response", "--json", "-", REFERENCE]);
    assert!(out.status.success());
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("only JSON on stdout");
    assert_eq!(report["verdicts"]["init.response"], "pass");
    assert_eq!(report["agent"]["name"], "conformance-reference-agent");
}
