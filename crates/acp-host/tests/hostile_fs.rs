//! The file-system host against what a hostile agent can set up inside its own session
//! directory: FIFOs, sockets, links to devices, hard links to files outside, lines of
//! gigabytes, text that grows sixfold when escaped, and links swapped while requests run.
//!
//! Every case runs through both ways of opening beneath a root (`openat2`, and the portable
//! walk), each test under a 10 s guard so that a regression fails instead of hanging, and
//! one at a time: the allocation and read counters below are process-wide.
#![cfg(unix)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_host::fs::{FsError, FsHost, FsRoots};

/// Counts the bytes allocated now and the most allocated at once since [`Peak::start`].
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed to `System` unchanged; the counters are only arithmetic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as documented for `GlobalAlloc::alloc`, forwarded.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(pointer, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most bytes allocated at once, beyond what was allocated at `start`.
struct Peak(usize);

impl Peak {
    fn start() -> Self {
        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        Peak(base)
    }

    fn bytes(&self) -> usize {
        PEAK.load(Ordering::Relaxed) - self.0
    }
}

/// Runs `case` on its own thread, one test at a time, and fails if it takes over 10 s:
/// a regression that blocks fails the test instead of hanging the run.
fn guarded(case: impl FnOnce() + Send + 'static) {
    guarded_for(Duration::from_secs(10), case);
}

fn guarded_for(limit: Duration, case: impl FnOnce() + Send + 'static) {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let (done, finished) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        case();
        let _ = done.send(());
    });
    match finished.recv_timeout(limit) {
        Ok(()) => thread.join().unwrap(),
        // The case panicked: pass its panic on.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(thread.join().unwrap_err())
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the case still runs after {limit:?}: something blocks")
        }
    }
}

#[path = "common/sandbox.rs"]
mod sandbox;
use sandbox::Sandbox;

/// A host that opens files with `openat2` where the kernel has it, and one that walks.
fn hosts() -> [FsHost; 2] {
    [FsHost::new(), FsHost::new().without_openat2()]
}

fn read_with(host: &FsHost, roots: &FsRoots, path: &Path) -> Result<String, FsError> {
    smol::block_on(host.read_text_file(roots, path, None, None))
}

fn write_with(host: &FsHost, roots: &FsRoots, path: &Path, text: &str) -> Result<(), FsError> {
    smol::block_on(host.write_text_file(roots, path, text.to_owned()))
}

fn assert_not_regular(result: Result<impl std::fmt::Debug, FsError>, expected: &str) {
    match result {
        Err(FsError::NotARegularFile { kind, .. }) if kind == expected => {}
        other => panic!("expected NotARegularFile({expected}), got {other:?}"),
    }
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

#[test]
fn fifos_are_refused_at_once_for_reading_and_writing() {
    guarded(|| {
        let sandbox = Sandbox::new();
        let roots = sandbox.roots();
        let fifo = sandbox.root.join("pipe");
        mkfifo(&fifo);
        for host in hosts().iter().chain([&FsHost::new()]) {
            assert_not_regular(read_with(host, &roots, &fifo), "fifo");
            // Nobody reads: opening for writing fails at once (ENXIO).
            assert_not_regular(write_with(host, &roots, &fifo, "x"), "fifo");
        }
        let unrestricted = FsRoots::unrestricted();
        assert_not_regular(read_with(&FsHost::new(), &unrestricted, &fifo), "fifo");
        assert_not_regular(
            write_with(&FsHost::new(), &unrestricted, &fifo, "x"),
            "fifo",
        );

        // With a reader waiting, the write opens, is refused by `fstat`, and writes nothing.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        for host in hosts() {
            assert_not_regular(write_with(&host, &roots, &fifo, "x"), "fifo");
            assert_not_regular(read_with(&host, &roots, &fifo), "fifo");
        }
        let mut buffer = [0; 8];
        let read = std::io::Read::read(&mut &reader, &mut buffer);
        assert!(matches!(read, Ok(0)) || read.is_err(), "{read:?}");

        let error = read_with(&FsHost::new(), &roots, &fifo).unwrap_err();
        assert!(
            error.to_string().contains("is a fifo, not a regular file"),
            "{error}"
        );
    });
}

