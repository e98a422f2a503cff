//! Reads a tar stream (already decompressed) entry by entry into the [`Writer`].

use std::io::Read;

use ::tar::EntryType;

use super::{Writer, corrupt};
use crate::error::Refusal;

pub(super) fn unpack(stream: impl Read, writer: &mut Writer<'_>) -> Result<(), Refusal> {
    let mut archive = ::tar::Archive::new(stream);
    for entry in archive.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        let name = text(&entry.path_bytes())?;
        let kind = entry.header().entry_type();
        match kind {
            EntryType::Regular | EntryType::Continuous => {
                let mode = entry.header().mode().ok();
                writer.file(&name, &mut entry, mode)?;
            }
            EntryType::Directory => writer.dir(&name)?,
            EntryType::Symlink | EntryType::Link => {
                let target = match entry.link_name_bytes() {
                    Some(target) => text(&target)?,
                    None => return Err(corrupt(format!("link `{name}` has no target"))),
                };
                if kind == EntryType::Symlink {
                    writer.symlink(&name, &target)?;
                } else {
                    writer.hard_link(&name, &target)?;
                }
            }
            // Metadata the tar crate has already applied to the entries that follow.
            EntryType::XGlobalHeader | EntryType::XHeader => {}
            EntryType::GNULongName | EntryType::GNULongLink => {}
            _ => return Err(Refusal::SpecialFile(name)),
        }
    }
    Ok(())
}

fn text(bytes: &[u8]) -> Result<String, Refusal> {
    String::from_utf8(bytes.to_vec()).map_err(|_| {
        corrupt(format!(
            "the name `{}` is not UTF-8",
            String::from_utf8_lossy(bytes)
        ))
    })
}
