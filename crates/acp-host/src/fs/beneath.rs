//! Opening a path beneath a directory without ever leaving it.
//!
//! A check by name followed by an open by name races: a symbolic link (or a directory
//! renamed into a link) between the two sends the open elsewhere. Here the walk itself is
//! confined. On Linux ≥ 5.6 the kernel does it: `openat2(2)` with `RESOLVE_BENEATH` fails
//! with `EXDEV` as soon as resolution would step out of the directory (an absolute link, a
//! `..` above it), and `RESOLVE_NO_MAGICLINKS` refuses `/proc/*/fd`-style links. Elsewhere,
//! or when `openat2` is missing (`ENOSYS`, or `EPERM` from a seccomp filter), [`walk`] does the
//! same in user space, one component at a time with `O_NOFOLLOW`, reading links itself.
//!
//! Both refuse the same things: absolute links, `..` above the directory, more than
//! [`MAX_HOPS`] links. Links that stay beneath it are followed.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// How many symbolic links one walk may follow, as Linux allows (`MAXSYMLINKS`).
const MAX_HOPS: u32 = 40;

/// Flags that open a directory only to walk through it: `O_PATH` where it exists, so that a
/// directory with search but no read permission can still be crossed.
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIRECTORY_FLAGS: libc::c_int =
    libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const DIRECTORY_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// Opens the directory `root` (following links: the roots are the client's own choice) as
/// the anchor of [`open_beneath`].
pub(super) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    let path = c_path(root.as_os_str())?;
    let flags = DIRECTORY_FLAGS & !libc::O_NOFOLLOW;
    // SAFETY: `path` is a valid NUL-terminated string; the result is checked.
    cvt_fd(unsafe { libc::open(path.as_ptr(), flags) })
}

/// Opens `relative` beneath `root` with `flags` (`mode` for a created file), creating
/// missing parent directories first when `create_parents` is set. Fails with `EXDEV` when
/// the path, as resolved now, leads out of `root`.
///
/// `portable` forces the user-space walk even where `openat2` works (tests run both).
pub(super) fn open_beneath(
    root: BorrowedFd<'_>,
    relative: &Path,
    flags: libc::c_int,
    mode: libc::mode_t,
    create_parents: bool,
    portable: bool,
) -> io::Result<OwnedFd> {
    #[cfg(target_os = "linux")]
    if !portable && openat2::available() {
        match openat2::open(root, relative, flags, mode, create_parents) {
            Err(error) if error.raw_os_error() == Some(libc::ENOSYS) => {}
            done => return done,
        }
    }
    let _ = portable;
    walk(root, relative, flags, mode, create_parents)
}

