//! The file-system host against a real directory tree.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use acp_host::fs::{FsError, FsHook, FsHost, FsRoots};

#[path = "common/sandbox.rs"]
mod sandbox;
use sandbox::Sandbox;

/// The two ways a host opens files within roots: `openat2` (where the kernel has it) and the
/// portable component walk. Every case below runs through both, which must agree.
fn hosts() -> [FsHost; 2] {
    [FsHost::new(), FsHost::new().without_openat2()]
}

fn read(
    roots: &FsRoots,
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String, FsError> {
    let [kernel, portable] =
        hosts().map(|host| smol::block_on(host.read_text_file(roots, path, line, limit)));
    assert_eq!(format!("{kernel:?}"), format!("{portable:?}"), "{path:?}");
    kernel
}

/// Writes twice, once per host: the cases below are all repeatable.
fn write(roots: &FsRoots, path: &Path, content: &str) -> Result<(), FsError> {
    let [kernel, portable] =
        hosts().map(|host| smol::block_on(host.write_text_file(roots, path, content.to_owned())));
    assert_eq!(format!("{kernel:?}"), format!("{portable:?}"), "{path:?}");
    kernel
}

#[test]
fn reads_whole_files_and_line_ranges() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let path = sandbox.file("lines.txt", "one\ntwo\nthree\nfour\n");

    assert_eq!(
        read(&roots, &path, None, None).unwrap(),
        "one\ntwo\nthree\nfour\n"
    );
    assert_eq!(
        read(&roots, &path, Some(1), None).unwrap(),
        "one\ntwo\nthree\nfour\n"
    );
    assert_eq!(read(&roots, &path, Some(1), Some(1)).unwrap(), "one\n");
    assert_eq!(
        read(&roots, &path, Some(2), Some(2)).unwrap(),
        "two\nthree\n"
    );
    assert_eq!(read(&roots, &path, Some(3), None).unwrap(), "three\nfour\n");
    assert_eq!(read(&roots, &path, None, Some(2)).unwrap(), "one\ntwo\n");
    assert_eq!(read(&roots, &path, Some(4), Some(100)).unwrap(), "four\n");
    assert_eq!(read(&roots, &path, Some(5), None).unwrap(), "");
    assert_eq!(read(&roots, &path, Some(u32::MAX), None).unwrap(), "");
    assert_eq!(read(&roots, &path, Some(2), Some(0)).unwrap(), "");
    assert_eq!(
        read(&roots, &path, None, Some(u32::MAX)).unwrap(),
        "one\ntwo\nthree\nfour\n"
    );
}

#[test]
fn line_zero_is_refused() {
    let sandbox = Sandbox::new();
    let path = sandbox.file("lines.txt", "one\n");
    let error = read(&sandbox.roots(), &path, Some(0), None).unwrap_err();
    assert!(matches!(error, FsError::InvalidLine(_)), "{error:?}");
    assert!(error.to_string().contains("start at 1"), "{error}");
}

#[test]
fn keeps_line_endings_and_a_missing_final_newline() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let unterminated = sandbox.file("unterminated.txt", "a\nb");
    assert_eq!(read(&roots, &unterminated, Some(2), None).unwrap(), "b");
    assert_eq!(read(&roots, &unterminated, Some(2), Some(5)).unwrap(), "b");
    assert_eq!(read(&roots, &unterminated, Some(3), None).unwrap(), "");

    let crlf = sandbox.file("crlf.txt", "a\r\nb\r\nc");
    assert_eq!(read(&roots, &crlf, Some(2), Some(1)).unwrap(), "b\r\n");
    assert_eq!(read(&roots, &crlf, Some(2), None).unwrap(), "b\r\nc");

    let empty = sandbox.file("empty.txt", "");
    assert_eq!(read(&roots, &empty, None, None).unwrap(), "");
    assert_eq!(read(&roots, &empty, Some(1), Some(1)).unwrap(), "");

    let unicode = sandbox.file("unicode.txt", "é\n😀\n");
    assert_eq!(read(&roots, &unicode, Some(2), None).unwrap(), "😀\n");
}

#[test]
fn relative_paths_are_refused() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let error = read(&roots, Path::new("src/main.rs"), None, None).unwrap_err();
    assert!(matches!(error, FsError::RelativePath(_)), "{error:?}");
    assert!(
        error.to_string().contains("`src/main.rs` is not absolute"),
        "{error}"
    );
    let error = write(&roots, Path::new("new.txt"), "x").unwrap_err();
    assert!(matches!(error, FsError::RelativePath(_)), "{error:?}");
}

