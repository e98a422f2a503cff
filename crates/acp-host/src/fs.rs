//! The client side of `fs/read_text_file` and `fs/write_text_file`: [`FsHost`] reads and
//! writes text files within a session's [`FsRoots`], optionally through an editor's
//! [`FsHook`]; reads return at most [`DEFAULT_MAX_READ_BYTES`] of text unless configured
//! otherwise.
//!
//! Inside, `resolve` checks a path by name and picks its root; `open` opens it beneath that
//! root (`beneath`) without blocking and checks what was opened; `lines` selects lines
//! within a byte budget counted as the text will be on the wire.

#[cfg(unix)]
mod beneath;
mod lines;
mod open;
mod resolve;
#[cfg(all(test, unix))]
mod tests;

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lines::{Progress, Selection};
use open::{Access, Refusal};

/// The directories a session's file operations may touch.
///
/// A path is inside when its fully resolved form (symbolic links followed, `..` applied)
/// lies under the resolved form of one of the roots. Roots that are relative or do not
/// exist contain nothing.
///
/// What is guaranteed on Unix, whatever changes in the roots while a request runs (links
/// swapped in, directories renamed): the file opened is reached from the root without ever
/// stepping out of it (Linux's `openat2` with `RESOLVE_BENEATH`, or the same walk done
/// component by component where that call is missing), so a link swapped in between the
/// check and the open is refused, not followed out. Directories a write creates are made
/// the same way. Writes to a file with more than one hard link are refused
/// ([`FsError::HardLinked`]), since another name of the same file may lie outside.
///
/// Reads of such files are allowed, deliberately: package managers hard-link whole trees
/// (pnpm's `node_modules` comes from its store that way), and refusing them would lock agents
/// out of ordinary projects. The link itself cannot be made through this host, and whoever can
/// make one to a file outside (a terminal command, say) can read that file directly anyway.
///
/// What is not: a mount point inside a root counts as inside. Two changes that need write
/// access outside the roots are not defended against: a directory moved out of a root
/// while a request walks through it takes the request along, and a hard link made from
/// outside to a file already opened gives what is written there a name outside. The roots
/// themselves are trusted as given, links in their own paths included.
/// [`FsRoots::unrestricted`] checks nothing but still refuses what is not a regular file.
/// On other platforms the check is by name only and races with a swapped link.
///
/// ```
/// use acp_host::fs::FsRoots;
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
/// use acp_host::fs::FsHook;
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
///
/// Refusals a hostile agent can provoke inside its own directory are answered at once and
/// name the path: a FIFO, socket or device ([`FsError::NotARegularFile`]), a write to a
/// second name of a file ([`FsError::HardLinked`]), a link leading out
/// ([`FsError::OutsideRoots`]).
///
/// ```
/// use acp_host::fs::{FsError, FsHost, FsRoots};
///
/// let base = std::env::temp_dir().join(format!("acp-fs-error-doc-{}", std::process::id()));
/// let (project, elsewhere) = (base.join("project"), base.join("elsewhere"));
/// std::fs::create_dir_all(&project).unwrap();
/// std::fs::create_dir_all(&elsewhere).unwrap();
/// std::fs::write(elsewhere.join("key"), "private\n").unwrap();
/// # #[cfg(unix)] {
/// std::fs::hard_link(elsewhere.join("key"), project.join("notes.txt")).unwrap();
/// let roots = FsRoots::session(&project, Vec::<std::path::PathBuf>::new());
/// let host = FsHost::new();
/// smol::block_on(async {
///     let write = host.write_text_file(&roots, &project.join("notes.txt"), "x".into()).await;
///     assert!(matches!(write, Err(FsError::HardLinked { .. })));
/// });
/// assert_eq!(std::fs::read_to_string(elsewhere.join("key")).unwrap(), "private\n");
/// # }
/// # std::fs::remove_dir_all(&base).unwrap();
/// ```
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The path is not absolute; the protocol requires absolute paths.
    #[error("path `{}` is not absolute; file paths must be absolute", acp_jsonrpc::excerpt(&.0.to_string_lossy()))]
    RelativePath(PathBuf),
    /// `line` was 0; lines are numbered from 1.
    #[error("line 0 requested for `{}`; line numbers start at 1", acp_jsonrpc::excerpt(&.0.to_string_lossy()))]
    InvalidLine(PathBuf),
    /// The path resolves outside every root of the session.
    #[error(
        "`{}`{} is outside the directories this session may access ({})",
        acp_jsonrpc::excerpt(&path.to_string_lossy()),
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
    #[error("`{}` goes up (`..`) from a directory that does not exist", acp_jsonrpc::excerpt(&.0.to_string_lossy()))]
    ParentOfMissing(PathBuf),
    /// The path runs through a symbolic link whose target does not exist, so where it
    /// leads cannot be checked.
    #[error(
        "`{}` runs through the symbolic link `{}`, whose target does not exist",
        acp_jsonrpc::excerpt(&path.to_string_lossy()),
        acp_jsonrpc::excerpt(&link.to_string_lossy())
    )]
    DanglingSymlink {
        /// The path as requested.
        path: PathBuf,
        /// The dangling link.
        link: PathBuf,
    },
    /// Nothing exists at the path (maps to the protocol's "resource not found").
    #[error("file not found: `{}`", acp_jsonrpc::excerpt(&.0.to_string_lossy()))]
    NotFound(PathBuf),
    /// The path names a directory.
    #[error("`{}` is a directory, not a file", acp_jsonrpc::excerpt(&.0.to_string_lossy()))]
    NotAFile(PathBuf),
    /// The path names something other than a regular file or a directory: a FIFO, a
    /// socket, a device. Reading or writing one could block for good or never end, so it is
    /// refused without being read or written (opening it does not block).
    #[error(
        "`{}` is a {kind}, not a regular file; only regular files are read and written",
        acp_jsonrpc::excerpt(&path.to_string_lossy())
    )]
    NotARegularFile {
        /// The path as requested.
        path: PathBuf,
        /// What it is: `"fifo"`, `"socket"`, `"character device"`, `"block device"` or
        /// `"special file"`.
        kind: &'static str,
    },
    /// A write to a file with more than one hard link (within roots only). Another of its
    /// names may lie outside the session's directories, and nothing tells which name is the
    /// "real" one, so writing it could change a file outside (see [`FsRoots`] for why reads
    /// are allowed).
    #[error(
        "`{}` has {links} hard links; writes to files with more than one name are refused, as another name may lie outside the session's directories",
        acp_jsonrpc::excerpt(&path.to_string_lossy())
    )]
    HardLinked {
        /// The path as requested.
        path: PathBuf,
        /// Its number of hard links.
        links: u64,
    },
    /// The file is not valid UTF-8 text.
    #[error("`{}` is not a UTF-8 text file", acp_jsonrpc::excerpt(&.0.to_string_lossy()))]
    NotUtf8(PathBuf),
    /// The text asked for is larger than the host's limit
    /// ([`FsHost::with_max_read_bytes`]), counted as it will be on the wire (escaped as a
    /// JSON string); a `line`/`limit` range of it may still be read.
    #[error(
        "`{}` is too large to read: more than {limit} bytes requested (as escaped in JSON); ask for a range of lines",
        acp_jsonrpc::excerpt(&path.to_string_lossy())
    )]
    TooLarge {
        /// The path as requested.
        path: PathBuf,
        /// The host's limit, in bytes.
        limit: u64,
    },
    /// Any other operating-system failure.
    #[error("could not {action} `{}`: {source}", acp_jsonrpc::excerpt(&path.to_string_lossy()))]
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
            write!(
                f,
                " (resolved to `{}`)",
                acp_jsonrpc::excerpt(&self.1.to_string_lossy())
            )
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
/// the futures can be awaited on any executor. Neither can be made to block for good: only
/// regular files are read or written ([`FsError::NotARegularFile`]), and opening a FIFO,
/// socket or device to find out does not block. Dropping a read's future stops the read at
/// its next 64 KiB chunk; a write, once its file is open and checked, runs to the end,
/// since stopping it halfway would leave the file cut short.
///
/// Writes replace the whole file (creating it if missing) with exactly the given text,
/// and create missing parent directories: the protocol has no other way for an agent
/// to make a directory, and agents routinely write new files into new folders. A write
/// goes in place: the file is opened without truncating it, checked, then truncated and
/// written, so its permissions, owner and inode stay and nothing is lost when a check
/// refuses it; as before, a reader may see it half written, and [`FsHook::did_write`] is
/// called once the whole text is written. (Writing a temporary file and renaming it over
/// would be atomic, but would replace a link inside the roots instead of writing through
/// it, and reset the file's permissions.)
///
/// Reads go line by line and return at most [`DEFAULT_MAX_READ_BYTES`] of text, counted
/// as it will be on the wire (see [`with_max_read_bytes`](FsHost::with_max_read_bytes)), so
/// an agent cannot make the client load a huge file into memory; it can still read any
/// range of lines of it, and lines before the range cost no memory whatever their length.
///
/// ```
/// use acp_host::fs::{FsHost, FsRoots};
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
    portable: bool,
}

