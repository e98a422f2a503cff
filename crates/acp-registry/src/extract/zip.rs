//! Reads a `.zip` archive entry by entry into the [`Writer`].

use std::fs::File;
use std::io::Read;

use super::{Writer, corrupt};
use crate::error::Refusal;

/// The longest symbolic link target read from an entry.
const MAX_LINK_TARGET: u64 = 4096;

pub(super) fn unpack(file: File, writer: &mut Writer<'_>) -> Result<(), Refusal> {
    let mut archive = ::zip::ZipArchive::new(file).map_err(corrupt)?;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(corrupt)?;
        let name = entry.name().map_err(corrupt)?.into_owned();
        if entry.is_dir() {
            writer.dir(&name)?;
        } else if entry.is_symlink() {
            let mut target = String::new();
            (&mut entry)
                .take(MAX_LINK_TARGET)
                .read_to_string(&mut target)
                .map_err(corrupt)?;
            writer.symlink(&name, &target)?;
        } else {
            let mode = entry.unix_mode();
            if mode.is_some_and(|mode| mode & 0o170000 != 0 && mode & 0o170000 != 0o100000) {
                return Err(Refusal::SpecialFile(name));
            }
            writer.file(&name, &mut entry, mode)?;
        }
    }
    Ok(())
}
