//! The client side of `fs/read_text_file` and `fs/write_text_file`.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The directories a session's file operations may touch.
///
/// A path is inside when its fully resolved form (symbolic links followed, `..` applied)
/// lies under the resolved form of one of the roots. Roots that are relative or do not
/// exist contain nothing. The check is a guard against agents wandering off, not a
/// sandbox: a symbolic link swapped between the check and the access is not detected.
///
/// ```
/// use acp_runtime::host::FsRoots;
///
/// let roots = FsRoots::session("/home/me/project", ["/tmp/scratch"]);
/// assert_eq!(roots.roots().map(<[_]>::len), Some(2));
/// assert!(FsRoots::unrestricted().roots().is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsRoots {
    allowed: Option<Vec<PathBuf>>,
}

impl FsRoots {
    /// Exactly these roots.
    pub fn new<P: Into<PathBuf>>(roots: impl IntoIterator<Item = P>) -> Self {
        Self {
            allowed: Some(roots.into_iter().map(Into::into).collect()),
        }
    }

    /// The usual boundary: the session's working directory plus any additional
    /// directories the editor grants.
    pub fn session<P: Into<PathBuf>>(
        cwd: impl Into<PathBuf>,
        additional: impl IntoIterator<Item = P>,
    ) -> Self {
        let mut roots = vec![cwd.into()];
        roots.extend(additional.into_iter().map(Into::into));
        Self {
            allowed: Some(roots),
        }
    }

    /// No boundary: any absolute path is allowed.
    pub fn unrestricted() -> Self {
        Self { allowed: None }
    }

    /// The roots, or `None` when unrestricted.
    pub fn roots(&self) -> Option<&[PathBuf]> {
        self.allowed.as_deref()
    }
}

/// Lets an editor take part in file access: serve unsaved buffer contents instead of the
/// disk, and learn about writes (to reload buffers, show diffs, …).
///
/// Both methods run on a blocking thread pool, never on the async executor, so they may
/// block briefly.
///
/// ```
/// use acp_runtime::host::FsHook;
/// use std::path::Path;
///
/// struct UnsavedScratch;
///
/// impl FsHook for UnsavedScratch {
///     fn read_override(&self, path: &Path) -> Option<String> {
///         (path == Path::new("/project/scratch.txt")).then(|| "unsaved text\n".to_owned())
///     }
/// }
/// ```
pub trait FsHook: Send + Sync {
    /// Contents to serve instead of the file on disk, such as an open buffer with unsaved
    /// changes. `path` is the absolute path as the agent sent it, already checked against
    /// the session's roots. The returned text is still cut to the requested lines.
    fn read_override(&self, path: &Path) -> Option<String> {
        let _ = path;
        None
    }

    /// Called after `content` has been written to disk at `path` (the absolute path as
    /// the agent sent it).
    fn did_write(&self, path: &Path, content: &str) {
        let _ = (path, content);
    }
}

