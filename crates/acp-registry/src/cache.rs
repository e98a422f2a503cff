//! The on-disk cache: fetched registries, and installed agents keyed by id, version and
//! platform, filled so that a reader never sees a half-written entry and two processes
//! filling it at once do the work once.
//!
//! ```text
//! DIR/registry/<sha256 of the URL, 16 hex>.json   a fetched registry; its mtime is when
//! DIR/agents/<id>/<version>/<platform>/            an unpacked agent, complete once it exists
//! DIR/agents/<id>/.lock                            held while one process fills <id>
//! DIR/agents/<id>/.tmp-*                           a fill in progress (or one that crashed)
//! ```

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use crate::error::Error;

/// Where registries and agents are cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// A cache in `dir` (created when first written).
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// The user's cache directory for this crate: `$ACP_REGISTRY_CACHE` if set, else
    /// `$XDG_CACHE_HOME/acp-rs/registry`, `~/.cache/acp-rs/registry` (Linux),
    /// `~/Library/Caches/acp-rs/registry` (macOS) or `%LOCALAPPDATA%\acp-rs\registry`.
    pub fn default_dir() -> Option<PathBuf> {
        let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(dir) = env("ACP_REGISTRY_CACHE") {
            return Some(dir.into());
        }
        let base = if cfg!(windows) {
            env("LOCALAPPDATA").map(PathBuf::from)?
        } else if cfg!(target_os = "macos") {
            PathBuf::from(env("HOME")?).join("Library/Caches")
        } else {
            env("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".cache")))?
        };
        Some(base.join("acp-rs").join("registry"))
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn registry_file(&self, url: &str) -> PathBuf {
        let digest = Sha256::digest(url.as_bytes());
        let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join("registry").join(format!("{name}.json"))
    }

    /// The registry cached for `url`, and how old it is.
    pub(crate) fn read_registry(&self, url: &str) -> Option<(Vec<u8>, Duration)> {
        let path = self.registry_file(url);
        let bytes = fs::read(&path).ok()?;
        let modified = fs::metadata(&path).and_then(|m| m.modified()).ok()?;
        let age = SystemTime::now()
            .duration_since(modified)
            .unwrap_or_default();
        Some((bytes, age))
    }

    /// Stores the registry fetched from `url`: written beside, then renamed over the old one,
    /// so that a concurrent reader sees the old or the new, never a mix.
    pub(crate) fn write_registry(&self, url: &str, bytes: &[u8]) -> Result<(), Error> {
        let path = self.registry_file(url);
        let dir = path.parent().expect("the registry file has a directory");
        fs::create_dir_all(dir).map_err(Error::io(dir))?;
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(Error::io(dir))?;
        file.write_all(bytes).map_err(Error::io(file.path()))?;
        file.persist(&path).map_err(|e| Error::io(&path)(e.error))?;
        Ok(())
    }

    /// The directory of agent `id` at `version` for `platform`, filling it with `fill` first
    /// if it does not exist yet.
    ///
    /// `fill` gets a scratch directory to work in (on the cache's file system) and returns
    /// the directory inside it to keep; that one is renamed into place whole, and the scratch
    /// is removed whether `fill` succeeds or fails. An exclusive lock on the agent's lock
    /// file makes a second process wait, then find the directory filled.
    pub(crate) fn agent_dir(
        &self,
        id: &str,
        version: &str,
        platform: &str,
        fill: impl FnOnce(&Path) -> Result<PathBuf, Error>,
    ) -> Result<PathBuf, Error> {
        check_component(id, version)?;
        let agent = self.dir.join("agents").join(id);
        let done = agent.join(version).join(platform);
        if done.is_dir() {
            return Ok(done);
        }
        fs::create_dir_all(&agent).map_err(Error::io(&agent))?;
        let lock_path = agent.join(".lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(Error::io(&lock_path))?;
        lock.lock().map_err(Error::io(&lock_path))?;
        if done.is_dir() {
            return Ok(done);
        }
        remove_abandoned_fills(&agent);
        let scratch = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempdir_in(&agent)
            .map_err(Error::io(&agent))?;
        let filled = fill(scratch.path())?;
        let parent = done.parent().expect("a platform directory has a parent");
        fs::create_dir_all(parent).map_err(Error::io(parent))?;
        fs::rename(&filled, &done).map_err(Error::io(&done))?;
        Ok(done)
        // `lock` is released as it is dropped, after the rename.
    }
}

/// An agent unpacked in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Its id.
    pub id: String,
    /// Its version.
    pub version: String,
    /// The platform it was installed for.
    pub platform: String,
    /// Its directory.
    pub dir: PathBuf,
}

impl Cache {
    /// The agents unpacked in the cache, by id, version and platform.
    pub fn installed(&self) -> Vec<Installed> {
        let names = |dir: &Path| -> Vec<String> {
            let mut names: Vec<String> = fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with('.'))
                .collect();
            names.sort();
            names
        };
        let agents = self.dir.join("agents");
        let mut installed = Vec::new();
        for id in names(&agents) {
            for version in names(&agents.join(&id)) {
                for platform in names(&agents.join(&id).join(&version)) {
                    let dir = agents.join(&id).join(&version).join(&platform);
                    installed.push(Installed {
                        id: id.clone(),
                        version: version.clone(),
                        platform,
                        dir,
                    });
                }
            }
        }
        installed
    }

    /// Removes agent `id` from the cache: one `version`, or all of them. Waits for a fill of
    /// that agent in progress to finish first (the same lock).
    pub fn remove(&self, id: &str, version: Option<&str>) -> Result<(), Error> {
        let agent = self.dir.join("agents").join(id);
        if crate::extract::safe_relative(id).map_or(true, |p| p != Path::new(id)) {
            return Err(Error::InvalidEntry {
                id: id.to_owned(),
                reason: "not an agent id".into(),
            });
        }
        if !agent.is_dir() {
            return Ok(());
        }
        let lock_path = agent.join(".lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(Error::io(&lock_path))?;
        lock.lock().map_err(Error::io(&lock_path))?;
        let target = match version {
            Some(version) => {
                check_component(id, version)?;
                agent.join(version)
            }
            None => agent.clone(),
        };
        match fs::remove_dir_all(&target) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io(&target)(error))
            }
            _ => Ok(()),
        }
    }
}

/// Scratch directories of fills that never finished (a killed process): only called with
/// the agent's lock held, so no other process is filling there.
fn remove_abandoned_fills(agent: &Path) {
    let Ok(entries) = fs::read_dir(agent) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(".tmp-") {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// A version from the registry becomes a directory name: it may not be one that climbs or
/// hides (`..`, `.x`) or holds a separator.
fn check_component(id: &str, version: &str) -> Result<(), Error> {
    let fine = !version.is_empty()
        && !version.starts_with('.')
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'));
    if fine {
        Ok(())
    } else {
        Err(Error::InvalidEntry {
            id: id.to_owned(),
            reason: format!("its version `{version}` is not a plain version string"),
        })
    }
}
