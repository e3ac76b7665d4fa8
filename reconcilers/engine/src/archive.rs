//! One file out of a container, as the engine's archive API hands it over
//! (`GET /containers/{id}/archive`): a tar stream that whoever can write
//! the container's files shaped. It is read in memory as untrusted data
//! and only ever yields the bytes of one regular file: a link, a
//! directory, a device, a FIFO, more than one entry, a name that is not
//! the one asked for, or more bytes than the cap are refused, and nothing
//! of it is written anywhere.

/// Why an archive did not yield the file asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveRefused {
    #[error("it holds more than {cap} bytes")]
    TooLarge { cap: u64 },
    #[error("it is not a regular file (a {kind})")]
    NotRegular { kind: &'static str },
    #[error("its entry is named {found:?}, not {wanted:?}")]
    WrongName { found: String, wanted: String },
    #[error("it holds more than the one file")]
    MoreThanOne,
    #[error("it holds no file")]
    Empty,
    #[error("it is not a tar archive jackin can read: {0}")]
    Unreadable(String),
}

/// The bytes of the one regular file named `name` (the last part of the
/// path asked for) in the tar archive `archive`, at most `cap` of them.
pub fn single_regular_file(
    archive: &[u8],
    name: &str,
    cap: u64,
) -> Result<Vec<u8>, ArchiveRefused> {
    let unreadable = |e: std::io::Error| ArchiveRefused::Unreadable(e.to_string());
    let mut entries = tar::Archive::new(archive);
    let mut entries = entries.entries().map_err(unreadable)?;
    let Some(entry) = entries.next() else {
        return Err(ArchiveRefused::Empty);
    };
    let mut entry = entry.map_err(unreadable)?;
    let kind = entry.header().entry_type();
    if !kind.is_file() {
        return Err(ArchiveRefused::NotRegular {
            kind: kind_name(kind),
        });
    }
    let found = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
    if found != name {
        return Err(ArchiveRefused::WrongName {
            found,
            wanted: name.to_owned(),
        });
    }
    let size = entry.header().size().map_err(unreadable)?;
    if size > cap {
        return Err(ArchiveRefused::TooLarge { cap });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut entry, cap + 1), &mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > cap {
        return Err(ArchiveRefused::TooLarge { cap });
    }
    drop(entry);
    if entries.next().is_some() {
        return Err(ArchiveRefused::MoreThanOne);
    }
    Ok(bytes)
}

/// The most bytes of an archive worth reading for a file of at most `cap`
/// bytes: its header, the file padded to a block, and the end blocks.
pub fn archive_cap(cap: u64) -> u64 {
    cap + 16 * 512
}

fn kind_name(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Symlink => "symbolic link",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Directory => "directory",
        tar::EntryType::Fifo => "FIFO",
        tar::EntryType::Char | tar::EntryType::Block => "device",
        _ => "special entry",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, kind, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            if *kind == tar::EntryType::Symlink {
                header.set_link_name("/etc/shadow").unwrap();
            }
            // Raw, as a hostile archive may have it (`set_path` refuses `..`).
            header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.into_inner().unwrap()
    }

    #[test]
    fn the_one_regular_file_is_read() {
        let tar = archive(&[("unit.id", tar::EntryType::Regular, b"abc\n")]);
        assert_eq!(single_regular_file(&tar, "unit.id", 64).unwrap(), b"abc\n");
    }

    #[test]
    fn anything_but_one_regular_file_of_that_name_within_the_cap_is_refused() {
        let regular = tar::EntryType::Regular;
        let cases = [
            (
                archive(&[("unit.id", tar::EntryType::Symlink, b"")]),
                ArchiveRefused::NotRegular {
                    kind: "symbolic link",
                },
            ),
            (
                archive(&[("unit.id", tar::EntryType::Fifo, b"")]),
                ArchiveRefused::NotRegular { kind: "FIFO" },
            ),
            (
                archive(&[("unit.id", tar::EntryType::Directory, b"")]),
                ArchiveRefused::NotRegular { kind: "directory" },
            ),
            (
                archive(&[("../unit.id", regular, b"x")]),
                ArchiveRefused::WrongName {
                    found: "../unit.id".into(),
                    wanted: "unit.id".into(),
                },
            ),
            (
                archive(&[("unit.id", regular, &[b'x'; 65])]),
                ArchiveRefused::TooLarge { cap: 64 },
            ),
            (
                archive(&[("unit.id", regular, b"x"), ("other", regular, b"y")]),
                ArchiveRefused::MoreThanOne,
            ),
            (archive(&[]), ArchiveRefused::Empty),
        ];
        for (tar, refused) in cases {
            assert_eq!(single_regular_file(&tar, "unit.id", 64), Err(refused));
        }
    }

    #[test]
    fn bytes_that_are_no_archive_are_refused() {
        let refused = single_regular_file(&[0xff; 700], "unit.id", 64).unwrap_err();
        assert!(
            matches!(refused, ArchiveRefused::Unreadable(_)),
            "{refused:?}"
        );
    }
}