/// The default limit of [`FsHost::with_max_read_bytes`]: 16 MiB once escaped as a JSON
/// string, far above any source file, and far below what would strain the client's memory
/// or the agent's line length limit (a control character escapes to 6 bytes, so 16 MiB on
/// the wire is at least 2.6 MiB of any text).
pub const DEFAULT_MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

impl Default for FsHost {
    fn default() -> Self {
        FsHost {
            hook: None,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            portable: false,
        }
    }
}

impl fmt::Debug for FsHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FsHost")
            .field("hook", &self.hook.is_some())
            .field("max_read_bytes", &self.max_read_bytes)
            .field("portable", &self.portable)
            .finish()
    }
}

/// Sets the request's [`Progress`] to cancelled when the future awaiting it is dropped
/// (or done), so that its blocking read stops instead of running on unobserved.
struct CancelOnDrop(Arc<Progress>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
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
    /// `bytes`, with [`FsError::TooLarge`]. Default: [`DEFAULT_MAX_READ_BYTES`].
    ///
    /// The size counted is the text's size on the wire, escaped inside a JSON string: `"`
    /// and `\` count 2 bytes, control characters 2 (`\n`, `\t`, `\r`, `\b`, `\f`) or 6
    /// (`\u0001`), every other byte 1 (the quotes and the rest of the response are not
    /// counted). So a response stays within what the cap promises the peer's line limit,
    /// whatever the file holds. Files are read in fixed-size chunks: lines before the range
    /// are skipped without being kept, and the kept text never exceeds `bytes` in memory.
    ///
    /// ```
    /// use acp_host::fs::{FsError, FsHost, FsRoots};
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
    ///     // 19 bytes on the wire per line: "\n" is escaped.
    ///     let small = FsHost::new().with_max_read_bytes(37);
    ///     let two = small.read_text_file(&roots, &file, None, Some(2)).await;
    ///     assert!(matches!(two, Err(FsError::TooLarge { .. })));
    /// });
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn with_max_read_bytes(mut self, bytes: u64) -> Self {
        self.max_read_bytes = bytes;
        self
    }

    /// Opens files within roots by walking their paths component by component in user
    /// space, as on systems without Linux's `openat2`, even where `openat2` works. The two
    /// give the same answers; this exists so that tests can run both.
    #[doc(hidden)]
    pub fn without_openat2(mut self) -> Self {
        self.portable = true;
        self
    }

    /// The text of the file at `path` (`fs/read_text_file`), or of the lines
    /// `line ..= line + limit - 1` of it.
    ///
    /// `line` is 1-based and defaults to 1; 0 is refused with [`FsError::InvalidLine`].
    /// `limit` is a number of lines and defaults to "to the end". Lines end at `\n` and
    /// keep their terminators (`\r\n` stays intact); a start past the last line, or a
    /// limit of 0, gives an empty string. Files must be UTF-8 regular files.
    pub async fn read_text_file(
        &self,
        roots: &FsRoots,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, FsError> {
        self.read_watched(roots, path, line, limit, Arc::default(), async |_| {})
            .await
    }

    /// [`read_text_file`](Self::read_text_file) for a server that must bound what its answers
    /// hold: once the file is open, `reserve` is awaited with the most bytes its text can take
    /// on the wire (six times its size, for text of nothing but control characters, and never
    /// more than the cap), before anything is read. The text then read is held to that bound,
    /// so a file that grew since is refused ([`FsError::TooLarge`]) rather than answered
    /// larger than what was reserved. The client connection passes
    /// [`Responder::reserve`](acp_jsonrpc::Responder::reserve), so that reads wait while the
    /// agent is slow to take their answers instead of each holding a file in memory.
    ///
    /// ```
    /// use acp_host::fs::{FsHost, FsRoots};
    ///
    /// let dir = std::env::temp_dir().join(format!("acp-fs-reserve-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("a.txt"), "hello\n").unwrap();
    /// let roots = FsRoots::session(&dir, Vec::<std::path::PathBuf>::new());
    /// let mut reserved = 0;
    /// let text = smol::block_on(FsHost::new().read_text_file_reserving(
    ///     &roots,
    ///     &dir.join("a.txt"),
    ///     None,
    ///     None,
    ///     async |bytes| reserved = bytes,
    /// ));
    /// assert_eq!(text.unwrap(), "hello\n");
    /// // 6 bytes, at most 36 once escaped, and the envelope.
    /// assert_eq!(reserved, 36 + 128);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub async fn read_text_file_reserving(
        &self,
        roots: &FsRoots,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
        reserve: impl AsyncFnOnce(u64),
    ) -> Result<String, FsError> {
        self.read_watched(roots, path, line, limit, Arc::default(), reserve)
            .await
    }

    /// [`read_text_file`](Self::read_text_file), reporting to `progress` (tests watch it).
    async fn read_watched(
        &self,
        roots: &FsRoots,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
        progress: Arc<Progress>,
        reserve: impl AsyncFnOnce(u64),
    ) -> Result<String, FsError> {
        if !path.is_absolute() {
            return Err(FsError::RelativePath(path.to_path_buf()));
        }
        if line == Some(0) {
            return Err(FsError::InvalidLine(path.to_path_buf()));
        }
        let _cancel = CancelOnDrop(progress.clone());
        let host = self.clone();
        let (source, size) = {
            let (roots, path, host) = (roots.clone(), path.to_path_buf(), host.clone());
            smol::unblock(move || {
                let place = resolve::locate(&roots, &path)?;
                if let Some(content) = host.hook.and_then(|hook| hook.read_override(&path)) {
                    let size = content.len() as u64;
                    return Ok((Source::Unsaved(content), size));
                }
                let file = open::open(&place, Access::Read, host.portable)
                    .map_err(|refusal| refused(refusal, &roots, &path, "open"))?;
                let size = file.metadata().map_err(io_error(&path, "read"))?.len();
                Ok::<_, FsError>((Source::Disk(file), size))
            })
            .await?
        };
        // Escaped, a byte takes at most 6 on the wire (`\u0001`).
        let bound = size.saturating_mul(6).min(host.max_read_bytes);
        reserve(bound + REPLY_ENVELOPE_BYTES).await;
        let path = path.to_path_buf();
        smol::unblock(move || {
            let selected = match source {
                Source::Unsaved(content) => {
                    lines::select_lines(content.as_bytes(), line, limit, bound)
                }
                Source::Disk(file) => {
                    let reader = io::BufReader::with_capacity(
                        lines::CHUNK,
                        lines::Watched::new(file, &progress),
                    );
                    lines::select_lines(reader, line, limit, bound)
                }
            };
            match selected {
                Ok(text) => String::from_utf8(text).map_err(|_| FsError::NotUtf8(path)),
                Err(Selection::TooLarge) => Err(FsError::TooLarge {
                    path,
                    limit: host.max_read_bytes,
                }),
                Err(Selection::Cancelled) => Err(cancelled(path)),
                Err(Selection::Io(source)) => Err(io_error(&path, "read")(source)),
            }
        })
        .await
    }

    /// Replaces the file at `path` with `content` (`fs/write_text_file`), creating the
    /// file and any missing parent directories, then tells the hook. Only regular files
    /// are written, and within roots only files with a single hard link.
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
        let host = self.clone();
        let progress = Arc::new(Progress::default());
        let _cancel = CancelOnDrop(progress.clone());
        smol::unblock(move || {
            let place = resolve::locate(&roots, &path)?;
            let mut file = open::open(&place, Access::Write, host.portable)
                .map_err(|refusal| refused(refusal, &roots, &path, "open for writing"))?;
            // The last point where stopping leaves the file as it was.
            if progress.is_cancelled() {
                return Err(cancelled(path));
            }
            file.set_len(0)
                .and_then(|()| file.write_all(content.as_bytes()))
                .map_err(io_error(&path, "write"))?;
            if let Some(hook) = host.hook {
                hook.did_write(&path, &content);
            }
            Ok(())
        })
        .await
    }
}

