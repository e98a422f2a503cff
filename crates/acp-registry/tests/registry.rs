//! Reading registries (the real one's snapshot, lenient decoding), choosing distributions,
//! the user-facing errors, and the registry cache (fresh, refreshed, stale).

#![cfg(unix)]

mod common;

use std::path::Path;
use std::time::Duration;

use acp_registry::{Error, Method, Origin, Platform, Registry, Resolver, Source};
use common::{Route, Server};

fn fixture(name: &str) -> Registry {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    Registry::from_json(&std::fs::read(&path).unwrap(), &path).unwrap()
}

/// A directory holding executables named `tools`, for `PATH`.
fn fake_tools(tools: &[&str]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for tool in tools {
        let path = dir.path().join(tool);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn resolver(tools: &Path) -> Resolver {
    Resolver::new()
        .cache_dir(tools.join("cache"))
        .search_path(tools.as_os_str())
        .platform(Some(Platform::LinuxX86_64))
}

#[test]
fn the_real_registry_decodes_whole() {
    let registry = fixture("registry.json");
    assert_eq!(registry.version, "1.0.0");
    assert_eq!(registry.skipped, []);
    assert_eq!(registry.agents.len(), 11);
    assert!(registry.extra.contains_key("extensions"));
    // What each agent offers, and what runs on each platform with npx and uvx on PATH.
    let tools = fake_tools(&["npx", "uvx"]);
    let mut table = String::new();
    for agent in &registry.agents {
        let on = |platform| {
            let choice = agent.candidates(Some(platform), &Method::DEFAULT_ORDER);
            match choice.first() {
                Some(choice) => format!("{:?}", choice.method()),
                None => "-".into(),
            }
        };
        table += &format!(
            "{:<16} {:<8} linux-x86_64={:<6} darwin-aarch64={:<6} windows-aarch64={:<6} offers {}\n",
            agent.id,
            agent.version,
            on(Platform::LinuxX86_64),
            on(Platform::DarwinAarch64),
            on(Platform::WindowsAarch64),
            agent.offered().join(", "),
        );
    }
    insta::assert_snapshot!(table);
    // The npx agents resolve to their command lines without any download.
    let launch = resolver(tools.path()).launch(&registry, "gemini").unwrap();
    assert_eq!(
        launch.to_string(),
        format!(
            "{} --yes @google/gemini-cli@0.27.3 --experimental-acp",
            tools.path().join("npx").display()
        )
    );
    let launch = resolver(tools.path()).launch(&registry, "auggie").unwrap();
    assert_eq!(
        launch.env,
        [("AUGMENT_DISABLE_AUTO_UPDATE".into(), "1".into())]
    );
}

#[test]
fn later_entries_decode_with_their_new_fields_kept() {
    let registry = fixture("registry-2026-08.json");
    assert_eq!(registry.skipped, []);
    let claude = registry.agent("claude-acp").unwrap();
    assert!(claude.extra.contains_key("preview"));
    assert!(claude.extra.contains_key("license_url"));
    let tools = fake_tools(&["uvx"]);
    let launch = resolver(tools.path())
        .launch(&registry, "fast-agent")
        .unwrap();
    assert_eq!(
        launch.to_string(),
        format!(
            "{} fast-agent-acp==0.10.1 -x",
            tools.path().join("uvx").display()
        )
    );
    assert_eq!(
        launch.env,
        [("FAST_AGENT_MODEL".into(), "codexplan".into())]
    );
}

#[test]
fn decoding_is_lenient() {
    let registry = Registry::from_json(
        br#"{"version": "1.0.0", "future": true, "agents": [
            {"id": "good", "name": "Good", "version": "1.0.0", "description": "d",
             "distribution": {
                "npx": {"package": "good@1.0.0", "cmd": "good-acp", "future": 1},
                "binary": {"plan9-mips": {"archive": "https://h/a.zip", "cmd": "a"}},
                "docker": {"image": "good:1"}
             },
             "newField": {"x": 1}},
            {"id": "no-distribution", "name": "N", "version": "1.0.0", "description": "d"},
            {"id": "Bad_Id", "name": "B", "version": "1.0.0", "description": "d",
             "distribution": {"npx": {"package": "b"}}},
            {"name": "no id"},
            "not an object"
        ]}"#,
        "inline",
    )
    .unwrap();
    assert_eq!(registry.agents.len(), 1);
    let good = &registry.agents[0];
    assert_eq!(
        good.distribution.npx.as_ref().unwrap().cmd.as_deref(),
        Some("good-acp")
    );
    assert!(good.extra.contains_key("newField"));
    assert!(good.distribution.extra.contains_key("docker"));
    assert_eq!(good.offered(), ["binary (plan9-mips)", "npx", "docker"]);
    let skipped: Vec<Option<&str>> = registry.skipped.iter().map(|s| s.id.as_deref()).collect();
    assert_eq!(
        skipped,
        [Some("no-distribution"), Some("Bad_Id"), None, None]
    );
    assert!(registry.skipped[1].reason.contains("[a-z][a-z0-9-]*"));
    // The cmd is honoured.
    let tools = fake_tools(&["npx"]);
    let launch = resolver(tools.path()).launch(&registry, "good").unwrap();
    assert!(
        launch
            .to_string()
            .ends_with("npx --yes --package good@1.0.0 good-acp")
    );
    // Only a document that is not a registry at all fails.
    for bad in [&b"[]"[..], b"{}", b"{\"agents\": 3}", b"not json"] {
        let error = Registry::from_json(bad, "bad.json").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("bad.json: not an ACP registry: "),
            "{error}"
        );
    }
}

