//! `acp agents` and `acp --agent ID`: the registry's agents listed, and one started through
//! the same spawn path as an agent command (a stand-in `npx` on PATH that runs the demo agent).

#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use common::{ACP, run, scratch, text};

fn fixture(name: &str) -> String {
    format!(
        "{}/../acp-registry/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn agents_lists_the_registry() {
    let out = run(Command::new(ACP)
        .args(["agents", "--registry", &fixture("registry.json")])
        .stdin(Stdio::null()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    insta::assert_snapshot!(text(&out.stdout));
}

#[test]
fn an_unknown_id_is_a_usage_error_with_suggestions() {
    let out = run(Command::new(ACP)
        .args([
            "--agent",
            "gemni",
            "--registry",
            &fixture("registry.json"),
            "-p",
            "hi",
        ])
        .stdin(Stdio::null()));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "acp: no agent `gemni` in the registry; did you mean `gemini`?\n"
    );
    let out = run(Command::new(ACP)
        .args(["agents", "--registry", "/nonexistent/registry.json"])
        .stdin(Stdio::null()));
    assert_eq!(out.status.code(), Some(5));
    assert!(text(&out.stderr).starts_with("acp: /nonexistent/registry.json: "));
}

#[test]
fn a_registry_agent_runs_a_turn() {
    let dir = scratch("registry");
    // `npx` on PATH: ignores the package and runs acp's demo agent.
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let npx = bin.join("npx");
    std::fs::write(
        &npx,
        format!("#!/bin/sh\nexec '{ACP}' --serve-demo-agent\n"),
    )
    .unwrap();
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
    let registry = dir.join("registry.json");
    std::fs::write(
        &registry,
        r#"{"version": "1.0.0", "agents": [{"id": "demo", "name": "Demo", "version": "1.0.0",
            "description": "acp's demo agent", "distribution": {"npx": {"package": "demo@1.0.0",
            "args": ["--acp"], "env": {"DEMO_FROM_REGISTRY": "1"}}}}]}"#,
    )
    .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = run(Command::new(ACP)
        .args(["--agent", "demo", "--registry"])
        .arg(&registry)
        .args(["--yes", "-p", "Summarize my notes", "-C"])
        .arg(&dir)
        .env("PATH", path)
        .stdin(Stdio::null()));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "registry agent: {} --yes demo@1.0.0 --acp\n",
            npx.display()
        )),
        "{stderr}"
    );
    assert!(text(&out.stdout).contains("[turn ended: end_turn]"));
    assert!(dir.join("summary.txt").exists());
    // Without npx on PATH: what to install.
    let out = run(Command::new(ACP)
        .args(["--agent", "demo", "--registry"])
        .arg(&registry)
        .args(["-p", "hi"])
        .env("PATH", "/nonexistent")
        .stdin(Stdio::null()));
    assert_eq!(out.status.code(), Some(5));
    assert!(
        text(&out.stderr).contains("`npx`, which is not on PATH; install Node.js"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}
