//! Installing binary distributions from a loopback server: every archive kind, the hostile
//! ones refused with their reason and nothing left behind, checksums, redirects, stalls,
//! HTTPS, and two processes filling the cache at once.

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acp_registry::{
    Error, ExtractLimits, HttpOptions, Launch, Platform, Refusal, Resolver, Source,
};
use common::{
    AGENT_SCRIPT, Route, Server, TarEntry, ZipEntry, binary_registry, bzip2, gzip, sha256_hex, tar,
    zip,
};

struct Setup {
    dir: tempfile::TempDir,
    resolver: Resolver,
}

impl Setup {
    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// Installs agent `id` from `archive` (a URL) with `cmd`.
    fn install(
        &self,
        id: &str,
        archive: &str,
        cmd: &str,
        sha256: Option<&str>,
    ) -> Result<Launch, Error> {
        let file = self.dir.path().join(format!("{id}.json"));
        std::fs::write(&file, binary_registry(id, archive, cmd, sha256)).unwrap();
        let resolver = self.resolver.clone().source(Source::File(file));
        let loaded = resolver.registry()?;
        resolver.launch(&loaded.registry, id)
    }

    /// What the cache holds for agent `id`, besides its lock file.
    fn leftovers(&self, id: &str) -> Vec<String> {
        let dir = self.cache().join("agents").join(id);
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name != ".lock")
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

fn setup() -> Setup {
    setup_with(HttpOptions {
        stall_timeout: Duration::from_millis(500),
        ..HttpOptions::default()
    })
}

fn setup_with(http: HttpOptions) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let resolver = Resolver::new()
        .cache_dir(dir.path().join("cache"))
        .platform(Some(Platform::LinuxX86_64))
        .http(http)
        .extract_limits(ExtractLimits {
            max_bytes: 1 << 20,
            max_entries: 50,
        });
    Setup { dir, resolver }
}

fn run(launch: &Launch) -> String {
    let output = std::process::Command::new(&launch.program)
        .args(&launch.args)
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap()
}

fn refusal(result: Result<Launch, Error>) -> Refusal {
    match result {
        Err(Error::ArchiveRefused { reason, .. }) => reason,
        other => panic!("expected a refused archive, got {other:?}"),
    }
}

#[test]
fn every_archive_kind_installs_and_runs() {
    let tar_bytes = tar(&[
        TarEntry::Dir("pkg/"),
        TarEntry::File("pkg/bin/agent", AGENT_SCRIPT, 0o755),
        TarEntry::Symlink("agent", "pkg/bin/agent"),
        TarEntry::HardLink("pkg/agent-copy", "pkg/bin/agent"),
    ]);
    let zip_bytes = zip(&[
        ZipEntry::File("bin/agent", AGENT_SCRIPT, 0o755),
        ZipEntry::Symlink("lib/current", "../bin"),
    ]);
    // A zip made without Unix modes: the command is made executable all the same.
    let zip_no_modes = zip(&[ZipEntry::File("agent", AGENT_SCRIPT, 0o644)]);
    let kinds: Vec<(&str, Vec<u8>, &str)> = vec![
        ("a.zip", zip_bytes, "bin/agent"),
        ("b.zip", zip_no_modes, "./agent"),
        ("c.tar.gz", gzip(&tar_bytes), "./agent"),
        ("d.tgz", gzip(&tar_bytes), "pkg/bin/agent"),
        ("e.tar.bz2", bzip2(&tar_bytes), "./agent"),
        ("f.tbz2", bzip2(&tar_bytes), "./pkg/agent-copy"),
        ("agent-linux-amd64", AGENT_SCRIPT.to_vec(), "./agent"),
    ];
    let server = Server::http(
        kinds
            .iter()
            .map(|(name, bytes, _)| (format!("/{name}"), Route::Body(bytes.clone()))),
    );
    let mut setup = setup();
    let downloads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = downloads.clone();
    setup.resolver = setup
        .resolver
        .on_download(move |agent, url| seen.lock().unwrap().push(format!("{} {url}", agent.id)));
    for (index, (name, bytes, cmd)) in kinds.iter().enumerate() {
        let id = format!("kind-{index}");
        let sha = sha256_hex(bytes);
        let launch = setup
            .install(&id, &server.url(&format!("/{name}")), cmd, Some(&sha))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let dir = setup
            .cache()
            .join("agents")
            .join(&id)
            .join("1.0.0")
            .join("linux-x86_64");
        assert!(launch.program.starts_with(&dir), "{name}: {launch:?}");
        assert_eq!(launch.args, ["--acp"]);
        assert_eq!(run(&launch), "agent\n", "{name}");
        // Installed once: the second resolution finds it in the cache.
        setup
            .install(&id, &server.url(&format!("/{name}")), cmd, None)
            .unwrap();
        assert_eq!(server.hits(&format!("/{name}")), 1, "{name}");
        assert_eq!(setup.leftovers(&id), ["1.0.0"], "{name}");
    }
    // The hook heard of each download once; the cached second resolutions downloaded nothing.
    let downloads = downloads.lock().unwrap();
    assert_eq!(downloads.len(), kinds.len());
    assert_eq!(downloads[0], format!("kind-0 {}", server.url("/a.zip")));
}