/// Why a file operation failed.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The path is not absolute; the protocol requires absolute paths.
    #[error("path `{}` is not absolute; file paths must be absolute", .0.display())]
    RelativePath(PathBuf),
    /// `line` was 0; lines are numbered from 1.
    #[error("line 0 requested for `{}`; line numbers start at 1", .0.display())]
    InvalidLine(PathBuf),
    /// The path resolves outside every root of the session.
    #[error(
        "`{}`{} is outside the directories this session may access ({})",
        path.display(),
        ResolvedNote(path, resolved),
        RootList(roots)
    )]
    OutsideRoots {
        /// The path as requested.
        path: PathBuf,
        /// Where it leads once symbolic links and `..` are resolved.
        resolved: PathBuf,
        /// The session's roots.
        roots: Vec<PathBuf>,
    },
    /// The path climbs with `..` out of a directory that does not exist.
    #[error("`{}` goes up (`..`) from a directory that does not exist", .0.display())]
    ParentOfMissing(PathBuf),
    /// The path runs through a symbolic link whose target does not exist, so where it
    /// leads cannot be checked.
    #[error(
        "`{}` runs through the symbolic link `{}`, whose target does not exist",
        path.display(),
        link.display()
    )]
    DanglingSymlink {
        /// The path as requested.
        path: PathBuf,
        /// The dangling link.
        link: PathBuf,
    },
    /// Nothing exists at the path (maps to the protocol's "resource not found").
    #[error("file not found: `{}`", .0.display())]
    NotFound(PathBuf),
    /// The path names a directory.
    #[error("`{}` is a directory, not a file", .0.display())]
    NotAFile(PathBuf),
    /// The file is not valid UTF-8 text.
    #[error("`{}` is not a UTF-8 text file", .0.display())]
    NotUtf8(PathBuf),
    /// The text asked for is larger than the host's limit
    /// ([`FsHost::with_max_read_bytes`]); a `line`/`limit` range of it may still be read.
    #[error(
        "`{}` is too large to read: more than {limit} bytes requested; ask for a range of lines",
        path.display()
    )]
    TooLarge {
        /// The path as requested.
        path: PathBuf,
        /// The host's limit, in bytes.
        limit: u64,
    },
    /// Any other operating-system failure.
    #[error("could not {action} `{}`: {source}", path.display())]
    Io {
        /// What was being attempted, such as "read".
        action: &'static str,
        /// The path as requested.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
}

struct ResolvedNote<'a>(&'a Path, &'a Path);

impl fmt::Display for ResolvedNote<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == self.1 {
            Ok(())
        } else {
            write!(f, " (resolved to `{}`)", self.1.display())
        }
    }
}

struct RootList<'a>(&'a [PathBuf]);

impl fmt::Display for RootList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (index, root) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(", ")?;
            }
            write!(f, "`{}`", root.display())?;
        }
        Ok(())
    }
}

/// Reads and writes text files for an agent, within a session's [`FsRoots`].
///
/// Blocking file-system calls run on smol's blocking thread pool (`smol::unblock`), so
/// the futures can be awaited on any executor.
///
/// Writes replace the whole file (creating it if missing) with exactly the given text,
/// and create missing parent directories: the protocol has no other way for an agent
/// to make a directory, and agents routinely write new files into new folders.
///
/// Reads go line by line and return at most [`DEFAULT_MAX_READ_BYTES`] of text (see
/// [`with_max_read_bytes`](FsHost::with_max_read_bytes)), so an agent cannot make the client
/// load a huge file into memory; it can still read any range of lines of it.
///
/// ```
/// use acp_runtime::host::{FsHost, FsRoots};
///
/// let dir = std::env::temp_dir().join(format!("acp-fs-doc-{}", std::process::id()));
/// let file = dir.join("notes/todo.txt");
/// let roots = FsRoots::session(&dir, Vec::<std::path::PathBuf>::new());
/// let host = FsHost::new();
/// smol::block_on(async {
///     std::fs::create_dir_all(&dir).unwrap();
///     host.write_text_file(&roots, &file, "one\ntwo\nthree\n".into()).await.unwrap();
///     let middle = host.read_text_file(&roots, &file, Some(2), Some(1)).await.unwrap();
///     assert_eq!(middle, "two\n");
/// });
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Clone)]
pub struct FsHost {
    hook: Option<Arc<dyn FsHook>>,
    max_read_bytes: u64,
}

/// The default limit of [`FsHost::with_max_read_bytes`]: 16 MiB, far above any source file,
/// and far below what would strain the client's memory or the agent's line length limit.
pub const DEFAULT_MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

impl Default for FsHost {
    fn default() -> Self {
        FsHost {
            hook: None,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
        }
    }
}

impl fmt::Debug for FsHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FsHost")
            .field("hook", &self.hook.is_some())
            .field("max_read_bytes", &self.max_read_bytes)
            .finish()
    }
}

impl FsHost {
    /// A host that reads and writes the disk only.
    pub fn new() -> Self {
        Self::default()
    }