#[test]
fn dot_dot_cannot_leave_the_roots() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let escape = sandbox.root.join("../elsewhere/secret.txt");
    let error = read(&roots, &escape, None, None).unwrap_err();
    match &error {
        FsError::OutsideRoots {
            path,
            resolved,
            roots,
        } => {
            assert_eq!(path, &escape);
            assert_eq!(resolved, &sandbox.outside.join("secret.txt"));
            assert_eq!(roots, &vec![sandbox.root.clone()]);
        }
        other => panic!("expected OutsideRoots, got {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains(&escape.display().to_string()), "{message}");
    assert!(
        message.contains(&sandbox.root.display().to_string()),
        "{message}"
    );

    let error = write(&roots, &sandbox.root.join("../elsewhere/new.txt"), "x").unwrap_err();
    assert!(matches!(error, FsError::OutsideRoots { .. }), "{error:?}");
    assert!(!sandbox.outside.join("new.txt").exists());

    // Going up and back down inside the root is fine.
    sandbox.file("inside.txt", "ok\n");
    std::fs::create_dir(sandbox.root.join("sub")).unwrap();
    let detour = sandbox.root.join("sub/../inside.txt");
    assert_eq!(read(&roots, &detour, None, None).unwrap(), "ok\n");
}

#[test]
fn dot_dot_out_of_a_missing_directory_is_refused() {
    let sandbox = Sandbox::new();
    let path = sandbox.root.join("missing/../../elsewhere/new.txt");
    let error = write(&sandbox.roots(), &path, "x").unwrap_err();
    assert!(matches!(error, FsError::ParentOfMissing(_)), "{error:?}");
    assert!(!sandbox.root.join("missing").exists());
}

#[test]
fn symlinks_cannot_leave_the_roots() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let file_link = sandbox.root.join("link.txt");
    std::os::unix::fs::symlink(sandbox.outside.join("secret.txt"), &file_link).unwrap();
    let error = read(&roots, &file_link, None, None).unwrap_err();
    assert!(matches!(error, FsError::OutsideRoots { .. }), "{error:?}");
    assert!(error.to_string().contains("resolved to"), "{error}");
    let error = write(&roots, &file_link, "overwritten").unwrap_err();
    assert!(matches!(error, FsError::OutsideRoots { .. }), "{error:?}");
    assert_eq!(
        std::fs::read_to_string(sandbox.outside.join("secret.txt")).unwrap(),
        "secret\n"
    );

    // A link to a directory: new files below it would land outside.
    let dir_link = sandbox.root.join("linked-dir");
    std::os::unix::fs::symlink(&sandbox.outside, &dir_link).unwrap();
    let error = write(&roots, &dir_link.join("new/file.txt"), "x").unwrap_err();
    assert!(matches!(error, FsError::OutsideRoots { .. }), "{error:?}");
    assert!(!sandbox.outside.join("new").exists());

    // A dangling link cannot be checked, so it is refused rather than followed.
    let dangling = sandbox.root.join("dangling.txt");
    std::os::unix::fs::symlink(sandbox.outside.join("planted.txt"), &dangling).unwrap();
    let error = write(&roots, &dangling, "x").unwrap_err();
    match &error {
        FsError::DanglingSymlink { link, .. } => assert_eq!(link, &dangling),
        other => panic!("expected DanglingSymlink, got {other:?}"),
    }
    assert!(!sandbox.outside.join("planted.txt").exists());

    // Links that stay inside are followed.
    sandbox.file("target.txt", "inside\n");
    let inner_link = sandbox.root.join("inner-link.txt");
    std::os::unix::fs::symlink(sandbox.root.join("target.txt"), &inner_link).unwrap();
    assert_eq!(read(&roots, &inner_link, None, None).unwrap(), "inside\n");
}

#[test]
fn roots_given_through_a_symlink_still_contain_their_files() {
    let sandbox = Sandbox::new();
    let alias = sandbox.base.join("alias");
    std::os::unix::fs::symlink(&sandbox.root, &alias).unwrap();
    let roots = FsRoots::session(&alias, Vec::<PathBuf>::new());
    sandbox.file("a.txt", "a\n");
    assert_eq!(
        read(&roots, &alias.join("a.txt"), None, None).unwrap(),
        "a\n"
    );
    assert_eq!(
        read(&roots, &sandbox.root.join("a.txt"), None, None).unwrap(),
        "a\n"
    );
}

