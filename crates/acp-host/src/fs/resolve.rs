//! Where a requested path leads, and which root it lies under.
//!
//! This is the check that produces the errors an agent can act on (outside the roots, a
//! dangling link, `..` out of a missing directory). It resolves paths by name, so on its own
//! it would race with a link swapped in before the file is opened; it only chooses the root
//! and the path below it. The opening itself ([`super::open`]) resolves that path again, in
//! the kernel, in a way that cannot leave the root.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::{FsError, FsRoots};

/// Where a request leads, as far as can be told by name.
#[derive(Debug)]
#[cfg_attr(not(unix), allow(dead_code))]
pub(super) enum Place {
    /// Unrestricted roots: the path resolved by name, opened as is.
    Anywhere(PathBuf),
    /// Under `root` (canonical): `relative` is the resolved path below it, to be opened
    /// beneath `root` ("." for the root itself).
    Beneath {
        root: PathBuf,
        relative: PathBuf,
        resolved: PathBuf,
    },
}

impl Place {
    /// The path resolved by name, for messages.
    pub(super) fn resolved(&self) -> &Path {
        match self {
            Place::Anywhere(resolved) | Place::Beneath { resolved, .. } => resolved,
        }
    }
}

/// Resolves `path` (absolute) by name and finds the root it lies under.
///
/// The path may not exist yet: its deepest existing ancestor is resolved and the missing
/// rest appended, which contains no links because it does not exist.
pub(super) fn locate(roots: &FsRoots, path: &Path) -> Result<Place, FsError> {
    let resolved = resolve(path)?;
    let Some(allowed) = roots.roots() else {
        return Ok(Place::Anywhere(resolved));
    };
    let root = allowed
        .iter()
        .filter(|root| root.is_absolute())
        .filter_map(|root| fs::canonicalize(root).ok())
        .find(|root| resolved.starts_with(root));
    match root {
        Some(root) => {
            let relative = match resolved.strip_prefix(&root) {
                Ok(rest) if rest.as_os_str().is_empty() => PathBuf::from("."),
                Ok(rest) => rest.to_path_buf(),
                Err(_) => unreachable!("`starts_with` was checked"),
            };
            Ok(Place::Beneath {
                root,
                relative,
                resolved,
            })
        }
        None => Err(outside(roots, path, resolved)),
    }
}

/// [`FsError::OutsideRoots`] for `path`, which resolved to `resolved`.
pub(super) fn outside(roots: &FsRoots, path: &Path, resolved: PathBuf) -> FsError {
    FsError::OutsideRoots {
        path: path.to_path_buf(),
        resolved,
        roots: roots.roots().unwrap_or_default().to_vec(),
    }
}

/// `path` resolved as the operating system would: links followed, `..` applied.
pub(super) fn resolve(path: &Path) -> Result<PathBuf, FsError> {
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