    /// A host that consults `hook` for unsaved contents and reports writes to it.
    pub fn with_hook(hook: Arc<dyn FsHook>) -> Self {
        Self {
            hook: Some(hook),
            ..Self::default()
        }
    }

    /// Refuses reads whose text (the whole file, or the requested lines) is larger than
    /// `bytes`, with [`FsError::TooLarge`]. Default: [`DEFAULT_MAX_READ_BYTES`]. Files are read
    /// line by line, so a range of lines from a file of any size stays within this memory.
    ///
    /// ```
    /// use acp_runtime::host::{FsError, FsHost, FsRoots};
    ///
    /// let dir = std::env::temp_dir().join(format!("acp-fs-cap-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let file = dir.join("big.log");
    /// std::fs::write(&file, "a line of the log\n".repeat(1000)).unwrap();
    /// let roots = FsRoots::session(&dir, Vec::<std::path::PathBuf>::new());
    /// let host = FsHost::new().with_max_read_bytes(1024);
    /// smol::block_on(async {
    ///     let whole = host.read_text_file(&roots, &file, None, None).await;
    ///     assert!(matches!(whole, Err(FsError::TooLarge { limit: 1024, .. })));
    ///     let tail = host.read_text_file(&roots, &file, Some(999), Some(10)).await.unwrap();
    ///     assert_eq!(tail, "a line of the log\n".repeat(2));
    /// });
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn with_max_read_bytes(mut self, bytes: u64) -> Self {
        self.max_read_bytes = bytes;
        self
    }