#[test]
fn additional_roots_and_unrestricted_access() {
    let sandbox = Sandbox::new();
    let secret = sandbox.outside.join("secret.txt");
    let widened = FsRoots::session(&sandbox.root, [&sandbox.outside]);
    assert_eq!(read(&widened, &secret, None, None).unwrap(), "secret\n");
    assert_eq!(
        read(&FsRoots::unrestricted(), &secret, None, None).unwrap(),
        "secret\n"
    );

    let nothing = FsRoots::new(Vec::<PathBuf>::new());
    let error = read(&nothing, &secret, None, None).unwrap_err();
    assert!(error.to_string().contains("(none)"), "{error}");
}

#[test]
fn missing_files_are_not_found() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let missing = sandbox.root.join("nope.txt");
    let error = read(&roots, &missing, None, None).unwrap_err();
    match &error {
        FsError::NotFound(path) => assert_eq!(path, &missing),
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        format!("file not found: `{}`", missing.display())
    );

    let deep = sandbox.root.join("no/such/dir/file.txt");
    assert!(matches!(
        read(&roots, &deep, None, None),
        Err(FsError::NotFound(_))
    ));

    // Outside the roots the boundary answers first: existence is not revealed.
    let outside = sandbox.outside.join("nope.txt");
    let error = read(&roots, &outside, None, None).unwrap_err();
    assert!(matches!(error, FsError::OutsideRoots { .. }), "{error:?}");
}

#[test]
fn directories_and_binary_files_are_not_text() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let error = read(&roots, &sandbox.root, None, None).unwrap_err();
    assert!(matches!(error, FsError::NotAFile(_)), "{error:?}");
    let error = write(&roots, &sandbox.root, "x").unwrap_err();
    assert!(matches!(error, FsError::NotAFile(_)), "{error:?}");

    let binary = sandbox.root.join("binary.bin");
    std::fs::write(&binary, [0x66, 0xFF, 0x00]).unwrap();
    let error = read(&roots, &binary, None, None).unwrap_err();
    assert!(matches!(error, FsError::NotUtf8(_)), "{error:?}");
}

#[test]
fn writes_create_files_and_parents_with_exact_content() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let path = sandbox.root.join("new/nested/file.txt");
    let content = "no trailing newline\r\nünïcödé 😀";
    write(&roots, &path, content).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), content);

    write(&roots, &path, "short").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "short");
    write(&roots, &path, "").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
}

#[derive(Default)]
struct EditorBuffers {
    unsaved: Vec<(PathBuf, String)>,
    written: Mutex<Vec<(PathBuf, String)>>,
}

impl FsHook for EditorBuffers {
    fn read_override(&self, path: &Path) -> Option<String> {
        self.unsaved
            .iter()
            .find(|(buffer, _)| buffer == path)
            .map(|(_, content)| content.clone())
    }

    fn did_write(&self, path: &Path, content: &str) {
        self.written
            .lock()
            .unwrap()
            .push((path.to_path_buf(), content.to_owned()));
    }
}

#[test]
fn the_hook_serves_unsaved_buffers_and_observes_writes() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let on_disk = sandbox.file("edited.rs", "saved\n");
    let never_saved = sandbox.root.join("untitled.rs");
    let secret = sandbox.outside.join("secret.txt");
    let editor = Arc::new(EditorBuffers {
        unsaved: vec![
            (on_disk.clone(), "unsaved 1\nunsaved 2\nunsaved 3".into()),
            (never_saved.clone(), "draft\n".into()),
            (secret.clone(), "must not be served\n".into()),
        ],
        ..EditorBuffers::default()
    });
    let host = FsHost::with_hook(editor.clone());
    smol::block_on(async {
        let whole = host.read_text_file(&roots, &on_disk, None, None).await;
        assert_eq!(whole.unwrap(), "unsaved 1\nunsaved 2\nunsaved 3");
        let sliced = host
            .read_text_file(&roots, &on_disk, Some(2), Some(1))
            .await;
        assert_eq!(sliced.unwrap(), "unsaved 2\n");
        let draft = host.read_text_file(&roots, &never_saved, None, None).await;
        assert_eq!(draft.unwrap(), "draft\n");
        let refused = host.read_text_file(&roots, &secret, None, None).await;
        assert!(
            matches!(refused, Err(FsError::OutsideRoots { .. })),
            "{refused:?}"
        );

        let target = sandbox.root.join("written.txt");
        host.write_text_file(&roots, &target, "fresh\n".into())
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "fresh\n");
        let refused = host.write_text_file(&roots, &secret, "x".into()).await;
        assert!(refused.is_err());
        assert_eq!(
            *editor.written.lock().unwrap(),
            vec![(target.clone(), "fresh\n".to_owned())],
            "only the successful write is reported"
        );
    });
}

