//! Property: whatever paths and link targets a tar archive holds, extraction (accepted or
//! refused) writes nothing outside its directory, and every link it leaves resolves inside.

use std::fs;
use std::path::Path;

use proptest::prelude::*;

use super::{ExtractLimits, Format, extract};

#[derive(Debug, Clone)]
enum Entry {
    File(String),
    Dir(String),
    Symlink(String, String),
    HardLink(String, String),
}

fn path() -> impl Strategy<Value = String> {
    (
        prop::bool::weighted(0.1),
        prop::collection::vec(prop::sample::select(vec!["a", "b", "..", "."]), 1..4),
    )
        .prop_map(|(absolute, parts)| {
            let joined = parts.join("/");
            if absolute {
                format!("/{joined}")
            } else {
                joined
            }
        })
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        path().prop_map(Entry::File),
        path().prop_map(Entry::Dir),
        (path(), path()).prop_map(|(name, to)| Entry::Symlink(name, to)),
        (path(), path()).prop_map(|(name, to)| Entry::HardLink(name, to)),
    ]
}

fn tar_of(entries: &[Entry]) -> Vec<u8> {
    let mut builder = ::tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = ::tar::Header::new_old();
        let (name, kind, link) = match entry {
            Entry::File(name) => (name, ::tar::EntryType::Regular, None),
            Entry::Dir(name) => (name, ::tar::EntryType::Directory, None),
            Entry::Symlink(name, to) => (name, ::tar::EntryType::Symlink, Some(to)),
            Entry::HardLink(name, to) => (name, ::tar::EntryType::Link, Some(to)),
        };
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(link) = link {
            old.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        header.set_entry_type(kind);
        header.set_mode(0o755);
        let data: &[u8] = if kind == ::tar::EntryType::Regular {
            b"x"
        } else {
            b""
        };
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gzip, &builder.into_inner().unwrap()).unwrap();
    gzip.finish().unwrap()
}

/// Every path under `dir`, links not followed.
fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        out.push(path.clone());
        if fs::symlink_metadata(&path).unwrap().is_dir() {
            walk(&path, out);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn nothing_lands_outside(entries in prop::collection::vec(entry(), 1..8)) {
        let root = tempfile::tempdir().unwrap();
        // The archive's directory is two levels down, so that `..` and `../..` have
        // somewhere to land that the test can see.
        let dest = root.path().join("x/dest");
        fs::create_dir_all(&dest).unwrap();
        let archive = root.path().join("archive.tar.gz");
        fs::write(&archive, tar_of(&entries)).unwrap();
        let _ = extract(&archive, Format::TarGz, &dest, Path::new("agent"), ExtractLimits::default());
        let mut found = Vec::new();
        walk(root.path(), &mut found);
        for path in &found {
            prop_assert!(
                path.starts_with(&dest) || path == &archive || path == &root.path().join("x")
                    || path == &dest,
                "{} was written outside", path.display()
            );
        }
        let dest = dest.canonicalize().unwrap();
        for path in found.iter().filter(|p| p.starts_with(root.path().join("x/dest"))) {
            if let Ok(resolved) = path.canonicalize() {
                prop_assert!(resolved.starts_with(&dest), "{} resolves to {}", path.display(), resolved.display());
            }
        }
    }
}