use std::os::unix::fs::OpenOptionsExt;

#[test]
fn sockets_are_refused() {
    guarded(|| {
        let sandbox = Sandbox::new();
        let roots = sandbox.roots();
        let socket = sandbox.root.join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        for host in hosts() {
            assert_not_regular(read_with(&host, &roots, &socket), "socket");
            assert_not_regular(write_with(&host, &roots, &socket, "x"), "socket");
        }
    });
}

#[test]
fn links_to_devices_are_outside_and_devices_are_not_files() {
    guarded(|| {
        let sandbox = Sandbox::new();
        let roots = sandbox.roots();
        let zero = sandbox.root.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for host in hosts() {
            let error = read_with(&host, &roots, &zero).unwrap_err();
            assert!(matches!(error, FsError::OutsideRoots { .. }), "{error:?}");
            let error = write_with(&host, &roots, &zero, "x").unwrap_err();
            assert!(matches!(error, FsError::OutsideRoots { .. }), "{error:?}");
        }
        // Without the boundary, or with /dev granted, a device is still not a file.
        let unrestricted = FsRoots::unrestricted();
        assert_not_regular(
            read_with(&FsHost::new(), &unrestricted, &zero),
            "character device",
        );
        let with_dev = FsRoots::session(&sandbox.root, ["/dev"]);
        for host in hosts() {
            let dev_zero = Path::new("/dev/zero");
            assert_not_regular(read_with(&host, &with_dev, dev_zero), "character device");
            let dev_null = Path::new("/dev/null");
            assert_not_regular(
                write_with(&host, &with_dev, dev_null, "x"),
                "character device",
            );
        }
    });
}

#[test]
fn hard_links_are_refused_for_writing_and_read_as_they_are() {
    guarded(|| {
        let sandbox = Sandbox::new();
        let roots = sandbox.roots();
        let link = sandbox.root.join("innocent.txt");
        std::fs::hard_link(sandbox.outside.join("secret.txt"), &link).unwrap();
        for host in hosts() {
            let error = write_with(&host, &roots, &link, "overwritten").unwrap_err();
            assert!(
                matches!(&error, FsError::HardLinked { path, links: 2 } if *path == link),
                "{error:?}"
            );
            assert!(error.to_string().contains("has 2 hard links"), "{error}");
            // Package managers hard-link whole trees; reading stays possible (see FsRoots).
            assert_eq!(read_with(&host, &roots, &link).unwrap(), "secret\n");
        }
        // Refused before anything was truncated.
        assert_eq!(sandbox.secret(), "secret\n");
        // Without a boundary there is nothing to leak: the link is an ordinary file.
        let unrestricted = FsRoots::unrestricted();
        assert_eq!(
            read_with(&FsHost::new(), &unrestricted, &link).unwrap(),
            "secret\n"
        );
        // A file the agent writes anew has one link and stays writable.
        let fresh = sandbox.root.join("fresh.txt");
        for host in hosts() {
            write_with(&host, &roots, &fresh, "one").unwrap();
            write_with(&host, &roots, &fresh, "two").unwrap();
            assert_eq!(read_with(&host, &roots, &fresh).unwrap(), "two");
        }
    });
}

#[test]
fn a_skipped_line_of_5_gib_costs_a_fixed_buffer() {
    // Reading 5 GiB of holes takes from half a second to several on a busy machine.
    guarded_for(Duration::from_secs(120), || {
        let sandbox = Sandbox::new();
        let roots = sandbox.roots();
        let sparse = sandbox.root.join("sparse.txt");
        let file = std::fs::File::create(&sparse).unwrap();
        let holes = 5 << 30;
        file.set_len(holes).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, b"\nsecond\n", holes).unwrap();
        drop(file);
        // Lines are read the same whichever way the file was opened: one host is enough.
        let host = FsHost::new();
        let started = Instant::now();
        let peak = Peak::start();
        let second = smol::block_on(host.read_text_file(&roots, &sparse, Some(2), None)).unwrap();
        let (bytes, took) = (peak.bytes(), started.elapsed());
        assert_eq!(second, "second\n");
        eprintln!("line 2 after 5 GiB: peak {bytes} bytes allocated, {took:?}");
        assert!(bytes < 1 << 20, "skipping allocated {bytes} bytes at once");

        for host in hosts() {
            // Selected, the same line is refused once its escaped size passes the cap
            // (NUL escapes to 6 bytes), having held no more than the cap.
            let capped = host.clone().with_max_read_bytes(1 << 20);
            let peak = Peak::start();
            let first = smol::block_on(capped.read_text_file(&roots, &sparse, None, Some(1)));
            assert!(matches!(first, Err(FsError::TooLarge { .. })), "{first:?}");
            let bytes = peak.bytes();
            eprintln!("{host:?}: line 1 refused at a 1 MiB cap: peak {bytes} bytes");
            assert!(bytes < 2 << 20, "selecting allocated {bytes} bytes at once");
        }
    });
}