/// What a read serves: the disk, or an editor's unsaved buffer.
enum Source {
    Disk(std::fs::File),
    Unsaved(String),
}

/// What a `fs/read_text_file` answer holds besides the text: the JSON-RPC envelope, the
/// id and the `content` member.
const REPLY_ENVELOPE_BYTES: u64 = 128;

/// The error for a request whose future was dropped; nobody receives it.
fn cancelled(path: PathBuf) -> FsError {
    FsError::Io {
        action: "finish",
        path,
        source: io::Error::new(io::ErrorKind::Interrupted, "the request was cancelled"),
    }
}

/// Maps a [`Refusal`] to open `path` (for `action`) to the agent's error.
fn refused(refusal: Refusal, roots: &FsRoots, path: &Path, action: &'static str) -> FsError {
    match refusal {
        // The path was inside when checked by name and leads out now: say where it leads.
        Refusal::Escaped => {
            let resolved = resolve::resolve(path).unwrap_or_else(|_| path.to_path_buf());
            resolve::outside(roots, path, resolved)
        }
        Refusal::Directory => FsError::NotAFile(path.to_path_buf()),
        Refusal::NotRegular(kind) => FsError::NotARegularFile {
            path: path.to_path_buf(),
            kind,
        },
        Refusal::HardLinked(links) => FsError::HardLinked {
            path: path.to_path_buf(),
            links,
        },
        Refusal::Io(source) => io_error(path, action)(source),
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