    /// The text of the file at `path` (`fs/read_text_file`), or of the lines
    /// `line ..= line + limit - 1` of it.
    ///
    /// `line` is 1-based and defaults to 1; 0 is refused with [`FsError::InvalidLine`].
    /// `limit` is a number of lines and defaults to "to the end". Lines end at `\n` and
    /// keep their terminators (`\r\n` stays intact); a start past the last line, or a
    /// limit of 0, gives an empty string. Files must be UTF-8.
    pub async fn read_text_file(
        &self,
        roots: &FsRoots,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, FsError> {
        if !path.is_absolute() {
            return Err(FsError::RelativePath(path.to_path_buf()));
        }
        if line == Some(0) {
            return Err(FsError::InvalidLine(path.to_path_buf()));
        }
        let roots = roots.clone();
        let path = path.to_path_buf();
        let hook = self.hook.clone();
        let max = self.max_read_bytes;
        smol::unblock(move || {
            let resolved = resolve_within(&roots, &path)?;
            let selected = match hook.and_then(|hook| hook.read_override(&path)) {
                Some(content) => select_lines(content.as_bytes(), line, limit, max),
                None => {
                    let file = fs::File::open(&resolved).map_err(io_error(&path, "open"))?;
                    select_lines(io::BufReader::new(file), line, limit, max)
                }
            };
            match selected {
                Ok(text) => String::from_utf8(text).map_err(|_| FsError::NotUtf8(path)),
                Err(Selection::TooLarge) => Err(FsError::TooLarge { path, limit: max }),
                Err(Selection::Io(source)) => Err(io_error(&path, "read")(source)),
            }
        })
        .await
    }

    /// Replaces the file at `path` with `content` (`fs/write_text_file`), creating the
    /// file and any missing parent directories, then tells the hook.
    pub async fn write_text_file(
        &self,
        roots: &FsRoots,
        path: &Path,
        content: String,
    ) -> Result<(), FsError> {
        if !path.is_absolute() {
            return Err(FsError::RelativePath(path.to_path_buf()));
        }
        let roots = roots.clone();
        let path = path.to_path_buf();
        let hook = self.hook.clone();
        smol::unblock(move || {
            let resolved = resolve_within(&roots, &path)?;
            if let Some(parent) = resolved.parent() {
                fs::create_dir_all(parent).map_err(|source| FsError::Io {
                    action: "create the parent directories of",
                    path: path.clone(),
                    source,
                })?;
            }
            fs::write(&resolved, &content).map_err(|source| match source.kind() {
                io::ErrorKind::IsADirectory => FsError::NotAFile(path.clone()),
                _ => FsError::Io {
                    action: "write",
                    path: path.clone(),
                    source,
                },
            })?;
            if let Some(hook) = hook {
                hook.did_write(&path, &content);
            }
            Ok(())
        })
        .await
    }
}

/// Maps an I/O error on `path` while trying to `action` it.
fn io_error<'a>(path: &'a Path, action: &'static str) -> impl Fn(io::Error) -> FsError + 'a {
    move |source| match source.kind() {
        io::ErrorKind::NotFound => FsError::NotFound(path.to_path_buf()),
        io::ErrorKind::IsADirectory => FsError::NotAFile(path.to_path_buf()),
        _ => FsError::Io {
            action,
            path: path.to_path_buf(),
            source,
        },
    }
}

/// Why [`select_lines`] gave no text.
enum Selection {
    TooLarge,
    Io(io::Error),
}

/// Lines `line ..` (1-based; `limit` of them, or to the end) of `reader`, keeping their
/// terminators. Lines before the range are skipped without being kept, and reading stops as
/// soon as the text passes `max` bytes, so a file of any size costs at most `max` of memory.
fn select_lines(
    mut reader: impl io::BufRead,
    line: Option<u32>,
    limit: Option<u32>,
    max: u64,
) -> Result<Vec<u8>, Selection> {
    use std::io::{BufRead, Read};
    let mut skipped = Vec::new();
    for _ in 1..line.unwrap_or(1) {
        skipped.clear();
        if reader
            .read_until(b'\n', &mut skipped)
            .map_err(Selection::Io)?
            == 0
        {
            return Ok(Vec::new());
        }
    }
    let mut text = Vec::new();
    let mut lines = 0;
    while limit.is_none_or(|limit| lines < limit) {
        // Read at most one byte past the limit: enough to know it was passed.
        let room = (max + 1).saturating_sub(text.len() as u64);
        let read = (&mut reader)
            .take(room)
            .read_until(b'\n', &mut text)
            .map_err(Selection::Io)?;
        if text.len() as u64 > max {
            return Err(Selection::TooLarge);
        }
        if read == 0 {
            break;
        }
        lines += 1;
    }
    Ok(text)
}

/// Resolves `path` (absolute) as the operating system would and checks it against the
/// roots. The path may not exist yet: its deepest existing ancestor is resolved and the
/// missing rest appended, which cannot contain links because it does not exist.
fn resolve_within(roots: &FsRoots, path: &Path) -> Result<PathBuf, FsError> {
    let resolved = resolve(path)?;
    let Some(allowed) = roots.roots() else {
        return Ok(resolved);
    };
    let inside = allowed
        .iter()
        .filter(|root| root.is_absolute())
        .filter_map(|root| fs::canonicalize(root).ok())
        .any(|root| resolved.starts_with(root));
    if inside {
        Ok(resolved)
    } else {
        Err(FsError::OutsideRoots {
            path: path.to_path_buf(),
            resolved,
            roots: allowed.to_vec(),
        })
    }
}

fn resolve(path: &Path) -> Result<PathBuf, FsError> {
    let components: Vec<Component<'_>> = path.components().collect();
    // Always ≥ 1 for an absolute path: the root itself exists.
    for existing in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..existing].iter().collect();
        match fs::canonicalize(&prefix) {
            Ok(mut resolved) => {
                let missing = &components[existing..];
                if missing.contains(&Component::ParentDir) {
                    return Err(FsError::ParentOfMissing(path.to_path_buf()));
                }
                resolved.extend(missing);
                return Ok(resolved);
            }
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                let is_link = fs::symlink_metadata(&prefix)
                    .is_ok_and(|metadata| metadata.file_type().is_symlink());
                if is_link {
                    return Err(FsError::DanglingSymlink {
                        path: path.to_path_buf(),
                        link: prefix,
                    });
                }
            }
            Err(source) => {
                return Err(FsError::Io {
                    action: "resolve",
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
    }
    Err(FsError::NotFound(path.to_path_buf()))
}