#[test]
fn the_cap_counts_text_as_escaped_on_the_wire() {
    guarded(|| {
        let sandbox = Sandbox::new();
        let roots = sandbox.roots();
        let cap = 4 << 20;
        // 1 MiB of U+0001: a quarter of the cap on disk, 6 MiB as `\u0001` escapes.
        let control = sandbox.root.join("control.txt");
        std::fs::write(&control, "\u{1}".repeat(1 << 20)).unwrap();
        let plain = sandbox.root.join("plain.txt");
        std::fs::write(&plain, "a".repeat(1 << 20)).unwrap();
        // Every kind of escape: 10 + 2 + 2 + 2 + 2 + 6 + 6 + 2 + 2 + 2 = 36 bytes per line
        // on the wire, for 20 on disk.
        let mixed_line = "plain text\"\\\n\t\u{1}\u{1f}é\r\n";
        assert_eq!(mixed_line.len(), 20);
        let wire_line = serde_json::to_string(mixed_line).unwrap().len() - 2;
        assert_eq!(wire_line, 36);
        let mixed = sandbox.root.join("mixed.txt");
        std::fs::write(&mixed, mixed_line.repeat(1000)).unwrap();
        for host in hosts() {
            let host = host.with_max_read_bytes(cap as u64);
            let error = read_with(&host, &roots, &control).unwrap_err();
            assert!(
                matches!(error, FsError::TooLarge { limit, .. } if limit == cap as u64),
                "{error:?}"
            );
            assert_eq!(read_with(&host, &roots, &plain).unwrap().len(), 1 << 20);
            // The cap is inclusive, and exact.
            let exact = host.clone().with_max_read_bytes(36_000);
            assert_eq!(read_with(&exact, &roots, &mixed).unwrap().len(), 20_000);
            let tighter = host.clone().with_max_read_bytes(35_999);
            assert!(matches!(
                read_with(&tighter, &roots, &mixed),
                Err(FsError::TooLarge { .. })
            ));
        }
        // 16 MiB of BEL on disk, which a count of raw bytes let through whole, is 96 MiB on
        // the wire: past a 64 MiB line limit. The default host refuses it.
        let default = FsHost::new();
        let big = sandbox.root.join("big-control.txt");
        std::fs::write(&big, "\u{7}".repeat(16 << 20)).unwrap();
        assert!(matches!(
            read_with(&default, &roots, &big),
            Err(FsError::TooLarge { .. })
        ));
    });
}

/// Exchanges two names atomically (`renameat2(RENAME_EXCHANGE)`).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) {
    let a = std::ffi::CString::new(a.as_os_str().as_encoded_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: valid NUL-terminated paths; the result is checked.
    let result = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(result, 0, "{}", std::io::Error::last_os_error());
}

