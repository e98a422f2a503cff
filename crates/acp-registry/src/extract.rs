//! Unpacking a downloaded archive into an empty directory, refusing anything that would
//! write outside it: path traversal, absolute paths, links that leave it, writes through a
//! link, special files, and archives that inflate past a cap.
//!
//! The format readers (`tar.rs`, `zip.rs`) only decode; every file system write goes through
//! [`Writer`], where the rules live.

#[cfg(test)]
mod props;
mod tar;
mod zip;

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use crate::error::Refusal;

/// Caps on what one archive may unpack to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractLimits {
    /// Bytes written in all (default 4 GiB).
    pub max_bytes: u64,
    /// Entries (files, directories and links; default 100 000).
    pub max_entries: usize,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits {
            max_bytes: 4 << 30,
            max_entries: 100_000,
        }
    }
}

/// The formats the registry allows, read from the archive URL's file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Zip,
    TarGz,
    TarBz2,
    /// A bare executable, saved as the entry's `cmd`.
    Bare,
}

/// The archive's format by its URL (query and fragment ignored, case ignored).
pub(crate) fn format_of(url: &str) -> Result<Format, Refusal> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    const INSTALLERS: [&str; 8] = ["dmg", "pkg", "deb", "rpm", "msi", "msix", "appimage", "apk"];
    const UNSUPPORTED: [&str; 8] = ["xz", "txz", "zst", "tzst", "7z", "rar", "lz", "tar"];
    if name.ends_with(".zip") {
        return Ok(Format::Zip);
    }
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        return Ok(Format::TarGz);
    }
    if name.ends_with(".tar.bz2") || name.ends_with(".tbz2") {
        return Ok(Format::TarBz2);
    }
    if let Some((_, extension)) = name.rsplit_once('.') {
        if INSTALLERS.contains(&extension) {
            return Err(Refusal::Installer(extension.to_owned()));
        }
        if UNSUPPORTED.contains(&extension) || extension == "gz" || extension == "bz2" {
            return Err(Refusal::UnsupportedFormat(extension.to_owned()));
        }
    }
    Ok(Format::Bare)
}

/// `path` as a relative path that stays inside its directory: no root, no drive prefix, no
/// `..`; `.` and empty components dropped (`./bin//agent` is `bin/agent`).
pub(crate) fn safe_relative(path: &str) -> Result<PathBuf, Refusal> {
    if path.starts_with('/') || path.starts_with('\\') || path.get(1..2) == Some(":") {
        return Err(Refusal::AbsolutePath(path.to_owned()));
    }
    let mut relative = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => relative.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(Refusal::Traversal(path.to_owned())),
            Component::RootDir | Component::Prefix(_) => {
                return Err(Refusal::AbsolutePath(path.to_owned()));
            }
        }
    }
    Ok(relative)
}

/// Unpacks `archive` (a file of `format`) into `dest`, an empty directory. `bare_name` is
/// where a bare executable goes (the entry's `cmd`).
pub(crate) fn extract(
    archive: &Path,
    format: Format,
    dest: &Path,
    bare_name: &Path,
    limits: ExtractLimits,
) -> Result<(), Refusal> {
    let file = File::open(archive).map_err(corrupt)?;
    let mut writer = Writer {
        dest,
        limits,
        written: 0,
        entries: 0,
    };
    match format {
        Format::Zip => zip::unpack(file, &mut writer),
        Format::TarGz => tar::unpack(flate2::read::GzDecoder::new(file), &mut writer),
        Format::TarBz2 => tar::unpack(bzip2::read::BzDecoder::new(file), &mut writer),
        Format::Bare => writer.file(&bare_name.to_string_lossy(), file, Some(0o755)),
    }
}

pub(crate) fn corrupt(error: impl std::fmt::Display) -> Refusal {
    Refusal::Corrupt(error.to_string())
}

/// Every write of an extraction: the rules in one place.
pub(crate) struct Writer<'a> {
    dest: &'a Path,
    limits: ExtractLimits,
    written: u64,
    entries: usize,
}