/// The user-space confined walk: each component is opened with `O_NOFOLLOW` relative to
/// the directory before it; a link is read with `readlinkat` and its target walked in turn
/// (never an absolute one); `..` returns to the directory opened before, and fails with
/// `EXDEV` above `root`. Opened directories are kept on a stack for `..`, so the walk never
/// asks the file system for a parent, which could have been moved elsewhere.
pub(super) fn walk(
    root: BorrowedFd<'_>,
    relative: &Path,
    flags: libc::c_int,
    mode: libc::mode_t,
    create_parents: bool,
) -> io::Result<OwnedFd> {
    // Components still to walk, the next one last.
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&mut pending, relative)?;
    let mut dirs: Vec<OwnedFd> = Vec::new();
    let mut hops = 0;
    let mut created = 0;
    while let Some(name) = pending.pop() {
        let here = dirs.last().map_or(root, |dir| dir.as_fd());
        let last = pending.is_empty();
        if name == ".." {
            if dirs.pop().is_none() {
                return Err(io::Error::from_raw_os_error(libc::EXDEV));
            }
        } else if name != "." {
            let opened = if last {
                openat(here, &name, flags | libc::O_NOFOLLOW, mode)
            } else {
                openat(here, &name, DIRECTORY_FLAGS, 0)
            };
            match opened {
                Ok(fd) if last => return Ok(fd),
                Ok(dir) => dirs.push(dir),
                // Linux says ELOOP for a final link under O_NOFOLLOW and ENOTDIR for a link
                // under O_DIRECTORY; FreeBSD says EMLINK. Only `readlinkat` can tell.
                Err(error)
                    if matches!(
                        error.raw_os_error(),
                        Some(libc::ELOOP | libc::ENOTDIR | libc::EMLINK)
                    ) =>
                {
                    let target = match readlinkat(here, &name) {
                        Ok(target) => target,
                        Err(not_link) if not_link.raw_os_error() == Some(libc::EINVAL) => {
                            return Err(error);
                        }
                        Err(other) => return Err(other),
                    };
                    hops += 1;
                    if hops > MAX_HOPS {
                        return Err(io::Error::from_raw_os_error(libc::ELOOP));
                    }
                    if Path::new(&target).is_absolute() {
                        return Err(io::Error::from_raw_os_error(libc::EXDEV));
                    }
                    push_components(&mut pending, Path::new(&target))?;
                }
                Err(error)
                    if !last
                        && create_parents
                        && error.raw_os_error() == Some(libc::ENOENT)
                        && created < MAX_HOPS =>
                {
                    // Bounded, in case something keeps removing what is created.
                    created += 1;
                    mkdirat(here, &name)?;
                    pending.push(name);
                }
                Err(error) => return Err(error),
            }
        }
        if pending.is_empty() {
            // The path ended in `.` or `..`: open the directory reached.
            let here = dirs.last().map_or(root, |dir| dir.as_fd());
            return openat(here, OsStr::new("."), flags, mode);
        }
    }
    // `relative` has at least one component (see `push_components`), so the loop returns.
    Err(io::Error::from_raw_os_error(libc::ENOENT))
}

/// Pushes the components of `path` onto `pending` so that the first is popped first.
fn push_components(pending: &mut Vec<OsString>, path: &Path) -> io::Result<()> {
    let start = pending.len();
    for component in path.components() {
        pending.push(match component {
            Component::Normal(name) => name.to_os_string(),
            Component::CurDir => ".".into(),
            Component::ParentDir => "..".into(),
            Component::RootDir | Component::Prefix(_) => {
                return Err(io::Error::from_raw_os_error(libc::EXDEV));
            }
        });
    }
    if pending.len() == start {
        // An empty link target or path: nothing to open.
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    pending[start..].reverse();
    Ok(())
}

fn openat(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let name = c_path(name)?;
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated string for the call's
    // duration; the result is checked. `mode` is passed as the variadic `c_uint`.
    cvt_fd(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            libc::c_uint::from(mode),
        )
    })
}

fn mkdirat(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let name = c_path(name)?;
    // SAFETY: as in `openat`.
    let result = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) };
    if result == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    // Someone else made it: the next attempt opens (or refuses) whatever it is.
    if error.raw_os_error() == Some(libc::EEXIST) {
        Ok(())
    } else {
        Err(error)
    }
}