#[test]
fn errors_say_what_to_do() {
    let registry = fixture("registry.json");
    let nothing = tempfile::tempdir().unwrap();
    let errors: Vec<String> = [
        ("gemni", resolver(nothing.path())),
        ("claude", resolver(nothing.path())),
        ("zzz", resolver(nothing.path())),
        ("gemini", resolver(nothing.path())),
        (
            "kimi",
            resolver(nothing.path()).platform(Some(Platform::WindowsAarch64)),
        ),
        (
            "gemini",
            resolver(nothing.path()).order([Method::Binary, Method::Uvx]),
        ),
    ]
    .into_iter()
    .map(|(id, resolver)| resolver.launch(&registry, id).unwrap_err().to_string())
    .collect();
    insta::assert_snapshot!(errors.join("\n"));
}

#[test]
fn a_missing_launcher_falls_through_to_the_next() {
    let registry = Registry::from_json(
        br#"{"agents": [{"id": "both", "name": "B", "version": "1.0.0", "description": "d",
            "distribution": {"npx": {"package": "b@1"}, "uvx": {"package": "b==1"}}}]}"#,
        "inline",
    )
    .unwrap();
    let uv_only = fake_tools(&["uvx"]);
    let launch = resolver(uv_only.path()).launch(&registry, "both").unwrap();
    assert!(launch.program.ends_with("uvx"));
    let both = fake_tools(&["npx", "uvx"]);
    let launch = resolver(both.path()).launch(&registry, "both").unwrap();
    assert!(launch.program.ends_with("npx"));
    let launch = resolver(both.path())
        .order([Method::Uvx, Method::Npx])
        .launch(&registry, "both")
        .unwrap();
    assert!(launch.program.ends_with("uvx"));
    // Neither: the first one tried is named.
    let none = fake_tools(&[]);
    match resolver(none.path()).launch(&registry, "both") {
        Err(Error::ToolMissing { tool: "npx", .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_registry_is_cached_refreshed_and_used_stale_when_unreachable() {
    let document = std::fs::read(format!(
        "{}/fixtures/registry.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let server = Server::http(vec![("/registry.json", Route::Body(document))]);
    let dir = tempfile::tempdir().unwrap();
    let resolver = Resolver::new()
        .cache_dir(dir.path())
        .source(Source::parse(&server.url("/registry.json")));
    let origin = |resolver: &Resolver| {
        let loaded = resolver.registry().unwrap();
        assert_eq!(loaded.registry.agents.len(), 11);
        loaded.origin
    };
    assert!(matches!(origin(&resolver), Origin::Fetched));
    assert!(matches!(origin(&resolver), Origin::Cached { .. }));
    assert_eq!(server.hits("/registry.json"), 1);
    // --refresh, and an expired copy, fetch again.
    assert!(matches!(
        origin(&resolver.clone().refresh(true)),
        Origin::Fetched
    ));
    let expired = resolver.clone().max_age(Duration::ZERO);
    assert!(matches!(origin(&expired), Origin::Fetched));
    assert_eq!(server.hits("/registry.json"), 3);
    // A broken build of the registry never replaces the good copy...
    server.set("/registry.json", Route::Body(b"{\"oops\": ".to_vec()));
    match origin(&expired) {
        Origin::Stale { error, .. } => {
            assert!(matches!(error, Error::InvalidRegistry { .. }), "{error}");
        }
        other => panic!("{other:?}"),
    }
    // ...and an unreachable registry falls back to it too.
    server.set("/registry.json", Route::Stall);
    let stalled = expired.http(acp_registry::HttpOptions {
        stall_timeout: Duration::from_millis(300),
        ..Default::default()
    });
    match origin(&stalled) {
        Origin::Stale { error, .. } => assert!(matches!(error, Error::Download { .. })),
        other => panic!("{other:?}"),
    }
    // Without a cached copy, the error itself.
    let empty = tempfile::tempdir().unwrap();
    let error = stalled.cache_dir(empty.path()).registry().unwrap_err();
    assert!(
        error.to_string().contains("the server sent nothing"),
        "{error}"
    );
}