/// Swaps `name` between a real directory (or file) and a link out of the root, as fast as
/// it can, while `requests` runs; returns how many swaps happened.
#[cfg(target_os = "linux")]
fn while_swapping(name: &Path, other: &Path, requests: impl FnOnce()) -> usize {
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, name, other) = (stop.clone(), name.to_path_buf(), other.to_path_buf());
        std::thread::spawn(move || {
            let mut swaps = 0;
            while !stop.load(Ordering::Relaxed) {
                exchange(&name, &other);
                swaps += 1;
            }
            swaps
        })
    };
    requests();
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn a_directory_swapped_for_a_link_never_lets_a_request_out() {
    guarded(|| {
        for host in hosts() {
            let sandbox = Sandbox::new();
            let roots = sandbox.roots();
            // `swap` is a directory inside, `alt` a link to the directory outside; the two
            // names are exchanged again and again.
            std::fs::create_dir(sandbox.root.join("swap")).unwrap();
            std::fs::write(sandbox.root.join("swap/secret.txt"), "inside\n").unwrap();
            std::os::unix::fs::symlink(&sandbox.outside, sandbox.root.join("alt")).unwrap();
            let target = sandbox.root.join("swap/secret.txt");
            let (mut written, mut read, mut leaked) = (0, 0, 0);
            let swaps = while_swapping(
                &sandbox.root.join("swap"),
                &sandbox.root.join("alt"),
                || {
                    for n in 0..400 {
                        if write_with(&host, &roots, &target, &format!("agent {n}\n")).is_ok() {
                            written += 1;
                        }
                        match read_with(&host, &roots, &target) {
                            Ok(text) if text == "secret\n" => leaked += 1,
                            Ok(_) => read += 1,
                            Err(_) => {}
                        }
                    }
                },
            );
            eprintln!(
                "{host:?}: {swaps} swaps, {written}/400 writes and {read}/400 reads inside, {leaked} leaked"
            );
            assert_eq!(leaked, 0, "a read returned the file outside");
            assert_eq!(sandbox.secret(), "secret\n", "a write landed outside");
            assert_eq!(sandbox.outside_names(), ["secret.txt"]);
        }
    });
}

#[cfg(target_os = "linux")]
#[test]
fn a_file_swapped_for_a_link_never_lets_a_request_out() {
    guarded(|| {
        for host in hosts() {
            let sandbox = Sandbox::new();
            let roots = sandbox.roots();
            let target = sandbox.root.join("notes.txt");
            std::fs::write(&target, "inside\n").unwrap();
            let alt = sandbox.root.join("alt");
            std::os::unix::fs::symlink("../elsewhere/secret.txt", &alt).unwrap();
            let (mut written, mut leaked) = (0, 0);
            let swaps = while_swapping(&target, &alt, || {
                for n in 0..400 {
                    if write_with(&host, &roots, &target, &format!("agent {n}\n")).is_ok() {
                        written += 1;
                    }
                    if read_with(&host, &roots, &target).is_ok_and(|text| text == "secret\n") {
                        leaked += 1;
                    }
                }
            });
            eprintln!("{host:?}: {swaps} swaps, {written}/400 writes inside, {leaked} leaked");
            assert_eq!(leaked, 0, "a read returned the file outside");
            assert_eq!(sandbox.secret(), "secret\n", "a write landed outside");
        }
    });
}

/// Bytes this process has read so far (`rchar` of `/proc/self/io`).
#[cfg(target_os = "linux")]
fn bytes_read_by_process() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap();
    let line = io.lines().find(|line| line.starts_with("rchar:")).unwrap();
    line["rchar:".len()..].trim().parse().unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn dropping_a_read_stops_reading() {
    guarded(|| {
        let sandbox = Sandbox::new();
        let roots = sandbox.roots();
        // 1 TiB of holes without a newline: skipping to line 2 would read for minutes.
        let endless = sandbox.root.join("endless.txt");
        std::fs::File::create(&endless)
            .unwrap()
            .set_len(1 << 40)
            .unwrap();
        for host in hosts() {
            let before = bytes_read_by_process();
            let read = host.read_text_file(&roots, &endless, Some(2), None);
            let outcome = smol::block_on(smol::future::or(async { Some(read.await) }, async {
                smol::Timer::after(Duration::from_millis(300)).await;
                None
            }));
            assert!(outcome.is_none(), "{outcome:?}");
            let when_dropped = bytes_read_by_process();
            assert!(when_dropped - before > 1 << 20, "the read had not started");
            // At most the chunk in flight, then nothing.
            std::thread::sleep(Duration::from_millis(50));
            let settled = bytes_read_by_process();
            std::thread::sleep(Duration::from_millis(300));
            let later = bytes_read_by_process();
            eprintln!(
                "{host:?}: read {} bytes in 300 ms, {} after the drop",
                when_dropped - before,
                later - when_dropped
            );
            assert!(
                later - settled < 1 << 20,
                "still reading: {} bytes",
                later - settled
            );
        }
    });
}
