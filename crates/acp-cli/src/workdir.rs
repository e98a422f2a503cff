//! Where the session works: `--cwd` resolved, or the demo agent's scratch directory (the demo
//! writes files, so without `--cwd` it never works in the directory acp was started in).

use std::path::PathBuf;

/// The demo's scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh directory holding the `notes.txt` the demo agent summarizes.
    pub fn create() -> std::io::Result<Self> {
        let dir = std::env::temp_dir().join(format!("acp-demo-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let scratch = Scratch(dir);
        std::fs::write(
            scratch.0.join("notes.txt"),
            "buy milk\nship the release\ncall Ada\n",
        )?;
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `--cwd` made absolute and canonical (the current directory without it).
pub fn resolve_cwd(cwd: Option<PathBuf>) -> Result<PathBuf, String> {
    let here = std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?;
    let cwd = match cwd {
        Some(dir) => here.join(dir),
        None => here,
    };
    std::fs::canonicalize(&cwd).map_err(|e| format!("--cwd {}: {e}", cwd.display()))
}