fn readlinkat(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OsString> {
    let name = c_path(name)?;
    let mut buffer = vec![0u8; 256];
    loop {
        // SAFETY: `buffer` is writable for its length; the result is checked.
        let length = unsafe {
            libc::readlinkat(
                dir.as_raw_fd(),
                name.as_ptr(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        };
        let Ok(length) = usize::try_from(length) else {
            return Err(io::Error::last_os_error());
        };
        if length < buffer.len() {
            buffer.truncate(length);
            return Ok(OsString::from(OsStr::from_bytes(&buffer)));
        }
        // Possibly cut short. Link targets are at most PATH_MAX (4096) on Linux.
        if buffer.len() >= 64 * 1024 {
            return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
        }
        buffer.resize(buffer.len() * 2, 0);
    }
}

fn c_path(path: &OsStr) -> io::Result<CString> {
    CString::new(path.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn cvt_fd(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: a fresh descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

#[cfg(target_os = "linux")]
mod openat2 {
    use super::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// `struct open_how` of `linux/openat2.h` (libc's is `non_exhaustive`).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }

    const RESOLVE: u64 = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;

    /// How often to retry the kernel's `EAGAIN`: it cannot rule out a concurrent rename
    /// moving a `..` out of the directory, and asks the caller to try again.
    const RETRIES: u32 = 32;

    fn call(
        dir: libc::c_int,
        path: &CString,
        flags: libc::c_int,
        mode: libc::mode_t,
        resolve: u64,
    ) -> io::Result<OwnedFd> {
        let how = OpenHow {
            flags: (flags | libc::O_CLOEXEC) as u32 as u64,
            // The kernel refuses a mode without O_CREAT.
            mode: if flags & libc::O_CREAT != 0 {
                u64::from(mode)
            } else {
                0
            },
            resolve,
        };
        for _ in 0..RETRIES {
            // SAFETY: `path` and `how` outlive the call and `how`'s size is passed with it;
            // the result is checked.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    dir,
                    path.as_ptr(),
                    &how as *const OpenHow,
                    std::mem::size_of::<OpenHow>(),
                )
            };
            if fd >= 0 {
                return cvt_fd(fd as libc::c_int);
            }
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EAGAIN) {
                return Err(error);
            }
        }
        Err(io::Error::from_raw_os_error(libc::EAGAIN))
    }

    /// Whether `openat2` works here, asked once: a plain `O_PATH` open of `/` cannot fail
    /// otherwise, so `ENOSYS` (old kernel) or `EPERM` (a seccomp filter that does not know
    /// the call) mean it is unavailable.
    pub(super) fn available() -> bool {
        static STATE: AtomicU8 = AtomicU8::new(0);
        match STATE.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let root = CString::new("/").expect("no NUL");
                match call(libc::AT_FDCWD, &root, libc::O_PATH, 0, 0) {
                    Ok(_) => STATE.store(1, Ordering::Relaxed),
                    Err(error)
                        if matches!(error.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) =>
                    {
                        STATE.store(2, Ordering::Relaxed);
                        return false;
                    }
                    // Out of descriptors, say: no answer yet, ask again next time.
                    Err(_) => {}
                }
                true
            }
        }
    }

    pub(super) fn open(
        root: BorrowedFd<'_>,
        relative: &Path,
        flags: libc::c_int,
        mode: libc::mode_t,
        create_parents: bool,
    ) -> io::Result<OwnedFd> {
        let path = c_path(relative.as_os_str())?;
        match call(root.as_raw_fd(), &path, flags, mode, RESOLVE) {
            Err(error) if create_parents && error.raw_os_error() == Some(libc::ENOENT) => {
                make_parents(root, relative)?;
                call(root.as_raw_fd(), &path, flags, mode, RESOLVE)
            }
            done => done,
        }
    }

    /// Creates the missing directories above `relative`, each with `mkdirat` in its parent
    /// opened beneath the one before it: no step can leave `root`.
    fn make_parents(root: BorrowedFd<'_>, relative: &Path) -> io::Result<()> {
        let Some(parent) = relative.parent() else {
            return Ok(());
        };
        let mut here: Option<OwnedFd> = None;
        for component in parent.components() {
            let name = component.as_os_str();
            let c_name = c_path(name)?;
            let dir = here.as_ref().map_or(root, |dir| dir.as_fd());
            let flags = libc::O_PATH | libc::O_DIRECTORY;
            let next = match call(dir.as_raw_fd(), &c_name, flags, 0, RESOLVE) {
                Err(error) if error.raw_os_error() == Some(libc::ENOENT) => {
                    mkdirat(dir, name)?;
                    call(dir.as_raw_fd(), &c_name, flags, 0, RESOLVE)?
                }
                done => done?,
            };
            here = Some(next);
        }
        Ok(())
    }
}
