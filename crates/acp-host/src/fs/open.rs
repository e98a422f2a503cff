//! Opening the file a request names: beneath its root, never blocking, regular files only.
//!
//! Every check is made on the opened descriptor (`fstat`), never on a name before opening
//! it, so what is checked is what is read or written. Opening cannot block: `O_NONBLOCK`
//! makes a FIFO open return at once (for writing with no reader it fails with `ENXIO`),
//! `O_NOCTTY` keeps a terminal from becoming the client's controlling terminal. A file is
//! then refused unless it is a regular file, and, for writing within roots, unless it has
//! exactly one name (see [`FsError::HardLinked`](super::FsError::HardLinked)).

use std::fs::File;
use std::io;

use super::resolve::Place;

/// What the file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    /// For writing, created if missing (with missing parent directories), never truncated
    /// by the open itself: the caller truncates once the checks passed.
    Write,
}

/// Why no file was opened.
#[derive(Debug)]
#[cfg_attr(not(unix), allow(dead_code))]
pub(super) enum Refusal {
    /// Resolution left the root: something changed since the path was checked by name.
    Escaped,
    /// A directory.
    Directory,
    /// Not a regular file: `"fifo"`, `"socket"`, `"character device"`, …
    NotRegular(&'static str),
    /// A regular file with this many names, refused within roots.
    HardLinked(u64),
    Io(io::Error),
}

impl From<io::Error> for Refusal {
    fn from(error: io::Error) -> Self {
        Refusal::Io(error)
    }
}

/// Opens the file at `place` for `access` and checks it. `portable` forces the user-space
/// confined walk instead of `openat2` (see [`super::beneath`]).
#[cfg(unix)]
pub(super) fn open(place: &Place, access: Access, portable: bool) -> Result<File, Refusal> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

    let flags = libc::O_NONBLOCK
        | libc::O_NOCTTY
        | libc::O_CLOEXEC
        | match access {
            Access::Read => libc::O_RDONLY,
            Access::Write => libc::O_WRONLY | libc::O_CREAT,
        };
    let opened = match place {
        Place::Anywhere(path) => {
            if access == Access::Write
                && let Some(parent) = path.parent()
            {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::OpenOptions::new()
                .read(access == Access::Read)
                .write(access == Access::Write)
                .create(access == Access::Write)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(path)
        }
        Place::Beneath { root, relative, .. } => super::beneath::open_root(root).and_then(|root| {
            super::beneath::open_beneath(
                std::os::fd::AsFd::as_fd(&root),
                relative,
                flags,
                0o666,
                access == Access::Write,
                portable,
            )
            .map(File::from)
        }),
    };
    let file = match opened {
        Ok(file) => file,
        Err(error) => {
            return Err(match error.raw_os_error() {
                Some(libc::EXDEV) => Refusal::Escaped,
                Some(libc::EISDIR) => Refusal::Directory,
                // A FIFO opened for writing with no reader, a socket, a device without a
                // driver: special files all. Which one is looked up by name, for the
                // message only; the refusal does not depend on it.
                Some(libc::ENXIO | libc::EOPNOTSUPP) => Refusal::NotRegular(
                    std::fs::metadata(place.resolved())
                        .map(|metadata| kind(metadata.file_type()))
                        .unwrap_or("special file"),
                ),
                _ => Refusal::Io(error),
            });
        }
    };
    let metadata = file.metadata()?;
    match kind(metadata.file_type()) {
        "regular file" => {}
        "directory" => return Err(Refusal::Directory),
        other => return Err(Refusal::NotRegular(other)),
    }
    if access == Access::Write && matches!(place, Place::Beneath { .. }) && metadata.nlink() > 1 {
        return Err(Refusal::HardLinked(metadata.nlink()));
    }
    // A regular file ignores O_NONBLOCK on Linux; elsewhere, or on a network file system,
    // it is safer without.
    // SAFETY: `file` is an open descriptor; F_GETFL/F_SETFL take and return plain flags.
    unsafe {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        let current = libc::fcntl(fd, libc::F_GETFL);
        if current >= 0 {
            libc::fcntl(fd, libc::F_SETFL, current & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

/// The name of a file type.
#[cfg(unix)]
fn kind(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_file() {
        "regular file"
    } else if file_type.is_dir() {
        "directory"
    } else if file_type.is_fifo() {
        "fifo"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

/// Without `openat` and its flags: open by name, then check the opened file. Nothing keeps
/// a link swapped in after [`super::resolve::locate`] from leading outside the roots.
#[cfg(not(unix))]
pub(super) fn open(place: &Place, access: Access, _portable: bool) -> Result<File, Refusal> {
    let path = place.resolved();
    if access == Access::Write
        && let Some(parent) = path.parent()
    {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .read(access == Access::Read)
        .write(access == Access::Write)
        .create(access == Access::Write)
        .open(path)?;
    let metadata = file.metadata()?;
    if metadata.is_dir() {
        return Err(Refusal::Directory);
    }
    if !metadata.is_file() {
        return Err(Refusal::NotRegular("special file"));
    }
    Ok(file)
}
