//! A scratch directory tree for the fs host's tests, removed when dropped: `root` is the
//! session's directory and `outside` a sibling holding `secret.txt` that the session must not
//! reach. Shared by tests/host_fs.rs and tests/hostile_fs.rs (`#[path]`-included).
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_host::fs::FsRoots;

pub struct Sandbox {
    pub base: PathBuf,
    pub root: PathBuf,
    pub outside: PathBuf,
}

impl Sandbox {
    pub fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::temp_dir().canonicalize().unwrap().join(format!(
            "acp-fs-sandbox-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let root = base.join("project");
        let outside = base.join("elsewhere");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
        Self {
            base,
            root,
            outside,
        }
    }

    pub fn roots(&self) -> FsRoots {
        FsRoots::session(&self.root, Vec::<PathBuf>::new())
    }

    pub fn file(&self, name: &str, content: &str) -> PathBuf {
        let path = self.root.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn secret(&self) -> String {
        std::fs::read_to_string(self.outside.join("secret.txt")).unwrap()
    }

    /// The names in `elsewhere`: only `secret.txt` unless something got out.
    pub fn outside_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}