#[test]
fn installed_agents_are_listed_and_removed() {
    let bytes = gzip(&tar(&[TarEntry::File("agent", AGENT_SCRIPT, 0o755)]));
    let server = Server::http([("/a.tar.gz", Route::Body(bytes))]);
    let setup = setup();
    for id in ["one", "two"] {
        setup
            .install(id, &server.url("/a.tar.gz"), "./agent", None)
            .unwrap();
    }
    let cache = setup.resolver.cache().unwrap();
    let listed: Vec<(String, String, String)> = cache
        .installed()
        .into_iter()
        .map(|i| (i.id, i.version, i.platform))
        .collect();
    let entry = |id: &str| (id.to_owned(), "1.0.0".to_owned(), "linux-x86_64".to_owned());
    assert_eq!(listed, [entry("one"), entry("two")]);
    cache.remove("one", Some("1.0.0")).unwrap();
    cache.remove("two", None).unwrap();
    cache.remove("never-installed", None).unwrap();
    assert_eq!(cache.installed(), []);
    assert!(cache.remove("../x", None).is_err());
    // Removed means installed again on the next launch.
    setup
        .install("one", &server.url("/a.tar.gz"), "./agent", None)
        .unwrap();
    assert_eq!(server.hits("/a.tar.gz"), 3);
}

#[test]
fn hostile_archives_are_refused_and_leave_nothing() {
    let zeros = vec![0u8; 8 << 20];
    let many: Vec<String> = (0..60).map(|i| format!("f{i}")).collect();
    let many_entries: Vec<TarEntry<'_>> = many
        .iter()
        .map(|name| TarEntry::File(name, b"x", 0o644))
        .collect();
    let cases: Vec<(&str, Vec<u8>, Refusal)> = vec![
        (
            "traversal.tar.gz",
            gzip(&tar(&[TarEntry::File("../evil", b"x", 0o644)])),
            Refusal::Traversal("../evil".into()),
        ),
        (
            "nested-traversal.tar.gz",
            gzip(&tar(&[TarEntry::File("a/../../evil", b"x", 0o644)])),
            Refusal::Traversal("a/../../evil".into()),
        ),
        (
            "absolute.tar.gz",
            gzip(&tar(&[TarEntry::File(
                "/tmp/acp-registry-evil",
                b"x",
                0o644,
            )])),
            Refusal::AbsolutePath("/tmp/acp-registry-evil".into()),
        ),
        (
            "symlink-up.tar.gz",
            gzip(&tar(&[TarEntry::Symlink("link", "../../etc")])),
            Refusal::LinkEscapes {
                entry: "link".into(),
                target: "../../etc".into(),
            },
        ),
        (
            "symlink-absolute.tar.gz",
            gzip(&tar(&[TarEntry::Symlink("link", "/etc/passwd")])),
            Refusal::LinkEscapes {
                entry: "link".into(),
                target: "/etc/passwd".into(),
            },
        ),
        (
            // Each link alone looks inside; together `l` would reach the parent.
            "symlink-chain.tar.gz",
            gzip(&tar(&[
                TarEntry::Dir("p/"),
                TarEntry::Symlink("p/x", "../q"),
                TarEntry::Symlink("l", "p/x/../.."),
            ])),
            Refusal::LinkEscapes {
                entry: "l".into(),
                target: "p/x/../..".into(),
            },
        ),
        (
            "through-link.tar.gz",
            gzip(&tar(&[
                TarEntry::Dir("sub/"),
                TarEntry::Symlink("d", "sub"),
                TarEntry::File("d/x", b"x", 0o644),
            ])),
            Refusal::ThroughLink("d/x".into()),
        ),
        (
            "hardlink-out.tar.gz",
            gzip(&tar(&[TarEntry::HardLink("h", "../../etc/passwd")])),
            Refusal::LinkEscapes {
                entry: "h".into(),
                target: "../../etc/passwd".into(),
            },
        ),
        (
            "fifo.tar.gz",
            gzip(&tar(&[TarEntry::Fifo("pipe")])),
            Refusal::SpecialFile("pipe".into()),
        ),
        (
            "bomb.tar.gz",
            gzip(&tar(&[TarEntry::File("agent", &zeros, 0o755)])),
            Refusal::TooLarge { limit: 1 << 20 },
        ),
        (
            "bomb.tar.bz2",
            bzip2(&tar(&[TarEntry::File("agent", &zeros, 0o755)])),
            Refusal::TooLarge { limit: 1 << 20 },
        ),
        (
            "many.tar.gz",
            gzip(&tar(&many_entries)),
            Refusal::TooManyEntries { limit: 50 },
        ),
        (
            "traversal.zip",
            zip(&[ZipEntry::File("../evil", b"x", 0o644)]),
            Refusal::Traversal("../evil".into()),
        ),
        (
            "symlink.zip",
            zip(&[ZipEntry::Symlink("link", "/etc")]),
            Refusal::LinkEscapes {
                entry: "link".into(),
                target: "/etc".into(),
            },
        ),
        (
            "bomb.zip",
            zip(&[ZipEntry::File("agent", &zeros, 0o755)]),
            Refusal::TooLarge { limit: 1 << 20 },
        ),
        (
            "no-command.tar.gz",
            gzip(&tar(&[TarEntry::File("other", b"x", 0o755)])),
            Refusal::MissingCommand("./agent".into()),
        ),
    ];
    let server = Server::http(
        cases
            .iter()
            .map(|(name, bytes, _)| (format!("/{name}"), Route::Body(bytes.clone()))),
    );
    let setup = setup();
    for (index, (name, bytes, expected)) in cases.iter().enumerate() {
        let id = format!("hostile-{index}");
        let sha = sha256_hex(bytes);
        let got =
            refusal(setup.install(&id, &server.url(&format!("/{name}")), "./agent", Some(&sha)));
        assert_eq!(&got, expected, "{name}");
        assert_eq!(
            setup.leftovers(&id),
            Vec::<String>::new(),
            "{name}: left behind"
        );
    }
    assert!(!Path::new("/tmp/acp-registry-evil").exists());
    assert!(!setup.cache().join("agents/evil").exists());
}