impl Writer<'_> {
    /// Counts one entry against the cap, and checks its path: the relative path, inside.
    fn admit(&mut self, name: &str) -> Result<PathBuf, Refusal> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(Refusal::TooManyEntries {
                limit: self.limits.max_entries,
            });
        }
        let relative = safe_relative(name)?;
        self.no_links_above(&relative, name)?;
        Ok(relative)
    }

    /// [`admit`](Self::admit) for a file or a link, which cannot be the directory itself
    /// (a name of only `.` components).
    fn admit_leaf(&mut self, name: &str) -> Result<PathBuf, Refusal> {
        let relative = self.admit(name)?;
        if relative.as_os_str().is_empty() {
            return Err(corrupt(format!(
                "entry `{name}` names the directory itself"
            )));
        }
        Ok(relative)
    }

    /// Refuses a path whose existing ancestors include a link: writing there would write
    /// wherever the link points.
    fn no_links_above(&self, relative: &Path, name: &str) -> Result<(), Refusal> {
        let mut at = self.dest.to_path_buf();
        let parents: Vec<_> = relative.components().collect();
        for part in parents.iter().take(parents.len().saturating_sub(1)) {
            at.push(part);
            match fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(Refusal::ThroughLink(name.to_owned()));
                }
                Ok(meta) if !meta.is_dir() => {
                    return Err(corrupt(format!("`{name}` is below a file")));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Makes room at `path`: its parents created, a previous file or link of the same name
    /// (archives may repeat an entry; the last wins) removed, never followed.
    fn prepare(&self, path: &Path) -> Result<(), Refusal> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(corrupt)?;
        }
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => Err(corrupt(format!(
                "`{}` is both a directory and a file",
                path.display()
            ))),
            Ok(_) => fs::remove_file(path).map_err(corrupt),
            Err(_) => Ok(()),
        }
    }

    pub(crate) fn dir(&mut self, name: &str) -> Result<(), Refusal> {
        let relative = self.admit(name)?;
        let path = self.dest.join(&relative);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => Err(Refusal::ThroughLink(name.into())),
            _ => fs::create_dir_all(path).map_err(corrupt),
        }
    }

    /// Writes a regular file, counting its bytes against the cap as they inflate (never
    /// trusting the size an archive declares). `mode`: the archive's Unix permissions; only
    /// the permission bits are kept, never set-id bits.
    pub(crate) fn file(
        &mut self,
        name: &str,
        content: impl Read,
        mode: Option<u32>,
    ) -> Result<(), Refusal> {
        let relative = self.admit_leaf(name)?;
        let path = self.dest.join(&relative);
        self.prepare(&path)?;
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(corrupt)?;
        let room = self.limits.max_bytes - self.written;
        let copied = io::copy(&mut content.take(room + 1), &mut file).map_err(corrupt)?;
        if copied > room {
            return Err(Refusal::TooLarge {
                limit: self.limits.max_bytes,
            });
        }
        self.written += copied;
        set_mode(&file, mode)
    }

    /// Creates a symbolic link whose target stays inside: relative, with any `..` only at
    /// its start and no more of them than the link is deep. Since links are never written
    /// through, every link then resolves inside, whatever links its target crosses.
    pub(crate) fn symlink(&mut self, name: &str, target: &str) -> Result<(), Refusal> {
        let relative = self.admit_leaf(name)?;
        let escapes = || Refusal::LinkEscapes {
            entry: name.to_owned(),
            target: target.to_owned(),
        };
        if target.is_empty() || target.starts_with('/') || target.starts_with('\\') {
            return Err(escapes());
        }
        let depth = relative.components().count() - 1;
        let mut climbs = 0;
        let mut descended = false;
        for component in Path::new(target).components() {
            match component {
                Component::ParentDir if !descended => climbs += 1,
                Component::Normal(_) => descended = true,
                Component::CurDir => {}
                _ => return Err(escapes()),
            }
        }
        if climbs > depth
            || (descended
                && target
                    .split('/')
                    .skip_while(|p| *p == "..")
                    .any(|p| p == ".."))
        {
            return Err(escapes());
        }
        let path = self.dest.join(&relative);
        self.prepare(&path)?;
        make_symlink(target, &path).map_err(corrupt)
    }

    /// Creates a hard link to a regular file extracted earlier (`target` is a path in the
    /// archive, from its root).
    pub(crate) fn hard_link(&mut self, name: &str, target: &str) -> Result<(), Refusal> {
        let relative = self.admit_leaf(name)?;
        let escapes = || Refusal::LinkEscapes {
            entry: name.to_owned(),
            target: target.to_owned(),
        };
        let target_relative = safe_relative(target).map_err(|_| escapes())?;
        self.no_links_above(&target_relative, target)?;
        let source = self.dest.join(&target_relative);
        match fs::symlink_metadata(&source) {
            Ok(meta) if meta.is_file() => {}
            _ => return Err(escapes()),
        }
        let path = self.dest.join(&relative);
        self.prepare(&path)?;
        fs::hard_link(source, path).map_err(corrupt)
    }
}

#[cfg(unix)]
fn set_mode(file: &File, mode: Option<u32>) -> Result<(), Refusal> {
    use std::os::unix::fs::PermissionsExt;
    let mode = mode.map_or(0o644, |mode| (mode & 0o777) | 0o600);
    file.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(corrupt)
}

#[cfg(not(unix))]
fn set_mode(_file: &File, _mode: Option<u32>) -> Result<(), Refusal> {
    Ok(())
}

#[cfg(unix)]
fn make_symlink(target: &str, path: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, path)
}

#[cfg(windows)]
fn make_symlink(target: &str, path: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_file(target, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_name() {
        let f = |url| format_of(url);
        assert_eq!(f("https://h/a.zip"), Ok(Format::Zip));
        assert_eq!(f("https://h/a.TAR.GZ?x=1"), Ok(Format::TarGz));
        assert_eq!(f("https://h/a.tgz#f"), Ok(Format::TarGz));
        assert_eq!(f("https://h/a.tar.bz2"), Ok(Format::TarBz2));
        assert_eq!(f("https://h/a.tbz2"), Ok(Format::TarBz2));
        assert_eq!(f("https://h/v1.2/agent-linux-amd64"), Ok(Format::Bare));
        assert_eq!(f("https://h/agent.exe"), Ok(Format::Bare));
        assert_eq!(f("https://h/a.dmg"), Err(Refusal::Installer("dmg".into())));
        assert_eq!(f("https://h/a.deb"), Err(Refusal::Installer("deb".into())));
        assert_eq!(
            f("https://h/a.tar.xz"),
            Err(Refusal::UnsupportedFormat("xz".into()))
        );
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            safe_relative("./bin//agent").unwrap(),
            Path::new("bin/agent")
        );
        assert_eq!(
            safe_relative("a/../../x"),
            Err(Refusal::Traversal("a/../../x".into()))
        );
        assert_eq!(
            safe_relative("/etc/x"),
            Err(Refusal::AbsolutePath("/etc/x".into()))
        );
        assert_eq!(
            safe_relative("C:/x"),
            Err(Refusal::AbsolutePath("C:/x".into()))
        );
        assert_eq!(
            safe_relative("\\x"),
            Err(Refusal::AbsolutePath("\\x".into()))
        );
    }
}