#[test]
fn reads_larger_than_the_limit_are_refused_but_ranges_of_them_work() {
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let log = sandbox.root.join("big.log");
    let lines: String = (1..=1000).map(|n| format!("line {n:04}\n")).collect();
    std::fs::write(&log, &lines).unwrap();
    let host = FsHost::new().with_max_read_bytes(110);
    let read = |line, limit| smol::block_on(host.read_text_file(&roots, &log, line, limit));

    let error = read(None, None).unwrap_err();
    assert!(
        matches!(&error, FsError::TooLarge { path, limit: 110 } if *path == log),
        "{error:?}"
    );
    assert!(error.to_string().contains("range of lines"), "{error}");
    // Lines of 10 bytes are 11 on the wire (`\n`): ten fit exactly; eleven do not.
    assert_eq!(
        read(Some(991), Some(10)).unwrap(),
        lines[990 * 10..].to_owned()
    );
    assert!(matches!(
        read(Some(990), Some(11)),
        Err(FsError::TooLarge { .. })
    ));
    // The tail past the last line, and a limit of 0, are empty whatever the file's size.
    assert_eq!(read(Some(1001), None).unwrap(), "");
    assert_eq!(read(Some(5), Some(0)).unwrap(), "");
    // Invalid UTF-8 outside the requested lines does not matter; inside, it does.
    let mixed = sandbox.root.join("mixed.txt");
    std::fs::write(&mixed, b"good\n\xff\xfe\nalso good\n").unwrap();
    let host = FsHost::new();
    let read = |line, limit| smol::block_on(host.read_text_file(&roots, &mixed, line, limit));
    assert_eq!(read(Some(3), None).unwrap(), "also good\n");
    assert!(matches!(read(Some(2), Some(1)), Err(FsError::NotUtf8(_))));
}

#[test]
fn the_default_limit_is_16_mib() {
    assert_eq!(acp_host::fs::DEFAULT_MAX_READ_BYTES, 16 * 1024 * 1024);
    assert!(format!("{:?}", FsHost::new()).contains("16777216"));
    // A file just over the limit is refused whole by a default host; its lines are not.
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let big = sandbox.root.join("big.txt");
    let line = format!("{}\n", "y".repeat(1023));
    std::fs::write(&big, line.repeat(16 * 1024 + 1)).unwrap();
    assert!(matches!(
        read(&roots, &big, None, None),
        Err(FsError::TooLarge { limit, .. }) if limit == 16 * 1024 * 1024
    ));
    assert_eq!(read(&roots, &big, Some(16 * 1024 + 1), None).unwrap(), line);
}

#[test]
fn writes_go_in_place_and_through_links_that_stay_inside() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let sandbox = Sandbox::new();
    let roots = sandbox.roots();
    let script = sandbox.file("run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    let inode = std::fs::metadata(&script).unwrap().ino();
    write(&roots, &script, "#!/bin/sh\necho new\n").unwrap();
    let metadata = std::fs::metadata(&script).unwrap();
    assert_eq!(metadata.permissions().mode() & 0o777, 0o750, "mode kept");
    assert_eq!(metadata.ino(), inode, "same file, not a replacement");
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho new\n"
    );

    // A link inside, to a file inside (relative or absolute): the target is written and
    // the link stays a link.
    std::fs::create_dir(sandbox.root.join("docs")).unwrap();
    let target = sandbox.file("docs/readme.md", "old\n");
    let relative = sandbox.root.join("readme.md");
    std::os::unix::fs::symlink("docs/readme.md", &relative).unwrap();
    write(&roots, &relative, "through a relative link\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "through a relative link\n"
    );
    assert!(relative.symlink_metadata().unwrap().is_symlink());
    let absolute = sandbox.root.join("docs/alias.md");
    std::os::unix::fs::symlink(&target, &absolute).unwrap();
    write(&roots, &absolute, "through an absolute link\n").unwrap();
    assert_eq!(
        read(&roots, &target, None, None).unwrap(),
        "through an absolute link\n"
    );
    // New directories below a link to a directory inside land in its target.
    let dir_link = sandbox.root.join("docs-link");
    std::os::unix::fs::symlink("docs", &dir_link).unwrap();
    write(&roots, &dir_link.join("new/page.md"), "page\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(sandbox.root.join("docs/new/page.md")).unwrap(),
        "page\n"
    );
}