#[test]
fn corrupt_archives_and_installers_are_refused() {
    let server = Server::http(vec![("/garbage.tar.gz", Route::Body(b"not gzip".to_vec()))]);
    let setup = setup();
    let got = refusal(setup.install("corrupt", &server.url("/garbage.tar.gz"), "./agent", None));
    assert!(matches!(got, Refusal::Corrupt(_)), "{got:?}");
    assert_eq!(setup.leftovers("corrupt"), Vec::<String>::new());
    // An installer is refused by its name, before anything is downloaded.
    let got = refusal(setup.install("installer", &server.url("/agent.pkg"), "./agent", None));
    assert_eq!(got, Refusal::Installer("pkg".into()));
    assert_eq!(server.hits("/agent.pkg"), 0);
    let error = setup
        .install("installer", &server.url("/agent.dmg"), "./agent", None)
        .unwrap_err()
        .to_string();
    assert!(
        error.ends_with(
            "archive refused: `.dmg` is an installer, which the registry does not allow"
        ),
        "{error}"
    );
}

#[test]
fn a_wrong_checksum_installs_nothing() {
    let bytes = gzip(&tar(&[TarEntry::File("agent", AGENT_SCRIPT, 0o755)]));
    let server = Server::http(vec![("/a.tar.gz", Route::Body(bytes.clone()))]);
    let setup = setup();
    let wrong = "0".repeat(64);
    match setup.install("sum", &server.url("/a.tar.gz"), "./agent", Some(&wrong)) {
        Err(Error::ChecksumMismatch {
            expected, actual, ..
        }) => {
            assert_eq!(expected, wrong);
            assert_eq!(actual, sha256_hex(&bytes));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(setup.leftovers("sum"), Vec::<String>::new());
    // Upper-case hex is the same checksum.
    let upper = sha256_hex(&bytes).to_ascii_uppercase();
    setup
        .install("sum", &server.url("/a.tar.gz"), "./agent", Some(&upper))
        .unwrap();
}

#[test]
fn redirects_are_followed_up_to_the_limit() {
    let bytes = gzip(&tar(&[TarEntry::File("agent", AGENT_SCRIPT, 0o755)]));
    let server = Server::http(vec![("/final.tar.gz", Route::Body(bytes))]);
    server.set("/hop1.tar.gz", Route::Redirect(server.url("/hop2.tar.gz")));
    server.set("/hop2.tar.gz", Route::Redirect("/final.tar.gz".into()));
    server.set("/loop.tar.gz", Route::Redirect(server.url("/loop.tar.gz")));
    let setup = setup_with(HttpOptions {
        max_redirects: 5,
        ..HttpOptions::default()
    });
    setup
        .install("hops", &server.url("/hop1.tar.gz"), "./agent", None)
        .unwrap();
    let error = setup
        .install("loop", &server.url("/loop.tar.gz"), "./agent", None)
        .unwrap_err();
    assert!(
        error.to_string().ends_with(": more than 5 redirects"),
        "{error}"
    );
    assert!(server.hits("/loop.tar.gz") <= 6);
    assert_eq!(setup.leftovers("loop"), Vec::<String>::new());
}

#[test]
fn a_stalled_server_is_given_up_on() {
    let server = Server::http(vec![("/stall.tar.gz", Route::Stall)]);
    let setup = setup();
    let started = Instant::now();
    let error = setup
        .install("stall", &server.url("/stall.tar.gz"), "./agent", None)
        .unwrap_err();
    assert!(
        error
            .to_string()
            .ends_with("the server sent nothing for 0.5 s"),
        "{error}"
    );
    // Bounded by the stall timeout, not by the server (which waits a minute).
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(setup.leftovers("stall"), Vec::<String>::new());
}

#[test]
fn downloads_are_capped_and_statuses_reported() {
    let server = Server::http(vec![("/big.tar.gz", Route::Body(vec![0; 4096]))]);
    let setup = setup_with(HttpOptions {
        max_archive_bytes: 1000,
        ..HttpOptions::default()
    });
    let error = setup
        .install("big", &server.url("/big.tar.gz"), "./agent", None)
        .unwrap_err();
    assert!(
        error.to_string().ends_with("larger than the 1000-byte cap"),
        "{error}"
    );
    let error = setup
        .install("gone", &server.url("/gone.tar.gz"), "./agent", None)
        .unwrap_err();
    assert!(
        error.to_string().ends_with("the server answered HTTP 404"),
        "{error}"
    );
    // Plain HTTP beyond loopback is refused before any connection.
    let error = setup
        .install("plain", "http://example.invalid/a.tar.gz", "./agent", None)
        .unwrap_err();
    assert!(error.to_string().contains("only https:// URLs"), "{error}");
}

#[cfg(feature = "tls")]
#[test]
fn https_with_a_trusted_authority() {
    let bytes = gzip(&tar(&[TarEntry::File("agent", AGENT_SCRIPT, 0o755)]));
    let server = Server::https(vec![("/a.tar.gz", Route::Body(bytes))]);
    let trusted = setup_with(HttpOptions {
        root_certificates_pem: Some(std::sync::Arc::new(
            std::fs::read(common::tls_file("ca.pem")).unwrap(),
        )),
        ..HttpOptions::default()
    });
    let launch = trusted
        .install("tls", &server.url("/a.tar.gz"), "./agent", None)
        .unwrap();
    assert_eq!(run(&launch), "agent\n");
    // The Mozilla roots do not know the test authority.
    let untrusted = setup();
    let error = untrusted
        .install("tls", &server.url("/a.tar.gz"), "./agent", None)
        .unwrap_err();
    assert!(matches!(error, Error::Download { .. }), "{error}");
    assert_eq!(untrusted.leftovers("tls"), Vec::<String>::new());
}

/// Two processes install the same agent at once: one downloads, the other waits and finds
/// it installed; both get the same, complete directory.
#[test]
fn two_processes_fill_the_cache_once() {
    if let Ok(spec) = std::env::var("ACP_REGISTRY_TEST_CHILD") {
        // The child's half: install, print the program.
        let (cache, registry) = spec.split_once('|').unwrap();
        let resolver = Resolver::new()
            .cache_dir(cache)
            .platform(Some(Platform::LinuxX86_64))
            .source(Source::File(registry.into()));
        let loaded = resolver.registry().unwrap();
        let launch = resolver.launch(&loaded.registry, "shared").unwrap();
        println!("PROGRAM={}", launch.program.display());
        return;
    }
    let bytes = gzip(&tar(&[TarEntry::File("agent", AGENT_SCRIPT, 0o755)]));
    let server = Server::http(vec![(
        "/shared.tar.gz",
        Route::SlowBody(bytes, Duration::from_millis(300)),
    )]);
    let setup = setup();
    let registry = setup.dir.path().join("shared.json");
    std::fs::write(
        &registry,
        binary_registry("shared", &server.url("/shared.tar.gz"), "./agent", None),
    )
    .unwrap();
    let spec = format!("{}|{}", setup.cache().display(), registry.display());
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "two_processes_fill_the_cache_once",
                    "--nocapture",
                ])
                .env("ACP_REGISTRY_TEST_CHILD", &spec)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let programs: Vec<String> = children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success());
            let stdout = String::from_utf8(output.stdout).unwrap();
            stdout
                .lines()
                .find_map(|line| line.strip_prefix("PROGRAM="))
                .unwrap_or_else(|| panic!("no program in {stdout}"))
                .to_owned()
        })
        .collect();
    assert_eq!(programs[0], programs[1]);
    assert_eq!(server.hits("/shared.tar.gz"), 1);
    assert_eq!(setup.leftovers("shared"), ["1.0.0"]);
    let launch = Launch::new(&programs[0]);
    assert_eq!(run(&launch), "agent\n");
}
