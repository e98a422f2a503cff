//! The one error type: each variant names what went wrong and what the user can do about it.

use std::path::PathBuf;

/// What can go wrong reading the registry, choosing a distribution, or installing an agent.
///
/// Every message is meant to be shown to a user as it is: it says what failed and, where
/// there is one, what to do instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The registry has no agent with this id.
    #[error("no agent `{id}` in the registry{}", did_you_mean(nearest))]
    UnknownAgent {
        /// The id asked for.
        id: String,
        /// The registry's ids closest to it, nearest first (at most three).
        nearest: Vec<String>,
    },
    /// The agent has no distribution that runs on this platform.
    #[error(
        "agent `{id}` has no distribution for {platform}; it offers {}",
        offered.join(", ")
    )]
    NoDistribution {
        /// The agent's id.
        id: String,
        /// This platform, as the registry names platforms (`linux-x86_64`...).
        platform: String,
        /// What the agent offers: `npx`, `uvx`, `binary (darwin-aarch64)`...
        offered: Vec<String>,
    },
    /// The distribution needs a launcher (`npx` or `uvx`) that is not on `PATH`.
    #[error("agent `{id}` is run with `{tool}`, which is not on PATH; {hint}")]
    ToolMissing {
        /// The agent's id.
        id: String,
        /// `npx` or `uvx`.
        tool: &'static str,
        /// How to get it.
        hint: &'static str,
    },
    /// The downloaded archive's sha256 is not the one the registry gives.
    #[error("{url}: sha256 is {actual}, but the registry says {expected}; nothing was installed")]
    ChecksumMismatch {
        /// The archive's URL.
        url: String,
        /// The registry's checksum (lower-case hex).
        expected: String,
        /// The downloaded bytes' checksum (lower-case hex).
        actual: String,
    },
    /// An archive was refused before or during extraction; nothing of it was kept.
    #[error("{url}: archive refused: {reason}")]
    ArchiveRefused {
        /// The archive's URL.
        url: String,
        /// Why, naming the entry at fault.
        reason: Refusal,
    },
    /// A download failed: unreachable host, an HTTP error status, too many redirects, a
    /// stalled server, or a body over the size cap.
    #[error("cannot download {url}: {reason}")]
    Download {
        /// The URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// The registry is not a registry (not JSON, or `agents` missing or not a list).
    #[error("{source_name}: not an ACP registry: {reason}")]
    InvalidRegistry {
        /// The file or URL it came from.
        source_name: String,
        /// What the parser found.
        reason: String,
    },
    /// An entry is unusable: a missing required field, or a `cmd` that leaves its directory.
    #[error("agent `{id}`: {reason}")]
    InvalidEntry {
        /// The agent's id.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A local file operation failed (the registry file, the cache directory...).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}

fn did_you_mean(nearest: &[String]) -> String {
    match nearest {
        [] => String::new(),
        [one] => format!("; did you mean `{one}`?"),
        many => format!(
            "; did you mean one of {}?",
            many.iter()
                .map(|id| format!("`{id}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Why an archive was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// An installer (`.dmg`, `.pkg`, `.deb`, `.rpm`, `.msi`...), which the registry does not
    /// allow: it would run code of its own to install.
    #[error("`.{0}` is an installer, which the registry does not allow")]
    Installer(String),
    /// A compression format the registry does not allow (`.tar.xz`, `.7z`...).
    #[error(
        "`.{0}` is not an archive format the registry allows (.zip, .tar.gz, .tgz, .tar.bz2, .tbz2 or a bare binary)"
    )]
    UnsupportedFormat(String),
    /// An entry whose path climbs out of the directory (`..`).
    #[error("entry `{0}` climbs out of the directory (`..`)")]
    Traversal(String),
    /// An entry with an absolute path (or a drive prefix).
    #[error("entry `{0}` has an absolute path")]
    AbsolutePath(String),
    /// A symbolic or hard link whose target is outside the directory.
    #[error("link `{entry}` points outside the directory (to `{target}`)")]
    LinkEscapes {
        /// The link's path in the archive.
        entry: String,
        /// Where it points.
        target: String,
    },
    /// An entry written through a link the archive created earlier.
    #[error("entry `{0}` would be written through a link")]
    ThroughLink(String),
    /// An entry that is neither file, directory nor link (a device, a FIFO...).
    #[error("entry `{0}` is not a file, directory or link")]
    SpecialFile(String),
    /// The archive inflates past the extraction cap.
    #[error("it inflates past {limit} bytes (a decompression bomb, or raise the cap)")]
    TooLarge {
        /// The cap, in bytes.
        limit: u64,
    },
    /// The archive has more entries than the cap.
    #[error("it has more than {limit} entries")]
    TooManyEntries {
        /// The cap.
        limit: usize,
    },
    /// The archive does not contain the entry's `cmd`.
    #[error("it has no `{0}`, the command the registry says to run")]
    MissingCommand(String),
    /// The archive cannot be read (truncated, corrupt, not the format its name says).
    #[error("it is corrupt: {0}")]
    Corrupt(String),
}
