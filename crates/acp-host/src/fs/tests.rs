//! What the integration tests cannot see: the confined walk on raw paths, and the blocking
//! thread of a read whose future is dropped.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::beneath;
use super::lines::{CHUNK, Progress};
use super::{FsHost, FsRoots};

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().canonicalize().unwrap().join(format!(
            "acp-fs-unit-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(path.join("root/dir")).unwrap();
        std::fs::write(path.join("root/dir/file.txt"), "inside\n").unwrap();
        std::fs::write(path.join("secret.txt"), "secret\n").unwrap();
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens `relative` for reading beneath `root` through each method available here, and
/// checks that they agree: the contents read, or the OS error number.
fn open_both(root: &Path, relative: &str) -> Result<String, i32> {
    let anchor = beneath::open_root(root).unwrap();
    let open = |portable| {
        beneath::open_beneath(
            anchor.as_fd(),
            Path::new(relative),
            libc::O_RDONLY,
            0,
            false,
            portable,
        )
        .map(|fd| std::io::read_to_string(std::fs::File::from(fd)).unwrap_or_default())
        .map_err(|error| error.raw_os_error().unwrap())
    };
    let walked = open(true);
    assert_eq!(
        open(false),
        walked,
        "openat2 and the walk disagree on {relative}"
    );
    walked
}

#[test]
fn the_confined_walk_follows_links_inside_and_refuses_the_way_out() {
    let temp = TempDir::new();
    let root = temp.0.join("root");
    let link = |target: &str, name: &str| std::os::unix::fs::symlink(target, root.join(name));
    link("dir", "to-dir").unwrap();
    link("dir/file.txt", "to-file").unwrap();
    link("to-dir/../to-file", "chain").unwrap();
    link("../secret.txt", "up-and-out").unwrap();
    link(temp.0.join("secret.txt").to_str().unwrap(), "absolute").unwrap();
    link("loop-b", "loop-a").unwrap();
    link("loop-a", "loop-b").unwrap();
    link("dir/../..", "to-parent").unwrap();

    assert_eq!(open_both(&root, "dir/file.txt"), Ok("inside\n".into()));
    assert_eq!(
        open_both(&root, "dir/../dir/./file.txt"),
        Ok("inside\n".into())
    );
    assert_eq!(open_both(&root, "to-dir/file.txt"), Ok("inside\n".into()));
    assert_eq!(open_both(&root, "to-file"), Ok("inside\n".into()));
    assert_eq!(open_both(&root, "chain"), Ok("inside\n".into()));
    assert_eq!(open_both(&root, "../secret.txt"), Err(libc::EXDEV));
    assert_eq!(open_both(&root, "dir/../../secret.txt"), Err(libc::EXDEV));
    assert_eq!(open_both(&root, "up-and-out"), Err(libc::EXDEV));
    assert_eq!(open_both(&root, "absolute"), Err(libc::EXDEV));
    assert_eq!(open_both(&root, "to-parent/secret.txt"), Err(libc::EXDEV));
    assert_eq!(open_both(&root, "loop-a"), Err(libc::ELOOP));
    assert_eq!(open_both(&root, "missing"), Err(libc::ENOENT));
    assert_eq!(open_both(&root, "dir/file.txt/x"), Err(libc::ENOTDIR));
    assert_eq!(open_both(&root, "."), Ok(String::new()));
}

#[test]
fn creating_parents_stays_beneath_the_root() {
    let temp = TempDir::new();
    let root = temp.0.join("root");
    std::os::unix::fs::symlink(&temp.0, root.join("out")).unwrap();
    let anchor = beneath::open_root(&root).unwrap();
    for portable in [false, true] {
        let create = |relative: &str| {
            beneath::open_beneath(
                anchor.as_fd(),
                Path::new(relative),
                libc::O_WRONLY | libc::O_CREAT,
                0o644,
                true,
                portable,
            )
            .map_err(|error| error.raw_os_error().unwrap())
        };
        let name = format!("new-{portable}/a/b.txt");
        assert!(create(&name).is_ok());
        assert!(root.join(&name).is_file());
        assert_eq!(create("out/made/c.txt").err(), Some(libc::EXDEV));
        assert!(!temp.0.join("made").exists());
    }
}

#[test]
fn dropping_a_read_stops_its_thread() {
    let temp = TempDir::new();
    let root = temp.0.join("root");
    // 64 GiB of holes and no newline: skipping to line 2 would read for many seconds.
    let huge = root.join("huge.bin");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    let roots = FsRoots::session(&root, Vec::<PathBuf>::new());
    let progress = Arc::new(Progress::default());
    let host = FsHost::new();
    let read = host.read_watched(&roots, &huge, Some(2), None, progress.clone(), async |_| {});
    let timed_out = smol::block_on(smol::future::or(async { Some(read.await) }, async {
        smol::Timer::after(Duration::from_millis(300)).await;
        None
    }));
    assert!(timed_out.is_none(), "the read finished: {timed_out:?}");
    assert!(progress.bytes_read() > 0, "the read had started");

    // The blocking closure holds the other reference; it is dropped when the thread is done.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(&progress) > 1 {
        assert!(
            Instant::now() < deadline,
            "the read goes on after its future was dropped"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let stopped_at = progress.bytes_read();
    assert!(stopped_at < 64 << 30);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(progress.bytes_read(), stopped_at);
    eprintln!("read {stopped_at} bytes before stopping (chunks of {CHUNK})");
}
